"""One Optuna study per model and dataset: ask for settings, train them as an ordinary zoo
run that never reads the test split, tell the study the validation figure.

The study lives in an RDB storage (SQLite under ZOO_HOME by default), named from the model,
dataset and search, so running the same `zoo tune` again continues it. A trial left running
by a process that died (SIGKILL, a lost machine) is marked failed, is not counted, and its
settings are queued again, so no trial is lost or counted twice.

Trials run in this process, in local worker processes (`--jobs N`) or as Ray tasks: the
workers train and report each validation to the study (Optuna's distributed mode over the
shared storage); the driver alone asks, tells and writes zoo's store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from zoo.errors import UnknownNameError, ZooError

log = logging.getLogger(__name__)

PRUNERS = ("median", "halving", "none")
COUNTED = ("COMPLETE", "PRUNED", "FAIL")  # trial states that spend the budget (not lost ones)
LOST = "zoo_lost"  # system attribute of a trial whose process died: queued again, not counted


def default_storage() -> str:
    from zoo.records.store import home

    folder = home() / "tune"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'studies.db'}"


def open_storage(url: str):
    import optuna

    kwargs = {}
    if url.startswith("sqlite"):  # several processes report to one file: wait for its lock
        kwargs = {"connect_args": {"timeout": 60}}
    check_not_zoo_store(url)
    try:
        return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)
    except Exception as exc:  # a bad URL, a driver not installed, a server not reachable
        reason = str(exc).splitlines()[0][:300] if str(exc) else ""
        password = _password(url)
        if password:  # a driver's message may echo the URL whole
            reason = reason.replace(password, "***")
        raise ZooError(
            f"cannot open the study storage {redact(url)!r}: {type(exc).__name__}: {reason}"
        ) from None


def redact(url: str) -> str:
    """A storage URL without its password, for printing anywhere."""
    head, at, tail = url.rpartition("@")
    if not at or "://" not in head:
        return url
    scheme, _, credentials = head.partition("://")
    return f"{scheme}://{credentials.partition(':')[0]}:***@{tail}"


def _password(url: str) -> str | None:
    head, at, _ = url.rpartition("@")
    if not at or "://" not in head:
        return None
    return head.partition("://")[2].partition(":")[2] or None


def check_not_zoo_store(url: str) -> None:
    """Optuna's tables never go into zoo's own store (ZOO_HOME/zoo.db)."""
    import os

    from zoo.records.store import home

    if not url.startswith("sqlite:///"):
        return
    path = url[len("sqlite:///") :].partition("?")[0]
    store = home() / "zoo.db"
    if path and os.path.realpath(path) == os.path.realpath(store):
        raise ZooError(
            f"storage {url}: that is zoo's own store; keep studies elsewhere (by default "
            f"{home() / 'tune' / 'studies.db'})",
            option="storage",
        )


def make_pruner(name: str):
    import optuna

    # Trials report by validation number, not optimizer step: a run that validates by the
    # epoch does so whatever its batch size, so trials are compared after equal passes.
    if name == "median":  # stop a trial below the median of the others at that validation,
        # never at its first one: slow starters get a pass
        return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=2)
    if name == "halving":  # successive halving (the rungs of ASHA)
        return optuna.pruners.SuccessiveHalvingPruner()
    if name == "none":
        return optuna.pruners.NopPruner()
    raise ZooError(f"pruner must be one of {', '.join(PRUNERS)}, not {name!r}", option="pruner")


def make_sampler(name: str, seed: int | None):
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ZooError(f"sampler must be tpe or random, not {name!r}", option="sampler")


def seed_next_draw(study, name: str, seed: int | None) -> None:
    """Seed the sampler for the trial about to be asked from (`seed`, its trial number), so
    a seeded search draws the same settings whether it runs in one go or is continued, and
    a continued one never replays the draws of its first run."""
    import numpy as np

    if seed is None:
        return
    number = len(study.get_trials(deepcopy=False))
    derived = int(np.random.SeedSequence([seed, number]).generate_state(1)[0])
    study.sampler = make_sampler(name, derived)


def same_settings(study, trial):
    """An earlier trial with exactly these settings that finished or was pruned (its
    outcome stands for this one), or None."""
    for earlier in study.get_trials(deepcopy=False):
        done = earlier.state.name in ("COMPLETE", "PRUNED") and not earlier.system_attrs.get(LOST)
        if done and earlier.number != trial.number and earlier.params == trial.params:
            return earlier
    return None


@dataclass
class Objective:
    """The validation figure a study optimises, and the figure the training loop reports
    at each validation (the same, or the task's curve metric going the same way)."""

    name: str  # e.g. val_accuracy
    maximize: bool
    reported: list[str]  # figures of a validation to report, the first one present

    @property
    def direction(self) -> str:
        return "maximize" if self.maximize else "minimize"


def objective_for(task: str, metric: str | None = None) -> Objective:
    """The validation form of the task's headline metric ('test_accuracy' -> 'val_accuracy'),
    or `metric`, which must be a validation figure: trials are chosen on validation only."""
    from zoo.core.names import get_task
    from zoo.tasks import strip_split

    declared = get_task(task)
    if declared is None:
        raise ZooError(f"task {task!r} is declared by no installed plugin")
    name = metric or f"val_{strip_split(declared.primary)}"
    if not name.startswith("val_"):
        raise ZooError(
            f"metric {name}: trials are chosen on validation figures only (val_...), never on test",
            option="metric",
        )
    declared_metric = declared.metric(name)
    if declared_metric is None:
        raise UnknownNameError(f"{task} metric", name, [f"val_{m.name}" for m in declared.metrics])
    maximize = declared_metric.better == "higher"
    keys = [name]
    curve = declared.metric(declared.curve_metric)
    if curve is not None and curve.name != name and (curve.better == "higher") == maximize:
        keys.append(curve.name)  # the loop may log only the curve metric (val_loss)
    return Objective(name, maximize, keys)


class TrialReporter:
    """The training loop's per-validation callback for one trial (zoo.train.loop): reports
    the figure to the study and answers "pruned" when the pruner says so. Plain data, so it
    travels to a worker process or a Ray task; it opens the study there on first use."""

    def __init__(self, storage: str, study: str, trial_id: int, pruner: str, keys: list[str]):
        self.storage, self.study, self.trial_id, self.pruner = storage, study, trial_id, pruner
        self.keys = keys  # the figures to report, the first one found
        self._trial: Any = None

    def __getstate__(self):
        return {**self.__dict__, "_trial": None}

    def __call__(self, step: int, validation: int, figures: dict) -> str | None:
        import optuna

        value = next(
            (figures[k] for k in self.keys if isinstance(figures.get(k), (int, float))), None
        )
        if value is None or not math.isfinite(value):
            return None
        if self._trial is None:
            study = optuna.load_study(
                study_name=self.study,
                storage=open_storage(self.storage),
                pruner=make_pruner(self.pruner),
            )
            self._trial = optuna.Trial(study, self.trial_id)
        self._trial.report(float(value), validation)
        return "pruned" if self._trial.should_prune() else None


@dataclass
class Search:
    """What one `zoo tune` asks for (the command's options, checked)."""

    models: list[str]
    datasets: list[str]
    space: list  # zoo.tuning.space.Dimension
    trials: int | None = None
    time: float | None = None  # seconds of trial time per model and dataset
    seeds: int = 3
    overrides: dict = field(default_factory=dict)
    task: str | None = None
    metric: str | None = None
    pruner: str = "median"
    sampler: str = "tpe"
    seed: int | None = None  # the sampler's seed: the same search draws the same settings
    storage: str | None = None
    study: str | None = None  # a prefix for the study names
    device: str = "auto"
    log_to: list[str] | None = None  # the trackers every trial reports to (None: ZOO_LOG_TO)

    def run_options(self):
        """How every trial and re-run is carried out: on the search's device, quiet, to its
        trackers (zoo.train.job.RunOptions)."""
        from zoo.train.job import RunOptions

        return RunOptions(device=self.device, quiet=True, log_to=self.log_to)

    def study_name(self, model: str, dataset: str, searched: list, fixed: dict) -> str:
        """Named from what defines the search, so the same command continues its study:
        `fixed` is the settings of every trial as the configs hold them (typed, by their
        bare names), so `--set dim=8` and a config file's `dim = 8` name the same study."""
        fixed = {key.rpartition(".")[2]: value for key, value in fixed.items()}
        what = {
            "space": sorted(str(d) for d in searched),
            "overrides": fixed,
            "metric": self.metric,
            "task": self.task,
            "sampler": self.sampler,
        }
        digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode())
        return f"{self.study or 'tune'}-{model}-{dataset}-{digest.hexdigest()[:8]}"


