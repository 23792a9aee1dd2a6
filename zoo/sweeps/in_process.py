"""A sweep's cells trained one after another in the driver's own process (no executor):
each cell claimed, resumed or trained anew, and its failure recorded (zoo.sweeps.driver)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from zoo.core.containment import own_interrupts_fail
from zoo.sweeps.cell_stacks import CellStack, next_unit
from zoo.sweeps.cells import (
    Cell,
    Sweep,
    failure_row,
    headline,
    one_line,
    settled_latest,
    should_resume,
)
from zoo.sweeps.home_watch import HomeWatch
from zoo.train.progress import clock

if TYPE_CHECKING:
    from zoo.train.job import RunOptions

log = logging.getLogger(__name__)


def run_in_process(sweep: Sweep, claims, options: RunOptions, *, zoo) -> Sweep:
    from zoo.sweeps.warm import WarmWorker

    kept = WarmWorker.here()  # datasets loaded once for the cells on them (zoo.sweeps.warm)
    waiting = deque(sweep.todo)
    total = len(waiting)
    started = time.time()
    index = 0
    watch = HomeWatch()  # a removed ZOO_HOME stops the sweep
    while waiting:
        watch.check()
        cell = _next_cell(sweep, claims, waiting)
        if cell is None:  # every cell left is another sweep's for now
            time.sleep(0.5)
            continue
        if isinstance(cell, CellStack):  # seeds trained together
            index += len(cell.cells)
            log.info(f"[{index}/{total}] {cell.name} (sweep {clock(time.time() - started)} so far)")
            try:  # as for one cell: an interrupt with no Ctrl-C behind it fails a run only
                with own_interrupts_fail("the cell's code"):
                    _run_stack_here(cell, options, zoo=zoo, group=sweep.id)
            finally:
                for one in cell.cells:
                    claims.release(one)
            continue
        index += 1
        try:
            _say_next(cell, index, total, started)
            _run_cell_here(cell, options, zoo=zoo, group=sweep.id, kept=kept)
        finally:
            claims.release(cell)
    watch.check()  # the last cell's end too
    return sweep


def _next_cell(sweep: Sweep, claims, waiting: deque):
    """The next cell to train here, or with --stack-seeds the cells to train together."""
    if not sweep.stacked:
        return claims.next_cell(waiting, lambda text: log.info(text))
    from zoo.records.store import Store

    def resumes(cell) -> bool:
        with Store() as store:
            return should_resume(settled_latest(store, cell.config_hash))

    return next_unit(claims, waiting, lambda text: log.info(text), resumes)


def _say_next(cell: Cell, index: int, total: int, started: float) -> None:
    """The sweep's line for the cell it trains next: which of how many, and the time left."""
    elapsed = time.time() - started
    eta = ""
    if index > 1:
        eta = f", about {clock(elapsed / (index - 1) * (total - index + 1))} left"
    log.info(f"[{index}/{total}] {cell.name} (sweep {clock(elapsed)} so far{eta})")


def _run_cell_here(cell: Cell, options: RunOptions, *, zoo, group=None, kept=None) -> None:
    """Train one cell in this process and settle it: its run, status and duration, or its
    failure recorded (the sweep goes on)."""
    from zoo.errors import RunDiverged

    began = time.time()
    try:
        # As in a worker, a KeyboardInterrupt that the cell's code raised with no Ctrl-C
        # from the user fails only this cell.
        with own_interrupts_fail("the cell's code"):
            result = _resume_or_execute(cell, options, zoo=zoo, group=group, kept=kept)
    except KeyboardInterrupt:  # the user's Ctrl-C
        raise  # the run is marked interrupted; the next sweep resumes from it
    except Exception as exc:  # one bad cell must not stop the others
        # A diverged run's row already says 'diverged' and keeps its last checkpoints.
        cell.status = "diverged" if isinstance(exc, RunDiverged) else "failed"
        cell.error = one_line(exc)
        cell.duration = time.time() - began
        cell.run_id = _record_failure(cell, began)
        log.info(
            f"    {cell.status} after {clock(cell.duration)}: {cell.error} (run {cell.run_id})"
        )
        return
    cell.run_id, cell.status = result["run_id"], result["status"]
    cell.duration = time.time() - began
    log.info(f"    {cell.status} in {clock(cell.duration)}: {headline(result)} (run {cell.run_id})")


