"""zoo sweep --executor ray on a local Ray cluster of 2 CPUs: the cells run as Ray tasks,
the driver alone writes the store, a killed worker fails its cell while the sweep goes on,
and running the sweep again finishes it. One cluster for the module: Ray starts slowly."""

import os

import pytest
from conftest import TINY_DECODER, kill_a_worker_held_at_a_checkpoint, run_cli

from zoo.records.store import Store, home

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_a_ray_sweep_records_every_cell_from_the_driver_and_finishes_a_killed_one(
    tiny_text, cluster, monkeypatch, tmp_path
):
    sweep = [
        "sweep",
        "decoder-char",
        "--on",
        tiny_text,
        "--seeds",
        4,
        "--steps",
        150,
        *TINY_DECODER,
        "--set",
        "checkpoint_every=10",
        "--set",
        "eval_interval=50",
        "--executor",
        "ray",
    ]
    # The first two tasks wait after their first checkpoint: one is killed mid-cell.
    thread, killed = kill_a_worker_held_at_a_checkpoint(monkeypatch, tmp_path, workers=2)
    first = run_cli(*sweep)
    thread.join()
    assert killed, "no Ray worker was killed"
    assert first.code == 1, first
    assert "running on Ray tasks on a local Ray cluster: 2 at a time, 1 CPU(s) each" in first.err
    with Store() as store:
        rows = store.rows()
    assert sorted(r["status"] for r in rows) == ["failed", "finished", "finished", "finished"]
    failed = next(r for r in rows if r["status"] == "failed")
    assert failed["error"].startswith("Ray task lost: WorkerCrashedError")

    second = run_cli(*sweep)
    assert second.code == 0, second
    assert "1 to run, 3 already finished" in second.err
    with Store() as store:
        rows = store.rows()
    assert [r["status"] for r in rows] == ["finished"] * 4
    assert {r["pid"] for r in rows} == {os.getpid()}  # every row written by the driver
    assert all((home() / r["id"] / "model.safetensors").is_file() for r in rows)
