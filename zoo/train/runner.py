"""Executing a plan: load the data, create the run folder and store row, train and evaluate
through the pipeline, and record the outcome (under torchrun, on every rank)."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from contextlib import contextmanager
from typing import TYPE_CHECKING

from zoo.core.containment import own_interrupts_fail
from zoo.core.culprits import naming_plugins
from zoo.core.loading import get_zoo, task_loss
from zoo.core.phases import current as current_clock
from zoo.core.phases import measured, measuring, phase
from zoo.core.threads import settle_threads
from zoo.data import datasets as zoo_data
from zoo.errors import RunDiverged, RunInterrupted, RunRefused, ZooError
from zoo.pipeline import optional_method
from zoo.records.lifecycle import recording
from zoo.records.ownership import own_run
from zoo.records.store import Store, home
from zoo.train import checkpoints, distributed
from zoo.train.curves import save_curve
from zoo.train.job import Job, RunnerState, RunOptions, RunResult, runner_state
from zoo.train.plan import Plan, config_hash
from zoo.train.provenance import (
    git_commit,
    git_dirty,
    identity,
    machine_record,
    plugin_provenance,
    versions,
)
from zoo.train.starting import create_run_folder, new_run_id, plan_job, seed_everything

if TYPE_CHECKING:
    from zoo.train.tracking import Trackers

log = logging.getLogger(__name__)


@measured  # where the run's time goes, recorded with it (zoo.core.phases)
def execute(
    plan: Plan,
    options: RunOptions | None = None,
    *,
    zoo=None,
    extra: dict | None = None,
    run_id: str | None = None,
    store=None,
    on_validate=None,
    stack=None,
) -> dict:
    """Load the data, train and evaluate through the pipeline, and record the run.

    ``options`` say where it trains and how it reports (zoo.train.job.RunOptions: device,
    progress, trackers). ``extra`` is added to the run's provenance (``zoo reproduce`` names
    the original run). Under torchrun every rank runs this; rank 0 alone writes the run
    folder and the store row, the others work in a scratch folder that is removed at the
    end. A sweep's worker passes the ``run_id`` its driver chose and a ``store`` that hands
    every write back to the driver (zoo.sweeps.worker.Journal), so the driver alone writes
    the SQLite store. ``on_validate`` is the training loop's per-validation callback
    (``RunnerState.on_validate``); a plan with ``held_out`` roles trains and reports without
    ever reading those splits. Where the run's time goes (``zoo.core.phases``) is recorded
    with its provenance as ``timing``. ``stack`` is the run's place among seeds trained
    together (zoo.train.seed_stack.StackSlot), for a plan with ``stacked``."""
    from zoo.train.tracking import check as check_trackers
    from zoo.train.tracking import chosen

    zoo, options = zoo or get_zoo(), options or RunOptions()
    precision = getattr(plan.configs.get("train"), "precision", "auto")
    if options.device == "cuda" or precision != "auto":  # not there: the user's error
        from zoo.train.torch_model import refuse_missing

        refuse_missing(precision, options.device)
    trackers_named = chosen(options.log_to)
    check_trackers(trackers_named, zoo)  # an unknown tracker fails before anything loads
    options = dataclasses.replace(options, log_to=trackers_named)  # ZOO_LOG_TO read once
    ranks = distributed.join_ranks(options.device)
    with own_interrupts_fail("the run's code (loading its data and plugins)"):
        dataset, pipeline = _data_and_code(plan, zoo, options.quiet)
    with phase("record"):
        run_id = distributed.broadcast_object(run_id or new_run_id())
        run, owner = _claimed_folder(run_id, ranks)
    try:
        with phase("record"):  # what the phases inside leave is the recording's
            store, summary, provenance, trackers = _start_record(
                plan, zoo, dataset, run, ranks, options, extra, store
            )
            state = RunnerState(
                identity=identity(plan, dataset, zoo), on_validate=on_validate, stack=stack
            )
            if not ranks.is_main:
                options = dataclasses.replace(options, quiet=True)
            job = plan_job(plan, dataset, run, options, state=state)
            return run_job(plan, pipeline, job, store, summary, provenance, ranks, trackers)
    finally:
        owner.release()


def _data_and_code(plan: Plan, zoo, quiet: bool):
    """The run's dataset (held-out splits hidden, evaluation sampled to eval_limit) and its
    pipeline, with its architecture, tokenizer and task loss imported: a dataset the
    pipeline refuses, or a broken plugin, fails here, before a run is recorded. The dataset
    is the plan's own when planning (or the caller) loaded it, else read through the plan's
    columns."""
    text_column, label_column = plan.columns
    with phase("data"):
        if plan.loaded is not None:
            dataset = plan.loaded  # loaded before the task was known; checked below
        else:
            dataset = zoo_data.load(
                plan.dataset_ref,
                zoo,
                text_column=text_column,
                label_column=label_column,
                quiet=quiet,
                held_out=plan.held_out,
            )
        limit = getattr(plan.configs.get("train"), "eval_limit", None)
        dataset = dataset.holding_out(plan.held_out).sampling_evaluation(limit)
    with phase("imports"):
        pipeline = plan.pipeline.load()
    check = optional_method(pipeline, "check_dataset")
    if check is not None:
        with phase("data"):
            check(dataset)
    with phase("imports"):
        plan.spec.architecture.load(), plan.spec.tokenizer.load()
        task_loss(plan.pipeline.task)  # a task whose loss cannot be imported fails here too
    return dataset, pipeline


def _claimed_folder(run_id: str, ranks):
    """The run's folder (a scratch folder on ranks other than the main one) and its writer's
    lock, the one writer until the run ends; no folder is left without its store row."""
    run = create_run_folder(home() if ranks.is_main else distributed.rank_scratch(), run_id)
    try:
        return run, own_run(run.path, wait=0)
    except BaseException:  # a full disk, say
        shutil.rmtree(run.path, ignore_errors=True)
        raise


def _start_record(plan, zoo, dataset, run, ranks, options: RunOptions, extra, store):
    """The run's provenance in its config.json and its row in the store (running), and its
    trackers (``options.log_to``, named) begun: the store, the run's summary and provenance,
    and the trackers. Nothing is left of the run folder when this fails."""
    summary = {
        "run_id": run.id,
        "model": plan.spec.name,
        "architecture": plan.spec.architecture.name,
        "tokenizer": plan.spec.tokenizer.name,
        "dataset": plan.dataset_ref.name,
        "task": plan.task,
        "seed": plan.seed,
        "eval_limit": getattr(plan.configs.get("train"), "eval_limit", None),
    }
    from zoo.train.tracking import NoTrackers, chosen

    trackers_named = chosen(options.log_to)
    provenance = _provenance(plan, zoo, dataset, summary, ranks, options.device, extra)

    if trackers_named:
        provenance["log_to"] = trackers_named
    trackers: NoTrackers | Trackers = NoTrackers()
    if trackers_named and ranks.is_main:
        from zoo.train.tracking import Trackers

        try:
            trackers = Trackers(trackers_named, zoo)  # a missing extra fails here, unrecorded
        except BaseException:
            shutil.rmtree(run.path, ignore_errors=True)
            raise
    try:  # opening the store can fail too (a full disk cannot take its journal)
        if store is None:
            store = Store() if ranks.is_main else _NoStore()
        run.write_json("config.json", provenance)
        store.insert(
            run.id,
            model=plan.spec.name,
            architecture=plan.spec.architecture.name,
            tokenizer=plan.spec.tokenizer.name,
            dataset=plan.dataset_ref.name,
            task=plan.task,
            seed=plan.seed,
            config_hash=provenance["config_hash"],
            config=provenance,
        )
    except BaseException:
        if store is not None:
            store.close()
        trackers.close()
        shutil.rmtree(run.path, ignore_errors=True)  # no run folder without its store row
        raise
    if trackers:
        trackers.begin(run, summary, provenance)
    return store, summary, provenance, trackers


def _provenance(plan, zoo, dataset, summary, ranks, device, extra) -> dict:
    """What the run's config.json records of how it was made."""
    provenance = {
        **summary,
        "config_hash": config_hash(plan, zoo),
        "configs": plan.config_values(),
        "incidental": plan.incidental(),
        "dataset_id": plan.dataset_ref.source,
        "dataset_location": dataset.location,
        "dataset_fingerprint": dataset.fingerprint,
        "versions": versions(zoo, plan),
        "plugins": plugin_provenance(zoo, plan),
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
        "device": device,
        "machine": machine_record(getattr(plan.configs.get("train"), "precision", "auto"), device),
        "threads": settle_threads().record(),
        "text_column": dataset.text_column,
        "label_column": dataset.label_column,
        "columns": list(plan.columns),  # as chosen: None where detected
        **({"held_out": list(plan.held_out)} if plan.held_out else {}),
        **(extra or {}),
    }
    if plan.init is not None:
        provenance["init"] = plan.init.record()
    if plan.stacked:  # trained with other seeds as one batched model (zoo.train.seed_stack)
        provenance["stacked"] = plan.stacked
    if ranks.active:
        provenance["distributed"] = {"world_size": ranks.world_size, "backend": ranks.backend}
    return provenance


