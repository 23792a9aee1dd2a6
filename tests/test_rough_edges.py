"""Small things a new user meets: `zoo list` filters by a part of the name, options are
never abbreviated, did-you-mean finds abbreviations and tasks, a step budget inside the
warm-up is said, a tune's preset holds no search budget, predictions echo their texts, a
sweep's comparison has typed setting columns, and the Python API table lists every
parameter."""

import argparse
import inspect
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY_DECODER, run_cli, without

import zoo
from zoo.cli.main import build_parser
from zoo.comparison.query import select
from zoo.errors import UnknownNameError, ZooError

ROOT = Path(__file__).resolve().parent.parent


def test_list_filters_by_a_part_of_the_name_or_a_wildcard():
    by_part = run_cli("list", "models", "nanogpt", "--json")
    assert by_part.code == 0, by_part
    assert [row["name"] for row in json.loads(by_part.out)] == ["decoder-char-nanogpt"]
    tokenizers = json.loads(run_cli("list", "tokenizers", "word", "--json").out)
    assert [row["name"] for row in tokenizers] == ["wordpunct"]
    wildcard = json.loads(run_cli("list", "models", "decoder-*", "--json").out)
    assert wildcard and all(row["name"].startswith("decoder-") for row in wildcard)
    assert "(none)" in run_cli("list", "models", "no-such-thing").out


def every_parser(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from every_parser(sub)


def test_no_option_is_ever_abbreviated():
    parsers = list(every_parser(build_parser()))
    assert len(parsers) > 10 and all(p.allow_abbrev is False for p in parsers)
    result = run_cli("run", "decoder-char", "shakespeare", "--step", 5)
    assert result.code == 2 and "unrecognized arguments: --step" in result.err
    assert "Did you mean: --steps?" in result.err
    # the benchmark and script parsers too
    for path in [*ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py")]:
        text = path.read_text(encoding="utf-8")
        calls = re.findall(r"ArgumentParser\(.*", text)
        assert all("allow_abbrev=False" in call for call in calls), path


def test_did_you_mean_finds_abbreviations_and_tasks(tiny_text):
    error = UnknownNameError("column", "lrate", ["created", "lr", "model", "n_layer"])
    assert error.suggestions[0] == "lr"
    assert UnknownNameError("model", "decodr-char", ["decoder-char", "lr"]).suggestions == [
        "decoder-char"
    ]
    runs = pd.DataFrame({"id": ["a"], "created": [1.0], "lr": [0.01], "n_layer": [2]})
    with pytest.raises(ZooError, match="Did you mean: lr"):
        select(runs, "lrate < 0.1")
    result = run_cli("run", "encoder-bpe", tiny_text, "--task", "clasification")
    assert result.code == 2
    assert "Did you mean: classification?" in result.err and "tiny" in result.err


def test_a_step_budget_inside_the_warmup_is_said(tiny_text):
    from zoo.train.job import TrainConfig
    from zoo.train.loop import warmup_outlasts_training

    said = warmup_outlasts_training(TrainConfig(steps=40, warmup_steps=100, lr=5e-3))
    assert "step 40, inside the 100-step" in said and "warmup_steps=4" in said
    assert warmup_outlasts_training(TrainConfig(steps=400, warmup_steps=100)) is None
    assert warmup_outlasts_training(TrainConfig(steps=40, warmup_steps=100, time=60)) is None
    assert warmup_outlasts_training(TrainConfig(steps=40, warmup_steps=0)) is None
    assert warmup_outlasts_training(TrainConfig(steps=40, warmup_fraction=0.1)) is None


@pytest.mark.slow
def test_a_run_inside_the_warmup_warns_before_training(tiny_text):
    settings = [*without(TINY_DECODER, "warmup_steps"), "--set", "warmup_steps=100"]
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 4, *settings)
    assert result.code == 0, result
    (warning,) = [line for line in result.err.splitlines() if "warning" in line]
    assert "inside the 100-step learning-rate warm-up" in warning


def test_a_tuned_preset_leaves_out_the_search_budget():
    from zoo.tuning.report import StudyResult, preset_snippet

    result = StudyResult(
        "decoder-char", "shakespeare", "s1", "val_bpc", "test_bpc", {}, 1.0,
        best={"value": 2.1}, settings={"train.lr": 0.004}, fixed={"train.steps": 300},
    )  # fmt: skip
    snippet = preset_snippet(result)
    assert "lr = 0.004" in snippet
    body = snippet.split(".set]")[1].splitlines()
    assert "steps = 500" in body  # the preset's own step budget, not the search's 300
    assert "steps = 300" not in body and "each trial trained steps = 300" in snippet


@pytest.mark.slow
def test_predict_echoes_each_text_with_its_label(tiny_text, tmp_path):
    from conftest import TINY_ANY

    reviews = tmp_path / "reviews.csv"
    rows = ["text,label"] + [
        f"the film was {w} {i},{w}" for i in range(60) for w in ("good", "bad")
    ]
    reviews.write_text("\n".join(rows) + "\n", encoding="utf-8")
    trained = run_cli("run", "encoder-char", reviews, "--steps", 2, *TINY_ANY, "--json")
    assert trained.code == 0, trained
    run_id = json.loads(trained.out)["run_id"]
    result = run_cli("predict", run_id, "a good film", "a\tbad one")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert [line.split("\t")[-1] for line in lines] == ["a good film", "a\\tbad one"]
    assert all(line.split("\t")[0] in ("good", "bad") for line in lines)
    both = [
        json.loads(line)
        for line in run_cli("predict", run_id, "x", "y", "--json").out.split("\n")
        if line
    ]
    assert [row["text"] for row in both] == ["x", "y"] and all("label" in row for row in both)


@pytest.mark.slow
def test_a_sweeps_comparison_has_typed_setting_columns_in_the_grids_order(tiny_text):
    result = zoo.sweep(
        "decoder-char", str(tiny_text), steps=2, grid={"n_layer": [1, 2], "lr": [1e-3, 2e-3]},
        progress=False, settings=dict(s.split("=") for s in without(TINY_DECODER, "n_layer")[1::2]),
    )  # fmt: skip
    frame = result.frame
    columns = list(frame.columns)
    assert columns.index("n_layer") + 1 == columns.index("lr") < columns.index("metric")
    assert frame["n_layer"].dtype.kind == "i" and frame["lr"].dtype.kind == "f"
    assert sorted(zip(frame["n_layer"], frame["lr"])) == [
        (1, 1e-3), (1, 2e-3), (2, 1e-3), (2, 2e-3)
    ]  # fmt: skip


def test_the_api_table_lists_every_parameter_of_every_function():
    text = (ROOT / "docs" / "guide" / "python.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `zoo\.(\w+)\(([^`]*)\)`", text, flags=re.M)
    functions = [n for n in zoo.__all__ if inspect.isfunction(getattr(zoo, n))]
    assert "runs" in functions
    for name in functions:
        listed = [params for row_name, params in rows if row_name == name]
        assert listed, f"zoo.{name} has no row"
        words = set(re.findall(r"\w+", listed[0]))
        for param in inspect.signature(getattr(zoo, name)).parameters.values():
            wanted = "settings" if param.kind is param.VAR_KEYWORD else param.name
            assert wanted in words, f"zoo.{name}: {param.name} is not in the table"
