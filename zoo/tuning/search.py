"""`zoo tune`: the same search budget for every model, then the fair comparison.

1. Plan: every model x dataset planned with the user's settings, the space checked against
   each model's config fields (did-you-mean) before anything trains.
2. Search: one Optuna study per model and dataset (zoo.tuning.study), trials until the
   budget (--trials, or --time of trial time) is spent; each trial chosen on validation.
3. Report: each study's best trial scored on test once; its settings, and the untuned
   preset, re-run over --seeds (a sweep: resumable, reused when already finished); the
   equal-budget table, the winners as registry.toml presets, Optuna's plots.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from zoo.errors import SearchInterrupted, ZooError, require_extra
from zoo.tuning import report
from zoo.tuning.space import check_space
from zoo.tuning.study import (
    Search,
    counted,
    default_storage,
    make_pruner,
    make_sampler,
    objective_for,
    open_storage,
    recover_lost_trials,
    trial_seconds,
)
from zoo.tuning.trials import TRIAL_SEED

log = logging.getLogger(__name__)


def plan_search(search: Search) -> dict:
    """{(model, dataset): (plan, searched dimensions)}; every problem is a ZooError now."""
    from zoo.core.loading import get_zoo
    from zoo.data import datasets as zoo_data
    from zoo.sweeps.cells import expand_models
    from zoo.train.plan import PlanChoices, plan_run
    from zoo.tuning.trials import HELD_OUT

    zoo = get_zoo()
    if search.trials is None and search.time is None:
        raise ZooError("give a budget per model: trials or time (seconds)")
    search.models = expand_models(search.models, zoo)
    for dataset in search.datasets:
        zoo_data.resolve(dataset, zoo)  # an unknown dataset fails now, with a did-you-mean
    make_pruner(search.pruner), make_sampler(search.sampler, None)
    plans = {}
    for model in search.models:
        for dataset in search.datasets:
            plans[(model, dataset)] = plan_run(
                model,
                dataset,
                overrides=search.overrides,
                choices=PlanChoices(task=search.task, held_out=HELD_OUT),
                zoo=zoo,
            )
    cache: dict = {}

    def replan(key, overrides):  # a trial's plan, with one end of a searched range
        return plan_run(
            *key,
            overrides=overrides,
            choices=PlanChoices(task=search.task, held_out=HELD_OUT),
            zoo=zoo,
            loaded_cache=cache,
        )

    searched = check_space(search.space, plans, search.overrides, replan)
    for key, plan in plans.items():
        objective_for(plan.task, search.metric)  # an unknown --metric fails now
        if not searched[key]:
            raise ZooError(
                f"space has no setting of {key[0]}: " + ", ".join(str(d) for d in search.space),
                option="space",
            )
    return {key: (plan, searched[key]) for key, plan in plans.items()}


def run_search(
    search: Search, *, make_executor=None, plot_dir: str | Path | None = None
) -> list[report.StudyResult]:
    """Search, then report: see the module's docstring. ``make_executor()`` gives a sweep
    executor (None: trials in this process), called once for the trials and once for the
    seed re-runs."""
    require_extra(("optuna",), "tune", "zoo tune")
    import optuna

    from zoo.tuning.trials import TrialDriver, run_here

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    planned = plan_search(search)
    storage_url = search.storage or default_storage()
    storage = open_storage(storage_url)
    budget = report.budget_text(search.trials, search.time)
    log.info(
        f"tune: {len(search.models)} model(s) x {len(search.datasets)} dataset(s), "
        f"{budget} each, pruner {search.pruner}, studies in {_redact(storage_url)}"
    )
    executor = make_executor() if make_executor else None
    runner = TrialDriver(executor, search) if executor is not None else None
    results, studies = [], {}
    try:
        for (model, dataset), (plan, searched) in planned.items():
            objective = objective_for(plan.task, search.metric)
            name = search.study_name(model, dataset, searched, _typed(plan, search.overrides))
            study = optuna.create_study(
                study_name=name,
                storage=storage,
                load_if_exists=True,
                direction=objective.direction,  # type: ignore[arg-type]  # "minimize" or "maximize"
                sampler=make_sampler(search.sampler, search.seed),
                pruner=make_pruner(search.pruner),
            )
            recover_lost_trials(study, objective)
            done = len(counted(study))
            log.info(
                f"{model} on {dataset}: study {name}, {done} trial(s) recorded, searching "
                + ", ".join(str(d) for d in searched)
                + f" on {objective.name}"
            )
            began = time.time()
            if runner is None:
                run_here(search, study, storage_url, model, dataset, searched, objective)
            else:
                runner.run(study, storage_url, model, dataset, searched, objective)
            log.info(f"    {model} on {dataset}: search done in {time.time() - began:.0f}s")
            studies[(model, dataset)] = study
            results.append(_result(study, model, dataset, plan, objective, search.overrides))
    finally:
        if runner is not None:
            runner.close()
    for result in results:
        if result.best is not None:
            report.test_once(result, search.device)
    _seed_reruns(search, results, make_executor)
    for result, study in zip(results, studies.values()):
        folder = Path(plot_dir) if plot_dir else _study_folder(storage_url)
        result.plots = report.save_plots(study, folder)
    report.keep_rows(list(studies.values()), results, budget)
    return results


def _redact(url: str) -> str:
    """A storage URL without its password, for printing."""
    head, at, tail = url.rpartition("@")
    if not at or "://" not in head:
        return url
    scheme, _, credentials = head.partition("://")
    return f"{scheme}://{credentials.partition(':')[0]}:***@{tail}"


def _study_folder(storage_url: str) -> Path:
    from zoo.records.store import home

    return home() / "tune"


def test_figure(task: str) -> str:
    """The figure a search reports: its task's headline on the test split (a headline may be
    a validation figure, as language modeling's val_bpc is)."""
    from zoo.core.names import get_task
    from zoo.tasks import strip_split

    declared = get_task(task)
    if declared is None:
        raise ZooError(f"task {task!r} is declared by no installed plugin")
    return f"test_{strip_split(declared.primary)}"


