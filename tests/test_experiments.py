"""Settings as results: every run's resolved config is a typed column for zoo.runs(),
zoo runs and zoo compare (--where, --by, --sort); incidental settings (checkpoint cadence,
samples) never split a row, a sweep cell or the config hash; grid values are typed once;
best is marked only when it beats the runner-up significantly."""

import io
import json
import shutil

import pandas as pd
import pytest
from conftest import TINY_DECODER, run_cli, train_once

from zoo.records.store import Store

# TINY_DECODER without n_layer: the grid sweeps it
TINY = [
    a for pair in zip(TINY_DECODER[::2], TINY_DECODER[1::2]) if pair[1] != "n_layer=1" for a in pair
]


def ok(*args):
    result = run_cli(*args)
    assert result.code == 0, result
    return result


@pytest.fixture(scope="module")
def grid_sweep_home(tmp_path_factory):
    """A 2x2 grid: lr 1e-3 and 5e-3 x n_layer 1 and 2, one seed, three steps; swept once
    for the module."""
    base = tmp_path_factory.mktemp("grid")
    text = base / "tiny.txt"
    text.write_text("".join(f"line {i}: the quick brown fox {i % 7}.\n" for i in range(400)))
    grid = ["--grid", "lr=1e-3,5e-3", "--grid", "n_layer=1,2"]
    sweep = ["sweep", "decoder-char", "--on", text, *grid, "--steps", 3, *TINY, "--device", "cpu"]
    return base / "runs", train_once(base, {"grid": sweep})["grid"]


@pytest.fixture
def grid_sweep(grid_sweep_home, isolated):
    """The grid's cells, their runs in a copy of the store that is this test's ZOO_HOME."""
    from zoo.records.store import home

    source, printed = grid_sweep_home
    shutil.copytree(source, home())
    return printed


def test_grid_sweep_queried_by_settings_through_compare_and_runs(grid_sweep):
    import zoo

    cells = grid_sweep["cells"]
    # typed once: the JSON holds numbers, not the strings typed on the command line
    assert sorted((c["setting"]["lr"], c["setting"]["n_layer"]) for c in cells) == [
        (0.001, 1),
        (0.001, 2),
        (0.005, 1),
        (0.005, 2),
    ]
    assert all(type(c["setting"]["n_layer"]) is int for c in cells)
    assert {c["setting"]["lr"] for c in cells} == {0.001, 0.005}

    table = json.loads(
        ok("compare", "--where", "lr < 0.004", "--by", "n_layer", "--format", "json").out
    )
    assert sorted(row["n_layer"] for row in table) == ["1", "2"]
    assert all(row["n"] == 1 and row["setting"] == "" for row in table)
    slow = {c["run_id"] for c in cells if c["setting"]["lr"] == 0.001}
    assert {row["runs"] for row in table} == slow

    runs = zoo.runs()
    assert len(runs) == 4
    assert runs["n_layer"].dtype == "Int64" and runs["lr"].dtype == "float64"
    assert sorted(zip(runs["lr"], runs["n_layer"])) == [
        (0.001, 1),
        (0.001, 2),
        (0.005, 1),
        (0.005, 2),
    ]
    chosen = zoo.runs(where="lr < 1e-2 and n_layer == 2 and train.steps == 3")
    assert sorted(chosen["lr"]) == [0.001, 0.005] and set(chosen["n_layer"]) == {2}
    assert chosen["params"].dtype == "Int64" and chosen["value"].dtype == "float64"


def test_zoo_runs_filters_sorts_limits_and_prints_typed_json(grid_sweep):
    rows = json.loads(
        ok(
            "runs",
            "--where",
            "n_layer == 1",
            "--sort=-lr",
            "--columns",
            "lr,n_layer,train.steps",
            "--format",
            "json",
        ).out
    )
    assert [r["lr"] for r in rows] == [0.005, 0.001]
    assert all(r["n_layer"] == 1 and r["train.steps"] == 3 for r in rows)
    assert all(r["metric"] == "val_bpc" and isinstance(r["value"], float) for r in rows)
    assert all(isinstance(r["params"], int) for r in rows)
    newest = json.loads(ok("runs", "-n", 1, "--json").out)
    everything = json.loads(ok("runs", "--json").out)
    assert len(newest) == 1 and newest[0]["id"] == everything[-1]["id"]
    text = ok("runs", "--sort", "value", "-n", 2, "--columns", "lr").out
    assert len(text.strip().splitlines()) == 3 and "lr" in text.splitlines()[0]
    csv = pd.read_csv(io.StringIO(ok("runs", "--format", "csv").out))
    assert len(csv) == 4 and "value" in csv.columns
    bad = run_cli("runs", "--where", "n_layr == 1")
    assert bad.code == 2 and "Did you mean: n_layer" in bad.err


def test_empty_store_says_where_it_looked(tmp_path):
    out = ok("runs").out
    assert "no runs yet in" in out and "runs" in out
    assert json.loads(ok("runs", "--json").out) == []


