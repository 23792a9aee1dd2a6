"""The API's commands that train or use trained runs: run, resume, reproduce, load, evaluate,
sweep, ensemble and tune (see ``zoo.api``)."""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.core.limits import DEVICES, check_seed, positive_argument
from zoo.errors import ZooDeprecationWarning, ZooError
from zoo.messages import reporting_to
from zoo.results import Reproduction, Run, SweepResult, TuneResult

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from zoo.comparison.table import ComparisonSpec
    from zoo.operations.ensemble import Ensemble
    from zoo.operations.evaluate import Evaluation
    from zoo.operations.reload import LoadedRun
    from zoo.sweeps.executors import Workers


def run(  # noqa: PLR0913 -- `zoo run`'s options, keyword-only
    model: str,
    dataset: str,
    *,
    steps: int | None = None,
    time: float | None = None,
    seed: int = 0,
    device: str = "auto",
    task: str | None = None,
    text_column: str | None = None,
    label_column: str | None = None,
    quiet: bool = False,
    log_to: str | list[str] | None = None,
    log_every: int | float | str | None = None,
    init: str | None = None,
    settings: dict | None = None,
    **more_settings,
) -> Run:
    """Train and evaluate MODEL on DATASET and record the run (`zoo run`). Config settings
    are keyword arguments (``n_layer=2``) or a ``settings`` dict, as ``--set`` takes them;
    the dict also holds keys that are named like this function's own arguments. For an
    ensemble preset, each member is trained (or its finished run reused) and their ensemble
    is recorded: the Run is the ensemble's row, its ``ensemble`` the runs combined. `log_to`
    names trackers (``"tensorboard,mlflow"``; default ZOO_LOG_TO) that also get its figures.
    ``init`` names a finished run whose tokenizer and matching weights it starts from
    (`--init`). When the output is not a terminal, a progress line comes every
    ``log_every`` steps (``50``) or seconds (``"30s"``; default: about ten a run, at least
    every 30 s, and one per validation); ``quiet`` prints no progress."""
    from zoo.core.loading import get_zoo
    from zoo.train import distributed
    from zoo.train.job import RunOptions
    from zoo.train.plan import PlanChoices, plan_run
    from zoo.train.progress import parse_log_every
    from zoo.train.runner import execute

    check_device(device)
    overrides = _overrides({**(settings or {}), **more_settings}, steps, time)
    try:
        every = parse_log_every(log_every)
        options = RunOptions(device=device, quiet=quiet, log_to=log_to, log_every=every)
    except ValueError as exc:
        raise ZooError(str(exc)) from None
    choices = PlanChoices(seed=seed, task=task, text_column=text_column, label_column=label_column)
    if model in get_zoo().catalogue.ensembles:
        from zoo.operations.ensemble_preset import run_preset

        combined = run_preset(model, dataset, overrides=overrides, choices=choices, options=options)
        return Run.of_ensemble(combined, seed)
    plan = plan_run(model, dataset, overrides=overrides, choices=choices, init=init)
    try:
        with reporting_to(None, progress=not quiet):
            result = execute(plan, options)
    finally:
        distributed.teardown()  # under torchrun: leave the process group cleanly
    return Run.from_result(result)


def resume(run_id: str, *, quiet: bool = False) -> Run:
    """Continue an interrupted run from its newest good checkpoint (`zoo resume`)."""
    from zoo.train.resume import resume as resume_run

    with reporting_to(None, progress=not quiet):
        return Run.from_result(resume_run(run_id, quiet=quiet))


def reproduce(run_id: str, *, device: str | None = None, quiet: bool = False) -> Reproduction:
    """Train a run's recorded config again and compare every metric (`zoo reproduce`): a
    ``zoo.Reproduction`` with ``match``, ``run_id``, ``rerun_id`` and one line per metric."""
    from zoo.operations.reproduce import reproduce as reproduce_run

    if device is not None:
        check_device(device)
    with reporting_to(None, progress=not quiet):
        return Reproduction(**reproduce_run(run_id, device=device, quiet=quiet))


