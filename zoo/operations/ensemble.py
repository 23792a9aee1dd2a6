"""Ensembles of finished runs (`zoo ensemble`, ``zoo.ensemble``): the class probabilities of
several runs of one task on one dataset, averaged, scored on validation and test, and
recorded as a store row of their own (kind 'ensemble'), which `zoo runs` and `zoo compare`
show beside the runs it combines.

Works for any task whose pipeline gives probabilities (``split_probabilities`` and
``score_probabilities``, zoo.hookspecs): each run is reloaded (``load_trained``) and asked
for its probabilities through its task's pipeline, so no architecture needs code for it.

Weights: ``equal``, or ``fit``: fitted on the validation split alone, the log-loss minimum
shrunk toward equal weights by cross-fitting (zoo.operations.weights). The test split is
scored once, with the weights chosen.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass

import numpy as np

from zoo.core.culprits import naming_plugins
from zoo.errors import ZooError
from zoo.operations.weights import FIT_RULE, fit_weights
from zoo.pipeline import optional_method
from zoo.records.lifecycle import recording

log = logging.getLogger(__name__)

WEIGHTINGS = ("equal", "fit")
SPLITS = ("validation", "test")


@dataclass
class Combined:
    """One run's part of an ensemble."""

    run_id: str
    model: str
    weight: float


@dataclass
class Ensemble:
    """A recorded ensemble: its store row's id and name, the runs it combines with their
    weights, and its metrics (val_*, test_*, as its task names them)."""

    id: str
    """The ensemble's store row id."""
    model: str
    """Its name: ``ensemble(a+b)`` or ``ensemble-fit(a+b)``."""
    dataset: str
    """The dataset its runs share."""
    task: str
    """The task its runs share."""
    seed: int | None
    """The seed its runs share (None when they differ)."""
    weighting: str
    """"equal" or "fit"."""
    runs: list[Combined]
    """The runs it combines, each with its weight."""
    metrics: dict
    """Its figures (``val_*``, ``test_*``) and the weights."""
    params: int | None = None
    """The runs' parameters together (None when unknown)."""
    duration: float = 0.0
    """Seconds it took to combine the runs."""


def ensemble_name(models: list[str], weighting: str) -> str:
    """'ensemble(a+b+c)' (equal weights) or 'ensemble-fit(a+b+c)': the model column of the
    row, so every seed's ensemble of the same presets is one row of `zoo compare`."""
    prefix = "ensemble" if weighting == "equal" else f"ensemble-{weighting}"
    return f"{prefix}({'+'.join(models)})"


