"""Which cell a free worker takes next: one that shares its data and shapes with the cell
the worker ran last, so what the worker kept (zoo.sweeps.warm) serves again; otherwise one
whose data no other worker is on, so each worker loads as few datasets as it can. Within
those, the plan's order."""

from __future__ import annotations

from collections import deque


def affinity_key(cell) -> tuple:
    """What a worker can reuse between two cells: the dataset as planned and held out, and
    the model's shapes (its preset, model and tokenizer settings). Seeds and training
    settings may differ."""
    plan = cell.plan
    return (
        repr(plan.dataset_ref),
        tuple(plan.held_out),
        plan.spec.name,
        repr(plan.configs.get("model")),
        repr(plan.configs.get("tokenizer")),
    )


def bring_forward(todo: deque, last: tuple | None, taken: set) -> None:
    """Reorder ``todo`` in place: the cells with the worker's ``last`` key first, or else
    those of the first key in ``todo`` that no other worker holds (``taken``)."""
    keys = [affinity_key(cell) for cell in todo]
    wanted: tuple | None
    if last in keys:
        wanted = last
    else:
        wanted = next((key for key in keys if key not in taken), None)
    if wanted is None or keys[0] == wanted and keys.count(wanted) == 1:
        return
    front = [cell for cell, key in zip(todo, keys) if key == wanted]
    rest = [cell for cell, key in zip(todo, keys) if key != wanted]
    todo.clear()
    todo.extend(front + rest)