def test_checkpoint_cadence_shares_the_row_the_hash_and_the_sweep_cell(tiny_text):
    first = json.loads(
        ok(
            "run",
            "decoder-char",
            tiny_text,
            "--steps",
            3,
            *TINY_DECODER,
            "--set",
            "checkpoint_every=2",
            "--json",
            "--device",
            "cpu",
        ).out
    )
    second = json.loads(
        ok(
            "run",
            "decoder-char",
            tiny_text,
            "--steps",
            3,
            *TINY_DECODER,
            "--set",
            "checkpoint_every=100",
            "--set",
            "samples=1",
            "--json",
            "--device",
            "cpu",
        ).out
    )
    with Store() as store:
        hashes = {store.get(r["run_id"])["config_hash"] for r in (first, second)}
    assert len(hashes) == 1
    table = json.loads(ok("compare", "--format", "json").out)
    assert len(table) == 1 and table[0]["setting"] == ""
    sweep = json.loads(
        ok(
            "sweep",
            "decoder-char",
            "--on",
            tiny_text,
            "--steps",
            3,
            *TINY_DECODER,
            "--set",
            "checkpoint_every=50",
            "--json",
        ).out
    )
    assert [c["state"] for c in sweep["cells"]] == ["reused"]
    # an incidental setting is still a column to ask for
    listed = json.loads(ok("runs", "--json", "--columns", "checkpoint_every").out)
    assert sorted(r["checkpoint_every"] for r in listed) == [2, 100]


@pytest.mark.slow
def test_a_time_budgeted_run_is_labelled_by_the_steps_it_trained(tiny_text):
    from zoo.comparison.table import load_runs, summarize

    ok("run", "decoder-char", tiny_text, "--steps", 1, *TINY_DECODER, "--quiet", "--device", "cpu")
    timed = json.loads(
        ok(
            "run",
            "decoder-char",
            tiny_text,
            "--time",
            1.5,
            *TINY_DECODER,
            "--set",
            "steps=100000",
            "--json",
            "--device",
            "cpu",
        ).out
    )
    trained = timed["metrics"]["steps"]
    assert 1 < trained < 100000
    labels = set(summarize(load_runs()).cells["setting"])
    assert labels == {f"steps={trained}, time=1.5", "steps=1, time=None"}


def record(model, seed, value):
    run_id = f"{model}-{seed}"
    with Store() as store:
        store.insert(
            run_id,
            model=model,
            architecture="decoder",
            tokenizer="char",
            dataset="text",
            task="language-modeling",
            seed=seed,
            params=10,
            status="finished",
            config_hash=run_id,
            metrics={"val_bpc": value},
            config={"configs": {"model": {"n_layer": 1}}},
        )


def test_best_is_marked_only_when_it_beats_the_runner_up_significantly():
    from zoo.comparison.render import render
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize

    for seed, (a, b, c) in enumerate([(1.0, 1.05, 2.0), (1.1, 1.2, 2.1), (1.05, 1.1, 2.2)]):
        record("a-char", seed, a)
        record("b-char", seed, b)
        record("c-char", seed, c)
    tied = summarize(load_runs())
    assert not tied.cells["best"].any()
    text = render(tied, "table")
    assert "on text, a-char leads but is not told apart from b-char" in text
    assert ") *" not in text
    clear = summarize(load_runs(), ComparisonSpec(where="model != 'b-char'"))
    assert clear.cells.set_index("model")["best"].to_dict() == {"a-char": True, "c-char": False}
    assert "no best marked" not in render(clear, "table")


def test_settings_of_a_run_recorded_without_incidental_keys_come_from_its_classes():
    """A run recorded before zoo recorded which settings are incidental: its classes say."""
    from zoo.comparison.table import settings_of

    row = {
        "architecture": "decoder",
        "tokenizer": "char",
        "task": "language-modeling",
        "kind": "train",
        "config": {"configs": {"train": {"lr": 1e-3, "checkpoint_every": 5, "samples": 2}}},
    }
    assert settings_of(row)[0] == {"train.lr": 1e-3}


def test_dotted_setting_names_in_conditions_are_columns_not_attribute_access():
    from zoo.comparison.query import select
    from zoo.errors import ZooError

    frame = pd.DataFrame({"train.steps": [1, 2], "model": ["a", "b"]})
    assert list(select(frame, "train.steps > 1")["model"]) == ["b"]
    with pytest.raises(ZooError, match="Unknown column 'model.upper'"):
        select(frame, "model.upper == 'A'")
    with pytest.raises(ZooError, match="function or method call"):
        select(frame, "model.upper() == 'A'")


def test_a_grid_over_an_incidental_setting_trains_one_cell(tiny_text):
    sweep = json.loads(
        ok(
            "sweep",
            "decoder-char",
            "--on",
            tiny_text,
            "--steps",
            2,
            *TINY_DECODER,
            "--grid",
            "checkpoint_every=10,20",
            "--json",
        ).out
    )
    states = sorted(c["state"] for c in sweep["cells"])
    assert states == ["finished", "skipped"]
    assert "same experiment" in next(c["reason"] for c in sweep["cells"] if c["state"] == "skipped")
    assert len(json.loads(ok("compare", "--json").out)) == 1