def load(run_id: str, *, device: str = "auto") -> LoadedRun:
    """A finished run (an id or a unique prefix of one), ready to predict, generate and
    evaluate with, on `device` (auto: CUDA when present)."""
    from zoo.operations.reload import load_trained

    return load_trained(run_id, device=device)


def evaluate(
    run_id: str,
    dataset: str,
    split: str = "test",
    *,
    text_column: str | None = None,
    label_column: str | None = None,
    device: str = "auto",
) -> Evaluation:
    """Score a finished run on a split of any dataset and record it as an evaluation row
    linked to the run (`zoo eval`)."""
    from zoo.operations.evaluate import Evaluation
    from zoo.operations.reload import load_trained

    trained = load_trained(run_id, device=device)
    return Evaluation.record(
        trained, dataset, split, text_column=text_column, label_column=label_column
    )


def sweep(  # noqa: PLR0913 -- `zoo sweep`'s run settings, keyword-only; still 18 with
    # the comparison's and the workers' options grouped into `compare` and `workers`
    models: str | list[str],
    on: str | list[str],
    *,
    seeds: int | str = 1,
    max_seeds: int | None = None,
    steps: int | None = None,
    time: float | None = None,
    task: str | None = None,
    device: str = "auto",
    progress: bool = True,
    quiet: bool = True,
    grid: dict[str, list] | list[str] | None = None,
    workers: Workers | None = None,
    compare: ComparisonSpec | None = None,
    dry_run: bool = False,
    stack_seeds: int | bool = False,
    log_to: str | list[str] | None = None,
    log=None,
    settings: dict | None = None,
    **more_settings,
) -> SweepResult:
    """Train every model x dataset x seed cell not finished before (`zoo sweep`); a cell
    that fails is recorded as failed and the sweep goes on. The options mean what the
    command's options of the same names mean.

    ``workers`` is where the cells train: a ``zoo.Workers`` (``zoo.Workers(jobs=4)``,
    ``jobs="auto"``, or ``zoo.Workers(executor="ray", cpus=2)``; default: one cell at a time
    in this process). ``compare`` is how the sweep's own runs are compared once trained: a
    ``zoo.ComparisonSpec`` (``zoo.ComparisonSpec(metric="val_bpc", baseline="decoder-char")``;
    its ``examples=False`` is ``--seeds-only``; never evaluations). `progress` prints the plan, a line per cell and a summary on `log` (default stderr);
    `quiet=False` adds each run's own progress. `grid={"n_layer": [1, 2]}` sweeps a setting
    too (the command's ``"KEY=V1,V2"`` texts are taken too); `dry_run` plans and trains
    nothing. `stack_seeds` trains up to that many seeds of a cell as one batched model
    (True: all), each its own run. `log_to` and settings are as for `run`. ``seeds="auto"`` starts every row with 2 seeds and gives one more to the
    rows still tied with their column's leader, look by look, until it is told apart or
    they have ``max_seeds`` (default 10) (zoo.sweeps.until_answered)."""
    from zoo.sweeps import report
    from zoo.train.job import RunOptions

    more_settings = dict(more_settings)  # the deprecated keywords are taken out of it
    workers = _grouped(more_settings, workers, SWEEP_WORKER_KEYWORDS, "sweep", "workers")
    spec = _grouped(more_settings, compare, COMPARE_KEYWORDS, "sweep", "compare")
    check_device(device)
    if spec.evals:
        raise ZooError("a sweep compares the runs it trains, not evaluations", option="compare")
    with reporting_to(log, progress=progress):
        if workers.jobs != "auto":
            jobs = positive_argument("jobs", workers.jobs, int)
            workers = dataclasses.replace(workers, jobs=jobs)
        executor = workers.start(device)  # made before planning: a missing Ray fails now
        first, most = _seed_budget(seeds, max_seeds, stack_seeds)
        plan = _sweep_plan(
            models,
            on,
            seeds=first,
            overrides=_overrides({**(settings or {}), **more_settings}, steps, time),
            task=task,
            grid=grid,
            stack_seeds=stack_seeds,
            workers=executor,
        )
        options = RunOptions(device=device, quiet=quiet, log_to=_trackers(log_to))
        _check_sweep_comparison(plan, spec.metric, spec.better, spec.baseline)  # dry runs too
        if most is not None:  # a dry run says it too
            logger.info(UNTIL_ANSWERED.format(most=most))
        if dry_run:
            return SweepResult(report.records(plan), None)
        return _train_and_compare(plan, executor, most, options, spec)


