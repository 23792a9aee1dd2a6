"""`zoo run ENSEMBLE-PRESET DATASET`: an ensemble preset's members planned, trained (or their
finished runs reused) and combined (zoo.operations.ensemble).

A ``--set`` reaches every member that has the setting and skips the others, so one command
can give a pretrained member its checkpoint (``pretrained`` is a BERT setting, not an LSTM's);
a setting that no member has is refused as any unknown key is, before anything trains.
"""

from __future__ import annotations

import dataclasses
import logging

from zoo.errors import UnknownNameError, ZooError
from zoo.operations.ensemble import Ensemble, ensemble
from zoo.train.job import RunOptions
from zoo.train.plan import PlanChoices

log = logging.getLogger(__name__)


def member_plans(
    members, dataset: str, overrides: dict | None, zoo, choices: PlanChoices | None = None
) -> list:
    """Every member's plan with the same ``choices`` (seed, task, columns) and the overrides
    it took, as (plan, overrides) pairs (see the module docstring)."""
    planned = []
    refused: dict[str, list[UnknownNameError]] = {}
    choices = choices or PlanChoices()
    for member in members:
        planned.append(_member_plan(member, dataset, overrides or {}, zoo, refused, choices))
    used = {key for _, mine in planned for key in mine}
    unused = [key for key in refused if key not in used]
    if unused:  # a typo: the member whose keys come closest says "did you mean"
        errors = refused[unused[0]]
        raise next((e for e in errors if e.suggestions), errors[0])
    for plan, _ in planned:
        if isinstance(plan, ZooError):
            raise plan
    return planned


def _member_plan(member, dataset, overrides: dict, zoo, refused: dict, choices: PlanChoices):
    """(the plan, or the error planning raised; the overrides it took): a key the member does
    not have is left out and its error kept in ``refused``."""
    from zoo.train.plan import plan_run

    mine = dict(overrides)
    while True:
        try:
            return plan_run(member, dataset, overrides=mine, choices=choices, zoo=zoo), mine
        except UnknownNameError as exc:
            key = next((k for k in mine if k.rpartition(".")[2] == exc.name), None)
            if key is None or not exc.kind.endswith("config key"):
                raise
            refused.setdefault(key, []).append(exc)
            del mine[key]
        except ZooError as exc:  # raised once every key is known to be some member's
            return exc, mine


def run_preset(
    name: str,
    dataset: str,
    *,
    overrides: dict | None = None,
    choices: PlanChoices | None = None,
    options: RunOptions | None = None,
    zoo=None,
) -> Ensemble:
    """Every member preset planned (and checked) with the same ``choices`` first, then each
    trained as its own run with the ``options`` (a finished run of the same config is
    reused), then combined with the preset's weights."""
    from zoo.core.loading import get_zoo
    from zoo.records.store import Store
    from zoo.train.plan import config_hash
    from zoo.train.reuse import data_changed
    from zoo.train.runner import execute

    zoo = zoo or get_zoo()
    preset = zoo.catalogue.ensembles[name]
    nested = [m for m in preset.members if m in zoo.catalogue.ensembles]
    if nested:
        raise ZooError(
            f"ensemble preset {name!r} lists ensemble preset {nested[0]!r} among "
            "its members; members are single models"
        )
    plans = member_plans(preset.members, dataset, overrides, zoo, choices)
    options = options or RunOptions()
    quiet = options.quiet
    run_ids: list[str] = []
    read: dict = {}  # each local dataset, as it reads now
    for number, (plan, _) in enumerate(plans, 1):
        with Store() as store:
            done = store.finished_by_hash().get(config_hash(plan, zoo))
        changed = done and data_changed(plan, done, read, zoo)
        if changed:  # its splits are not the data's now: trained again, never reused
            if not quiet:
                log.info(f"{plan.spec.name}: {changed}; training it again")
            done = None
        if done is None:
            label = f"member {number}/{len(plans)} {plan.spec.name}"
            done = execute(
                plan,
                dataclasses.replace(options, label=label),
                zoo=zoo,
                extra={"group": f"ensemble-{name}"},
            )["run_id"]
        elif not quiet:
            log.info(f"{plan.spec.name}: run {done} has this config finished; reused")
        run_ids.append(done)
    return ensemble(
        run_ids,
        weights=preset.weights,
        device=options.device,
        preset=name,
        quiet=quiet,
        zoo=zoo,
    )