def average(probabilities: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """The weighted mean of the runs' probabilities [N, K]."""
    return np.einsum("rnk,r->nk", np.stack(probabilities), weights)


def ensemble(
    run_ids: list[str],
    *,
    weights: str = "equal",
    device: str = "auto",
    preset: str | None = None,
    quiet: bool = True,
    zoo=None,
) -> Ensemble:
    """Combine finished runs of one task and dataset and record the ensemble (see the
    module docstring). ``preset`` names the ensemble preset it was made for, if any."""
    from zoo.core.loading import get_zoo
    from zoo.records.store import Store

    if weights not in WEIGHTINGS:
        raise ZooError(f"weights must be {' or '.join(WEIGHTINGS)}, not {weights!r}")
    zoo = zoo or get_zoo()
    with Store() as store:
        rows = [store.get(run_id) for run_id in run_ids]
    rows = sorted({row["id"]: row for row in rows}.values(), key=lambda r: (r["model"], r["id"]))
    check_combinable(rows)
    task = rows[0]["task"]
    pipeline = zoo.pipelines.get(task).load()
    if not all(
        optional_method(pipeline, name) for name in ("split_probabilities", "score_probabilities")
    ):
        raise ZooError(
            f"the {task} pipeline gives no probabilities (split_probabilities and "
            f"score_probabilities); its runs cannot be combined"
        )
    start = time.time()
    predicted = run_probabilities(rows, pipeline, device, quiet, zoo)
    validation = [p["validation"] for p in predicted]
    if weights == "fit":  # from the validation split alone
        chosen = fit_weights([p.probabilities for p in validation], validation[0].targets)
    else:
        chosen = np.full(len(rows), 1.0 / len(rows))
    metrics: dict = {}
    for split in SPLITS:
        parts = [p[split] for p in predicted]
        mixed = type(parts[0])(
            average([p.probabilities for p in parts], chosen),
            parts[0].targets,
            parts[0].classes,
        )
        metrics.update(pipeline.score_probabilities(mixed, split))
    metrics["weights"] = [float(w) for w in chosen]
    return record(rows, chosen, weights, metrics, preset, time.time() - start)


def check_combinable(rows: list[dict]) -> None:
    """Finished trained runs, at least two, of one task on one dataset (the same data, read
    through the same columns); otherwise one line saying which run differs."""
    if len(rows) < 2:
        raise ZooError("an ensemble needs at least two different runs")
    for row in rows:
        if row.get("kind") != "train":
            raise ZooError(f"run {row['id']} is a {row.get('kind')} row, not a trained run")
        if row["status"] != "finished":
            raise ZooError(f"run {row['id']} is {row['status']}, not finished")
    first = rows[0]
    keys = (
        "task",
        "dataset",
        "dataset_id",
        "dataset_fingerprint",
        "text_column",
        "label_column",
    )
    for row in rows[1:]:
        for key in keys:
            ours, theirs = (r.get(key, r["config"].get(key)) for r in (first, row))
            if ours != theirs:
                raise ZooError(
                    f"runs {first['id']} and {row['id']} differ in {key} "
                    f"({ours} and {theirs}); an ensemble combines runs of one task "
                    "on one dataset"
                )


def run_probabilities(rows: list[dict], pipeline, device: str, quiet: bool, zoo) -> list[dict]:
    """Each run's SplitProbabilities on validation and test, through its task's pipeline,
    on the dataset the first run was trained on; their classes and targets must agree."""

    from zoo.data import datasets as zoo_data
    from zoo.operations.reload import load_trained
    from zoo.train.plan import plan_from_record

    config = rows[0]["config"]
    ref = plan_from_record(config, zoo).dataset_ref
    loaded = zoo_data.load(
        ref,
        zoo,
        text_column=config.get("text_column"),
        label_column=config.get("label_column"),
        quiet=quiet,
    )
    changed = zoo_data.changed_since(loaded, rows[0]["id"], config.get("dataset_fingerprint"))
    if changed:  # its splits are not those the members were chosen and scored on
        raise ZooError(f"{changed}: train the members again on it to combine them")
    out = []
    for row in rows:
        if not quiet:
            log.info(f"ensemble: {row['model']} (run {row['id']})")
        trained = load_trained(row["id"], zoo, device=device)
        with naming_plugins("ensemble", zoo):
            out.append(
                {split: pipeline.split_probabilities(trained, loaded, split) for split in SPLITS}
            )
        del trained
    for row, predicted in zip(rows[1:], out[1:]):
        for split in SPLITS:
            ours, first = predicted[split], out[0][split]
            if list(ours.classes) != list(first.classes) or not np.array_equal(
                ours.targets, first.targets
            ):
                raise ZooError(
                    f"run {row['id']} predicts other classes than run "
                    f"{rows[0]['id']} ({', '.join(ours.classes[:5])} against "
                    f"{', '.join(first.classes[:5])})"
                )
    return out


def _combination(rows: list[dict], combined: list[Combined], weighting: str) -> dict:
    """What an ensemble's config.json says of what it combines: the weighting (and the rule
    that fitted it), each member's run, weight, config hash and seed, the data they were
    scored on, and the commit; its config hash names the members and the weighting."""
    from zoo.train.provenance import git_commit, git_dirty

    first = rows[0]
    rule = FIT_RULE if weighting == "fit" else None  # a new fitting rule is a new configuration
    identity = json.dumps([[r.get("config_hash"), r["id"]] for r in rows] + [weighting, rule])
    return {
        "weighting": weighting,
        **({"weights_rule": rule} if rule else {}),
        "combines": [
            {
                "run_id": c.run_id,
                "model": c.model,
                "weight": c.weight,
                "config_hash": r.get("config_hash"),
                "seed": r["seed"],
            }
            for c, r in zip(combined, rows)
        ],
        "config_hash": hashlib.sha256(identity.encode()).hexdigest()[:16],
        **{
            key: first["config"].get(key)
            for key in ("dataset_id", "dataset_fingerprint", "text_column", "label_column")
        },
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
    }


def record(
    rows: list[dict],
    chosen: np.ndarray,
    weighting: str,
    metrics: dict,
    preset: str | None,
    duration: float,
) -> Ensemble:
    """The ensemble's store row: its name, the runs and weights, and where they came from."""
    from zoo.records.store import Store
    from zoo.train.starting import new_run_id

    first = rows[0]
    name = ensemble_name([r["model"] for r in rows], weighting)
    seeds = {r["seed"] for r in rows}
    seed = seeds.pop() if len(seeds) == 1 else None
    params = [r.get("params") for r in rows]
    counted = [p for p in params if isinstance(p, int)]
    total = sum(counted) if len(counted) == len(params) else None
    combined = [Combined(r["id"], r["model"], float(w)) for r, w in zip(rows, chosen)]
    ensemble_id = new_run_id()
    config = {
        "run_id": ensemble_id,
        "model": name,
        "architecture": "ensemble",
        "task": first["task"],
        "dataset": first["dataset"],
        "seed": seed,
        "preset": preset,
        **_combination(rows, combined, weighting),
    }
    tokenizers = sorted({r["tokenizer"] for r in rows if r.get("tokenizer")})
    row = {
        "kind": "ensemble",
        "model": name,
        "architecture": "ensemble",
        "tokenizer": "+".join(tokenizers) or None,
        "dataset": first["dataset"],
        "task": first["task"],
        "params": total,
        "seed": seed,
        "config_hash": config["config_hash"],
        "config": config,
    }
    with (
        Store() as store,
        recording(store, ensemble_id, row=row, began=time.time() - duration) as run,
    ):
        run.end("finished", metrics=metrics)
    return Ensemble(
        ensemble_id,
        name,
        first["dataset"],
        first["task"],
        seed,
        weighting,
        combined,
        metrics,
        total,
        duration,
    )
