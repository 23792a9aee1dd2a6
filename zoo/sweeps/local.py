"""Cells in worker processes on this machine (`--jobs N`): spawned, so torch starts fresh in
each with its thread count; each worker dies with its driver (one writer per run)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from multiprocessing.connection import wait as wait_for
from typing import Any

from zoo.core.limits import physical_memory
from zoo.core.process import (
    THREAD_VARIABLES,
    die_with_parent,
    freeze_gc_before_exit,
    set_threads,
    tune_gc_for_training,
)
from zoo.core.threads import settle_threads
from zoo.errors import ZooError
from zoo.sweeps.driver import Executor
from zoo.sweeps.warm import WarmWorker
from zoo.sweeps.worker import run_cell

WORKER_MEMORY = 512 * 2**20  # a spawned worker: Python, torch and zoo take about 320 MB


def check_jobs(jobs: int) -> None:
    """Refuse more worker processes than the machine's memory holds, before any starts."""
    memory = physical_memory()
    if not memory:  # unknown: nothing to hold the jobs to
        return
    most = max(1, memory // WORKER_MEMORY)
    if jobs > most:
        raise ZooError(
            f"jobs {jobs:,} needs about {jobs * WORKER_MEMORY / 2**30:,.0f} GiB of memory "
            f"for its worker processes alone ({WORKER_MEMORY // 2**20} MiB each), more than "
            f"this machine's {memory / 2**30:.0f} GiB; at most {most:,}",
            option="jobs",
        )


def available_cores() -> int:
    """The CPUs the workers share: those idle among the ones this process may use (or the
    user's --threads/OMP_NUM_THREADS), as the `zoo` program chose for itself."""
    return settle_threads().threads


def stdout_to_stderr() -> None:
    """Whatever a worker prints (a plugin, a library) goes to standard error, descriptor and
    all, so the driver's standard output holds only what the driver writes."""
    sys.stdout.flush()
    try:
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    sys.stdout = sys.stderr


def _worker_main(
    conn, threads: int, driver_pid: int | None = None, spawned: float | None = None
) -> None:
    """A local worker: cells in, journal operations and outcomes out, until told to stop.
    ``spawned`` is when the driver started it (its start-up is its first cell's ``start``)."""
    warm = WarmWorker(None if spawned is None else max(0.0, time.time() - spawned))
    if driver_pid is not None:
        die_with_parent(driver_pid)  # never outlive the driver: one writer per run
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    stdout_to_stderr()  # the driver's standard output is its own (--json): a plugin's print
    tune_gc_for_training()  # as in the `zoo` program: the same torch objects
    set_threads(threads)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            freeze_gc_before_exit()
            return
        outcome = run_cell(task, send=lambda op: conn.send(("op", op)), warm=warm)
        conn.send(("done", outcome))


class ProcessExecutor(Executor):
    """N worker processes (spawned, so torch starts fresh in each with its thread count),
    each training one cell at a time; a worker that dies is replaced. ``jobs="auto"``:
    as many as the GPU (or the cores) take, one thread each (zoo.sweeps.auto_jobs)."""

    def __init__(self, jobs: int | str, threads: int | None = None, device: str = "auto"):
        self.choice: dict | None = None  # what --jobs auto chose, and why
        self.probing = False  # --jobs auto on a GPU: the first cell runs alone and measures
        if jobs == "auto":
            count, threads = self._auto(device), 1
        else:
            count = int(jobs)
        check_jobs(count)
        self.jobs = count
        self.threads = threads or max(1, available_cores() // count)
        self.context = multiprocessing.get_context("spawn")
        self.workers: dict[int, tuple] = {}  # slot -> (process, connection)
        self.busy: set[int] = set()
        self.ended: dict[int, int] = {}  # slot -> the pid of its last worker that died
        self.cells: int | None = None  # cells to train, once known

    def _auto(self, device: str) -> int:
        from zoo.sweeps.auto_jobs import cuda_device_wanted

        cores = available_cores()
        if cuda_device_wanted(device):
            self.probing = True
            return 1
        memory = physical_memory()
        most = memory // WORKER_MEMORY if memory else cores
        self.choice = {"jobs": max(1, min(cores, most)), "bound_by": "cores", "cores": cores}
        return self.choice["jobs"]

    def fit(self, cells: int) -> None:
        # Fewer workers, but each keeps the thread count --jobs gave it: a thread count
        # changes the order of sums, and a rerun resuming one cell must train it as the
        # first run did (bit for bit).
        self.jobs = max(1, min(self.jobs, cells))
        self.cells = cells
        if self.choice and self.choice["jobs"] > self.jobs:
            self.choice = {**self.choice, "jobs": self.jobs, "bound_by": "cells"}

    def learn(self, outcome: dict) -> str | None:
        """After a cell: --jobs auto on a GPU grows to the workers its figures allow."""
        if not (self.probing and outcome.get("gpu")):
            return None
        from zoo.sweeps.auto_jobs import choose_gpu_workers, describe_choice

        memory = physical_memory()
        self.probing = False
        self.jobs, self.choice = choose_gpu_workers(
            outcome["gpu"],
            cores=available_cores(),
            cells=self.cells or 1,
            host_most=max(1, memory // WORKER_MEMORY) if memory else None,
        )
        return describe_choice(self.choice)

    def record(self) -> dict | None:
        if self.probing:
            return {"jobs": "auto", "probe": True}
        return {**self.choice, "chosen_by": "--jobs auto"} if self.choice else None

    def describe(self) -> str:
        if self.probing:
            return (
                "1 worker process, 1 thread, measuring one cell's GPU memory and use first "
                "(--jobs auto)"
            )
        return (
            f"{self.jobs} worker process{'es' if self.jobs > 1 else ''}, "
            f"{self.threads} thread(s) each "
            + (
                f"(--jobs auto: one per idle core; {settle_threads().describe()})"
                if self.choice
                else f"({settle_threads().describe()})"
            )
        )

    def start(self) -> None:
        pass

    def free_slot(self) -> int | None:
        free = [slot for slot in range(1, self.jobs + 1) if slot not in self.busy]
        return free[0] if free else None

    def slot_name(self, slot: int) -> str:
        process = self.workers.get(slot, (None,))[0]
        pid = process.pid if process is not None else self.ended.get(slot)
        return f"worker {slot} (pid {pid})" if pid is not None else f"worker {slot}"

    def submit(self, slot: int, task: dict) -> None:
        if slot not in self.workers:
            self.workers[slot] = self._spawn()
        task = {**task, "threads": self.threads}
        self.workers[slot][1].send(task)
        self.busy.add(slot)

    def _spawn(self):
        # A worker killed while holding a semaphore (kill -9, out of memory) makes Python's
        # resource tracker warn of "leaked semaphore objects" at exit, in its own words;
        # the sweep says what happened in its own line instead. The option reaches the
        # tracker, which starts with this process's warning options, before it first starts.
        if QUIET_TRACKER not in sys.warnoptions:
            sys.warnoptions.append(QUIET_TRACKER)
        parent, child = self.context.Pipe()
        saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
        os.environ.update({name: str(self.threads) for name in THREAD_VARIABLES})
        try:  # a spawned child starts with the environment as it is now
            process = self.context.Process(
                target=_worker_main,
                args=(child, self.threads, os.getpid(), time.time()),
                daemon=True,
                name="zoo-sweep-worker",
            )
            process.start()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        child.close()
        return process, parent

    def wait(self) -> list[tuple[str, int, Any]]:
        """Events from busy workers: ('op', slot, op), ('done', slot, outcome) or
        ('lost', slot, reason) when a worker died without finishing its cell."""
        busy = {slot: self.workers[slot] for slot in self.busy}
        ready = set(
            wait_for([c for _, c in busy.values()] + [p.sentinel for p, _ in busy.values()])
        )
        events = []
        for slot, (process, conn) in busy.items():
            if conn not in ready and process.sentinel not in ready:
                continue
            try:
                while conn.poll():
                    kind, payload = conn.recv()
                    events.append((kind, slot, payload))
                    if kind == "done":
                        self.busy.discard(slot)
                        break
            except (EOFError, OSError):
                pass
            if slot in self.busy and not process.is_alive():
                process.join()
                self.ended[slot] = process.pid  # named in the line that reports it
                events.append(("lost", slot, _exit_reason(process.exitcode)))
                self.busy.discard(slot)
                conn.close()
                del self.workers[slot]
        return events

    def stop(self) -> None:
        """Kill every worker now (Ctrl-C): their cells are recorded as interrupted."""
        for process, _ in self.workers.values():
            if process.is_alive():
                process.kill()

    def close(self) -> None:
        for _process, conn in self.workers.values():
            try:
                conn.send(None)
            except OSError:
                pass
        for process, conn in self.workers.values():
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
            conn.close()
        self.workers.clear()


QUIET_TRACKER = "ignore:resource_tracker:UserWarning"


def _exit_reason(code) -> str:
    if code is not None and code < 0:
        try:
            return f"worker died (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"worker died (signal {-code})"
    return f"worker died (exit code {code})"
