"""What a command is told to write never reaches ZOO_HOME or a path a name smuggles in:
--output and --plot targets in or around ZOO_HOME are refused, names that become parts of
file names (tune's --study) are checked, and a --plot that cannot be a folder is refused
before the search, not after it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import run_cli

from zoo.home import safe_name_part

SPACE = ["--space", "lr=log(1e-4,1e-2)"]


def tune(tiny_text, *args):
    return run_cli("tune", "decoder-char", "--on", tiny_text, "--trials", 1, *SPACE, *args)


def one_line(result) -> str:
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result
    return lines[0]


@pytest.mark.parametrize("study", ["/tmp/abs", "../../../../tmp/x/cfg_study", "a/b", "", ".hidden"])
def test_a_study_name_that_is_a_path_is_refused_before_the_search(tiny_text, study):
    line = one_line(tune(tiny_text, "--study", study))
    assert "cannot be part of a file name" in line
    assert not Path(os.environ["ZOO_HOME"]).exists()  # no study, no trial, no plot


def test_a_study_name_from_a_config_file_is_checked_the_same(tiny_text, isolated):
    config = isolated / "tune.toml"
    config.write_text(
        f'models = ["decoder-char"]\non = ["{tiny_text}"]\ntrials = 1\n'
        'study = "../../../../tmp/x/cfg_study"\n[space]\nlr = "log(1e-4,1e-2)"\n',
        encoding="utf-8",
    )
    line = one_line(run_cli("tune", "--config", config))
    assert "cannot be part of a file name" in line


@pytest.mark.parametrize("kind", ["file", "device", "home", "run folder"])
def test_a_plot_target_that_cannot_take_plots_is_refused_before_the_search(
    tiny_text, isolated, kind
):
    home = Path(os.environ["ZOO_HOME"])
    (home / "run-1").mkdir(parents=True)
    (isolated / "taken.png").write_text("mine")
    target = {
        "file": isolated / "taken.png",
        "device": "/dev/null",
        "home": home,
        "run folder": home / "run-1",
    }[kind]
    line = one_line(tune(tiny_text, "--plot", target))
    assert "cannot write plots into" in line
    assert (isolated / "taken.png").read_text() == "mine"
    assert sorted(p.name for p in home.iterdir()) == ["run-1"]  # no study was opened


@pytest.mark.parametrize("name", ["zoo.db", "run-1/config.json", "new.csv"])
def test_an_output_file_inside_zoo_home_is_refused(isolated, name):
    home = Path(os.environ["ZOO_HOME"])
    (home / "run-1").mkdir(parents=True)
    (home / "run-1" / "config.json").write_text("{}")
    result = run_cli("runs", "--output", home / name)
    assert "is inside ZOO_HOME" in one_line(result)
    assert (home / "run-1" / "config.json").read_text() == "{}"
    assert not (home / "new.csv").exists()


def test_zoo_home_set_but_empty_is_exit_2(monkeypatch):
    monkeypatch.setenv("ZOO_HOME", "")
    assert "ZOO_HOME is set but empty" in one_line(run_cli("runs"))


@pytest.mark.parametrize(
    "name, safe",
    [
        ("../../etc/passwd", "x.._.._etc_passwd"),
        ("/abs/path", "x_abs_path"),
        ("tune-decoder-char-tiny.txt-2718eea8", "tune-decoder-char-tiny.txt-2718eea8"),
        ("a\nb c", "a_b_c"),
    ],
)
def test_names_from_elsewhere_are_made_safe_file_name_parts(name, safe):
    assert safe_name_part(name) == safe
    assert "/" not in safe_name_part(name) and not safe_name_part(name).startswith(".")


def test_a_dataset_name_is_data_in_an_export_card_and_its_local_path_stays_private():
    from types import SimpleNamespace

    from huggingface_hub import ModelCard

    from zoo.operations.card import model_card

    evil = "x.txt\n---\nlicense: evil\n---\n# pwned <img src=x>[a](http://e)`"
    config = {
        "model": "decoder-char",
        "architecture": "decoder",
        "tokenizer": "char",
        "dataset": evil,
        "dataset_id": f"/home/someone/private/{evil}",
        "text_column": "text\n# column",
        "configs": {},
    }
    trained = SimpleNamespace(
        config=config,
        row={"id": "r1", "metrics": {"val_bpc": 2.0}},
        declared_task=None,
        run_id="r1",
        task="language-modeling",
        context_length=16,
        folder=SimpleNamespace(file=lambda name: Path("/nonexistent") / name),
    )
    facts = {"library_name": "onnx", "summary": "a graph", "usage": 'folder = "FOLDER"\n'}
    checked = {"max_difference": 0.0, "agree": True, "compared": 32}
    card = model_card(trained, facts, checked, format="onnx", folder_name="exported")
    parsed = ModelCard(card)
    assert parsed.data.to_dict().get("license") == "unknown"
    lines = parsed.text.strip().splitlines()
    assert [line for line in lines if line.startswith("#")] == [
        lines[0],
        "## Intended use",
        "## How to use it",
        "## Results",
        "## Data",
        "## How it was trained",
        "## Checked on export",
        "## Limitations",
        "## License",
        "## Config",
    ]
    assert "/" not in lines[0] and "pwned" in lines[0]  # the title: one safe name
    assert "---" not in lines
    outside_code = re.sub(r"`[^`\n]*`", "", "\n".join(lines[1:]))
    assert "pwned" not in outside_code and "<img" not in outside_code
    assert "/home/someone" not in card and "private" not in card


@pytest.mark.slow
def test_a_run_still_draws_its_own_curve_in_its_folder(tiny_text):
    import json

    from conftest import TINY_DECODER

    result = run_cli("run", "decoder-char", tiny_text, "--steps", 6, *TINY_DECODER, "--json")
    assert result.code == 0 and "not drawn" not in result.err, result
    run_id = json.loads(result.out)["run_id"]
    curve = Path(os.environ["ZOO_HOME"]) / run_id / "curve.png"
    assert curve.read_bytes()[:4] == b"\x89PNG"