def run_job(
    plan: Plan,
    pipeline,
    job: Job,
    store: Store,
    summary: dict,
    provenance: dict,
    ranks=None,
    trackers=None,
) -> dict:
    """Train a prepared job through its pipeline and record how it ended in its store row
    (zoo.records.lifecycle): finished, diverged, failed, or interrupted by Ctrl-C (then a
    RunInterrupted, and `zoo resume` continues it). The trackers (zoo.train.tracking) hear
    the end, whatever the end is."""
    from zoo.train.loop import Diverged
    from zoo.train.tracking import NoTrackers

    trackers = trackers or NoTrackers()
    ranks = ranks or distributed.current()
    run = job.run
    try:
        with measuring(), phase("record"), _closing(store), recording(store, run.id) as record:
            try:
                result, curve, curve_error = _trained(
                    plan, pipeline, job, summary, provenance, ranks, trackers
                )
            except Diverged as exc:
                record.end(
                    "diverged",
                    error=str(exc),
                    metrics={"diverged_step": exc.step, "checkpoint_step": exc.checkpoint_step},
                )
                raise RunDiverged(run.id, exc) from None
            except RunRefused:
                record.discard()  # nothing was trained: no row and no folder, as if refused
                shutil.rmtree(run.path, ignore_errors=True)
                raise
            finally:
                if not ranks.is_main:
                    shutil.rmtree(run.path.parent, ignore_errors=True)
            duration = record.end(
                result.status,
                params=result.params,
                metrics=result.metrics,
                **({"config": provenance} if "timing" in provenance else {}),
            )
            if trackers:  # the run is recorded; then where they write (zoo show lists it)
                _record_trackers(run, store, provenance, trackers, ranks.is_main)
    except KeyboardInterrupt:  # the user's Ctrl-C: the run can be resumed
        trackers.finish({}, run.path, "interrupted")
        raise RunInterrupted(run.id) from None
    except BaseException as exc:
        trackers.finish({}, run.path, "diverged" if isinstance(exc, RunDiverged) else "failed")
        raise
    if ranks.is_main:  # the run is recorded; its weights are in model.safetensors
        checkpoints.remove_all(run.path)
    trackers.finish(result.metrics, run.path, result.status)
    return {
        **summary,
        "status": result.status,
        "params": result.params,
        "metrics": result.metrics,
        "samples": result.samples,
        "duration": duration,
        "run_dir": str(run.path),
        "curve": curve,
        "curve_error": curve_error,
        "rank": ranks.rank,
        "trackers": provenance.get("trackers", {}),
    }


