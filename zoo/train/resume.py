"""Resuming an interrupted run: check that nothing it depends on changed, rewind its curve
to the newest good checkpoint, and train on in its own folder and store row."""

from __future__ import annotations

import dataclasses
import json
import logging
import os

from zoo.core.loading import get_zoo
from zoo.core.threads import use_recorded_threads
from zoo.data import datasets as zoo_data
from zoo.errors import ZooError
from zoo.io import save_error
from zoo.records.ownership import own_run
from zoo.records.paths import run_folder
from zoo.records.store import Store
from zoo.train import checkpoints, distributed
from zoo.train.job import RunFolder, RunnerState, RunOptions
from zoo.train.plan import plan_from_record
from zoo.train.provenance import identity, same_code
from zoo.train.runner import run_job
from zoo.train.starting import plan_job

log = logging.getLogger(__name__)


class ResumeRefused(ZooError):
    """A run cannot be resumed (finished, still running, changed since); nothing was touched."""


RESUMABLE = ("interrupted", "failed")


def resume(
    run_id: str, *, quiet: bool = False, zoo=None, claimed: dict | None = None, store=None
) -> dict:
    """Continue an interrupted (or failed) run from its newest good checkpoint, or from the
    start if it has none, in its own folder and store row. Returns what ``execute`` returns.

    This is what `zoo resume` calls, and what a sweep calls for its interrupted cells. It
    refuses (ZooError) if the config, dataset, tokenizer file, zoo or plugin versions differ
    from the run's, or if the run is not resumable (finished, diverged, still running).
    A sweep's worker passes the row its driver has already ``claimed`` and a ``store`` that
    hands every write back to the driver; then nothing here opens the SQLite store."""
    zoo = zoo or get_zoo()
    if claimed is None:
        with Store() as reader:
            row = reader.get(run_id)
        _check_resumable(row)
    else:
        row = claimed
    if distributed.launched():
        raise ResumeRefused("zoo resume runs in a single process; start it without torchrun")
    run = RunFolder(run_folder(row["id"]))
    if not run.file("config.json").is_file():
        raise ResumeRefused(f"cannot resume run {row['id']}: {run.path} has no config.json")
    # The folder's one writer from here on: a process still writing it (a sweep worker
    # whose driver was killed, say) is waited for briefly, then refused, never joined.
    owner = own_run(run.path)
    try:
        return _resume_owned(row, run, zoo, quiet, store)
    finally:
        owner.release()


def _resume_owned(row: dict, run: RunFolder, zoo, quiet: bool, store) -> dict:
    provenance = run.config()
    use_recorded_threads(provenance.get("threads"))  # the sums as the run started them
    if (provenance.get("distributed") or {}).get("world_size", 1) > 1:
        raise ResumeRefused(
            f"cannot resume run {row['id']}: it trained under torchrun on "
            f"{provenance['distributed']['world_size']} processes, whose other "
            "ranks' random states were not checkpointed; start a new run"
        )
    try:
        plan = plan_from_record(provenance, zoo)
    except ZooError as exc:
        raise ResumeRefused(f"cannot resume run {row['id']}: {exc}") from None
    dataset = zoo_data.load(
        plan.dataset_ref,
        zoo,
        text_column=provenance.get("text_column"),
        label_column=provenance.get("label_column"),
        quiet=quiet,
        held_out=plan.held_out,
    )
    warn = None if quiet else (lambda m: log.warning(f"{m}"))
    ckpt = checkpoints.latest(run.path, warn=warn)
    current = identity(plan, dataset, zoo)
    problems = resume_problems(
        provenance, ckpt, current, run, settings_added_since(provenance, plan)
    )
    if problems:
        raise ResumeRefused(
            f"cannot resume run {row['id']}: "
            + "; ".join(problems)
            + ". Start a new run instead (zoo run)"
        )
    pipeline = plan.pipeline.load()
    if store is None:
        store = Store()
        if not store.claim(
            row["id"],
            RESUMABLE,
            error=None,
            finished=None,
            resumed=int(row.get("resumed") or 0) + 1,
        ):
            store.close()
            raise ResumeRefused(
                f"run {row['id']} was claimed by another process; nothing to resume"
            )
    _rewind_curve(run, ckpt)
    if not quiet:
        where = f"step {ckpt.step}" if ckpt else "the start (no checkpoint was written)"
        log.info(f"zoo: resuming run {row['id']} from {where}")
    options = RunOptions(device=provenance.get("device", "auto"), quiet=quiet)
    state = RunnerState(resume_from=ckpt, identity=current)
    job = plan_job(plan, dataset, run, options, resuming=True, state=state)
    summary = {
        k: provenance[k]
        for k in ("run_id", "model", "architecture", "tokenizer", "dataset", "task", "seed")
    }
    return run_job(plan, pipeline, job, store, summary, provenance)


