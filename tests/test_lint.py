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
