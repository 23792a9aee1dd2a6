"""A dry run refuses what the real run refuses; --threads is bounded by the CPUs this
process may use; a sweep whose ZOO_HOME is removed under it stops in one line."""

import shutil

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.records.store import Store, home


def one_line(result, says: str) -> str:
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.err
    return lines[0]


@pytest.mark.parametrize("dry", [["--dry-run"], []])
def test_an_unknown_sweep_metric_is_refused_before_anything_trains(tiny_text, dry):
    sweep = ["sweep", "decoder-char", "--on", tiny_text, "--steps", 1, *TINY_DECODER]
    line = one_line(run_cli(*sweep, "--metric", "val_bp", *dry, "--quiet"), "Unknown metric")
    assert "Did you mean: val_bpb, val_bpc" in line
    with Store() as store:
        assert store.rows() == []  # refused before the first cell trained
    planned = run_cli(*sweep, "--metric", "val_bpc", "--dry-run")
    assert planned.code == 0, planned


def test_threads_beyond_the_usable_cpus_are_refused():
    from zoo.core.threads import usable_cpus

    line = one_line(
        run_cli("run", "decoder-char", "x.txt", "--threads", 1_000_000_000), "--threads"
    )
    assert f"at most {usable_cpus()}" in line


def test_a_sweep_whose_zoo_home_is_removed_stops_in_one_line(tiny_text, monkeypatch):
    """The first cell's run removes ZOO_HOME (as `rm -rf` from another shell would): the
    sweep stops before the next cell instead of training into a new, empty store."""
    from zoo.sweeps import in_process

    trained = []

    def remove_home(cell, *args, **kwargs):
        trained.append(cell)
        shutil.rmtree(home())

    monkeypatch.setattr(in_process, "_run_cell_here", remove_home)
    sweep = ["sweep", "decoder-char", "--on", tiny_text, "--seeds", 3, "--steps", 1]
    line = one_line(run_cli(*sweep, *TINY_DECODER, "--quiet"), "was removed while the sweep ran")
    assert str(home()) in line
    assert len(trained) == 1
