"""`zoo sweep --stack-seeds`: a cell's seeds trained together as one batched model
(zoo.train.stacked), each seed still recorded as its own ordinary run.

A stacked cell is its own configuration: its plan carries ``stacked`` (the most seeds
trained together), which is part of its config hash and of its recorded settings, so a
stacked run never takes the place of a run trained alone (nor the other way round) and
`zoo compare` shows stacked runs in a row of their own (``stacked=K``). What cannot be
stacked is refused before anything trains, in one line.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import logging
import time
from collections import deque
from dataclasses import dataclass

from zoo.errors import ZooError

log = logging.getLogger(__name__)


def stack_size(stack_seeds: int | bool | None, seeds: int) -> int | None:
    """The most seeds trained together: `--stack-seeds K`, or every seed of a cell (True)."""
    if not stack_seeds:
        return None
    if seeds < 2:
        raise ZooError("--stack-seeds trains several seeds together: give --seeds 2 or more")
    if stack_seeds is True:
        return seeds
    if not isinstance(stack_seeds, int) or stack_seeds < 2:
        raise ZooError(f"--stack-seeds must be 2 or more seeds, not {stack_seeds!r}")
    return min(stack_seeds, seeds)


def check_plans(cells, executor) -> None:
    """Refuse, before anything trains, a sweep whose stacked cells cannot be trained
    together: one line naming the reason."""
    if executor is not None and type(executor).__name__ == "RayExecutor":
        raise ZooError("--stack-seeds runs stacks here or in --jobs worker processes, not on Ray")
    probed: dict[str, str | None] = {}
    for cell in cells:
        plan = cell.plan
        if plan is None or not plan.stacked:
            continue
        train = plan.configs["train"]
        for name, why in (
            ("compile", "a compiled step"),
            ("cuda_graph", "a captured CUDA graph"),
        ):
            if getattr(train, name, False):
                raise ZooError(
                    f"--stack-seeds cannot train {cell.label} ({name}=true: {why} is not "
                    f"batched over seeds); leave out --stack-seeds or set {name}=false"
                )
        if getattr(train, "time", None) is not None:
            raise ZooError(
                f"--stack-seeds cannot honour a time budget per seed ({cell.label}); "
                "give --steps instead"
            )
        key = repr((plan.spec.architecture.name, dataclasses.asdict(plan.configs["model"])))
        if key not in probed:
            probed[key] = why_not_batched(plan)
        if probed[key]:
            raise ZooError(f"--stack-seeds cannot train {cell.label}: {probed[key]}")


def why_not_batched(plan) -> str | None:
    """Why the plan's architecture cannot be trained as a batch of seeds, or None: two
    copies built for a small vocabulary take a vmapped forward and backward on the CPU."""
    import torch
    from torch.func import functional_call, stack_module_state, vmap

    from zoo.core.sizes import context_length
    from zoo.train.generators import capture_rng, restore_rng
    from zoo.train.model import TaskSpec

    spec = TaskSpec(plan.task, 32, 2 if plan.task == "classification" else None, 0)
    saved = capture_rng({})
    try:
        try:
            built = [plan.spec.architecture.load()(plan.configs["model"], spec) for _ in range(2)]
        except Exception as exc:
            return f"building it to check failed ({_one_line(exc)})"
        if not all(isinstance(b, torch.nn.Module) for b in built):
            return "it is not a torch module (only torch models train stacked)"
        if getattr(built[0], "fits_training_split", False) is True:
            return "it is fitted on the training split, not trained step by step"
        params, buffers = stack_module_state(built)
        base = copy.deepcopy(built[0]).train()
        length = min(8, context_length(plan.configs["model"]) or 8)
        inputs = torch.randint(1, 32, (2, 2, length))

        def forward(p, b, x, m):
            return functional_call(base, (p, b), (x, m))

        try:
            out = vmap(forward, randomness="different")(
                params, buffers, inputs, torch.ones_like(inputs)
            )
            out.float().sum().backward()
        except Exception as exc:
            return (
                f"its forward cannot be batched over seeds with torch.func.vmap ({_one_line(exc)})"
            )
        return None
    finally:
        restore_rng(*saved, {})


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


# -- which cells train together ------------------------------------------------------------
def group_key(cell) -> tuple | None:
    """Cells with the same key train together: one model, dataset and setting, and seeds
    in the same block of `stacked` (0-7, 8-15, ...)."""
    plan = cell.plan
    if plan is None or not getattr(plan, "stacked", None):
        return None
    setting = tuple(sorted((k, repr(v)) for k, v in cell.setting.items()))
    return (cell.model, cell.dataset, setting, cell.seed // plan.stacked)


@dataclass
class CellStack:
    """Cells of a sweep trained together in one process."""

    cells: list

    @property
    def name(self) -> str:
        first = self.cells[0]
        seeds = ", ".join(str(c.seed) for c in self.cells)
        return f"{first.label} on {first.dataset}, seeds {seeds} (stacked)"


def next_unit(claims, todo: deque, say=None, resumes=None):
    """The next cell to train, or a CellStack of cells that train together: the first cell
    no other process trains, and the todo cells of its stack that can be claimed too (a
    stacked cell left alone still trains through the stack). A stacked cell whose latest
    run goes on from its checkpoint (``resumes(cell)``) is resumed alone, as `zoo resume`
    would."""
    cell = claims.next_cell(todo, say)
    key = None if cell is None else group_key(cell)
    if key is None or (resumes is not None and resumes(cell)):
        return cell
    together = [cell]
    for other in list(todo):
        if group_key(other) != key or (resumes is not None and resumes(other)):
            continue
        claimed = claims.claim(other, say)
        if claimed is not None:  # taken here, or finished by another process meanwhile
            todo.remove(other)
        if claimed:
            together.append(other)
    return CellStack(together)


def dispatch_stack(driver, slot: int, stack: CellStack) -> str | None:
    """Send a CellStack to one of a Driver's (zoo.sweeps.dispatch) workers: each cell a new
    run with an id chosen here."""
    from zoo.sweeps.dispatch import cell_task

    tasks = []
    for cell, run_id in zip(stack.cells, new_run_ids(len(stack.cells))):
        task = cell_task(
            cell, driver.sweep.overrides, device=driver.device, run_id=run_id, resume=None
        )
        task["extra"] = {"group": driver.sweep.id}
        tasks.append(task)
    driver.executor.submit(slot, {"stack": tasks})
    driver.running[slot] = {"cell": stack, "tasks": tasks, "began": time.time()}
    return None


def per_cell(entry: dict, outcome: dict | None):
    """A Driver's running entry and its outcome, cell by cell: a CellStack's cells each
    with its own task and outcome (all lost if its worker died)."""
    if not isinstance(entry["cell"], CellStack):
        return [(entry, outcome)]
    outcomes = (outcome or {}).get("stack") or [None] * len(entry["tasks"])
    return [
        (
            {
                "cell": cell,
                "task": task,
                "began": entry["began"],
                "claimed": None,
                "refused": False,
            },
            one,
        )
        for cell, task, one in zip(entry["cell"].cells, entry["tasks"], outcomes)
    ]


# -- training a stack ----------------------------------------------------------------------
def train_together(plans, run_ids, *, device, quiet, zoo, stores=None, extras=None, label=None):
    """Train plans that differ only in their seed as one stack, each recorded as its own
    run (zoo.train.runner.execute); each run's ("result", summary) or ("error", exception)."""
    from zoo.core.loading import get_zoo
    from zoo.data import datasets as zoo_data
    from zoo.train.runner import execute
    from zoo.train.stacked import SeedStack

    zoo = zoo or get_zoo()
    seeds = [plan.seed for plan in plans]
    first = plans[0]
    if first.loaded is None:  # one dataset for every seed, loaded once
        try:
            dataset = zoo_data.load(
                first.dataset_ref, zoo, quiet=quiet, held_out=tuple(first.held_out)
            )
        except Exception as exc:
            return [("error", exc)] * len(plans)
        plans = [dataclasses.replace(p, loaded=dataset, columns=(None, None)) for p in plans]
    digest = hashlib.sha256(repr(sorted(seeds)).encode()).hexdigest()
    stack = SeedStack(seed=int(digest[:8], 16))
    record = {"seeds": seeds, "runs": list(run_ids)}

    def one(slot):
        return lambda: execute(
            plans[slot],
            device=device,
            quiet=quiet,
            zoo=zoo,
            run_id=run_ids[slot],
            store=None if stores is None else stores[slot],
            extra={**((extras or [{}] * len(plans))[slot] or {}), "stack": record},
            label=None if label is None else f"{label}, seed {plans[slot].seed}",
            stack=stack.slot(slot),
        )

    return stack.turns.run([one(slot) for slot in range(len(plans))])


