"""Running a study's trials: in this process, or in the sweep executors' workers (local
processes for `--jobs N`, Ray tasks for `--executor ray`).

Each trial is an ordinary zoo run of the model with the trial's settings, planned with the
test split held out (it never reads it), recorded with ``tune = {study, trial}`` in its
config (they do not change the result, so not its config hash). The driver asks the study
for settings, hands the trial to a worker, replays the worker's store writes, and tells the
study the outcome; workers report each validation to the study themselves.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from zoo.errors import SearchInterrupted, ZooError
from zoo.tuning.study import (
    LOST,
    Objective,
    Search,
    TrialReporter,
    budget_left,
    driver_mark,
    same_settings,
    seed_next_draw,
    tell,
)

log = logging.getLogger(__name__)

HELD_OUT = ("test",)
TRIAL_SEED = 0  # every trial's seed; the re-runs after the search use others


def rerun_seeds(count: int) -> list[int]:
    """The seeds the best settings and the preset are re-run at: never the trials' seed, so
    no reported figure is the selected trial again (the winner's curse)."""
    return [TRIAL_SEED + 1 + i for i in range(count)]


@dataclass
class Trial:
    """One asked trial, ready to train."""

    optuna_trial: Any
    cell: Any  # zoo.sweeps.cells.Cell: model, dataset, seed 0, the settings, the plan
    extra: dict  # recorded in the run's config: {"tune": {"study": ..., "trial": ...}}
    reporter: TrialReporter


def ask(
    search: Search,
    study,
    storage: str,
    model: str,
    dataset: str,
    searched: list,
    objective: Objective,
) -> Trial | None:
    """The next trial's settings from the study, planned. None when there is nothing to
    train: settings that cannot run (the trial is told failed, with the reason printed), or
    the settings of an earlier trial (told that trial's outcome)."""
    from zoo.sweeps.cells import Cell
    from zoo.train.plan import PlanChoices, config_hash, plan_run

    seed_next_draw(study, search.sampler, search.seed)
    trial = study.ask({d.key: d.distribution() for d in searched})
    trial.set_user_attr("driver", driver_mark())
    params = dict(trial.params)
    earlier = same_settings(study, trial)
    if earlier is not None:  # the same settings at the same seed: the same run, not retrained
        trial.set_user_attr("same_as", earlier.number)
        trial.set_user_attr("run_id", earlier.user_attrs.get("run_id"))
        if earlier.state.name == "COMPLETE":
            study.tell(trial, earlier.value)
        else:
            study.tell(trial, state=_state("PRUNED"))
        log.info(
            f"    trial {trial.number}: the settings of trial {earlier.number} again; its "
            "outcome stands, nothing trained"
        )
        return None
    cell = Cell(model, dataset, TRIAL_SEED, params)
    try:
        cell.plan = plan_run(
            model,
            dataset,
            overrides={**search.overrides, **params},
            choices=PlanChoices(seed=TRIAL_SEED, task=search.task, held_out=HELD_OUT),
        )
        cell.config_hash = config_hash(cell.plan)
    except ZooError as exc:
        study.tell(trial, state=_state("FAIL"))
        log.info(f"    trial {trial.number} {cell.label}: cannot run: {exc}")
        return None
    extra = {"tune": {"study": study.study_name, "trial": trial.number}}
    reporter = TrialReporter(
        storage, study.study_name, trial._trial_id, search.pruner, objective.reported
    )
    return Trial(trial, cell, extra, reporter)


def _state(name: str):
    import optuna

    return getattr(optuna.trial.TrialState, name)


def requeue(study, trial) -> None:
    """A trial cut off by Ctrl-C: failed, marked lost (not counted), its settings queued."""
    study._storage.set_trial_system_attr(trial._trial_id, LOST, True)
    study.tell(trial, state=_state("FAIL"))
    study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number})


def say_outcome(
    trial: Trial,
    status: str,
    told: str,
    metrics: dict | None,
    objective: Objective,
    run_id: str | None,
    seconds: float,
) -> None:
    value = (metrics or {}).get(objective.name)
    figure = f"{objective.name} {value:.4f}" if isinstance(value, float) else ""
    step = (metrics or {}).get("stopped_step")
    where = f" at step {step}" if status == "pruned" and step is not None else ""
    log.info(
        f"    trial {trial.optuna_trial.number} {trial.cell.label}: {status}{where} in "
        f"{seconds:.0f}s {figure} (run {run_id})".replace("  (", " (")
    )


