"""The code is ruff-clean and ruff-formatted (settings in pyproject.toml)."""

import subprocess
import sys

from conftest import REPO


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", str(REPO)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_ruff_check_finds_nothing():
    result = ruff("check")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_ruff_format_changes_nothing():
    result = ruff("format", "--check")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


# A function's length is held here, a module's by its cohesion: no function of zoo/,
# plugins/ or pipelines/ over MAX_FUNCTION_LINES lines (docstring included).
MAX_FUNCTION_LINES = 80


def long_functions(limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``path:name`` -> lines, for each function of the three folders longer than ``limit``."""
    import ast

    found = {}
    for folder in ("zoo", "plugins", "pipelines"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > limit:
                        found[f"{path.relative_to(REPO).as_posix()}:{node.name}"] = lines
    return found


def test_no_function_is_longer_than_the_limit():
    found = long_functions()
    assert not found, (
        f"functions over {MAX_FUNCTION_LINES} lines (split each by what it does): {found}"
    )