def run_stack_here(stack: CellStack, *, device, quiet, zoo, group=None) -> None:
    """Train a CellStack in this process (`zoo sweep` without --jobs) and settle each cell
    as zoo.sweeps.driver settles one; a Ctrl-C goes on up once every run is recorded."""
    from zoo.errors import RunDiverged, RunInterrupted
    from zoo.sweeps.driver import _one_line as cell_line
    from zoo.sweeps.driver import _record_failure, clock, headline

    began = time.time()
    cells = stack.cells
    outcomes = train_together(
        [c.plan for c in cells],
        new_run_ids(len(cells)),
        device=device,
        quiet=quiet,
        zoo=zoo,
        extras=[{"group": group}] * len(cells),
        label=cells[0].label,
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
        cell.error = cell_line(value)
        cell.run_id = _record_failure(cell, began)
        log.info(
            f"    {cell.status} {cell.name} after {clock(cell.duration)}: {cell.error} "
            f"(run {cell.run_id})"
        )


def new_run_ids(count: int) -> list[str]:
    """Ids for runs that start together, none the same."""
    from zoo.train.starting import new_run_id

    ids: list[str] = []
    while len(ids) < count:
        run_id = new_run_id()
        if run_id not in ids:
            ids.append(run_id)
    return ids


def plan_cell(task: dict, zoo=None) -> tuple:
    """A stacked cell's plan, made again in a worker from its names under the driver's
    settings (or in ``zoo``, set up so for an earlier cell of the stack), checked against
    the driver's config hash; and the zoo it was planned in."""
    import os

    from zoo.core import loading
    from zoo.train.plan import config_hash, plan_run

    if zoo is None:
        os.environ.update(task["env"])  # the driver's ZOO_HOME, registry and plugin settings
        if task.get("cwd") and os.path.isdir(task["cwd"]):
            os.chdir(task["cwd"])  # dataset paths mean what they meant on the driver
        loading.reset_zoo()  # a reused worker may have built its zoo under other settings
        zoo = loading.get_zoo()
    plan = plan_run(
        task["model"],
        task["dataset"],
        overrides=task["overrides"],
        seed=task["seed"],
        task=task["task"],
        zoo=zoo,
        held_out=tuple(task.get("held_out") or ()),
    )
    plan = dataclasses.replace(plan, stacked=task["stacked"])
    if config_hash(plan, zoo) != task["config_hash"]:
        raise ZooError(
            "this worker plans the cell differently from the driver: install the same zoo "
            "and plugins on every node"
        )
    return plan, zoo


def run_stack_task(task: dict, send=None) -> dict:
    """A worker's part (zoo.sweeps.worker): plan each cell of ``task["stack"]`` again,
    train them together, and return each cell's outcome as run_cell returns one."""
    import os
    import socket

    from zoo.core.containment import no_ctrl_c
    from zoo.errors import RunDiverged
    from zoo.sweeps.worker import Journal, one_line

    tasks = task["stack"]
    began = time.time()
    journals = [Journal(send) for _ in tasks]
    outcomes = [{"host": socket.gethostname(), "pid": os.getpid()} for _ in tasks]
    plans, failed, zoo = [], {}, None
    for i, one in enumerate(tasks):
        try:
            plan, zoo = plan_cell(one, zoo)
        except Exception as exc:  # recorded by the driver
            plan, failed[i] = None, exc
        plans.append(plan)
    todo = [i for i in range(len(tasks)) if i not in failed]
    results = []
    if todo:
        with no_ctrl_c():
            results = train_together(
                [plans[i] for i in todo],
                [tasks[i]["run_id"] for i in todo],
                device=tasks[0]["device"],
                quiet=True,
                zoo=zoo,
                stores=[journals[i] for i in todo],
                extras=[tasks[i].get("extra") for i in todo],
            )
    for i, (kind, value) in zip(todo, results):
        if kind == "result":
            outcomes[i].update(
                status=value.get("status", "finished"),
                result={k: v for k, v in value.items() if k != "samples"},
            )
        else:
            failed[i] = value
    for i, exc in failed.items():
        status = "diverged" if isinstance(exc, RunDiverged) else "failed"
        outcomes[i].update(status=status, error=one_line(exc))
    for i, outcome in enumerate(outcomes):
        outcome.update(ops=journals[i].ops, duration=time.time() - began)
    return {"stack": outcomes}
