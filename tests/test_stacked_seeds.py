"""Seeds trained together (`zoo sweep --stack-seeds`): each seed is an ordinary run that
starts from exactly the weights it has alone, ends within a stated tolerance of training
alone, resumes alone, and is a configuration of its own (tiny digits configs)."""

import json

import numpy as np
import pytest
import torch
from conftest import TINY_ANY, run_cli
from test_digits import SMALL, TINY_DIGITS, catalogue

from zoo.records.store import Store
from zoo.sweeps.cells import plan_sweep

# |stacked - alone| after TOLERANCE_STEPS steps of the tiny digits model, for every seed:
# the batched kernels sum in another order, and the difference grows with the steps
# (measured: docs/guide/sweeps.md, "Seeds trained together").
TOLERANCE_STEPS = 40
LOSS_TOLERANCE = 0.02  # nats, validation and test loss
ACCURACY_TOLERANCE = 0.05


def sweep(*options, seeds: int = 2, steps: int = 6):
    return run_cli(
        "sweep",
        "digits-char",
        "--on",
        "tiny-digits",
        "--seeds",
        seeds,
        "--steps",
        steps,
        *TINY_DIGITS,
        *options,
        "--json",
    )


@pytest.fixture
def tiny_digits(tmp_path):
    catalogue(tmp_path, "tiny-digits", **SMALL)


def rows(**where) -> list[dict]:
    with Store() as store:
        found = [r for r in store.rows() if all(r.get(k) == v for k, v in where.items())]
    return sorted(found, key=lambda r: r["seed"])


def stacked_rows():
    return [r for r in rows() if (r["config"] or {}).get("stacked")]


def alone_rows():
    return [r for r in rows() if not (r["config"] or {}).get("stacked")]


def test_stacked_seeds_start_from_the_weights_each_seed_has_alone(tiny_digits, monkeypatch):
    from zoo.train.seed_stack import SeedStack
    from zoo.train.torch_model import TorchModel

    alone, stacked = [], []
    configure, build = TorchModel.configure_optimizer, SeedStack._build

    def before_training_alone(self, *args, **kwargs):
        alone.append(self.state_dict())
        return configure(self, *args, **kwargs)

    def before_training_stacked(self):
        build(self)
        for i in range(len(self.position)):
            stacked.append({n: p[i].detach().numpy().copy() for n, p in self.params.items()})

    monkeypatch.setattr(TorchModel, "configure_optimizer", before_training_alone)
    monkeypatch.setattr(SeedStack, "_build", before_training_stacked)
    assert sweep().code == 0
    assert sweep("--stack-seeds").code == 0
    assert len(alone) == len(stacked) == 2
    for one, other in zip(alone, stacked):  # seeds 0 and 1
        assert one.keys() == other.keys()
        for name in one:
            assert np.array_equal(one[name], other[name]), name
    assert not np.array_equal(stacked[0]["embed.weight"], stacked[1]["embed.weight"])


def test_the_stacked_step_computes_linear_layers_in_the_precision_of_a_run_alone(
    tiny_digits, monkeypatch
):
    """Under vmap, autocast multiplies in bf16 but would add a linear's fp32 bias after,
    leaving every linear's output in fp32; alone it is bf16. The stacked step casts the
    biases as autocast does, so both compute the same way."""
    from zoo.train.seed_stack import SeedStack

    seen: list = []
    build = SeedStack._build

    def watching(self):
        build(self)
        for module in self.base.modules():
            if isinstance(module, torch.nn.Linear):
                module.register_forward_hook(lambda m, i, out: seen.append(out.dtype))

    monkeypatch.setattr(SeedStack, "_build", watching)
    assert sweep("--stack-seeds", "--set", "precision=bf16", steps=2).code == 0
    assert seen and set(seen) == {torch.bfloat16}


@pytest.mark.slow
def test_each_stacked_seed_is_an_ordinary_run_and_a_configuration_of_its_own(tiny_digits):
    assert sweep().code == 0
    result = sweep("--stack-seeds", 2)
    assert result.code == 0, result
    cells = json.loads(result.out)["cells"]
    assert [c["state"] for c in cells] == ["finished", "finished"]  # not the plain runs reused
    stacked = stacked_rows()
    assert len(stacked) == 2 and {r["status"] for r in stacked} == {"finished"}
    assert len({r["config_hash"] for r in stacked + alone_rows()}) == 4
    for row in stacked:
        config = row["config"]
        assert config["stacked"] == 2
        assert config["stack"]["seeds"] == [0, 1]
        assert sorted(config["stack"]["runs"]) == sorted(r["id"] for r in stacked)
        from zoo.records.paths import run_folder

        folder = run_folder(row["id"])
        curve = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        assert [p["step"] for p in curve if "train_loss" in p] == list(range(1, 7))
        assert (folder / "model.safetensors").is_file() and not (folder / "checkpoints").exists()
    # the same sweep again reuses the stacked runs, not the plain ones
    again = json.loads(sweep("--stack-seeds", 2).out)["cells"]
    assert {c["run_id"] for c in again} == {r["id"] for r in stacked}
    # the comparison keeps stacked and plain runs apart, labelled
    table = run_cli("compare", "--format", "json")
    assert table.code == 0, table
    found = {c["setting"]: c["n"] for c in json.loads(table.out)}
    assert found == {"stacked=2": 2, "stacked=-": 2}, found  # the plain row: not stacked
    # a stacked run reloads and scores as any run
    evaluation = run_cli("eval", stacked[0]["id"], "tiny-digits", "--split", "test", "--json")
    assert evaluation.code == 0, evaluation
    scored = json.loads(evaluation.out)["metrics"]
    for key in ("accuracy", "loss"):
        assert scored[key] == pytest.approx(stacked[0]["metrics"][f"test_{key}"], abs=1e-9)