# The keywords `zoo.sweep` and `zoo.tune` took before `workers` and `compare` grouped them,
# each with its field there; deprecated, they keep working until zoo 0.2.
WORKER_KEYWORDS = {"jobs": "jobs", "executor": "executor", "address": "address"}
SWEEP_WORKER_KEYWORDS = {**WORKER_KEYWORDS, "cell_cpus": "cpus", "cell_gpus": "gpus"}
TUNE_WORKER_KEYWORDS = {**WORKER_KEYWORDS, "trial_cpus": "cpus", "trial_gpus": "gpus"}
COMPARE_KEYWORDS = {
    name: name for name in ("metric", "by", "columns", "baseline", "better", "pool", "examples")
}


def _grouped(given: dict, group, keywords: dict[str, str], function: str, argument: str):
    """``group`` (a ``Workers`` or ``ComparisonSpec``; None: the defaults) with the
    deprecated ``keywords`` found in ``given`` moved onto its fields, warning once that
    names the replacement. ``given`` is the function's ``**settings`` catch-all: this
    compatibility path is the one place it takes anything but config settings, and a name
    neither a keyword nor a setting is refused there as an unknown setting."""
    from zoo.comparison.table import ComparisonSpec
    from zoo.sweeps.executors import Workers

    kind = Workers if argument == "workers" else ComparisonSpec
    group = kind() if group is None else group
    old = {name: given.pop(name) for name in list(given) if name in keywords}
    if not old:
        return group
    fields = ", ".join(f"{keywords[name]}=..." for name in old)
    warnings.warn(
        f"zoo.{function}({', '.join(old)}=...) is deprecated and goes in zoo 0.2: pass "
        f"{argument}=zoo.{kind.__name__}({fields})",
        ZooDeprecationWarning,
        stacklevel=3,
    )
    return dataclasses.replace(group, **{keywords[name]: value for name, value in old.items()})


UNTIL_ANSWERED = (
    "seeds until answered: then one more seed at a time, up to {most}, for each column's "
    "leader and the rows still tied with it"
)


def _train_and_compare(plan, workers, most, options, spec) -> SweepResult:
    """Train the plan's cells with the run ``options`` and compare the sweep's runs as
    ``spec`` says (no comparison when nothing finished); with ``most``, seeds until
    answered: more seeds for the rows still tied, up to ``most``."""
    from zoo.sweeps import driver, report

    def train() -> None:
        driver.run_sweep(plan, options, executor=workers)

    def compare(level: float = spec.level):
        if not any(c.status == "finished" or c.done for c in plan.cells):
            return None
        return report.table(plan, dataclasses.replace(spec, level=level))

    if most is None:
        train()
        table = compare()
    else:
        from zoo.sweeps.until_answered import run_until_answered

        table = run_until_answered(
            plan, most=most, level=spec.level, train=train, compare=compare, say=logger.info
        )
    logger.info(report.summary(plan))
    frame = None if table is None else report.comparison_frame(plan, table.cells)
    return SweepResult(report.records(plan), table, frame)


