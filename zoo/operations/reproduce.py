"""`zoo reproduce`: rebuild a run's plan from its config.json, train again, and compare.

The plan is rebuilt from the resolved configs the run recorded (not from today's preset),
so a changed catalogue does not change what is rerun. On the CPU with the same seed every
metric should match exactly; timing figures are left out of the comparison.
"""

from __future__ import annotations

import dataclasses
import json
import math

from zoo.errors import ZooError
from zoo.train.plan import config_hash, plan_from_record

TIMING_METRICS = ("tokens_per_s", "train_time", "duration")


def is_timing(name: str) -> bool:
    return name in TIMING_METRICS or name.endswith("_per_s") or name.endswith("_time")


def recorded_run(run_id: str) -> tuple[dict, dict]:
    """The store row and the run's provenance (config.json, or the row's copy of it)."""
    from zoo.records.paths import run_folder
    from zoo.records.store import Store
    from zoo.train.job import RunFolder

    with Store() as store:
        row = store.get(run_id)
    if row["kind"] == "eval":
        raise ZooError(
            f"run {row['id']} is an evaluation; reproduce its trained run "
            f"{row['parent_id']} instead"
        )
    if row["kind"] != "train":
        raise ZooError(
            f"run {row['id']} is an {row['kind']}, not a trained run: reproduce its members "
            "(zoo show lists them) and combine them again"
        )
    if row["status"] != "finished":
        raise ZooError(
            f"run {row['id']} is {row['status']}, not finished: there are no metrics to reproduce"
        )
    folder = RunFolder(run_folder(row["id"]))
    provenance = folder.config() if folder.file("config.json").is_file() else row["config"]
    if not provenance.get("configs"):
        raise ZooError(f"run {row['id']} recorded no resolved config to rerun")
    return row, provenance


def compare_metrics(original: dict, rerun: dict) -> list[dict]:
    """One line per non-timing metric: both values and whether they are identical."""
    lines = []
    for key in sorted(set(original) | set(rerun)):
        if is_timing(key):
            continue
        a, b = original.get(key), rerun.get(key)
        lines.append({"metric": key, "original": a, "rerun": b, "same": _identical(a, b)})
    return lines


def _identical(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    return a == b


def reproduce(run_id: str, *, device: str | None = None, quiet: bool = True, zoo=None) -> dict:
    from zoo.core.loading import get_zoo
    from zoo.data import datasets as zoo_data
    from zoo.train.job import RunOptions
    from zoo.train.runner import execute

    zoo = zoo or get_zoo()
    row, provenance = recorded_run(run_id)
    plan = plan_from_record(provenance, zoo)
    notes = []
    if config_hash(plan) != provenance.get("config_hash"):
        notes.append(
            f"the rebuilt config hashes to {config_hash(plan)}, not "
            f"{provenance.get('config_hash')} (the recorded config no longer resolves "
            "to the same values)"
        )
    if plan.stacked:  # the rerun trains alone: a configuration of its own, labelled so
        plan = dataclasses.replace(plan, stacked=None)
        notes.append(
            f"run {row['id']} was trained with other seeds as one batched model "
            f"(stacked={provenance['stacked']}); the rerun trains it alone, so its metrics "
            "differ by the stacked training's rounding"
        )
    # read through the columns the run read (not detected again), whatever it chose
    dataset = zoo_data.load(
        plan.dataset_ref,
        zoo,
        text_column=provenance.get("text_column"),
        label_column=provenance.get("label_column"),
        quiet=quiet,
        held_out=plan.held_out,
    )
    result = execute(
        dataclasses.replace(plan, loaded=dataset),
        RunOptions(device=device or provenance.get("device") or "auto", quiet=quiet),
        zoo=zoo,
        extra={"reproduces": row["id"]},
    )
    with_new = _provenance(result["run_id"])
    dirty = [
        when
        for when, flag in (
            ("then", provenance.get("git_dirty")),
            ("now", with_new.get("git_dirty")),
        )
        if flag
    ]
    if dirty:
        notes.append(f"the working tree had uncommitted changes {' and '.join(dirty)}")
    for key in ("dataset_fingerprint", "git_commit"):
        if provenance.get(key) != with_new.get(key):
            notes.append(f"{key} differs: {provenance.get(key)} then, {with_new.get(key)} now")
    changed = {
        k: (v, with_new.get("versions", {}).get(k))
        for k, v in (provenance.get("versions") or {}).items()
        if with_new.get("versions", {}).get(k) != v
    }
    if changed:
        notes.append(
            "versions differ: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items())
        )
    lines = compare_metrics(row["metrics"], result["metrics"])
    if row["status"] != result["status"]:
        notes.append(f"status differs: {row['status']} then, {result['status']} now")
    if row.get("params") != result.get("params"):
        notes.append(
            f"parameter count differs: {row.get('params')} then, {result.get('params')} now"
        )
    same = bool(lines) and all(line["same"] for line in lines) and row["status"] == result["status"]
    return {
        "run_id": row["id"],
        "rerun_id": result["run_id"],
        "match": same,
        "metrics": lines,
        "notes": notes,
        "excluded": sorted(k for k in set(row["metrics"]) | set(result["metrics"]) if is_timing(k)),
    }


def _provenance(run_id: str) -> dict:
    from zoo.records.store import Store

    with Store() as store:
        return store.get(run_id)["config"]


def config_file(record: dict) -> str:
    """TOML for `zoo run --config` that trains the recorded run again: its model, dataset,
    seed and task, and every resolved setting under [set] (section by section)."""
    provenance = record.get("config") or {}
    lines = [
        f"# zoo run --config FILE: reproduces run {record['id']}",
        f"model = {_toml(record.get('model'))}",
        f"dataset = {_toml(record.get('dataset'))}",
        f"seed = {_toml(record.get('seed') or 0)}",
        f"task = {_toml(record.get('task'))}",
    ]
    if provenance.get("device") in ("cpu", "cuda"):
        lines.append(f"device = {_toml(provenance['device'])}")
    # the columns it chose (so the run's config hash is the same), or, for a run recorded
    # before zoo recorded its choice, the columns it read
    chosen = provenance.get(
        "columns", [provenance.get("text_column"), provenance.get("label_column")]
    )
    for key, value in zip(("text_column", "label_column"), chosen):
        if value:
            lines.append(f"{key} = {_toml(value)}")
    init = (provenance.get("init") or {}).get("run_id")
    if init:  # it started from that run's weights: so does the run this file trains
        lines.append(f"init = {_toml(init)}")
    if provenance.get("stacked"):
        lines.insert(
            1,
            f"# trained with other seeds as one batched model (stacked="
            f"{provenance['stacked']}); this file trains it alone",
        )
    skipped = []
    for section, values in (provenance.get("configs") or {}).items():
        if not values:
            continue
        lines += ["", f"[set.{section}]"]
        for key, value in values.items():
            if value is None:  # TOML has no null: the field's default, None, stands
                skipped.append(f"{section}.{key}")
                continue
            lines.append(f"{key} = {_toml(value)}")
    if skipped:
        lines.insert(1, "# unset (None): " + ", ".join(skipped))
    return "\n".join(lines) + "\n"


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string