def test_what_cannot_be_stacked_is_refused_before_training_in_one_line(tiny_digits):
    for options, says in (
        (["--seeds", "2", "--set", "compile=true"], "compile=true"),
        (["--seeds", "2", "--time", "5"], "time budget"),
        (["--seeds", "2", "--set", "freeze=blocks.*"], "trains every weight"),
        (["--seeds", "1"], "give 2 or more seeds"),
    ):
        result = run_cli(
            "sweep", "digits-char", "--on", "tiny-digits", "--stack-seeds", *options, "--dry-run"
        )
        assert result.code == 2, (options, result)
        assert says in result.err and len(result.err.strip().splitlines()) == 1, result.err
    numpy = run_cli("sweep", "numpy-char", "--on", "tiny-digits", "--seeds", 2, "--stack-seeds")
    assert numpy.code == 2 and "not a torch module" in numpy.err, numpy
    assert rows() == []


def test_plans_differ_only_in_stacking_so_neither_reuses_the_other(tiny_digits):
    plain = plan_sweep(["digits-char"], ["tiny-digits"], seeds=4)
    stacked = plan_sweep(["digits-char"], ["tiny-digits"], seeds=4, stack_seeds=2)
    assert {c.plan.stacked for c in stacked.cells} == {2}
    assert not plain.hashes & stacked.hashes
    assert (
        stacked.hashes
        == plan_sweep(["digits-char"], ["tiny-digits"], seeds=4, stack_seeds=2).hashes
    )


def test_a_stacked_run_resumes_alone_from_its_checkpoint(tiny_digits, monkeypatch):
    from zoo.records.paths import run_folder
    from zoo.train import checkpoints

    monkeypatch.setattr(checkpoints, "remove_all", lambda run_dir: None)  # keep them
    assert sweep("--stack-seeds", "--set", "checkpoint_every=3").code == 0
    row = stacked_rows()[1]
    folder = checkpoints.folder(run_folder(row["id"]))
    assert sorted(p.name for p in folder.iterdir()) == ["step-00000003", "step-00000006"]
    for path in (folder / "step-00000006").iterdir():
        path.unlink()
    (folder / "step-00000006").rmdir()
    with Store() as store:  # as if the sweep had been stopped after step 3
        store.update(row["id"], status="interrupted")
    resumed = run_cli("resume", row["id"], "--json")
    assert resumed.code == 0, resumed
    after = rows(id=row["id"])[0]
    assert after["status"] == "finished" and after["resumed"] == 1
    for key in ("val_loss", "test_loss"):
        assert abs(after["metrics"][key] - row["metrics"][key]) < LOSS_TOLERANCE


@pytest.mark.slow
def test_stacked_metrics_lie_within_the_stated_tolerance_of_separate_runs(tiny_digits):
    assert sweep(seeds=3, steps=TOLERANCE_STEPS).code == 0
    assert sweep("--stack-seeds", seeds=3, steps=TOLERANCE_STEPS).code == 0
    alone, stacked = alone_rows(), stacked_rows()
    assert len(alone) == len(stacked) == 3
    for one, other in zip(alone, stacked):
        for key in ("val_loss", "test_loss"):
            assert abs(one["metrics"][key] - other["metrics"][key]) < LOSS_TOLERANCE, key
        for key in ("val_accuracy", "test_accuracy"):
            assert abs(one["metrics"][key] - other["metrics"][key]) <= ACCURACY_TOLERANCE, key


def test_turns_keep_each_runs_random_numbers_its_own():
    from zoo.train.turns import Turns

    def draws(turns, slot, seed):
        torch.manual_seed(seed)
        found = []
        for _ in range(3):
            found.append(torch.rand(2).tolist())
            turns.wait_for_step(slot, None)
        return found

    turns = Turns(lambda requests: {slot: torch.rand(1).item() for slot in requests}, seed=5)
    outcomes = turns.run([lambda s=s: draws(turns, s, 10 + s) for s in range(3)])
    for slot, (kind, found) in enumerate(outcomes):
        torch.manual_seed(10 + slot)
        assert kind == "result" and found == [torch.rand(2).tolist() for _ in range(3)]