def _check_resumable(row: dict) -> None:
    status = row["status"]
    if row.get("kind", "train") != "train":
        raise ResumeRefused(f"run {row['id']} is an {row['kind']} row; only training runs resume")
    if status == "finished":
        raise ResumeRefused(f"run {row['id']} already finished; nothing to resume")
    if status == "running":
        raise ResumeRefused(
            f"run {row['id']} is still running (pid {row['pid']} on {row['host']}); "
            "resume it once that process has ended"
        )
    if status == "diverged":
        raise ResumeRefused(
            f"run {row['id']} diverged ({row['error']}); resuming would diverge "
            "again: start a new run with a lower learning rate"
        )
    if status not in RESUMABLE:
        raise ResumeRefused(
            f"run {row['id']} has status {status!r}; only "
            f"{' or '.join(RESUMABLE)} runs can be resumed"
        )


def resume_problems(
    provenance: dict,
    ckpt,
    current: dict,
    run: RunFolder,
    added_since: dict[str, set[str]] | None = None,
) -> list[str]:
    """Why a run cannot be resumed with what is installed now (empty: it can). Settings in
    ``added_since`` (section -> keys; see ``settings_added_since``) are not compared."""
    saved = (
        ckpt.meta.get("identity", {})
        if ckpt is not None
        else {
            "config_hash": provenance.get("config_hash"),
            "configs": provenance.get("configs"),
            "dataset_fingerprint": provenance.get("dataset_fingerprint"),
            "versions": provenance.get("versions", {}),
        }
    )
    problems = []
    if ckpt is not None and ckpt.meta.get("format") != checkpoints.FORMAT:
        problems.append(
            f"its checkpoint has format {ckpt.meta.get('format')}, this zoo reads "
            f"format {checkpoints.FORMAT}"
        )
    # The settings themselves are compared, not the config hashes: a hash also covers the
    # plugins' code (checked below, by name) and its recipe may change between versions.
    # Settings added since the run started, at their defaults, change nothing it did.
    changed = _changed_keys(saved.get("configs") or {}, current["configs"], added_since)
    if changed:
        problems.append("the config differs from the run's (" + ", ".join(changed[:6]) + ")")
    if saved.get("dataset_fingerprint") != current["dataset_fingerprint"]:
        problems.append(
            f"the dataset changed (fingerprint {saved.get('dataset_fingerprint')} "
            f"then, {current['dataset_fingerprint']} now)"
        )
    then = saved.get("versions") or {}
    for key in sorted(set(then) | set(current["versions"])):
        before, now = then.get(key), current["versions"].get(key)
        if key == "zoo" and before != now:
            problems.append(f"zoo version differs ({before} then, {now} now)")
        elif key.startswith("plugin:") and not same_code(
            before, now, current.get("plugin_versions", {}).get(key)
        ):
            problems.append(
                f"plugin {key.removeprefix('plugin:')!r} changed: its version or "
                f"source differs ({before or 'absent'} then, {now or 'absent'} now)"
            )
    if ckpt is not None:
        recorded = saved.get("tokenizer_sha256")
        if recorded and checkpoints.file_sha256(run.file("tokenizer.json")) != recorded:
            problems.append(
                "the run's tokenizer.json differs from the one its checkpoint was trained with"
            )
    return problems


def settings_added_since(provenance: dict, plan) -> dict[str, set[str]]:
    """Config keys a run's record lacks that this zoo's configs have at their defaults
    (settings added since the run started): they change nothing the run did."""
    then = provenance.get("configs") or {}
    added: dict[str, set[str]] = {}
    for section, config in plan.configs.items():
        if config is None or not isinstance(then.get(section), dict):
            continue
        for field in dataclasses.fields(config):
            default = (
                field.default
                if field.default is not dataclasses.MISSING
                else field.default_factory()
                if field.default_factory is not dataclasses.MISSING
                else dataclasses.MISSING
            )
            if field.name not in then[section] and getattr(config, field.name) == default:
                added.setdefault(section, set()).add(field.name)
    return added


def _changed_keys(then: dict, now: dict, added_since: dict | None = None) -> list[str]:
    changed = []
    for section in sorted(set(then) | set(now)):
        old, new = then.get(section) or {}, now.get(section) or {}
        for key in sorted(set(old) | set(new)):
            if key in (added_since or {}).get(section, ()):
                continue
            a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
            if json.dumps(a, default=str) != json.dumps(b, default=str):
                changed.append(f"{section}.{key}: {a!r} then, {b!r} now")
    return changed


def _rewind_curve(run: RunFolder, ckpt) -> None:
    """Cut metrics.jsonl back to what it held at the checkpoint; the loop logs the rest again."""
    path = run.file("metrics.jsonl")
    if not path.exists():
        return
    size = ckpt.meta.get("metrics_bytes", 0) if ckpt is not None else 0
    try:
        if path.stat().st_size > size:
            os.truncate(path, size)
    except OSError as exc:
        raise save_error(path, exc) from None