def _trained(plan: Plan, pipeline, job: Job, summary, provenance, ranks, trackers):
    """The pipeline's RunResult for the job (with the status a per-validation callback
    stopped it with), its curve saved, and what training learned added to its provenance."""
    run = job.run
    seed_everything(plan.seed)
    # what its inner phases leave is the evaluation's; a KeyboardInterrupt with no Ctrl-C
    # behind it fails the run, naming the plugin whose code raised it
    with own_interrupts_fail(), phase("evaluate"), naming_plugins("training"):
        result = pipeline.run(job)
    if not isinstance(result, RunResult):
        raise ZooError(
            f"the {plan.task} pipeline's run(job) returned a "
            f"{type(result).__name__}, not a zoo.plugin.RunResult"
        )
    if (result.per_example or result.per_example_statistics) and ranks.is_main:
        checked_statistics(checked_per_example(result, plan.task), plan.task, pipeline)
        run.save_per_example(result, job.dataset)
    if ranks.active:
        provenance["distributed"]["weight_sha256"] = distributed.same_weights_on_all_ranks(run)
    # what load_trained needs to rebuild the model
    provenance["spec"] = dataclasses.asdict(result.spec)
    state = runner_state(job)
    if state.init_report:  # which tensors came from the --init run, and which are new
        provenance["init"] = {**provenance.get("init", {}), **state.init_report}
    curve, curve_error = None, None
    if ranks.is_main:  # other ranks' scratch folders are gone already
        curve, curve_error = save_curve(run, summary)
    clock = current_clock()
    if clock is not None:  # this session's phases (a resumed run's last session's)
        provenance["timing"] = clock.record()
    if ranks.is_main:
        run.write_json("config.json", provenance)
    if state.stopped is not None:  # the per-validation callback stopped it ("pruned")
        status, step = state.stopped
        result = dataclasses.replace(
            result, status=status, metrics={**result.metrics, "stopped_step": step}
        )
    return result, curve, curve_error


