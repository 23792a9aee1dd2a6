"""The acceptance test of the plugin contract: examples/zoo-regress, installed with pip like
any third-party package, adds a task the core has never heard of (regression), a dataset
that serves it and an architecture, through the public API alone, and every command works
on it: list, list --matrix, show, run, sweep, compare, eval, predict --json, plot, a SIGKILL
then resume that is bit-identical, and reproduce."""

import csv
import io
import json
import math
import random
from pathlib import Path

import pytest
from conftest import install_example, run_cli
from test_reliability import Trial, assert_same_run, watch

from zoo.core import loading
from zoo.records.store import home

TINY = ["--set", "eval_interval=10"]


@pytest.fixture(scope="session")
def regress_site(tmp_path_factory) -> Path:
    """The example package, installed for real into its own folder."""
    return install_example(tmp_path_factory, "zoo-regress")


@pytest.fixture
def regress(regress_site, monkeypatch):
    """The installed package on the path (for this process and the ones it starts), found
    through its entry point like any third-party plugin."""
    monkeypatch.syspath_prepend(str(regress_site))
    monkeypatch.setenv("PYTHONPATH", str(regress_site))
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "regress")
    loading.reset_zoo()
    assert loading.get_zoo().plugins["regress"].distribution == "zoo-regress"


def ok(*args) -> str:
    result = run_cli(*args)
    assert result.code == 0, result
    return result.out


@pytest.mark.slow
def test_a_new_task_runs_end_to_end_through_the_cli(regress, tmp_path):
    listed = ok("list")
    assert "bitmlp" in listed and "bits" in listed and "regression" in listed
    matrix = ok("list", "--matrix")
    assert (
        next(line for line in matrix.splitlines() if line.startswith("bitmlp")).split()[1]
        == "regression"
    )
    shown = ok("show", "bits")
    assert "tasks:  regression" in shown and "rows" in shown  # the dataset's config fields
    assert "train (regression) config" in ok("show", "bitmlp-char")
    task = ok("show", "regression")  # the task's declaration, from its registration
    assert (
        "primary metric: test_r2" in task
        and "fraction of variance explained, higher is better" in task
    )

    run = json.loads(ok("run", "bitmlp-char", "bits", "--steps", 60, "--json", *TINY))
    assert run["task"] == "regression" and run["status"] == "finished"
    assert run_cli("show", run["run_id"]).code == 0
    metrics = run["metrics"]
    assert metrics["test_r2"] > 0.5 and 0 <= metrics["test_mse"] < 0.05  # it learned
    listed = json.loads(ok("runs", "--json"))[0]  # the primary metric, from the registration
    assert listed["metric"] == "test_r2" and listed["value"] == pytest.approx(metrics["test_r2"])

    swept = run_cli(
        "sweep",
        "bitmlp-char",
        "bitmlp-bpe",
        "--on",
        "bits",
        "--seeds",
        2,
        "--steps",
        20,
        *TINY,
        "--format",
        "csv",
    )
    assert swept.code == 0, swept
    cells = list(csv.DictReader(io.StringIO(swept.out)))
    assert {c["metric"] for c in cells} == {"test_r2"} and {c["better"] for c in cells} == {
        "higher"
    }
    assert all(c["n"] == "2" for c in cells)
    best = max(cells, key=lambda c: float(c["mean"]))
    # higher is better: only the highest mean may be marked (when it beats the runner-up)
    assert all(c is best or c["best"] == "False" for c in cells)

    compared = json.loads(ok("compare", "--format", "json", "--metric", "test_mse"))
    assert {c["better"] for c in compared} == {"lower"}
    lowest = min(compared, key=lambda c: c["mean"])
    assert all(c is lowest or not c["best"] for c in compared)  # lower is better

    scored = json.loads(ok("eval", run["run_id"], "bits", "--split", "validation", "--json"))
    assert scored["metrics"]["r2"] == pytest.approx(metrics["val_r2"], rel=1e-9)

    texts = tmp_path / "bits.txt"
    texts.write_text("1000000000\n0100000000\n1111111111\n", encoding="utf-8")
    predicted = [
        json.loads(line)
        for line in ok("predict", run["run_id"], "--file", texts, "--json").splitlines()
    ]
    assert [p["text"] for p in predicted] == ["1000000000", "0100000000", "1111111111"]
    assert all(math.isfinite(p["value"]) for p in predicted)
    assert predicted[0]["value"] > predicted[1]["value"]  # 0.5 against 0.25

    ok("plot", run["run_id"], "--plot", tmp_path / "curve.png")
    assert (tmp_path / "curve.png").stat().st_size > 0

    reproduced = run_cli("reproduce", run["run_id"], "--quiet")
    assert reproduced.code == 0 and "metrics match exactly" in reproduced.out, reproduced


@pytest.mark.slow
def test_a_new_task_resumes_bit_identically_after_sigkill(regress, monkeypatch):
    steps = 40
    args = [
        "run",
        "bitmlp-char",
        "bits",
        "--steps",
        steps,
        "--json",
        *TINY,
        "--set",
        "checkpoint_every=1",
    ]
    reference = json.loads(ok(*args))
    reference["run_dir"] = str(home() / reference["run_id"])
    trial = Trial(home().parent / "killed", args, random.SystemRandom().randint(5, steps - 10))
    watch([trial])
    run_id = trial.check_killed()
    monkeypatch.setenv("ZOO_HOME", str(trial.home))
    resumed = run_cli("resume", run_id, "--json")
    assert resumed.code == 0, (trial.kill_at, resumed)
    done = json.loads(resumed.out)
    assert done["run_id"] == run_id and done["status"] == "finished"
    assert_same_run(done, reference)
