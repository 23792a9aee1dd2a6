"""`zoo sweep`'s driver: trains the planned cells (zoo.sweeps.cells) still to do, in this
process (zoo.sweeps.in_process) or in an executor's workers (the Driver), and alone writes
the store. Cells whose config hash already has a finished run are skipped, so running the
same sweep again resumes it; a cell whose latest run stopped part-way continues from its
last checkpoint. A cell that fails is recorded as failed and the sweep goes on.

In parallel, one design for local worker processes (zoo.sweeps.local) and Ray tasks
(zoo.sweeps.ray_tasks). The driver (the `zoo sweep` or `zoo tune` process) decides each
cell's run id, claims the run it resumes, and alone writes the SQLite store. A worker trains
the cell, writes its run folder under ZOO_HOME (which every node must see), and hands its
store writes back as a journal (zoo.sweeps.worker). A local worker streams the journal as it
goes, so `zoo runs` shows its cell running; a Ray task returns it with the outcome. A worker
that dies (killed, out of memory, its node lost) leaves its cell `failed`; the sweep goes
on, and running it again resumes the cell from its last checkpoint.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from pathlib import Path

from zoo.errors import SweepInterrupted, ZooError
from zoo.records.lifecycle import record_ended
from zoo.records.paths import run_folder
from zoo.records.store import Store, home
from zoo.sweeps.affinity import affinity_key, bring_forward
from zoo.sweeps.cells import Sweep, failure_row, headline, settled_latest, should_resume
from zoo.sweeps.claims import CellClaims
from zoo.sweeps.home_watch import HomeWatch
from zoo.train.job import RunOptions
from zoo.train.progress import clock

log = logging.getLogger(__name__)

RESUMABLE = ("interrupted", "failed")
CLAIM_POLL_SECONDS = 0.5  # how often a sweep looks again at cells another sweep trains


def run_sweep(sweep: Sweep, options: RunOptions, *, zoo=None, executor=None) -> Sweep:
    """Train the cells still to do, each run with the ``options`` (device, progress,
    trackers); a failure is recorded and the next cell starts. With an `executor`
    (zoo.sweeps.executors.make_executor), cells run in its workers and this process records
    them."""
    if executor is not None:
        return executor.run_cells(sweep, options)
    from zoo.sweeps.in_process import run_in_process

    claims = CellClaims()  # each cell locked while it trains here: another sweep skips it
    try:
        return run_in_process(sweep, claims, options, zoo=zoo)
    finally:
        claims.release_all()


def cell_task(
    cell, overrides: dict, options: RunOptions, *, run_id: str, resume: dict | None
) -> dict:
    """A cell as plain data (names, not objects): the worker plans it again and checks that
    its config hash matches the driver's, and runs it on the options' device, reporting to
    their trackers (its own progress is quiet). The executor adds the worker's thread count."""
    env = {k: v for k, v in os.environ.items() if k.startswith("ZOO_")}
    env["ZOO_HOME"] = str(home().resolve())
    return {
        "model": cell.model,
        "dataset": cell.dataset,
        "seed": cell.seed,
        "overrides": {**overrides, **cell.setting},
        "task": cell.plan.task,
        "device": options.device,
        "config_hash": cell.config_hash,
        "stacked": getattr(cell.plan, "stacked", None),  # part of the config hash
        "run_id": run_id,
        "resume": resume,
        "log_to": options.log_to,
        "env": env,
        "cwd": os.getcwd(),
    }


class Executor:
    def fit(self, cells: int) -> None:
        """Use no more workers than there are cells to train."""

    def learn(self, outcome: dict) -> str | None:
        """Hear a cell's outcome (its measured figures); a line to say when the executor
        changes how it runs (--jobs auto)."""
        return None

    def record(self) -> dict | None:
        """How the workers were chosen, recorded with each cell's run (``workers``)."""
        return None

    def run_cells(self, sweep, options: RunOptions):
        """Train the sweep's cells still to do in this executor's workers."""
        return Driver(sweep, self, options).run()


