"""User mistakes that were answered with a raw exception, silently accepted, or with a
misleading message: each is one clear line and exit 2, before anything trains."""

from __future__ import annotations

import os

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.records.store import Store

SPACE = ["--space", "lr=log(1e-4,1e-2)"]


def one_line(result, says: str) -> str:
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result
    return lines[0]


def nothing_recorded():
    with Store() as store:
        assert store.rows() == []


def test_a_negative_sampler_seed_is_exit_2(tiny_text):
    result = run_cli(
        "tune", "decoder-char", "--on", tiny_text, "--trials", 1, *SPACE, "--sampler-seed", -1
    )
    one_line(result, "sampler seed must be a whole number from 0 to 4294967295, not -1")


@pytest.mark.parametrize("option", ["--text-column", "--task", "--label-column"])
def test_an_empty_column_or_task_is_refused_not_ignored(tiny_text, option):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 1, *TINY_DECODER, option, "")
    one_line(result, f"{option} is empty")
    nothing_recorded()


def test_a_presets_key_that_the_chosen_task_lacks_names_the_preset(tiny_text):
    line = one_line(
        run_cli("run", "bert-finetune", tiny_text, "--steps", 1), "preset bert-finetune"
    )
    assert "sets 'epochs'" in line and "Unknown config key" not in line


def test_a_storage_password_is_never_echoed(tiny_text):
    url = "postgresql://u:SECRETPW@127.0.0.1:1/db"
    result = run_cli(
        "tune", "decoder-char", "--on", tiny_text, "--trials", 1, *SPACE, "--storage", url
    )
    assert result.code == 2, result
    assert "SECRETPW" not in result.err and "SECRETPW" not in result.out and "u:***@" in result.err


def test_a_tunes_storage_cannot_be_zoos_own_store(tiny_text):
    store = os.path.join(os.environ["ZOO_HOME"], "zoo.db")
    result = run_cli(
        "tune",
        "decoder-char",
        "--on",
        tiny_text,
        "--trials",
        1,
        *SPACE,
        "--storage",
        f"sqlite:///{store}",
    )
    one_line(result, "that is zoo's own store")
    nothing_recorded()


def loud_plugin(work, monkeypatch):
    """A plugin that prints as it loads and as it registers."""
    from zoo.core import loading

    (work / "loud.py").write_text(
        "from zoo.hookspecs import hookimpl\nprint('hello from a plugin')\n"
        "@hookimpl\ndef register_architectures(register):\n    print('registering')\n",
        encoding="utf-8",
    )
    (work / "registry.toml").write_text('[plugins]\nmodules = ["loud.py"]\n')
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "loud")
    loading.reset_zoo()


@pytest.mark.parametrize("command", [["runs", "--json"], ["list", "models", "--json"]])
def test_json_output_is_zoos_alone_whatever_a_plugin_prints(isolated, monkeypatch, command):
    import json

    loud_plugin(isolated, monkeypatch)
    result = run_cli(*command)
    assert result.code == 0, result
    json.loads(result.out)  # nothing else on standard output
    assert "hello from a plugin" in result.err or "registering" in result.err


@pytest.mark.slow
def test_json_output_of_a_run_is_zoos_alone_whatever_a_plugin_prints(
    isolated, monkeypatch, tiny_text
):
    import json

    loud_plugin(isolated, monkeypatch)
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--json")
    assert result.code == 0, result
    assert json.loads(result.out)["run_id"]


def sparse_file(path, size: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)  # as large as a 2M-token tokenizer, without writing it


def test_a_huge_pretrained_tokenizer_file_is_refused_before_it_is_parsed(tmp_path):
    from types import SimpleNamespace

    from zoo.plugins.transformers.tokenizer import PretrainedTokenizer

    from zoo.errors import ZooError

    sparse_file(tmp_path / "tokenizer.json", 300 * 2**20)
    with pytest.raises(ZooError, match="tokenizer.json is 300 MiB; at most 128 MiB"):
        PretrainedTokenizer.train([], SimpleNamespace(pretrained=str(tmp_path)))


def test_a_huge_tokenizer_file_in_a_run_folder_is_refused_before_it_is_parsed(tmp_path):
    from zoo.errors import ZooError
    from zoo.io import load_tokenizer

    sparse_file(tmp_path / "tokenizer.json", 300 * 2**20)

    class Never:
        @classmethod
        def load(cls, path):
            raise AssertionError("parsed")

    with pytest.raises(ZooError, match="a tokenizer file is at most 128 MiB"):
        load_tokenizer(Never, tmp_path / "tokenizer.json")


@pytest.mark.parametrize("args", [["-"], ["--file", "-"]])
def test_predict_from_a_closed_standard_input_is_exit_2(monkeypatch, args):
    import sys

    monkeypatch.setattr(sys, "stdin", None)  # what `zoo predict RUN - <&-` starts with
    result = run_cli("predict", "some-run", *args)
    one_line(result, "standard input is closed")


def test_a_cluster_address_nothing_answers_at_is_given_up_after_a_bounded_wait():
    import socket
    import time

    from zoo.errors import ZooError
    from zoo.sweeps.ray_tasks import CONNECT_TIMEOUT, wait_for_address

    assert CONNECT_TIMEOUT <= 60
    began = time.monotonic()
    with pytest.raises(ZooError, match="nothing answered in 2 s"):
        wait_for_address("127.0.0.1:1", timeout=2)
    assert time.monotonic() - began < 10
    with socket.socket() as listening:  # an address that answers: no wait
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        wait_for_address(f"127.0.0.1:{listening.getsockname()[1]}", timeout=2)


def test_a_dataset_file_whose_name_has_brackets_is_read_as_a_file_not_a_pattern(tiny_text):
    from zoo.core.loading import get_zoo
    from zoo.data.datasets import resolve
    from zoo.data.sources import load_splits

    odd = tiny_text.parent / "<img src=x>[a](b).txt"
    odd.write_bytes(tiny_text.read_bytes())
    splits, _ = load_splits(resolve(str(odd), get_zoo()), get_zoo())
    assert sum(split.num_rows for split in splits.values()) == 400


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_standard_output_on_a_full_disk_is_exit_2_with_one_line():
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "zoo", "list", "models", "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "zoo: error: cannot write: No space left on device (is the disk full?)"
    ]


def test_a_trial_that_finished_before_its_driver_died_is_kept_not_trained_again(tmp_path):
    import socket
    import subprocess
    import sys

    import optuna

    from zoo.tuning.study import Objective, recover_lost_trials

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    mark = {"host": socket.gethostname(), "pid": int(dead), "proc_start": 1}
    with Store() as store:
        store.insert(
            "finished-run",
            model="m",
            dataset="d",
            seed=0,
            status="finished",
            metrics={"val_accuracy": 0.75},
        )
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}", direction="maximize")
    finished, cut_off = study.ask(), study.ask()
    for trial, run_id in ((finished, "finished-run"), (cut_off, "never-recorded")):
        trial.suggest_float("lr", 1e-3, 1e-1, log=True)
        trial.set_user_attr("driver", mark)
        trial.set_user_attr("run_id", run_id)
    queued = recover_lost_trials(study, Objective("val_accuracy", True, ["val_accuracy"]))
    states = {t.number: (t.state.name, t.value) for t in study.get_trials(deepcopy=False)}
    assert queued == 1
    assert states[finished.number] == ("COMPLETE", 0.75)  # kept: never trained again
    assert states[cut_off.number][0] == "FAIL"  # lost: its settings queued again
    assert [t.state.name for t in study.get_trials(deepcopy=False)].count("WAITING") == 1