def _record_trackers(run, store: Store, provenance: dict, trackers, is_main: bool) -> None:
    """Keep where each tracker writes with a run already recorded as finished: a tracker
    that is slow to start delays only this, within its timeout, never the run's row."""
    provenance["trackers"] = trackers.where()
    if is_main:
        run.write_json("config.json", provenance)
    store.update(run.id, config=provenance)


@contextmanager
def _closing(store):
    try:
        yield store
    finally:
        store.close()


class _NoStore:
    """The store as seen by ranks other than 0: they record nothing."""

    def insert(self, *args, **kwargs):
        pass

    def update(self, *args, **kwargs):
        pass

    def close(self):
        pass


def checked_statistics(result: RunResult, task: str, pipeline) -> RunResult:
    """A RunResult whose per-example statistics each give a metric it reports: one row of
    statistics per example, and the pipeline's score_statistics of their sums is that
    figure, or the pipeline broke its contract."""
    import numpy as np

    if not result.per_example_statistics:
        return result
    score = optional_method(pipeline, "score_statistics")
    if score is None:
        raise ZooError(f"the {task} pipeline keeps per-example statistics but no score_statistics")
    for name, table in result.per_example_statistics.items():
        table = np.asarray(table, dtype=np.float64)
        figure = result.metrics.get(name)
        if table.ndim != 2 or not table.size or not isinstance(figure, (int, float)):
            raise ZooError(
                f"the {task} pipeline's per-example statistics {name!r} are not one row per "
                "example of a figure it reports"
            )
        found = float(np.asarray(score(name, table.sum(axis=0)[None, :]))[0])
        if abs(found - figure) > 1e-4 * max(1.0, abs(figure)):
            raise ZooError(
                f"the {task} pipeline's per-example statistics {name!r} score "
                f"{found:.6g}, not its {name} {figure:.6g}"
            )
    return result


def checked_per_example(result: RunResult, task: str) -> RunResult:
    """A RunResult whose per-example scores are each the scores of a metric it reports:
    their mean (weighted, where it gives weights) is that figure, up to float32 rounding,
    or the pipeline broke its contract."""
    import numpy as np

    stray = sorted(set(result.per_example_weights) - set(result.per_example))
    if stray:
        raise ZooError(f"the {task} pipeline gives weights for {stray[0]!r} but no scores")
    for name, values in result.per_example.items():
        scores = np.asarray(values, dtype=np.float64).ravel()
        figure = result.metrics.get(name)
        if not isinstance(figure, (int, float)) or not scores.size:
            raise ZooError(
                f"the {task} pipeline's per-example scores {name!r} match no figure it reports"
            )
        given = result.per_example_weights.get(name)
        weights = (
            np.ones_like(scores) if given is None else np.asarray(given, dtype=np.float64).ravel()
        )
        if weights.shape != scores.shape or (weights < 0).any() or not weights.sum() > 0:
            raise ZooError(
                f"the {task} pipeline's weights of {name!r} are not one non-negative weight "
                "per score"
            )
        mean = float(np.average(scores, weights=weights))
        if abs(mean - figure) > 1e-4 * max(1.0, abs(figure)):
            raise ZooError(
                f"the {task} pipeline's per-example scores {name!r} average "
                f"{mean:.6g}, not its {name} {figure:.6g}"
            )
    return result
