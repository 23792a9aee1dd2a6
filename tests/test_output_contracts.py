"""What zoo prints is a contract: `--json` is one valid, strict JSON document whatever a
plugin prints meanwhile (a plugin's stdout goes to stderr) and never holds NaN; a closed
standard output is an error, not a silent exit 0."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.cli.options import finite

CHATTY = """
from zoo.hookspecs import hookimpl


def build(config, spec):
    from zoo.plugins.decoder.model import build as decoder

    print("hello from a plugin")
    return decoder(config, spec)


@hookimpl
def register_architectures(register):
    register("chatty", build, config="zoo.plugins.decoder:DecoderConfig",
             tasks=("language-modeling",))
"""


@pytest.fixture
def chatty(isolated, monkeypatch):
    (isolated / "p_chatty.py").write_text(CHATTY)
    (isolated / "registry.toml").write_text('[plugins]\nmodules = ["p_chatty.py"]\n')
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "p_chatty")


def test_a_plugins_print_goes_to_stderr_during_json(chatty, tiny_text, one_thread):
    result = run_cli("run", "chatty-char", tiny_text, "--steps", 2, *TINY_DECODER, "--json")
    assert result.code == 0, result
    assert json.loads(result.out)["status"] == "finished"  # the whole of stdout parses
    assert "hello from a plugin" in result.err


def test_without_json_a_plugins_print_stays_on_stdout(chatty, tiny_text, one_thread):
    result = run_cli("run", "chatty-char", tiny_text, "--steps", 2, *TINY_DECODER)
    assert result.code == 0 and "hello from a plugin" in result.out


def test_json_never_holds_nan(tiny_text, one_thread):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--json")
    assert result.code == 0, result
    json.loads(result.out, parse_constant=lambda name: pytest.fail(f"{name} in --json"))


def test_non_finite_numbers_become_null_at_any_depth():
    import numpy as np

    value = {
        "a": math.nan,
        "b": [1.0, math.inf, {"c": -math.inf}],
        "d": np.float32("nan"),
        "e": "NaN",
        "f": 2,
    }
    assert finite(value) == {
        "a": None,
        "b": [1.0, None, {"c": None}],
        "d": None,
        "e": "NaN",
        "f": 2,
    }


@pytest.mark.slow
def test_a_closed_stdout_is_an_error_not_exit_0():
    result = subprocess.run(
        f"{sys.executable} -m zoo list models >&-", shell=True, capture_output=True, text=True
    )
    assert result.returncode == 2, result
    assert "standard output is closed" in result.stderr


@pytest.mark.slow
def test_a_reader_that_goes_away_is_not_exit_0_and_prints_no_traceback():
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before zoo writes a byte: every write is EPIPE
    result = subprocess.run(
        [sys.executable, "-m", "zoo", "list", "models"],
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(writer)
    assert result.returncode == 141, result  # 128 + SIGPIPE, as a C tool in a pipe reports
    assert result.stderr == ""
