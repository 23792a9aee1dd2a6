"""The commands behave alike: --quiet and --json on zoo sweep as on zoo run, --debug after
the subcommand as before it, and zoo list shows the pipelines (one per task). The resume
hint on Ctrl-C is tested with the interrupted run in test_language_modeling.py."""

from __future__ import annotations

import json

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.api import details


def test_debug_is_accepted_after_the_subcommand_and_shows_the_traceback(monkeypatch):
    def broken(zoo, name):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr(details, "shown", broken)
    plain = run_cli("show", "decoder")
    assert plain.code == 1 and "Traceback" not in plain.err
    assert "(run with --debug for the traceback)" in plain.err  # the hint ...
    for argv in (["show", "decoder", "--debug"], ["--debug", "show", "decoder"]):
        debug = run_cli(*argv)  # ... works where the user adds the flag
        assert debug.code == 1 and "Traceback" in debug.err, argv
        assert "RuntimeError: something inside broke" in debug.err
    usage = run_cli("show", "decoder", "--debugg")
    assert usage.code == 2 and "unrecognized arguments: --debugg" in usage.err


def test_zoo_list_shows_the_pipelines_one_per_task():
    result = run_cli("list", "pipelines", "--json")
    assert result.code == 0
    rows = json.loads(result.out)
    assert [row["name"] for row in rows] == [
        "classification",
        "language-modeling",
        "masked-language-modeling",
        "next-item",
        "seq2seq",
    ]
    assert (rows[1]["primary"], rows[1]["better"]) == ("val_bpc", "lower")  # as declared
    everything = run_cli("list")
    assert "pipelines (5)" in everything.out and "language-modeling" in everything.out
    assert "pipelines" in json.loads(run_cli("list", "--json").out)


@pytest.mark.slow
def test_sweep_quiet_prints_only_the_table_and_json_one_object(tiny_text):
    args = ["sweep", "decoder-char", "--on", tiny_text, "--steps", 2, *TINY_DECODER]
    quiet = run_cli(*args, "--quiet", "--format", "csv")
    assert quiet.code == 0, quiet
    assert quiet.err == "" and quiet.out.startswith("model,")  # no plan, progress, summary

    dry = run_cli(*args, "--seeds", 2, "--json", "--dry-run")
    assert dry.code == 0 and dry.err == ""
    cells = json.loads(dry.out)["cells"]
    assert [(c["seed"], c["state"]) for c in cells] == [(0, "reused"), (1, "to run")]

    result = run_cli(*args, "--seeds", 2, "--json")
    assert result.code == 0 and result.err == "", result
    report = json.loads(result.out)  # exactly one JSON object on stdout
    assert [(c["seed"], c["state"]) for c in report["cells"]] == [(0, "reused"), (1, "finished")]
    assert report["cells"][0]["run_id"] != report["cells"][1]["run_id"]
    [cell] = report["comparison"]
    assert (
        cell["n"] == 2
        and cell["metric"] == "val_bpc"
        and sorted(cell["runs"].split()) == sorted(c["run_id"] for c in report["cells"])
    )


def test_sweep_quiet_and_verbose_exclude_each_other(tiny_text):
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--quiet", "--verbose")
    assert result.code == 2 and "not allowed with argument" in result.err