def run_here(search: Search, study, storage, model, dataset, searched, objective) -> None:
    """Trials one at a time in this process."""
    from zoo.errors import RunDiverged
    from zoo.sweeps.cells import one_line
    from zoo.train.runner import execute
    from zoo.train.starting import new_run_id

    while budget_left(search, study, 0):
        trial = ask(search, study, storage, model, dataset, searched, objective)
        if trial is None:
            continue
        run_id, began, metrics = new_run_id(), time.time(), None
        trial.optuna_trial.set_user_attr("run_id", run_id)
        try:
            result = execute(
                trial.cell.plan,
                search.run_options(),
                run_id=run_id,
                extra=trial.extra,
                on_validate=trial.reporter,
            )
            status, metrics = result["status"], result["metrics"]
        except KeyboardInterrupt:
            requeue(study, trial.optuna_trial)
            raise SearchInterrupted() from None
        except RunDiverged:
            status = "diverged"
        except Exception as exc:  # one bad trial must not stop the search
            status = "failed"
            log.info(f"    trial {trial.optuna_trial.number}: {one_line(exc)}")
        told = tell(study, trial.optuna_trial, status, metrics, objective)
        say_outcome(trial, status, told, metrics, objective, run_id, time.time() - began)


class TrialDriver:
    """Trials in an executor's workers (zoo.sweeps.driver): the sweep driver's store
    replay and failure records, with trials asked of and told to the study."""

    def __init__(self, executor, search: Search):
        from zoo.sweeps.driver import Driver

        # the sweep driver records each cell's run; its 'sweep' is only the shared --set
        self.driver = Driver(
            SimpleNamespace(overrides=search.overrides), executor, search.run_options()
        )
        self.executor, self.search = executor, search
        self.started = False

    def run(self, study, storage, model, dataset, searched, objective) -> None:
        from zoo.sweeps.driver import cell_task
        from zoo.train.starting import new_run_id

        if not self.started:
            self.executor.start()  # an unreachable Ray cluster fails here (exit 2)
            log.info(f"    trials run on {self.executor.describe()}")
            self.started = True
        driver = self.driver
        pending: dict = {}  # slot -> Trial
        try:
            while True:
                while self.executor.free_slot() is not None and budget_left(
                    self.search, study, len(pending)
                ):
                    trial = ask(self.search, study, storage, model, dataset, searched, objective)
                    if trial is None:
                        continue
                    slot = self.executor.free_slot()
                    task = cell_task(
                        trial.cell,
                        self.search.overrides,
                        self.driver.options,
                        run_id=new_run_id(),
                        resume=None,
                    )
                    task.update(
                        held_out=list(HELD_OUT), extra=trial.extra, on_validate=trial.reporter
                    )
                    trial.optuna_trial.set_user_attr("run_id", task["run_id"])
                    self.executor.submit(slot, task)
                    driver.running[slot] = {
                        "cell": trial.cell,
                        "task": task,
                        "began": time.time(),
                        "claimed": None,
                        "refused": False,
                    }
                    pending[slot] = trial
                    log.info(
                        f"    trial {trial.optuna_trial.number} on "
                        f"{self.executor.slot_name(slot)}: {trial.cell.label}"
                    )
                if not pending:
                    return
                for kind, slot, payload in self.executor.wait():
                    if kind == "op":
                        driver.apply(slot, payload)
                        continue
                    trial, began = pending.pop(slot), driver.running[slot]["began"]
                    result = (payload or {}).get("result") if kind == "done" else None
                    driver.settle(
                        slot,
                        payload if kind == "done" else None,
                        payload if kind == "lost" else None,
                    )
                    cell = trial.cell
                    told = tell(
                        study,
                        trial.optuna_trial,
                        cell.status,
                        result and result.get("metrics"),
                        objective,
                    )
                    say_outcome(
                        trial,
                        cell.status,
                        told,
                        result and result.get("metrics"),
                        objective,
                        cell.run_id,
                        time.time() - began,
                    )
        except KeyboardInterrupt:
            self.executor.stop()
            for slot, trial in pending.items():
                driver.settle(slot, None, "interrupted (Ctrl-C)", status="interrupted")
                requeue(study, trial.optuna_trial)
            raise SearchInterrupted() from None

    def close(self) -> None:
        self.executor.close()
        self.driver.store.close()
