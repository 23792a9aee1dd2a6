"""The conformance kit (``zoo check-plugin``) for a plugin author's own tests, as a pytest
plugin. In a test:

    from zoo.plugin.testing import check_plugin

    def test_conforms():
        check_plugin("bow", n_embd=16)  # settings as --set takes them: small and fast

or with no test to write, ``pytest -p zoo.plugin.testing --zoo-plugin bow --zoo-set
n_embd=16``, one test per check. The checks run ``zoo check-plugin`` in a process of its own,
which loads the plugin as an installed zoo does; a failed check fails the test with its one
line naming the plugin and the check.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run_checks(name: str, settings: dict | None = None, steps: int | None = None) -> list[dict]:
    """Every check of plugin ``name``: dicts with ``plugin``, ``check``, ``subject``,
    ``status`` ("ok", "failed", "skipped") and ``detail``."""
    command = [sys.executable, "-m", "zoo", "check-plugin", name, "--json"]
    for key, value in (settings or {}).items():
        command += ["--set", f"{key}={value}"]
    if steps is not None:
        command += ["--steps", str(steps)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        pytest.fail(f"zoo check-plugin {name}: {done.stderr.strip()}", pytrace=False)
    return json.loads(done.stdout)


def line(check: dict) -> str:
    said = f": {check['detail']}" if check["detail"] else ""
    return f"plugin {check['plugin']!r}, check {check['check']} ({check['subject']}){said}"


def check_plugin(name: str, **settings) -> list[dict]:
    """Run every check of plugin ``name``; fail the test, one line per failed check, if any
    fails. Returns the checks."""
    checks = run_checks(name, settings)
    failed = [line(c) for c in checks if c["status"] == "failed"]
    if failed:
        pytest.fail("\n".join(failed), pytrace=False)
    return checks


def pytest_addoption(parser) -> None:
    group = parser.getgroup("zoo", "zoo plugin conformance (zoo.plugin.testing)")
    group.addoption(
        "--zoo-plugin", action="append", default=[], metavar="NAME", help="check this plugin"
    )
    group.addoption(
        "--zoo-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config setting for the checks' runs (as zoo check-plugin --set)",
    )


class Conformance(pytest.Item):
    """One check of a plugin, run once for all of them (``zoo check-plugin``)."""

    def __init__(self, *, check: dict, **kwargs):
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        if self.check["status"] == "skipped":
            pytest.skip(line(self.check))
        if self.check["status"] == "failed":
            pytest.fail(line(self.check), pytrace=False)

    def reportinfo(self):
        return "zoo check-plugin", None, self.name


def pytest_collection_modifyitems(session, config, items) -> None:
    settings = dict(item.partition("=")[::2] for item in config.getoption("zoo_set"))
    for name in config.getoption("zoo_plugin"):
        for check in run_checks(name, settings):
            test = f"{name}::{check['check']}[{check['subject']}]"
            items.append(Conformance.from_parent(session, name=test, check=check))
