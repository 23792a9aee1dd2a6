"""Below the command line no error names a command's flag: the Python API's user passes
``where=``, not ``--where``. A lower layer names the argument as the API spells it and says
so with ``ZooError(..., option="where")``; the command line writes the flag in its place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import run_cli

import zoo

ROOT = Path(zoo.__file__).parent.parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*")
# a plugin's own command: its flags are its own, as zoo/cli's are zoo's
COMMAND_MODULES = {"plugins/numpy/verify.py"}


def lower_layers() -> list[Path]:
    paths = [p for p in (ROOT / "zoo").rglob("*.py") if "cli" not in p.relative_to(ROOT).parts]
    paths += [*(ROOT / "pipelines").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]
    return [p for p in paths if str(p.relative_to(ROOT)) not in COMMAND_MODULES]


def flags_raised(path: Path) -> list[str]:
    """Each ``--flag`` in the text of an exception ``path`` raises, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found += [f"{path.name}:{node.lineno} {f}" for f in FLAG.findall(part.value)]
    return found


def test_no_error_below_the_command_line_names_a_flag():
    assert len(lower_layers()) > 100  # the scan sees the tree
    found = [flag for path in lower_layers() for flag in flags_raised(path)]
    assert not found, "name the argument and pass option= instead:\n" + "\n".join(found)


def test_the_scan_finds_a_flag(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        'def f(x):\n    print("--quiet")\n    raise ValueError(f"--where {x!r}: or --stack-seeds")\n'
    )
    assert flags_raised(module) == ["m.py:3 --where", "m.py:3 --stack-seeds"]


def test_the_python_api_names_the_argument_and_the_command_its_flag():
    with pytest.raises(zoo.ZooError) as caught:
        zoo.sweep("decoder-char", on="shakespeare", stack_seeds=True, progress=False)
    assert str(caught.value).startswith("stack_seeds trains several seeds together")
    assert caught.value.option == "stack_seeds"
    assert caught.value.command_line().startswith("--stack-seeds trains several seeds together")
    result = run_cli("sweep", "decoder-char", "--on", "shakespeare", "--stack-seeds")
    assert result.code == 2 and "error: --stack-seeds trains several seeds" in result.err


def test_only_the_option_a_message_begins_with_becomes_a_flag():
    assert zoo.ZooError("where 'x': bad", option="where").command_line() == "--where 'x': bad"
    error = zoo.ZooError("no runs match where 'x'", option="where")
    assert error.command_line() == "no runs match where 'x'"
    assert zoo.ZooError("seeds must be positive").command_line() == "seeds must be positive"
    named = zoo.UnknownNameError("space kind", "exp", ["log"])  # its own __init__
    assert named.command_line() == str(named)