def _sweep_plan(models, on, *, seeds, overrides, task, grid, stack_seeds, workers):
    """The sweep's cells, planned and described on the log; a sweep none of whose cells can
    run is refused, and so is a cell that cannot train stacked (before anything trains)."""
    from zoo.sweeps import cells, report
    from zoo.sweeps.grid import parse_grid

    if isinstance(grid, dict):  # as the command's KEY=V1,V2 texts, checked and labelled alike
        grid = [f"{key}={','.join(str(v) for v in values)}" for key, values in grid.items()]
    plan = cells.plan_sweep(
        [models] if isinstance(models, str) else list(models),
        [on] if isinstance(on, str) else list(on),
        seeds=positive_argument("seeds", seeds, int),
        overrides=overrides,
        task=task,
        grid=parse_grid(grid),
        stack_seeds=stack_seeds,
    )
    if plan.stacked:
        from zoo.sweeps.cell_stacks import check_plans

        check_plans(plan.todo, workers)
    for line in cells.describe_plan(plan):
        logger.info(line)
    if not plan.todo and not plan.finished_before:
        raise ZooError(f"no cell of the sweep can run ({report.unrunnable(plan)})")
    return plan


def _check_sweep_comparison(plan, metric, better, baseline) -> None:
    """The comparison's options, checked before anything trains: the baseline is one of
    the sweep's models, the metric one its tasks record."""
    from zoo.errors import UnknownNameError
    from zoo.sweeps import report

    if baseline is not None and baseline.split(" (")[0] not in plan.models:
        raise UnknownNameError(
            "baseline model", baseline, plan.models, hint="it must be one of the sweep's models"
        )
    report.check_comparison(plan, metric, better)


def check_device(device: str) -> None:
    if device not in DEVICES:
        raise ZooError(f"device must be {', '.join(DEVICES)}, not {device!r}", option="device")


def _seed_budget(seeds, max_seeds, stack_seeds) -> tuple[int, int | None]:
    """(seeds to plan first, the most seeds a row may get: None for a fixed number)."""
    from zoo.sweeps.until_answered import DEFAULT_MOST, START

    if seeds != "auto":
        if max_seeds is not None:
            raise ZooError("max_seeds goes with seeds='auto'", option="max_seeds")
        return positive_argument("seeds", seeds, int), None
    most = positive_argument("max_seeds", DEFAULT_MOST if max_seeds is None else max_seeds, int)
    if most < START:
        raise ZooError(
            f"max_seeds must be at least {START} (a test needs 2 seeds a row), got {most}",
            option="max_seeds",
        )
    if stack_seeds:
        raise ZooError(
            "stack_seeds trains a fixed number of seeds together, and seeds='auto' adds "
            "them one look at a time: choose one",
            option="stack_seeds",
        )
    return START, most


def ensemble(runs: Iterable[str], *, weights: str = "equal", device: str = "auto") -> Ensemble:
    """Combine finished runs of one task and dataset (ids or unique prefixes): average their
    class probabilities, with equal weights or weights fitted on the validation split
    (``weights="fit"``), score validation and test, and record the ensemble as a row of its
    own (`zoo ensemble`). Returns a ``zoo.Ensemble``: its id, name, the runs with their
    weights, and its metrics."""
    from zoo.operations.ensemble import ensemble as combine

    check_device(device)
    runs = [runs] if isinstance(runs, str) else list(runs)
    return combine(runs, weights=weights, device=device)


