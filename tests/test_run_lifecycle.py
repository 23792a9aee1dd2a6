"""A run's store row from start to end is written in one place (zoo.records.lifecycle) for
training, evaluation, ensembles and sweeps: running, then finished, failed or interrupted
with its error text and duration."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import zoo
from zoo.records.lifecycle import INTERRUPTED, record_ended, recording
from zoo.records.store import Store

ROW = dict(model="m", architecture="a", tokenizer="t", dataset="d", task="x", seed=0)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_HOME", str(tmp_path / "runs"))
    with Store() as store:
        yield store


def test_a_block_that_ends_records_the_run_finished_with_its_duration(store):
    with recording(store, "run-a", row=ROW) as record:
        assert store.get("run-a")["status"] == "running"
        record.end("finished", metrics={"acc": 0.5})
    row = store.get("run-a")
    assert (row["status"], row["metrics"], row["error"]) == ("finished", {"acc": 0.5}, None)
    assert row["duration"] >= 0 and row["finished"] >= row["created"]


def test_an_exception_records_failed_with_its_text_and_goes_on(store):
    with pytest.raises(ValueError, match="bad value"):
        with recording(store, "run-b", row=ROW):
            raise ValueError("bad value")
    row = store.get("run-b")
    assert (row["status"], row["error"]) == ("failed", "ValueError: bad value")
    assert row["duration"] is not None


def test_ctrl_c_records_interrupted(store):
    with pytest.raises(KeyboardInterrupt):
        with recording(store, "run-c", row=ROW):
            raise KeyboardInterrupt
    row = store.get("run-c")
    assert (row["status"], row["error"]) == ("interrupted", INTERRUPTED)


def test_an_end_the_block_recorded_is_kept_when_it_raises_after(store):
    with pytest.raises(RuntimeError):
        with recording(store, "run-d", row=ROW) as record:
            record.end("diverged", error="loss is nan")
            raise RuntimeError("diverged")
    assert store.get("run-d")["status"] == "diverged"


def test_a_run_that_never_recorded_itself_is_inserted_ended(store):
    record_ended(store, "run-e", "failed", "worker died", began=0.0, row=ROW)
    row = store.get("run-e")
    assert (row["status"], row["error"], row["model"]) == ("failed", "worker died", "m")


def test_only_the_lifecycle_writes_when_a_run_ended():
    """No other module sets a row's ``finished`` time (resetting it to None on a resume, or
    giving a claimed row back as it was, is no end)."""
    package = Path(zoo.__file__).parent
    writers = []
    for path in package.rglob("*.py"):
        if path.name == "lifecycle.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                for keyword in node.keywords:
                    ended = keyword.arg == "finished" and not (
                        isinstance(keyword.value, ast.Constant) and keyword.value.value is None
                    )
                    if ended and node.func.attr in ("insert", "update"):
                        writers.append(str(path.relative_to(package)))
    assert writers == ["sweeps/driver.py"]  # Driver.apply gives a claimed row back as it was