def driver_mark() -> dict:
    from zoo.core.process import process_start_time

    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "proc_start": process_start_time(os.getpid()),
    }


def recover_lost_trials(study, objective: Objective | None = None) -> int:
    """Trials still RUNNING whose driver on this host has died: one whose run was recorded
    finished (the driver died after recording it, before telling the study) is told its
    figure, so it is never trained again; any other is failed, marked lost (not counted),
    and its settings queued again. Returns how many were queued again."""
    import optuna

    from zoo.core.process import process_alive

    host, lost = socket.gethostname(), 0
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        mark = trial.user_attrs.get("driver") or {}
        if mark.get("host") != host or process_alive(mark.get("pid"), mark.get("proc_start")):
            continue
        storage = study._storage
        value = _recorded_figure(trial.user_attrs.get("run_id"), objective)
        if value is not None:
            storage.set_trial_state_values(
                trial._trial_id, optuna.trial.TrialState.COMPLETE, [value]
            )
            log.info(f"    trial {trial.number} had finished before its driver died: kept")
            continue
        storage.set_trial_system_attr(trial._trial_id, LOST, True)
        storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
        study.enqueue_trial(
            trial.params, user_attrs={"retry_of": trial.number}, skip_if_exists=False
        )
        lost += 1
        log.info(
            f"    trial {trial.number} was cut off (its process died); its settings are "
            "queued again"
        )
    return lost