class Driver:
    """Hands cells to an executor, replays the workers' store writes, and records every
    cell's outcome, including those of workers that died."""

    def __init__(self, sweep, executor, options: RunOptions):
        self.sweep, self.executor, self.options = sweep, executor, options
        self.store = Store()
        self.running: dict[int, dict] = {}  # slot -> {cell, task, began, claimed, refused}
        self.claims = CellClaims()  # the cells this sweep trains now, locked against others
        self.last_key: dict[int, tuple] = {}  # slot -> its last cell's data and shapes
        self.home = HomeWatch(self.store.path)  # a removed ZOO_HOME stops the sweep

    def say(self, text: str) -> None:
        log.info(text)

    def run(self):
        todo = deque(self.sweep.todo)
        total, started, finished = len(todo), time.time(), 0
        index = 0
        try:
            self.executor.start()  # a Ray cluster that cannot be reached fails here (exit 2)
            self.executor.fit(total)
            self.say(f"running on {self.executor.describe()}")
            while todo or self.running:
                self.home.check()
                while todo and self.executor.free_slot() is not None:
                    slot = self.executor.free_slot()
                    # cells sharing data and shapes go to the same worker (zoo.sweeps.affinity)
                    taken = {self.last_key[s] for s in self.running if s in self.last_key}
                    bring_forward(todo, self.last_key.get(slot), taken)
                    cell = self.next_cell(todo)
                    if cell is None:  # every cell left is another sweep's for now
                        break
                    together = getattr(cell, "cells", [cell])  # seeds trained together
                    self.last_key[slot] = affinity_key(together[0])
                    index += len(together)
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
                        finished += len(getattr(self.running[slot]["cell"], "cells", [0]))
                        note = self.executor.learn(payload) if kind == "done" else None
                        if note:
                            self.say(note)
                        self.settle(
                            slot,
                            payload if kind == "done" else None,
                            payload if kind == "lost" else None,
                        )
                        self.show_running()
            self.home.check()  # the last cell's end too
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

    def next_cell(self, todo: deque):
        """The next cell to train, or with --stack-seeds the cells to train together."""
        if not self.sweep.stacked:
            return self.claims.next_cell(todo, self.say)
        from zoo.sweeps.cell_stacks import next_unit

        def resumes(cell) -> bool:
            return should_resume(settled_latest(self.store, cell.config_hash))

        return next_unit(self.claims, todo, self.say, resumes)

    def dispatch(self, slot: int, cell) -> str | None:
        """Send a cell to a worker: a new run with an id chosen here, or the cell's latest
        run (claimed here, so no other process resumes it too) to go on with; or seeds
        to train together (zoo.sweeps.cell_stacks)."""
        from zoo.sweeps.cell_stacks import CellStack
        from zoo.train.starting import new_run_id

        if isinstance(cell, CellStack):
            self.dispatch_stack(slot, cell)
            return None

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
            cell, self.sweep.overrides, self.options, run_id=new_run_id(), resume=claimed
        )
        task["extra"] = {"group": self.sweep.id}  # the trackers' group for the sweep's runs
        workers = self.executor.record()
        if workers is not None:
            task["extra"]["workers"] = workers
            task["probe_gpu"] = bool(workers.get("probe"))
        self.executor.submit(slot, task)
        self.running[slot] = {
            "cell": cell,
            "task": task,
            "began": time.time(),
            "claimed": latest if claimed else None,
            "refused": False,
        }
        return note

    def dispatch_stack(self, slot: int, stack) -> None:
        """Send seeds to train together (a CellStack) to one worker: each a new run."""
        from zoo.sweeps.cell_stacks import new_run_ids

        tasks = []
        for cell, run_id in zip(stack.cells, new_run_ids(len(stack.cells))):
            task = cell_task(cell, self.sweep.overrides, self.options, run_id=run_id, resume=None)
            task["extra"] = {"group": self.sweep.id}
            tasks.append(task)
        self.executor.submit(slot, {"stack": tasks})
        self.running[slot] = {"cell": stack, "tasks": tasks, "began": time.time()}

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
        from zoo.sweeps.cell_stacks import per_cell

        for entry, result in per_cell(self.running.pop(slot), outcome):
            try:
                self._settle(entry, slot, result, lost, status)
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
        if lost and not status:  # a worker killed (out of memory, kill -9): said even --quiet
            log.warning(
                f"sweep {self.executor.slot_name(slot)}: {lost} while training {cell.name}; "
                f"run {cell.run_id} is recorded failed, and running the sweep again resumes "
                "it from its last checkpoint"
            )
            return
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
        for run_id in ids:
            try:
                row = self.store.get(run_id)
            except ZooError:
                continue
            if row["status"] == "running":
                record_ended(self.store, run_id, cell.status, cell.error, entry["began"])
            return run_id
        config = _read_config(run_folder(task["run_id"]))
        row = failure_row(cell, config)
        record_ended(self.store, task["run_id"], cell.status, cell.error, entry["began"], row=row)
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
