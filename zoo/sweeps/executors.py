"""Running a sweep's cells in parallel: worker processes on this machine (`--jobs N`) or
Ray tasks on a cluster (`--executor ray`).

One design for both. The driver (the `zoo sweep` process) decides each cell's run id,
claims the run it resumes, and alone writes the SQLite store. A worker trains the cell,
writes its run folder under ZOO_HOME (which every node must see), and hands its store
writes back as a journal (zoo.sweeps.worker). A local worker streams the journal as it goes, so
`zoo runs` shows its cell running; a Ray task returns it with the outcome. A worker that
dies (killed, out of memory, its node lost) leaves its cell `failed`; the sweep goes on,
and running it again resumes the cell from its last checkpoint.

Neither torch nor ray is imported here at module level: ray only when the Ray executor is
chosen, torch only in the workers.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from multiprocessing.connection import wait as wait_for
from pathlib import Path

from zoo.core.process import (
    THREAD_VARIABLES,
    die_with_parent,
    freeze_gc_before_exit,
    set_threads,
    tune_gc_for_training,
)
from zoo.core.bounds import physical_memory
from zoo.errors import SweepInterrupted, ZooError
from zoo.records.paths import run_folder
from zoo.records.store import Store, home
from zoo.sweeps.claims import CellClaims
from zoo.sweeps.driver import clock, failure_row, headline, settled_latest, should_resume
from zoo.sweeps.worker import one_line, run_cell

RESUMABLE = ("interrupted", "failed")
CLAIM_POLL_SECONDS = 0.5  # how often a sweep looks again at cells another sweep trains


WORKER_MEMORY = 512 * 2**20  # a spawned worker: Python, torch and zoo take about 320 MB


def check_jobs(jobs: int) -> None:
    """Refuse more worker processes than the machine's memory holds, before any starts."""
    memory = physical_memory()
    most = max(1, memory // WORKER_MEMORY) if memory else None
    if most is not None and jobs > most:
        raise ZooError(
            f"--jobs {jobs:,} needs about {jobs * WORKER_MEMORY / 2**30:,.0f} GiB of memory "
            f"for its worker processes alone ({WORKER_MEMORY // 2**20} MiB each), more than "
            f"this machine's {memory / 2**30:.0f} GiB; at most {most:,}"
        )


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# -- what a worker receives ----------------------------------------------------------
def cell_task(cell, overrides: dict, *, device: str, run_id: str, resume: dict | None) -> dict:
    """A cell as plain data (names, not objects): the worker plans it again and checks that
    its config hash matches the driver's. The executor adds the worker's thread count."""
    env = {k: v for k, v in os.environ.items() if k.startswith("ZOO_")}
    env["ZOO_HOME"] = str(home().resolve())
    return {
        "model": cell.model,
        "dataset": cell.dataset,
        "seed": cell.seed,
        "overrides": {**overrides, **cell.setting},
        "task": cell.plan.task,
        "device": device,
        "config_hash": cell.config_hash,
        "run_id": run_id,
        "resume": resume,
        "env": env,
        "cwd": os.getcwd(),
    }


# -- local worker processes ----------------------------------------------------------
def _worker_main(conn, threads: int, driver_pid: int | None = None) -> None:
    """A local worker: cells in, journal operations and outcomes out, until told to stop."""
    if driver_pid is not None:
        die_with_parent(driver_pid)  # never outlive the driver: one writer per run
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
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
        outcome = run_cell(task, send=lambda op: conn.send(("op", op)))
        conn.send(("done", outcome))


class Executor:
    def fit(self, cells: int) -> None:
        """Use no more workers than there are cells to train."""

    def run_cells(self, sweep, *, device: str, out=None):
        """Train the sweep's cells still to do in this executor's workers."""
        return Driver(sweep, self, device=device, out=out or sys.stderr).run()


class ProcessExecutor(Executor):
    """N worker processes (spawned, so torch starts fresh in each with its thread count),
    each training one cell at a time; a worker that dies is replaced."""

    def __init__(self, jobs: int, threads: int | None = None):
        check_jobs(jobs)
        self.jobs, self.fixed_threads = jobs, threads
        self.threads = threads or max(1, available_cores() // jobs)
        self.context = multiprocessing.get_context("spawn")
        self.workers: dict[int, tuple] = {}  # slot -> (process, connection)
        self.busy: set[int] = set()

    def fit(self, cells: int) -> None:
        self.jobs = max(1, min(self.jobs, cells))
        self.threads = self.fixed_threads or max(1, available_cores() // self.jobs)

    def describe(self) -> str:
        return (
            f"{self.jobs} worker process{'es' if self.jobs > 1 else ''}, "
            f"{self.threads} thread(s) each "
            f"({available_cores()} cores)"
        )

    def start(self) -> None:
        pass

    def free_slot(self) -> int | None:
        free = [slot for slot in range(1, self.jobs + 1) if slot not in self.busy]
        return free[0] if free else None

    def slot_name(self, slot: int) -> str:
        process = self.workers.get(slot, (None,))[0]
        return f"worker {slot} (pid {process.pid})" if process is not None else f"worker {slot}"

    def submit(self, slot: int, task: dict) -> None:
        if slot not in self.workers:
            self.workers[slot] = self._spawn()
        task = {**task, "threads": self.threads}
        self.workers[slot][1].send(task)
        self.busy.add(slot)

    def _spawn(self):
        parent, child = self.context.Pipe()
        saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
        os.environ.update({name: str(self.threads) for name in THREAD_VARIABLES})
        try:  # a spawned child starts with the environment as it is now
            process = self.context.Process(
                target=_worker_main,
                args=(child, self.threads, os.getpid()),
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

    def wait(self) -> list[tuple[str, int, object]]:
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


def _exit_reason(code) -> str:
    if code is not None and code < 0:
        try:
            return f"worker died (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"worker died (signal {-code})"
    return f"worker died (exit code {code})"


# -- Ray -----------------------------------------------------------------------------
def zoo_sweep_cell(task: dict) -> dict:
    """A cell as a Ray task (module-level, so workers import it by name)."""
    set_threads(task["threads"])
    return run_cell(task)


class RayExecutor(Executor):
    """Cells as Ray tasks on an existing cluster (`address`), or on a local one started
    here. Each task asks for `cpus` CPUs (its thread count) and `gpus` GPUs; the driver
    keeps as many in flight as the cluster has room for."""

    def __init__(self, address: str | None = None, cpus: int = 1, gpus: float = 0):
        try:
            import ray
        except ImportError:
            raise ZooError(
                "--executor ray needs Ray, an optional extra: "
                'pip install -e ".[ray]" (or pip install ray)'
            ) from None
        self.ray, self.address, self.cpus, self.gpus = ray, address, cpus, gpus
        self.owned = False
        self.refs: dict[object, int] = {}  # object ref -> slot
        self.slots = 1

    def describe(self) -> str:
        where = self.address or "a local Ray cluster"
        return (
            f"Ray tasks on {where}: {self.slots} at a time, {self.cpus} CPU(s)"
            + (f" and {self.gpus} GPU(s)" if self.gpus else "")
            + " each"
        )

    def start(self) -> None:
        ray = self.ray
        if not ray.is_initialized():
            try:
                ray.init(
                    address=self.address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level="warning",
                )
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ZooError(
                    f"cannot connect to the Ray cluster at {self.address}: {one_line(exc)}"
                ) from None
            self.owned = True
        resources = ray.cluster_resources()
        fits = resources.get("CPU", 0) // self.cpus if self.cpus else float("inf")
        if self.gpus:
            fits = min(fits, resources.get("GPU", 0) // self.gpus)
        if fits < 1:
            raise ZooError(
                f"the Ray cluster has {resources.get('CPU', 0):g} CPU(s) and "
                f"{resources.get('GPU', 0):g} GPU(s): no room for a cell asking for "
                f"{self.cpus} CPU(s) and {self.gpus} GPU(s)"
            )
        self.slots = int(min(fits, 1024))
        self.remote = ray.remote(zoo_sweep_cell).options(
            num_cpus=self.cpus, num_gpus=self.gpus, max_retries=0
        )  # the driver records a lost cell

    def free_slot(self) -> int | None:
        used = set(self.refs.values())
        free = [slot for slot in range(1, self.slots + 1) if slot not in used]
        return free[0] if free else None

    def slot_name(self, slot: int) -> str:
        return f"task {slot}"

    def submit(self, slot: int, task: dict) -> None:
        self.refs[self.remote.remote({**task, "threads": max(1, int(self.cpus))})] = slot

    def wait(self) -> list[tuple[str, int, object]]:
        done, _ = self.ray.wait(list(self.refs), num_returns=1)
        events = []
        for ref in done:
            slot = self.refs.pop(ref)
            try:
                outcome = self.ray.get(ref)
            except Exception as exc:  # the worker died, or its node did
                events.append(("lost", slot, f"Ray task lost: {one_line(exc)}"))
                continue
            events.extend(("op", slot, op) for op in outcome.pop("ops"))
            events.append(("done", slot, outcome))
        return events

    def stop(self) -> None:
        for ref in list(self.refs):
            self.ray.cancel(ref, force=True)

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


# -- the driver ----------------------------------------------------------------------
class Driver:
    """Hands cells to an executor, replays the workers' store writes, and records every
    cell's outcome, including those of workers that died."""

    def __init__(self, sweep, executor, *, device: str, out):
        self.sweep, self.executor, self.device, self.out = sweep, executor, device, out
        self.store = Store()
        self.running: dict[int, dict] = {}  # slot -> {cell, task, began, claimed, refused}
        self.claims = CellClaims()  # the cells this sweep trains now, locked against others

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def run(self):
        todo = deque(self.sweep.todo)
        total, started, finished = len(todo), time.time(), 0
        index = 0
        try:
            self.executor.start()  # a Ray cluster that cannot be reached fails here (exit 2)
            self.executor.fit(total)
            self.say(f"running on {self.executor.describe()}")
            while todo or self.running:
                while todo and self.executor.free_slot() is not None:
                    slot = self.executor.free_slot()
                    cell = self.claims.next_cell(todo, self.say)
                    if cell is None:  # every cell left is another sweep's for now
                        break
                    index += 1
                    note = self.dispatch(slot, cell)
                    elapsed = time.time() - started
                    eta = ""
                    if finished:
                        eta = f", about {clock(elapsed / finished * (total - finished))} left"
                    self.say(
                        f"[{index}/{total}] {self.executor.slot_name(slot)}: {cell.name} "
                        f"(sweep {clock(elapsed)} so far{eta})"
                    )
                    if note:
                        self.say(note)
                if not self.running:
                    if todo:
                        time.sleep(CLAIM_POLL_SECONDS)
                    continue
                for kind, slot, payload in self.executor.wait():
                    if kind == "op":
                        self.apply(slot, payload)
                    else:
                        finished += 1
                        self.settle(
                            slot,
                            payload if kind == "done" else None,
                            payload if kind == "lost" else None,
                        )
                        self.show_running()
        except KeyboardInterrupt:
            self.executor.stop()
            for slot in list(self.running):
                self.settle(slot, None, "interrupted (Ctrl-C)", status="interrupted")
            raise SweepInterrupted() from None
        finally:
            self.executor.close()
            self.claims.release_all()
            self.store.close()
        return self.sweep

    def dispatch(self, slot: int, cell) -> str | None:
        """Send a cell to a worker: a new run with an id chosen here, or the cell's latest
        run (claimed here, so no other process resumes it too) to go on with."""
        from zoo.train.runner import new_run_id

        claimed, note = None, None
        latest = settled_latest(self.store, cell.config_hash)
        if should_resume(latest) and self.store.claim(
            latest["id"],
            RESUMABLE,
            error=None,
            finished=None,
            resumed=int(latest.get("resumed") or 0) + 1,
        ):
            claimed = self.store.get(latest["id"])
            note = f"    resuming {latest['status']} run {latest['id']}"
        task = cell_task(
            cell, self.sweep.overrides, device=self.device, run_id=new_run_id(), resume=claimed
        )
        self.executor.submit(slot, task)
        self.running[slot] = {
            "cell": cell,
            "task": task,
            "began": time.time(),
            "claimed": latest if claimed else None,
            "refused": False,
        }
        return note

    def apply(self, slot: int, op) -> None:
        method, run_id, fields = op
        if method == "refused":  # the claimed run cannot resume: give its row back
            self.running[slot]["refused"] = True
            before = self.running[slot]["claimed"]
            self.store.update(
                run_id,
                status=before["status"],
                error=before["error"],
                finished=before["finished"],
                pid=before["pid"],
                proc_start=before["proc_start"],
                resumed=before["resumed"],
            )
            self.say(f"    {fields['error']}; starting the cell over")
            return
        getattr(self.store, method)(run_id, **fields)

    def settle(
        self, slot: int, outcome: dict | None, lost: str | None, status: str | None = None
    ) -> None:
        """Record a cell's end: the worker's outcome, or (`lost`) a worker that died."""
        entry = self.running.pop(slot)
        try:
            self._settle(entry, slot, outcome, lost, status)
        finally:  # the cell's row is written: another sweep may look at it now
            self.claims.release(entry["cell"])

    def _settle(
        self, entry: dict, slot: int, outcome: dict | None, lost: str | None, status: str | None
    ) -> None:
        cell, task = entry["cell"], entry["task"]
        cell.duration = time.time() - entry["began"]
        if outcome is not None and outcome.get("result"):
            result = outcome["result"]
            cell.run_id, cell.status = result["run_id"], result["status"]
            self.say(
                f"    {self.executor.slot_name(slot)}: {cell.status} {cell.name} in "
                f"{clock(cell.duration)}: {headline(result)} (run {cell.run_id})"
            )
            return
        cell.status = status or (outcome["status"] if outcome else "failed")
        cell.error = outcome["error"] if outcome else lost
        cell.run_id = self.record_end(cell, task, entry)
        self.say(
            f"    {self.executor.slot_name(slot)}: {cell.status} {cell.name} after "
            f"{clock(cell.duration)}: {cell.error} (run {cell.run_id})"
        )

    def record_end(self, cell, task: dict, entry: dict) -> str:
        """The run that holds the cell's failure, with that status: the row the worker
        wrote (still 'running' if it died), the claimed run it was resuming, a row made from
        its run folder's config.json, or a new row from the plan when it recorded nothing."""
        ids = [task["run_id"]]
        if task["resume"] and not entry["refused"]:
            ids.append(task["resume"]["id"])
        now = time.time()
        for run_id in ids:
            try:
                row = self.store.get(run_id)
            except ZooError:
                continue
            if row["status"] == "running":
                self.store.update(
                    run_id,
                    status=cell.status,
                    error=cell.error,
                    finished=now,
                    duration=now - entry["began"],
                )
            return run_id
        config = _read_config(run_folder(task["run_id"]))
        self.store.insert(
            task["run_id"],
            **failure_row(cell, config),
            status=cell.status,
            error=cell.error,
            finished=now,
            duration=now - entry["began"],
        )
        return task["run_id"]

    def show_running(self) -> None:
        if self.running:
            names = ", ".join(
                f"{self.executor.slot_name(s)} {e['cell'].name}"
                for s, e in sorted(self.running.items())
            )
            self.say(f"    running: {names}")


def _read_config(folder: Path) -> dict:
    from zoo.io import load_json

    try:
        return load_json(folder / "config.json") if (folder / "config.json").is_file() else {}
    except (ZooError, OSError):
        return {}


def make_executor(
    jobs: int,
    executor: str,
    address: str | None,
    cpus: int | None,
    gpus: float | None,
    device: str = "auto",
):
    """The executor the command line asks for, or None: cells in this process."""
    if executor == "ray":
        if jobs > 1:
            raise ZooError(
                "--jobs is for the local executor; Ray runs as many cells as the "
                "cluster has room for (see --cell-cpus)"
            )
        if gpus is None:  # Ray hides the GPUs from a task that asks for none
            gpus = 1 if device == "cuda" else 0
        return RayExecutor(address, cpus or 1, gpus)
    if address is not None:
        raise ZooError("--address is for --executor ray")
    if cpus is not None or gpus is not None:
        raise ZooError("--cell-cpus and --cell-gpus are for --executor ray")
    if jobs > 1:
        return ProcessExecutor(jobs)
    return None