def _run_stack_here(stack: CellStack, options: RunOptions, *, zoo, group=None) -> None:
    """Train seeds together in this process (zoo.train.seed_stack) and settle each cell
    as _run_cell_here settles one."""
    from zoo.errors import RunDiverged, RunInterrupted
    from zoo.sweeps.cell_stacks import new_run_ids
    from zoo.train.seed_stack import train_together

    began = time.time()
    cells = stack.cells
    outcomes = train_together(
        [c.plan for c in cells],
        new_run_ids(len(cells)),
        dataclasses.replace(options, label=cells[0].label),
        zoo=zoo,
        extras=[{"group": group}] * len(cells),
    )
    for cell, (kind, value) in zip(cells, outcomes):
        cell.duration = time.time() - began
        if kind == "result":
            cell.run_id, cell.status = value["run_id"], value["status"]
            log.info(
                f"    {cell.status} {cell.name} in {clock(cell.duration)}: {headline(value)} "
                f"(run {cell.run_id})"
            )
            continue
        if isinstance(value, RunInterrupted):
            cell.status = "interrupted"
        else:
            cell.status = "diverged" if isinstance(value, RunDiverged) else "failed"
        cell.error = one_line(value)
        cell.run_id = _record_failure(cell, began)
        log.info(
            f"    {cell.status} {cell.name} after {clock(cell.duration)}: {cell.error} "
            f"(run {cell.run_id})"
        )


def _resume_or_execute(cell: Cell, options: RunOptions, *, zoo, group=None, kept=None) -> dict:
    """A cell whose latest run can go on (should_resume) continues it from its last
    checkpoint (`zoo resume`); any other cell, or one that cannot be resumed, starts anew."""
    from zoo.core.loading import get_zoo
    from zoo.records.store import Store
    from zoo.sweeps.cells import train_cell
    from zoo.train.resume import ResumeRefused, resume

    with Store() as store:
        latest = settled_latest(store, cell.config_hash)
    if should_resume(latest):
        log.info(f"    resuming {latest['status']} run {latest['id']}")
        cell.resumed = latest["id"]
        try:
            return resume(latest["id"], quiet=options.quiet, zoo=zoo)
        except ResumeRefused as exc:
            cell.resumed = None  # the run stays as it was; the cell starts over
            log.info(f"    {exc}; starting the cell over")
    plan = cell.plan if kept is None else kept.dataset_for(cell.plan, zoo or get_zoo())
    return train_cell(
        plan, dataclasses.replace(options, label=cell.name), zoo=zoo, extra={"group": group}
    )


def _record_failure(cell: Cell, began: float) -> str:
    """The run id holding the failure: the row execute wrote, the run the cell was resuming,
    or a new row with the cell's status when it failed before anything was recorded
    (loading the dataset, say)."""
    from zoo.records.lifecycle import record_ended
    from zoo.records.store import Store
    from zoo.train.starting import new_run_id

    with Store() as store:
        recorded = store.latest(config_hash=cell.config_hash, since=began)
        if recorded is not None:
            return recorded["id"]
        if cell.resumed is not None:  # created before this attempt began: still the cell's
            if store.get(cell.resumed)["status"] == "running":
                store.update(cell.resumed, status=cell.status, error=cell.error)
            return cell.resumed
        run_id = new_run_id()
        status = cell.status or "failed"
        record_ended(store, run_id, status, cell.error, began, row=failure_row(cell))
        return run_id
