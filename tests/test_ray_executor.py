"""zoo sweep --executor ray on a local Ray cluster of 2 CPUs: the cells run as Ray tasks,
the driver alone writes the store, a killed worker fails its cell while the sweep goes on,
and running the sweep again finishes it. One cluster for the module: Ray starts slowly."""

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import kill_a_worker_held_at_a_checkpoint, run_cli, seed_sweep, start_local_ray

from zoo.records.ownership import writer_alive
from zoo.records.store import Store, home


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")  # here, not at collection: importing Ray takes seconds
    start_local_ray(ray)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_a_ray_sweep_records_every_cell_from_the_driver_and_finishes_a_killed_one(
    tiny_text, cluster, monkeypatch, tmp_path
):
    sweep = seed_sweep(
        tiny_text,
        150,
        "--set",
        "checkpoint_every=10",
        "--set",
        "eval_interval=50",
        "--executor",
        "ray",
        seeds=4,
    )
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


@pytest.mark.slow
def test_ray_tasks_end_with_a_killed_driver_and_a_rerun_finishes_the_cells(
    tiny_text, cluster, tmp_path
):
    """A `zoo sweep` process joins this cluster as a second driver, as it would join a
    cluster started with `ray start`; SIGKILL of it ends its tasks, so nothing writes the
    run folders when the same sweep runs again."""
    import ray

    address = ray.get_runtime_context().gcs_address
    runs = tmp_path / "runs"
    env = {**os.environ, "ZOO_HOME": str(runs), "OMP_NUM_THREADS": "1"}
    options = ["--set", "checkpoint_every=5", "--set", "eval_interval=100"]
    ray_options = ["--executor", "ray", "--address", address]
    sweep = [sys.executable, "-m", "zoo", *seed_sweep(tiny_text, 1000, *options, *ray_options)]
    with open(tmp_path / "driver.log", "w") as log:
        driver = subprocess.Popen(sweep, env=env, stdout=log, stderr=subprocess.STDOUT)
    folders: list = []
    deadline = time.time() + 300  # bounds a hung test only: a slow, loaded CPU takes minutes
    while time.time() < deadline and not (len(folders) == 2 and all(map(writer_alive, folders))):
        folders = [m.parent for m in runs.glob("*/metrics.jsonl")]
        time.sleep(0.1)
    assert len(folders) == 2 and all(map(writer_alive, folders)), (
        tmp_path / "driver.log"
    ).read_text()
    driver.kill()
    driver.wait()
    deadline = time.time() + 30  # Ray ends a dead driver's job and its tasks' workers
    while time.time() < deadline and any(map(writer_alive, folders)):
        time.sleep(0.1)
    assert not any(map(writer_alive, folders)), "a Ray task outlived its driver"

    rerun = subprocess.run(sweep, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    with Store(runs / "zoo.db") as store:
        rows = store.rows()
    assert sorted(r["status"] for r in rows) == ["finished", "finished"]
    for row in rows:
        steps = [
            json.loads(line)["step"]
            for line in (runs / row["id"] / "metrics.jsonl").read_text().splitlines()
            if "train_loss" in line
        ]
        assert steps == list(range(1, 1001))  # every step once: none lost, none twice
