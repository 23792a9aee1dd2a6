"""A sweep's worker keeps what is safe to keep from cell to cell (zoo.sweeps.warm): a loaded
dataset is reused by a cell on the same data, never by a cell whose data differs, and a
cell trained after another in the same worker has the metrics it has in a fresh one. Every
run records where its time went (zoo.core.phases)."""

import pytest
from conftest import TINY_DECODER

from zoo.core.phases import PHASES, PhaseClock, measuring, phase
from zoo.data import datasets as zoo_data
from zoo.sweeps.cells import plan_sweep
from zoo.sweeps.driver import cell_task
from zoo.sweeps.warm import WarmWorker
from zoo.sweeps.worker import run_cell
from zoo.train.job import RunOptions

TIMING = ("tokens_per_s", "train_time")
TINY = {**dict(pair.split("=") for pair in TINY_DECODER[1::2]), "steps": "4"}


def tasks(dataset, seeds: int = 1) -> list[dict]:
    sweep = plan_sweep(["decoder-char"], [str(dataset)], seeds=seeds, overrides=TINY)
    return [
        cell_task(
            cell,
            sweep.overrides,
            RunOptions(device="cpu"),
            run_id=f"run-{cell.seed}-{i}",
            resume=None,
        )
        for i, cell in enumerate(sweep.cells)
    ]


def trained(task: dict, warm: WarmWorker) -> dict:
    outcome = run_cell({**task, "run_id": f"{task['run_id']}-{id(warm)}-{warm.cells}"}, warm=warm)
    assert outcome["status"] == "finished", outcome
    return outcome


def metrics(outcome: dict) -> dict:
    return {k: v for k, v in outcome["result"]["metrics"].items() if k not in TIMING}


@pytest.fixture
def loads(monkeypatch):
    """The datasets loaded from their source, in order."""
    seen = []
    load = zoo_data.load

    def counting(ref, *args, **kwargs):
        seen.append(ref.source)
        return load(ref, *args, **kwargs)

    monkeypatch.setattr(zoo_data, "load", counting)
    return seen


def test_a_worker_reuses_a_dataset_and_the_cell_trains_as_in_a_fresh_worker(tiny_text, loads):
    first, second = tasks(tiny_text, seeds=2)
    loads.clear()  # planned here; what follows is the worker's
    warm = WarmWorker()
    trained(first, warm)
    after_another = trained(second, warm)
    assert loads == [str(tiny_text)]  # loaded by the first cell only
    assert warm.reused == {"registry": 1, "dataset": 1}
    alone = trained(second, WarmWorker())
    assert metrics(after_another) == metrics(alone)


def test_a_cell_whose_data_differs_loads_its_own(tiny_text, tmp_path, loads):
    other = tmp_path / "other.txt"
    other.write_text(tiny_text.read_text().replace("fox", "cat"), encoding="utf-8")
    planned = tasks(tiny_text)[0], tasks(other)[0]
    loads.clear()  # planned here; what follows is the worker's
    warm = WarmWorker()
    trained(planned[0], warm)
    trained(planned[1], warm)
    assert loads == [str(tiny_text), str(other)]
    assert warm.reused["dataset"] == 0
    # the same file, changed since: loaded again
    tiny_text.write_text(tiny_text.read_text() + "one more line\n", encoding="utf-8")
    trained(planned[0], warm)
    assert loads == [str(tiny_text), str(other), str(tiny_text)]


def test_digits_cells_share_a_generated_dataset_only_with_the_same_options(loads):
    def digits(size: int) -> dict:
        sweep = plan_sweep(
            ["digits-char"],
            ["digits"],
            overrides={
                "steps": "2",
                "eval_interval": "2",
                "dataset.train_size": str(size),
                "dataset.validation_size": "50",
                "dataset.test_size": "50",
                "dataset.heldout_size": "50",
            },
        )
        [cell] = sweep.cells
        return cell_task(
            cell, sweep.overrides, RunOptions(device="cpu"), run_id="digits", resume=None
        )

    warm = WarmWorker()
    for size in (200, 200, 300):
        trained(digits(size), warm)
    assert len(loads) == 2 and warm.reused["dataset"] == 1


def test_a_worker_records_each_cells_phases_with_its_start_on_the_first(tiny_text):
    first, second = tasks(tiny_text, seeds=2)
    warm = WarmWorker(started=1.5)
    timings = [trained(task, warm)["ops"][-1][2]["config"]["timing"] for task in (first, second)]
    for timing in timings:
        assert set(timing["phases"]) <= set(PHASES)
        assert {"plan", "data", "build", "train", "evaluate", "record"} <= set(timing["phases"])
        assert sum(timing["phases"].values()) <= timing["measured"] + 1.5 + 1e-3
    assert timings[0]["phases"]["start"] == 1.5 and "imports" in timings[0]["phases"]
    assert "start" not in timings[1]["phases"]


def test_phases_inside_others_are_counted_once():
    clock = PhaseClock()
    with measuring(clock):
        with phase("train"):
            with phase("evaluate"):
                sum(range(200_000))
            with phase("evaluate"):
                pass
        open_record = None
        with phase("record"):
            open_record = clock.record()  # an open phase counts up to now
    seconds = clock.record()
    assert set(seconds["phases"]) == {"train", "evaluate", "record"}
    assert sum(seconds["phases"].values()) <= seconds["measured"]
    assert seconds["phases"]["evaluate"] > 0 and open_record["phases"]["record"] >= 0
    with phase("train"):  # no clock running: nothing measured, nothing fails
        pass
    assert clock.seconds.keys() == seconds["phases"].keys()


def test_a_tokenizers_fingerprint_reads_what_its_save_writes(tmp_path):
    """The token cache's key hashes the tokenizer's saved form without saving it to a file
    (one sync per call) when its class saves as zoo.plugin's TokenizersTokenizer does."""
    from zoo.plugins.char import CharTokenizer

    from zoo.data.encoded import saved_form

    tokenizer = CharTokenizer.train(["the quick brown fox"])
    tokenizer.save(tmp_path / "tokenizer.json")
    assert saved_form(tokenizer) == (tmp_path / "tokenizer.json").read_bytes()

    class Renamed(CharTokenizer):  # saves its own way: read back from the file it writes
        def save(self, path):
            super().save(path)
            path.write_text(path.read_text(encoding="utf-8").replace("<unk>", "<UNK>"))

    renamed = Renamed(tokenizer.backend)
    assert saved_form(renamed) != saved_form(tokenizer)
