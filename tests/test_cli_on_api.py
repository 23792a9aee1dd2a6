"""Every command of the command line is argument parsing, one call of the Python API
(``zoo.api``) and rendering. With each API function replaced by one that records its call
and stops the command, every command calls exactly its own function, first: in an empty
store, with names nothing holds, a command that reached into the store, the registry or a
dataset before the API would fail there instead."""

from __future__ import annotations

import argparse

import pytest
from conftest import run_cli

import zoo.api

COMMANDS = {
    "list": [("list",), ("list", "models", "--json"), ("list", "--matrix")],
    "show": [("show", "r1"), ("show", "r1", "--json"), ("show", "r1", "--config")],
    "run": [("run", "m1", "d1", "--steps", "2")],
    "resume": [("resume", "r1")],
    "sweep": [("sweep", "m1", "--on", "d1", "--seeds", "2")],
    "reproduce": [("reproduce", "r1", "--json")],
    "generate": [("generate", "r1", "--prompt", "a prompt")],
    "predict": [("predict", "r1", "a text")],
    "eval": [("eval", "r1", "d1")],
    "runs": [("runs",), ("runs", "--where", "lr < 1", "--json")],
    "rm": [("rm", "r1", "--dry-run")],
    "compare": [("compare", "--status", "all")],
    "plot": [("plot", "r1", "r2", "--plot", "curves.png")],
    "ensemble": [("ensemble", "r1", "r2")],
    "export": [("export", "r1", "folder")],
    "tune": [("tune", "m1", "--on", "d1", "--space", "lr=log(1e-4,1e-2)", "--trials", "2")],
    "ui": [("ui", "--port", "0")],
    "report": [("report", "-o", "report.html", "--where", "lr < 1")],
    "check-plugin": [("check-plugin", "char")],
}
CALLS = {  # the API function each command calls
    "list": "catalog",
    "show": "show",
    "generate": "load",
    "predict": "load",
    "eval": "evaluate",
    "check-plugin": "check_plugin",
}


class Called(Exception):
    """Raised by a stand-in API function: the command got as far as the API."""


@pytest.fixture
def recorded(monkeypatch):
    calls = []

    def stand_in(name):
        def call(*args, **kwargs):
            calls.append(name)
            raise Called(name)

        return call

    for name in zoo.api.__all__:
        monkeypatch.setattr(zoo.api, name, stand_in(name))
    return calls


def zoo_commands() -> set[str]:
    from zoo.cli.main import PluginHandler, build_parser

    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        name
        for name, parser in commands.choices.items()
        if not isinstance(parser.get_default("handler"), PluginHandler)  # a plugin's command
    }


def test_every_command_of_zoo_is_checked():
    assert set(COMMANDS) == zoo_commands()


@pytest.mark.parametrize(
    "argv", [argv for variants in COMMANDS.values() for argv in variants], ids=" ".join
)
def test_a_command_calls_one_api_function(argv, recorded):
    result = run_cli(*argv)
    assert recorded == [CALLS.get(argv[0], argv[0])], result
    assert result.code == 1 and "Called" in result.err  # stopped by the stand-in, no further


def test_show_gives_a_record_for_every_kind_of_name(isolated):
    (isolated / "registry.toml").write_text(
        '[models.pair-mix]\nmembers = ["decoder-char", "encoder-char"]\nweights = "fit"\n'
    )
    preset = zoo.api.show("pair-mix")
    assert (preset.type, preset.record["members"]) == ("model", ["decoder-char", "encoder-char"])
    assert preset.details[0].members == ["decoder-char", "encoder-char"]
    pair = zoo.api.show("decoder-char")
    assert (pair.type, pair.record["architecture"]) == ("model", "decoder")
    assert {f.name for f in pair.details[0].configs["model"]} >= {"n_layer", "n_embd"}
    entry = zoo.api.show("digits")  # an architecture and a dataset: one record each
    assert entry.type == "entry"
    assert [type(d).__name__ for d in entry.details] == ["EntryDetails", "DatasetDetails"]
    assert [e["kind"] for e in entry.record["entries"]] == ["architecture", "dataset"]


def test_list_and_show_return_data_and_the_command_line_writes_the_text():
    """No text in what the API returns: each Listing and Shown field is data."""
    import dataclasses

    from zoo.cli.browse import listing_text
    from zoo.cli.show_text import show_text

    listing = zoo.api.catalog("models")
    assert not any("text" in f.name for f in dataclasses.fields(listing))
    assert "(presets; any ARCHITECTURE-TOKENIZER pair runs too" in listing_text(listing)
    shown = zoo.api.show("decoder-char")
    assert not any("text" in f.name for f in dataclasses.fields(shown))
    assert show_text(shown).startswith("model decoder-char")


@pytest.mark.parametrize(
    "argv",
    [
        ("sweep", "m1", "--on", "d1", "--log-to", "tensorboard"),
        ("tune", "m1", "--on", "d1", "--space", "lr=log(1e-4,1e-2)", "--trials", "2",
         "--log-to", "tensorboard"),
    ],
    ids=" ".join,
)  # fmt: skip
def test_log_to_reaches_the_api_as_an_argument_not_the_environment(argv, monkeypatch):
    """The command passes --log-to to the API; the process's environment is the user's."""
    import os

    monkeypatch.delenv("ZOO_LOG_TO", raising=False)
    seen = {}

    def stand_in(*args, **kwargs):
        seen.update(log_to=kwargs.get("log_to"), environment=os.environ.get("ZOO_LOG_TO"))
        raise Called(argv[0])

    monkeypatch.setattr(zoo.api, argv[0], stand_in)
    result = run_cli(*argv)
    assert result.code == 1 and "Called" in result.err, result
    assert seen == {"log_to": "tensorboard", "environment": None}