def tune(  # noqa: PLR0913 -- `zoo tune`'s search settings, keyword-only; still 19 with
    # the workers' options grouped into `workers`
    models: str | list[str],
    on: str | list[str],
    *,
    space,
    trials: int | None = None,
    time: float | None = None,
    seeds: int = 3,
    steps: int | None = None,
    pruner: str = "median",
    sampler: str = "tpe",
    sampler_seed: int | None = None,
    storage: str | None = None,
    study: str | None = None,
    metric: str | None = None,
    task: str | None = None,
    device: str = "auto",
    workers: Workers | None = None,
    plot: str | Path | None = None,
    progress: bool = True,
    log_to: str | list[str] | None = None,
    **settings,
) -> TuneResult:
    """Search each model's settings under the same budget, then compare them (`zoo tune`).

    ``space`` is the command's --space text (``"lr=log(1e-4,1e-2) n_layer=int(1,4)"``), a
    list of such texts, or a dict ``{"lr": "log(1e-4,1e-2)"}``. The budget per model and
    dataset is ``trials`` or ``time`` (seconds of trial time: here ``time`` is the search's
    budget, not a run's; a trial's own is ``**{"train.time": 30}``). ``steps`` and
    ``settings`` apply to every trial and re-run, as ``--steps`` and ``--set`` do; ``log_to``
    names the trackers every trial and re-run reports to, as for `run`. ``workers`` is
    where the trials train, a ``zoo.Workers`` as for `sweep` (its ``jobs`` a number). The
    other options mean what the command's options of the same names mean.
    """
    from zoo.home import check_name_part
    from zoo.tuning.report import budget_text, preset_snippet, table
    from zoo.tuning.search import run_search
    from zoo.tuning.space import parse_space
    from zoo.tuning.study import Search

    settings = dict(settings)  # the deprecated keywords are taken out of it
    workers = _grouped(settings, workers, TUNE_WORKER_KEYWORDS, "tune", "workers")
    check_device(device)
    if (trials is None) == (time is None):
        raise ZooError("give one budget per model: trials=N or time=SECONDS")
    search = Search(
        [models] if isinstance(models, str) else list(models),
        [on] if isinstance(on, str) else list(on),
        parse_space(space),
        trials=None if trials is None else positive_argument("trials", trials, int),
        time=None if time is None else positive_argument("time", time, float),
        seeds=positive_argument("seeds", seeds, int),
        overrides=_overrides(settings, steps, None),
        task=task,
        metric=metric,
        pruner=pruner,
        sampler=sampler,
        seed=None if sampler_seed is None else check_seed(sampler_seed, "sampler seed"),
        storage=storage,
        study=None if study is None else check_name_part(study, "study"),
        device=device,
        log_to=_trackers(log_to),
    )
    _check_search(search, plot)
    workers = dataclasses.replace(workers, jobs=positive_argument("jobs", workers.jobs, int))
    workers.start(device)  # its options checked now

    def executors():
        return workers.start(device)

    with reporting_to(None, progress=progress):
        results = run_search(search, make_executor=executors, plot_dir=plot)
    budget = budget_text(trials, time)
    presets = "\n\n".join(preset_snippet(r) for r in results if r.best)
    return TuneResult([r.record() for r in results], table(results, budget), presets)


def _check_search(search, plot) -> None:
    """What a search would write, checked before it starts: its plots' folder, and the
    cells its re-runs train."""
    from zoo.atomic_folders import check_output_folder
    from zoo.home import zoo_home
    from zoo.sweeps.cells import MAX_CELLS

    if plot is not None:  # ZOO_HOME/tune is where they go by default
        check_output_folder(plot, "write plots into", allowed=[zoo_home() / "tune"])
    reruns = 2 * search.seeds * len(search.models) * len(search.datasets)  # tuned and preset
    if reruns > MAX_CELLS:
        raise ZooError(
            f"seeds={search.seeds:,} re-runs {reruns:,} cells after the search (each model's "
            f"best settings and its preset, per dataset and seed); at most {MAX_CELLS:,}",
            option="seeds",
        )


def _overrides(settings: dict, steps, time) -> dict:
    """--set values, with --steps and --time as the command adds them."""
    overrides = dict(settings)
    if steps is not None and time is not None:
        raise ZooError("give steps or time, not both")
    if steps is not None:
        overrides["train.steps"] = positive_argument("steps", steps, int)
    if time is not None:
        overrides["train.time"] = positive_argument("time", time, float)
    return overrides


def _trackers(log_to) -> list[str] | None:
    """The trackers named (an unknown one refused with a did-you-mean before anything
    trains); None leaves each run to ZOO_LOG_TO."""
    if log_to is None:
        return None
    from zoo.core.loading import get_zoo
    from zoo.train.tracking import check, chosen

    names = chosen(log_to)
    check(names, get_zoo())
    return names