def _recorded_figure(run_id, objective: Objective | None) -> float | None:
    """The objective's figure of a finished run recorded in the store, or None."""
    if not run_id or objective is None:
        return None
    from zoo.records.store import Store

    try:
        with Store() as store:
            row = store.get(run_id)
    except ZooError:  # not recorded (the driver died first), or a store that cannot be read
        return None
    value = (row.get("metrics") or {}).get(objective.name)
    if row.get("id") != run_id or row.get("status") != "finished":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def counted(study) -> list:
    """The trials that spent the budget: finished, pruned or failed, not lost."""
    return [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state.name in COUNTED and not t.system_attrs.get(LOST)
    ]


def trial_seconds(trials) -> float:
    return sum(
        (t.datetime_complete - t.datetime_start).total_seconds()
        for t in trials
        if t.datetime_complete and t.datetime_start
    )


def budget_left(search: Search, study, running: int) -> bool:
    done = counted(study)
    if search.trials is not None and len(done) + running >= search.trials:
        return False
    if search.time is not None and trial_seconds(done) >= search.time:
        return False
    return True


def tell(study, trial, status: str, metrics: dict | None, objective: Objective) -> str:
    """Record a trial's end in the study; returns the state told."""
    import optuna

    state = optuna.trial.TrialState
    value = (metrics or {}).get(objective.name)
    if status == "pruned":
        study.tell(trial, state=state.PRUNED)
        return "PRUNED"
    if status == "finished" and isinstance(value, (int, float)) and math.isfinite(value):
        study.tell(trial, float(value))
        return "COMPLETE"
    study.tell(trial, state=state.FAIL)
    return "FAIL"
