"""`--init RUN` is a run reference like any other: an empty value, an id that is a path, a
folder outside ZOO_HOME, an evaluation or an ensemble row are each one line and exit 2,
saying what --init needs, before anything trains. Rows are written straight into the store."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.records.store import Store


def row(run_id: str, **fields) -> None:
    base = dict(model="decoder-char", architecture="decoder", dataset="text", seed=0)
    base.update(task="language-modeling", status="finished")
    base.update(fields)
    with Store() as store:
        store.insert(run_id, **base)


def init_with(tiny_text, source: str):
    return run_cli("run", "decoder-char", tiny_text, "--steps", 1, *TINY_DECODER, "--init", source)


def refused(result, says: str) -> str:
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result
    with Store() as store:
        assert [r for r in store.rows() if r["kind"] == "train" and r["status"] != "finished"] == []
    return lines[0]


def test_an_empty_init_is_refused_not_a_run_from_scratch(tiny_text):
    refused(init_with(tiny_text, ""), "--init needs a run id")


def planted(run_id: str) -> None:
    """A row whose id was edited in the database (the store itself refuses such an id)."""
    row("plain-1")
    with sqlite3.connect(Path(os.environ["ZOO_HOME"]) / "zoo.db") as db:
        db.execute("UPDATE runs SET id = ? WHERE id = 'plain-1'", (run_id,))


def test_an_init_row_whose_id_is_a_path_reads_nothing_outside_zoo_home(tiny_text, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (outside / name).write_text("{}")
    planted(os.path.relpath(outside, os.environ["ZOO_HOME"]))
    line = refused(init_with(tiny_text, "../"), "is not a run id")
    assert "elsewhere" in line


@pytest.mark.parametrize(
    "kind, says",
    [
        ("eval", "an evaluation of run parent-1, with no weights of its own"),
        ("ensemble", "an ensemble (its members' predictions combined)"),
    ],
)
def test_an_evaluation_or_ensemble_row_says_what_init_needs(tiny_text, kind, says):
    row("parent-1")
    row("derived-1", kind=kind, parent_id="parent-1" if kind == "eval" else None)
    line = refused(init_with(tiny_text, "derived-1"), says)
    assert "init needs a finished training run" in line


@pytest.mark.parametrize(
    "command", [["export", "derived-1", "out"], ["predict", "derived-1", "hi"]]
)
def test_export_or_predict_of_an_ensemble_row_says_it_is_an_ensemble(command):
    row("derived-1", kind="ensemble")
    result = run_cli(*command)
    assert result.code == 2, result
    assert "is an ensemble" in result.err and "config.json" not in result.err, result