def test_runs_taking_turns_count_their_own_turns_and_their_share_of_each_step():
    """Each run's clock counts its turns and its part of the steps it shares, so the runs of
    a stack together count each second once, as runs alone do."""
    import time

    from zoo.core.phases import measuring, phase
    from zoo.train.turns import Turns

    def step(requests):
        time.sleep(0.06)  # one shared step for every run: 0.02 s each
        return dict.fromkeys(requests)

    def run(turns, slot):
        with measuring() as clock, phase("train"):
            for _ in range(3):
                time.sleep(0.02)  # this run's own turn
                turns.wait_for_step(slot, None)
        return clock.record()

    turns = Turns(step)
    began = time.perf_counter()
    outcomes = turns.run([lambda s=s: run(turns, s) for s in range(3)])
    wall = time.perf_counter() - began
    timings = [timing for _, timing in outcomes]
    assert sum(t["measured"] for t in timings) <= wall
    for timing in timings:  # at least its own 3 x 0.02 s and its 3 shares of 0.02 s
        assert timing["phases"]["train"] >= 0.12
        assert timing["phases"]["train"] == pytest.approx(timing["measured"], abs=1e-3)


def test_a_stacked_cell_started_anew_is_trained_as_a_stack_never_alone(tiny_digits):
    """When a stacked cell's run cannot be resumed, the sweep starts it over: as a stack
    (of one), so its run is trained as its configuration (stacked=K) says."""
    from zoo.core.config import parse_assignment
    from zoo.sweeps.cells import train_cell
    from zoo.train.job import RunOptions

    tiny = dict(parse_assignment(item) for item in [*TINY_DIGITS[1::2], "steps=20"])
    (cell, _) = plan_sweep(
        ["digits-char"], ["tiny-digits"], seeds=2, stack_seeds=2, overrides=tiny
    ).cells
    summary = train_cell(cell.plan, RunOptions(device="cpu", quiet=True))
    (row,) = rows(id=summary["run_id"])
    assert row["config"]["stacked"] == 2 and row["config"]["stack"]["runs"] == [row["id"]]


def test_a_resumed_cell_that_fails_is_recorded_once_on_its_own_run(tiny_digits):
    import time

    from zoo.sweeps.in_process import _record_failure

    (cell, _) = plan_sweep(["digits-char"], ["tiny-digits"], seeds=2).cells
    with Store() as store:
        store.insert(
            "earlier",
            status="running",
            model="digits-char",
            dataset="tiny-digits",
            config_hash=cell.config_hash,
            seed=0,
            kind="train",
        )
    began = time.time() + 1  # the earlier run was created before this attempt began
    cell.status, cell.error, cell.resumed = "diverged", "RunDiverged: loss nan", "earlier"
    assert _record_failure(cell, began) == "earlier"
    assert [(r["id"], r["status"]) for r in rows()] == [("earlier", "diverged")]
    cell.resumed = None  # failed before anything was recorded: a row with the cell's status
    made = _record_failure(cell, began)
    assert rows(id=made)[0]["status"] == "diverged"


def test_seeds_whose_batches_differ_in_rows_are_stacked_with_repeated_rows_left_out():
    """At the end of an epoch one seed's batch can be partial while another's is full: the
    short one repeats a real row (finite outputs) and its loss counts its own rows only."""
    from zoo.train.seed_stack import _batched

    full = (np.arange(12).reshape(3, 4), np.array([0, 1, 0]), np.ones((3, 4), dtype=np.int64))
    short = (np.arange(6).reshape(2, 3), np.array([1, 1]), np.ones((2, 3), dtype=np.int64))
    inputs, targets, mask, counts = _batched([full, short], "cpu")
    assert tuple(inputs.shape) == (2, 3, 4) and counts == [3, 2]
    assert inputs[1, 2].tolist() == inputs[1, 0].tolist()  # a real row, repeated
    assert mask[1, :, 3].tolist() == [0, 0, 0]  # the width padding is masked out
    assert [len(t) for t in targets] == [3, 2]


def test_a_mixture_of_experts_is_refused_with_the_reason_in_one_line(tiny_digits):
    # the router's choices give each seed its own shapes, which vmap cannot batch
    result = run_cli(
        "sweep",
        "decoder-char",
        "--on",
        "tiny-digits",
        "--seeds",
        "2",
        "--stack-seeds",
        "--dry-run",
        *TINY_ANY,
        "--set",
        "n_expert=2",
    )
    assert result.code == 2, result
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "picks rows by their values" in result.err and "leave out --stack-seeds" in result.err
    assert rows() == []
