"""One writer per run: sweep workers die with their driver, a run folder is owned through an
OS lock for the run's life, a rerun never joins a live writer, and two identical sweeps
started together train each cell once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TINY_DECODER, run_cli, seed_sweep

from zoo.records.ownership import RunBusy, own_run, writer_alive
from zoo.records.store import Store, home

TIMING = {"elapsed", "train_time", "tokens_per_s"}

# A process that holds a run folder's writer lock until killed (a worker still writing).
HOLDER = """
import sys, time
from zoo.records.ownership import own_run
lock = own_run(sys.argv[1], wait=0)
print("held", flush=True)
time.sleep(600)
"""


def hold_lock(folder: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_run_folder_has_one_writer_and_the_lock_ends_with_its_process(tmp_path):
    folder = tmp_path / "20260101-000000-abcd"
    folder.mkdir()
    holder = hold_lock(folder)
    try:
        assert writer_alive(folder)
        with pytest.raises(
            RunBusy,
            match=rf"run {folder.name} is being written by another "
            rf"process \(process {holder.pid} on ",
        ):
            own_run(folder, wait=0.3)
    finally:
        holder.kill()
        holder.wait()
    assert not writer_alive(folder)  # SIGKILL drops the lock: no pid to guess from
    with own_run(folder, wait=0):
        assert writer_alive(folder)


def test_a_row_whose_pid_is_dead_but_whose_folder_has_a_live_writer_is_not_stale(tmp_path):
    """A sweep's rows carry the driver's pid: when the driver dies and its worker still
    writes the folder, the row must not be taken as stale and resumed alongside it."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    with Store() as store:
        for run_id in ("20260101-000000-aaaa", "20260101-000000-bbbb"):
            (home() / run_id).mkdir(parents=True)
            store.insert(run_id, pid=int(dead), proc_start="1")
    holder = hold_lock(home() / "20260101-000000-aaaa")
    try:
        with Store() as store:
            status = {r["id"]: r["status"] for r in store.rows()}
        assert status == {"20260101-000000-aaaa": "running", "20260101-000000-bbbb": "interrupted"}
    finally:
        holder.kill()
        holder.wait()
    with Store() as store:
        assert {r["status"] for r in store.rows()} == {"interrupted"}


def test_resume_refuses_a_folder_whose_writer_is_alive(tiny_text, one_thread, monkeypatch):
    monkeypatch.setenv("ZOO_WRITER_WAIT", "0.5")
    first = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        4,
        *TINY_DECODER,
        "--set",
        "checkpoint_every=1",
        "--json",
    )
    assert first.code == 0, first
    run_id = json.loads(first.out)["run_id"]
    with Store() as store:  # as if it had been interrupted
        store.update(run_id, status="interrupted")
    holder = hold_lock(home() / run_id)
    try:
        result = run_cli("resume", run_id)
    finally:
        holder.kill()
        holder.wait()
    assert result.code == 2, result
    assert result.err.strip().splitlines() == [
        f"zoo: error: run {run_id} is being written by another process (process "
        f"{holder.pid} on {os.uname().nodename})"
    ], result.err


WORKER_CHILD = """
import os, sys, time
from zoo.core.process import die_with_parent
die_with_parent(int(sys.argv[1]))
print(os.getpid(), flush=True)
time.sleep(600)
"""
PARENT = f"""
import subprocess, sys, os, time
child = subprocess.Popen([sys.executable, "-c", {WORKER_CHILD!r}, str(os.getpid())],
                         stdout=subprocess.PIPE, text=True)
print(child.stdout.readline().strip(), flush=True)
time.sleep(600)
"""


def test_a_worker_ends_when_its_driver_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.time() + 10
    while time.time() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), "the worker outlived its driver"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


# -- end to end ----------------------------------------------------------------------
SWEEP_OPTIONS = ["--set", "checkpoint_every=5", "--set", "eval_interval=40", "--jobs", "2"]


