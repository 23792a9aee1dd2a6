"""Training runs that differ only in their seed together: one SeedStack (zoo.train.stacked),
each seed's ordinary run (zoo.train.runner.execute) in a thread of its own, taking turns."""

from __future__ import annotations

import dataclasses
import hashlib


def train_together(plans, run_ids, *, device, quiet, zoo, stores=None, extras=None, label=None):
    """Train ``plans`` (one plan at several seeds) as one stack, each recorded as its own
    run with the id given; ``stores`` and ``extras`` are each run's, as ``execute`` takes
    them. Each run's ("result", summary) or ("error", exception), in order."""
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
    stack = SeedStack(seed=int(digest[:8], 16))  # the batched step's dropout stream
    record = {"seeds": seeds, "runs": list(run_ids)}  # in each run's provenance
    extras = extras or [None] * len(plans)

    def one(slot):
        return lambda: execute(
            plans[slot],
            device=device,
            quiet=quiet,
            zoo=zoo,
            run_id=run_ids[slot],
            store=None if stores is None else stores[slot],
            extra={**(extras[slot] or {}), "stack": record},
            label=None if label is None else f"{label}, seed {plans[slot].seed}",
            stack=stack.slot(slot),
        )

    return stack.turns.run([one(slot) for slot in range(len(plans))])


def train_anew(
    plan, *, device, quiet, zoo, run_id=None, store=None, extra=None, label=None, on_validate=None
):
    """A cell's run started anew (its last run could not be resumed): a plan of seeds
    trained together is trained as a stack of one, so its run is what its configuration
    says (stacked), never a run trained alone; any other plan as ``execute`` trains it
    (``on_validate``: a search trial's callback; trials are never stacked)."""
    from zoo.train.runner import execute
    from zoo.train.starting import new_run_id

    if not plan.stacked:
        return execute(
            plan,
            device=device,
            quiet=quiet,
            zoo=zoo,
            run_id=run_id,
            store=store,
            extra=extra,
            label=label,
            on_validate=on_validate,
        )
    ((kind, value),) = train_together(
        [plan],
        [run_id or new_run_id()],
        device=device,
        quiet=quiet,
        zoo=zoo,
        stores=None if store is None else [store],
        extras=[extra],
        label=label,
    )
    if kind == "error":
        raise value
    return value
