"""One sweep cell in a worker (a local worker process or a Ray task).

The worker plans the cell again from its names, trains it, and writes its run folder under
ZOO_HOME. It never opens the SQLite store: every write `execute` and `resume` would make
goes into a Journal that the driver replays onto the store, so there is one writer however
many workers and machines there are. Heavy modules (torch) are imported only here, after
the thread count is set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time

from zoo.core.containment import no_ctrl_c
from zoo.core.phases import measuring, phase
from zoo.errors import ZooError
from zoo.sweeps.warm import WarmWorker

# What torch's and the BLAS libraries' thread pools read when they start.


class Journal:
    """Stands in for zoo.records.store.Store in a worker: each write becomes an operation
    ``(method, run_id, fields)`` for the driver, sent at once (``send``) or kept in ``ops``
    and returned with the cell's outcome."""

    def __init__(self, send=None):
        self.ops: list[tuple[str, str, dict]] = []
        self.send = send

    def _record(self, method: str, run_id: str, fields: dict) -> None:
        op = (method, run_id, fields)
        if self.send is not None:
            self.send(op)
        else:
            self.ops.append(op)

    def insert(self, run_id: str, **fields) -> None:
        self._record("insert", run_id, fields)

    def update(self, run_id: str, **fields) -> None:
        self._record("update", run_id, fields)

    def refused(self, run_id: str, reason: str) -> None:
        """The claimed run could not be resumed: the driver gives its row back."""
        self._record("refused", run_id, {"error": reason})

    def close(self) -> None:
        pass


def run_cell(task: dict, send=None, warm: WarmWorker | None = None) -> dict:
    """Train one cell (``task`` is plain data, see zoo.sweeps.executors.cell_task) and return its
    outcome: status, error, the run's summary, and the journal of store writes. ``warm`` is
    what the worker kept from its earlier cells (zoo.sweeps.warm); None: nothing."""
    from zoo.errors import RunDiverged

    warm = warm or WarmWorker()
    if "stack" in task:  # seeds trained together (zoo.sweeps.cell_stacks)
        return run_stack(task["stack"], send, warm)
    journal = Journal(send)
    began = time.time()
    outcome = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        # the driver takes Ctrl-C: an interrupt here is the cell's own code
        with no_ctrl_c(), measuring(warm.clock()) as clock, _probed(task, clock) as probe:
            result = _train(task, journal, warm)
        if probe:  # what --jobs auto decides from (zoo.sweeps.auto_jobs)
            outcome["gpu"] = probe
    except RunDiverged as exc:
        outcome.update(status="diverged", error=one_line(exc))
    except (Exception, KeyboardInterrupt) as exc:  # recorded by the driver; the sweep goes on
        outcome.update(status="failed", error=one_line(exc))
    else:
        outcome.update(
            status=result.get("status", "finished"),
            result={k: v for k, v in result.items() if k != "samples"},
        )
    outcome.update(ops=journal.ops, duration=time.time() - began)
    return outcome


def _train(task: dict, journal: Journal, warm: WarmWorker) -> dict:
    from zoo.sweeps.cells import train_cell
    from zoo.train.resume import ResumeRefused, resume

    plan, zoo = _plan(task, warm)
    claimed = task.get("resume")
    if claimed is not None:
        try:
            return resume(claimed["id"], quiet=True, zoo=zoo, claimed=claimed, store=journal)
        except ResumeRefused as exc:
            journal.refused(claimed["id"], str(exc))
    plan = warm.dataset_for(plan, zoo)  # loaded here, or kept from an earlier cell
    # A search trial adds its record (extra) and its per-validation callback (on_validate).
    return train_cell(
        plan,
        _options(task),
        zoo=zoo,
        run_id=task["run_id"],
        store=journal,
        extra=task.get("extra"),
        on_validate=task.get("on_validate"),
    )


def _options(task: dict):
    """How the driver asks its cells to run: on its device, quiet, to its trackers."""
    from zoo.train.job import RunOptions

    return RunOptions(device=task["device"], quiet=True, log_to=task.get("log_to"))


def _plan(task: dict, warm: WarmWorker) -> tuple:
    """The cell's plan, made again here from its names under the driver's settings and
    checked against the driver's config hash; and the zoo it was planned in."""
    warm.import_once()
    from zoo.train.plan import PlanChoices, config_hash, plan_run

    os.environ.update(task["env"])  # the driver's ZOO_HOME, registry and plugin settings
    if task.get("cwd") and os.path.isdir(task["cwd"]):
        os.chdir(task["cwd"])  # dataset paths mean what they meant on the driver
    zoo = warm.zoo(task)  # kept while the settings are the same
    with phase("plan"):
        plan = plan_run(
            task["model"],
            task["dataset"],
            overrides=task["overrides"],
            choices=PlanChoices(
                seed=task["seed"], task=task["task"], held_out=tuple(task.get("held_out") or ())
            ),
            zoo=zoo,
            loaded_cache=warm.planning_cache(),
        )
        if task.get("stacked"):  # seeds trained together: part of the config hash
            plan = dataclasses.replace(plan, stacked=task["stacked"])
        found = config_hash(plan, zoo)
    if found != task["config_hash"]:
        raise ZooError(
            f"this worker plans the cell differently from the driver (config hash "
            f"{found}, not {task['config_hash']}): install the same zoo "
            "and plugins on every node"
        )
    return plan, zoo


def run_stack(tasks: list[dict], send=None, warm: WarmWorker | None = None) -> dict:
    """Train cells that differ only in their seed together (zoo.train.seed_stack) and
    return each one's outcome as run_cell returns one, under ``stack``."""
    from zoo.errors import RunDiverged
    from zoo.train.seed_stack import train_together

    warm = warm or WarmWorker()
    began = time.time()
    journals = [Journal(send) for _ in tasks]
    outcomes = [{"host": socket.gethostname(), "pid": os.getpid()} for _ in tasks]
    plans, failed, zoo = {}, {}, None
    for i, task in enumerate(tasks):
        try:
            plans[i], zoo = _plan(task, warm)
        except Exception as exc:  # recorded by the driver
            failed[i] = exc
    results = []
    if plans:
        first = warm.dataset_for(next(iter(plans.values())), zoo)  # loaded once for all
        with no_ctrl_c():
            results = train_together(
                [dataclasses.replace(p, loaded=first.loaded) for p in plans.values()],
                [tasks[i]["run_id"] for i in plans],
                _options(tasks[0]),
                zoo=zoo,
                stores=[journals[i] for i in plans],
                extras=[tasks[i].get("extra") for i in plans],
            )
    for i, (kind, value) in zip(plans, results):
        if kind == "result":
            outcomes[i].update(
                status=value.get("status", "finished"),
                result={k: v for k, v in value.items() if k != "samples"},
            )
        else:
            failed[i] = value
    for i, error in failed.items():
        status = "diverged" if isinstance(error, RunDiverged) else "failed"
        outcomes[i].update(status=status, error=one_line(error))
    for i, outcome in enumerate(outcomes):
        outcome.update(ops=journals[i].ops, duration=time.time() - began)
    return {"stack": outcomes}


@contextlib.contextmanager
def _probed(task: dict, clock):
    """The GPU's figures for the cell inside, when the driver asks (``probe_gpu``)."""
    if not task.get("probe_gpu"):
        yield {}
        return
    import torch

    if not torch.cuda.is_available():
        yield {}
        return
    from zoo.sweeps.auto_jobs import gpu_probe

    with gpu_probe(clock) as report:
        yield report


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]
