"""The suite's own set-up: pytest-xdist workers, one per CPU this process may use, an idle one
taking queued tests from a busy one; the tests run in the pytest process where the command line, the debugger or a
single CPU says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest


class Config:
    """What conftest.pytest_cmdline_main reads of pytest's config: the options, the plugins,
    xdist's count of cores (``cores``), and whether this is a worker."""

    def __init__(self, cores=16, xdist=True, worker=False, numprocesses=None, dist="no", **flags):
        self.option = SimpleNamespace(numprocesses=numprocesses, dist=dist, tx=[])
        self.flags = {"usepdb": False, "collectonly": False, **flags}
        self.pluginmanager = SimpleNamespace(hasplugin=lambda name: xdist and name == "xdist")
        self.hook = SimpleNamespace(pytest_xdist_auto_num_workers=lambda config: cores)
        if worker:
            self.workerinput = {"workerid": "gw0"}

    def getoption(self, name):
        return self.flags[name]


@pytest.fixture
def usable(monkeypatch):
    """Set the CPUs this process may use (zoo.core.threads.usable_cpus)."""
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)

    def set_usable(count):
        monkeypatch.setattr("zoo.core.threads.usable_cpus", lambda: count)

    return set_usable


def spread(config) -> tuple:
    conftest.pytest_cmdline_main(config)
    return config.option.numprocesses, config.option.dist, config.option.tx


def test_one_worker_per_usable_cpu_stealing_queued_tests(usable):
    usable(16)
    assert spread(Config(cores=16)) == (16, "worksteal", ["popen"] * 16)
    usable(4)  # taskset or a container's CPU quota: 4 of the 16 cores
    assert spread(Config(cores=16)) == (4, "worksteal", ["popen"] * 4)
    # a --dist given is kept
    assert spread(Config(cores=16, dist="loadfile"))[:2] == (4, "loadfile")


def test_a_single_cpu_runs_the_tests_in_the_pytest_process(usable):
    usable(1)
    assert spread(Config(cores=16)) == (None, "no", [])
    usable(8)
    assert spread(Config(cores=1)) == (None, "no", [])


@pytest.mark.parametrize(
    "config",
    [
        Config(numprocesses=0),  # -n 0
        Config(numprocesses=3),  # -n 3: xdist starts what was asked
        Config(usepdb=True),
        Config(collectonly=True),
        Config(worker=True),  # a worker never starts workers of its own
        Config(xdist=False),  # -p no:xdist, or xdist not installed
    ],
    ids=["n0", "n3", "pdb", "collect-only", "worker", "no-xdist"],
)
def test_the_command_line_a_worker_or_a_missing_xdist_keeps_the_tests_where_they_are(
    usable, config
):
    usable(16)
    before = (config.option.numprocesses, config.option.dist, config.option.tx)
    assert spread(config) == before


def test_the_environment_variable_sets_the_count_even_past_the_usable_cpus(usable, monkeypatch):
    usable(2)
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "6")  # xdist's hook reads it
    assert spread(Config(cores=6))[0] == 6


def test_a_suite_started_with_sigint_ignored_still_catches_ctrl_c():
    """`pytest &` in a script without job control starts with SIGINT ignored; the suite puts
    Python's handler back, so the Ctrl-C tests press a key a terminal could press."""
    code = (
        "import signal\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "import conftest\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
    )
    tests = Path(conftest.__file__).parent
    done = subprocess.run([sys.executable, "-c", code], cwd=tests, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