def zoo(home_dir: Path, dataset: Path, *extra, popen=False, log_name=None):
    env = {**os.environ, "ZOO_HOME": str(home_dir), "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "zoo", *seed_sweep(dataset, 200, *SWEEP_OPTIONS), *extra]
    if popen:  # output to a file: a pipe would stay open as long as any orphaned worker
        log = open(home_dir.parent / f"{log_name or home_dir.name}.log", "w")
        return subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)


def log_of(home_dir: Path, log_name=None) -> str:
    return (home_dir.parent / f"{log_name or home_dir.name}.log").read_text()


def cells(home_dir: Path) -> dict[int, dict]:
    with Store(home_dir / "zoo.db") as store:
        return {r["seed"]: r for r in store.rows()}


def curve(folder: Path) -> list[dict]:
    return [
        {k: v for k, v in json.loads(line).items() if k not in TIMING}
        for line in (folder / "metrics.jsonl").read_text().splitlines()
    ]


def sweep_workers(driver: int) -> list[int]:
    """The driver's worker processes (Linux /proc; empty elsewhere)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == driver and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return found


def writing_both(home_dir: Path, lines: int) -> bool:
    curves = list(home_dir.glob("*/metrics.jsonl"))
    return len(curves) == 2 and all(len(c.read_text().splitlines()) >= lines for c in curves)


@pytest.mark.slow
def test_driver_sigkill_then_immediate_rerun_finishes_every_cell_bit_identically(
    tiny_text, tmp_path
):
    reference_home, killed_home = tmp_path / "reference", tmp_path / "killed"
    reference = zoo(reference_home, tiny_text, popen=True)  # side by side: one wall clock
    driver = zoo(killed_home, tiny_text, popen=True)
    deadline = time.time() + 120
    while time.time() < deadline and not writing_both(killed_home, 15):
        time.sleep(0.05)
    assert writing_both(killed_home, 15), log_of(killed_home)
    workers = sweep_workers(driver.pid)
    assert len(workers) == 2 or not Path("/proc").is_dir(), workers
    driver.kill()  # the driver alone; its workers must follow it
    driver.wait()
    deadline = time.time() + 2  # at once, not when a worker next writes to the dead driver
    while time.time() < deadline and any(map(_alive, workers)):
        time.sleep(0.02)
    assert not any(map(_alive, workers)), "sweep workers outlived their driver"
    rerun = zoo(killed_home, tiny_text)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming" in rerun.stderr
    assert reference.wait(timeout=300) == 0, log_of(reference_home)

    expected, got = cells(reference_home), cells(killed_home)
    assert sorted(got) == [0, 1]
    for seed, row in got.items():
        assert row["status"] == "finished", row
        mine, theirs = killed_home / row["id"], reference_home / expected[seed]["id"]
        assert (mine / "model.safetensors").read_bytes() == (
            theirs / "model.safetensors"
        ).read_bytes()
        steps = [r["step"] for r in curve(mine) if "train_loss" in r]
        assert steps == list(range(1, 201))  # every step once: none lost, none twice
        assert curve(mine) == curve(theirs)
        assert not writer_alive(mine)


@pytest.mark.slow
def test_two_identical_sweeps_started_together_train_each_cell_once(tiny_text, tmp_path):
    shared = tmp_path / "shared"
    first = zoo(shared, tiny_text, popen=True, log_name="first")
    second = zoo(shared, tiny_text, popen=True, log_name="second")
    codes = [p.wait(timeout=300) for p in (first, second)]
    results = [(None, log_of(shared, name)) for name in ("first", "second")]
    assert codes == [0, 0], results
    with Store(shared / "zoo.db") as store:
        rows = store.rows()
    assert sorted(r["seed"] for r in rows) == [0, 1], [(r["id"], r["seed"]) for r in rows]
    assert {r["status"] for r in rows} == {"finished"}
    assert sum(err.count("not trained again") for _, err in results) >= 1 or any(
        "2 already finished" in err for _, err in results
    )