def _result(study, model, dataset, plan, objective, overrides) -> report.StudyResult:

    trials = counted(study)
    states: dict[str, int] = {}
    for trial in trials:
        states[trial.state.name] = states.get(trial.state.name, 0) + 1
    result = report.StudyResult(
        model,
        dataset,
        study.study_name,
        objective.name,
        test_figure(plan.task),
        states,
        trial_seconds(trials),
    )
    result.fixed = _typed(plan, overrides)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    if complete:
        best = study.best_trial
        result.best = {
            "trial": best.number,
            "value": best.value,
            "params": dict(best.params),
            "run_id": best.user_attrs.get("run_id"),
        }
        result.settings = _typed(plan, best.params)
    return result


def _typed(plan, params: dict) -> dict:
    """The best params as the config holds them (choice values typed by their field)."""
    from zoo.core.config import split_overrides

    sections = {s: type(c) if c is not None else None for s, c in plan.configs.items()}
    typed = {}
    for key, value in params.items():
        for values in split_overrides({key: value}, sections).values():
            for typed_value in values.values():  # one section's, or shared ones alike
                typed[key] = typed_value
    return typed


def _seed_reruns(search: Search, results, make_executor) -> None:
    """Each winner's settings and each untuned preset, over --seeds seeds other than the
    trials' (so no reported seed is the selected trial again): ordinary sweep cells (reused
    when already finished, resumed when cut off), reported on test. Settings equal to the
    preset's are one set of cells, counted once."""
    from zoo.core.loading import get_zoo
    from zoo.records.store import Store
    from zoo.sweeps import driver
    from zoo.sweeps.cells import Cell, Sweep, settle_finished
    from zoo.train.plan import PlanChoices, config_hash, plan_run
    from zoo.tuning.trials import rerun_seeds

    seeds = rerun_seeds(search.seeds)
    cells: dict[str, Cell] = {}  # config hash -> cell
    groups: dict[tuple, set[str]] = {}  # (model, dataset, "tuned" or "preset") -> hashes
    for result in results:
        kinds = [("preset", {})] + ([("tuned", result.settings)] if result.best else [])
        for kind, setting in kinds:
            hashes = groups.setdefault((result.model, result.dataset, kind), set())
            for seed in seeds:
                cell = Cell(result.model, result.dataset, seed, dict(setting))
                cell.plan = plan_run(
                    result.model,
                    result.dataset,
                    overrides={**search.overrides, **setting},
                    choices=PlanChoices(seed=seed, task=search.task),
                )
                cell.config_hash = config_hash(cell.plan)
                hashes.add(cell.config_hash)
                cells.setdefault(cell.config_hash, cell)
    with Store() as store:
        finished = store.finished_by_hash()
    settle_finished(list(cells.values()), finished, get_zoo())  # a changed file: run again
    sweep = Sweep(
        list(cells.values()),
        search.models,
        search.datasets,
        seeds,
        overrides=dict(search.overrides),
        task=search.task,
    )
    todo = len(sweep.todo)
    log.info(
        f"re-running the winners and the presets over {search.seeds} seed(s) "
        f"({', '.join(map(str, seeds))}; the trials ran at seed {TRIAL_SEED}): {todo} run(s) "
        f"to train, {len(cells) - todo} finished before"
    )
    if todo:
        try:
            driver.run_sweep(
                sweep,
                search.run_options(),
                executor=make_executor() if make_executor else None,
            )
        except KeyboardInterrupt:  # the re-runs cut off are interrupted runs: the same
            raise SearchInterrupted() from None  # zoo tune reuses the finished, resumes them
    for result in results:
        for kind in ("preset", "tuned"):
            wanted = groups.get((result.model, result.dataset, kind))
            if not wanted:
                continue
            by_seed = report.figures(sweep, wanted, result.test_metric)
            setattr(result, kind, list(by_seed.values()))
            setattr(result, f"{kind}_seeds", list(by_seed))
        result.same_as_preset = groups.get((result.model, result.dataset, "tuned")) == groups.get(
            (result.model, result.dataset, "preset")
        )
