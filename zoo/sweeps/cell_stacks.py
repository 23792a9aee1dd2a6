"""`zoo sweep --stack-seeds`: a cell's seeds trained together as one batched model
(zoo.train.seed_stack), each seed still recorded as its own ordinary run.

A stacked cell is its own configuration: its plan carries ``stacked`` (the most seeds
trained together), which is part of its config hash and of its recorded settings, so a
stacked run never takes the place of a run trained alone (nor the other way round) and
`zoo compare` shows stacked runs in a row of their own (``stacked=K``). What cannot be
stacked is refused before anything trains, in one line.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import re
from collections import deque
from dataclasses import dataclass

from zoo.errors import ZooError

log = logging.getLogger(__name__)


def stack_size(stack_seeds: int | bool | None, seeds: int) -> int | None:
    """The most seeds trained together: `--stack-seeds K`, or every seed of a cell (True)."""
    if not stack_seeds:
        return None
    if seeds < 2:
        raise ZooError(
            "stack_seeds trains several seeds together: give 2 or more seeds", option="stack_seeds"
        )
    if stack_seeds is True:
        return seeds
    if not isinstance(stack_seeds, int) or stack_seeds < 2:
        raise ZooError(
            f"stack_seeds must be 2 or more seeds, not {stack_seeds!r}", option="stack_seeds"
        )
    return min(stack_seeds, seeds)


def check_plans(cells, executor) -> None:
    """Refuse, before anything trains, a sweep whose stacked cells cannot be trained
    together: one line naming the reason."""
    if executor is not None and type(executor).__name__ == "RayExecutor":
        raise ZooError(
            "stack_seeds runs stacks here or in local worker processes (jobs), not on Ray",
            option="stack_seeds",
        )
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
                    f"stack_seeds cannot train {cell.label} ({name}=true: {why} is not "
                    f"batched over seeds); leave out stack_seeds or set {name}=false",
                    option="stack_seeds",
                )
        if getattr(train, "time", None) is not None:
            raise ZooError(
                f"stack_seeds cannot honour a time budget per seed ({cell.label}); "
                "give steps instead",
                option="stack_seeds",
            )
        if getattr(train, "freeze", None):
            raise ZooError(
                f"stack_seeds trains every weight ({cell.label} freezes some); "
                "leave out stack_seeds or freeze",
                option="stack_seeds",
            )
        key = repr((plan.spec.architecture.name, dataclasses.asdict(plan.configs["model"])))
        if key not in probed:
            probed[key] = why_not_batched(plan)
        if probed[key]:
            raise ZooError(
                f"stack_seeds cannot train {cell.label}: {probed[key]}", option="stack_seeds"
            )


def why_not_batched(plan) -> str | None:
    """Why the plan's architecture cannot be trained as a batch of seeds, or None: two
    copies built for a small vocabulary take a vmapped forward and backward on the CPU."""
    import torch
    from torch.func import functional_call, stack_module_state, vmap

    from zoo.core.limits import context_length
    from zoo.train.generators import capture_rng, restore_rng
    from zoo.train.model import TaskSpec

    declared = plan.pipeline.task  # its output names num_classes where it has classes
    classes = 2 if declared is not None and "num_classes" in declared.output else None
    spec = TaskSpec(plan.task, 32, classes, 0)
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
        params, _ = stack_module_state(built)
        buffers = dict(built[0].named_buffers())  # shared, as the stacked step shares them
        base = copy.deepcopy(built[0]).train()
        length = min(8, context_length(plan.configs["model"]) or 8)
        inputs = torch.randint(1, 32, (2, 2, length))

        def forward(p, b, x, m):
            return functional_call(base, (p, b), (x, m))

        try:
            out = vmap(forward, in_dims=(0, None, 0, 0), randomness="different")(
                params, buffers, inputs, torch.ones_like(inputs)
            )
            out.float().sum().backward()
        except Exception as exc:
            return f"{_unbatchable(exc)}; train its seeds one at a time (leave out --stack-seeds)"
        return None
    finally:
        restore_rng(saved[0], saved[1], {})


def _unbatchable(exc: BaseException) -> str:
    """Why torch.func.vmap refused the forward, in the user's terms where it is a known kind."""
    text = str(exc)
    if "dynamic shape" in text:  # torch.where, nonzero, boolean masks: sizes set by values
        op = re.search(r"aten::\w+", text)
        return (
            "its forward picks rows by their values (as a router sending tokens to experts "
            f"does{f': {op.group()}' if op else ''}), a shape that differs from seed to seed, "
            "which torch.func.vmap cannot batch"
        )
    return f"its forward cannot be batched over seeds with torch.func.vmap ({_one_line(exc)})"


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


def new_run_ids(count: int) -> list[str]:
    """Ids for runs that start together, none the same."""
    from zoo.train.starting import new_run_id

    ids: list[str] = []
    while len(ids) < count:
        run_id = new_run_id()
        if run_id not in ids:
            ids.append(run_id)
    return ids
