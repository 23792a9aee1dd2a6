"""`zoo eval`: score a trained run on another dataset or split, through its pipeline's
`evaluate(trained, dataset, split)`, and record it as an evaluation row of the store
(kind 'eval', parent_id the trained run)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zoo.core.containment import own_interrupts_fail
from zoo.core.culprits import naming_plugins
from zoo.data import datasets as zoo_data
from zoo.errors import ZooError
from zoo.pipeline import optional_method
from zoo.records.lifecycle import recording

if TYPE_CHECKING:  # for annotations only: reload.LoadedRun.evaluate imports this module
    from zoo.operations.reload import LoadedRun


@dataclass
class Evaluation:
    """An evaluation row (`zoo eval`): a trained run scored on a split of a dataset."""

    id: str
    """The evaluation row's id."""
    parent_id: str
    """The trained run it scored."""
    dataset: str
    """The dataset it was scored on."""
    split: str
    """The split it was scored on."""
    metrics: dict
    """The task's figures on that split."""
    summary: dict = field(default_factory=dict, repr=False)
    """Everything `zoo eval` prints."""

    @classmethod
    def record(cls, trained: LoadedRun, dataset: str, split: str, **options) -> Evaluation:
        """Score a reloaded run on a split and record the evaluation row (`zoo eval`)."""
        result = evaluate_run(trained, dataset, split, **options)
        return cls(
            result["run_id"],
            result["parent_id"],
            result["dataset"],
            result["split"],
            result["metrics"],
            dict(result),
        )


def evaluate_run(
    trained: LoadedRun,
    dataset: str,
    split: str = "test",
    *,
    text_column: str | None = None,
    label_column: str | None = None,
    zoo=None,
) -> dict:
    """Score a reloaded run (zoo.operations.reload.load_trained: its caller loads it, on the
    device it chose) on a split and record the evaluation row."""
    from zoo.core.loading import get_zoo
    from zoo.records.store import Store
    from zoo.train.starting import new_run_id, seed_everything

    zoo = zoo or get_zoo()
    if trained.row["kind"] != "train":
        raise ZooError(f"run {trained.run_id} is an evaluation, not a trained run")
    pipeline = zoo.pipelines.get(trained.task).load()
    method = optional_method(pipeline, "evaluate")
    if method is None:
        raise ZooError(
            f"the {trained.task} pipeline has no evaluate(trained, dataset, split); "
            "it cannot score a trained run on other data"
        )
    parent = trained.config
    ref, loaded = _data_to_score(trained, dataset, (text_column, label_column), zoo)
    loaded.split(split)  # an unknown split fails here, before anything is recorded
    eval_id = new_run_id()
    provenance = _provenance(trained, ref, loaded, split, eval_id, zoo)
    row = {
        "kind": "eval",
        "parent_id": trained.run_id,
        "model": parent["model"],
        "architecture": parent["architecture"],
        "tokenizer": parent["tokenizer"],
        "dataset": ref.name,
        "task": trained.task,
        "params": trained.row.get("params"),
        "seed": parent["seed"],
        "config_hash": provenance["config_hash"],
        "config": provenance,
    }
    with Store() as store, recording(store, eval_id, row=row) as record:
        seed_everything(int(parent["seed"]))
        with own_interrupts_fail("the evaluation's code"), naming_plugins("evaluation", zoo):
            metrics = dict(method(trained, loaded, split))
        duration = record.end("finished", metrics=metrics)
    return {
        "run_id": eval_id,
        "parent_id": trained.run_id,
        "model": parent["model"],
        "trained_on": parent["dataset"],
        "dataset": ref.name,
        "split": split,
        "task": trained.task,
        "seed": parent["seed"],
        "status": "finished",
        "metrics": metrics,
        "duration": duration,
    }


def _data_to_score(trained, dataset: str, columns: tuple, zoo):
    """The dataset a trained run is scored on, resolved and loaded: a plugin dataset it
    trained on generated with its recorded settings, its own data read through the columns
    it trained on (and refused if its rows changed since), another one only if it serves
    the run's task."""
    from zoo.train.plan import plan_from_record

    parent = trained.config
    ref = zoo_data.resolve(dataset, zoo)
    if is_own_dataset(ref, parent):
        # generated with the settings the run recorded (--set dataset options), not the defaults
        ref = plan_from_record(parent, zoo).dataset_ref
    served = zoo_data.tasks_of(ref, zoo)
    if served and trained.task not in served:
        raise ZooError(
            f"dataset {ref.name!r} does not serve {trained.task} (it serves "
            f"{', '.join(served)}); run {trained.run_id} cannot be scored on it"
        )
    text_column, label_column = columns
    own = ref.source == parent.get("dataset_id")
    if own:  # its own data is read through the columns it trained on, unless told otherwise
        text_column = text_column or parent.get("text_column")
        label_column = label_column or parent.get("label_column")
    loaded = zoo_data.load(ref, zoo, text_column=text_column, label_column=label_column)
    changed = own and zoo_data.changed_since(
        loaded, trained.run_id, parent.get("dataset_fingerprint")
    )
    if changed:  # its validation and test rows may be rows it trained on
        raise ZooError(f"{changed}: its splits are no longer the ones it was scored on")
    if trained.task not in loaded.tasks:
        raise ZooError(
            f"dataset {ref.name!r} does not serve {trained.task} (it serves "
            f"{', '.join(loaded.tasks)})"
        )
    return ref, loaded


def _provenance(trained, ref, loaded, split: str, eval_id: str, zoo) -> dict:
    """The evaluation's config.json: the trained run it scores, the data and split, the
    versions and commit; its config hash is the trained run's with the data and split."""
    from zoo.train.plan import plan_from_record
    from zoo.train.provenance import git_commit, git_dirty, versions

    parent = trained.config
    plan = plan_from_record(parent, zoo, dataset_ref=ref)  # versions() reads its plugins
    provenance = {
        "run_id": eval_id,
        "parent_id": trained.run_id,
        "model": parent["model"],
        "architecture": parent["architecture"],
        "tokenizer": parent["tokenizer"],
        "task": trained.task,
        "seed": parent["seed"],
        "trained_on": parent["dataset"],
        "parent_config_hash": parent.get("config_hash"),
        "dataset": ref.name,
        "split": split,
        "dataset_id": ref.source,
        "dataset_location": loaded.location,
        "dataset_fingerprint": loaded.fingerprint,
        "text_column": loaded.text_column,
        "label_column": loaded.label_column,
        "configs": parent.get("configs"),
        # what else makes the trained run a configuration of its own (zoo.records.columns)
        **{key: parent[key] for key in ("init", "stacked") if parent.get(key)},
        "versions": versions(zoo, plan),
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
    }
    provenance["config_hash"] = hashlib.sha256(
        f"{parent.get('config_hash')}|{ref.source}|{split}".encode()
    ).hexdigest()[:16]
    return provenance


def is_own_dataset(ref, record: dict) -> bool:
    """Whether `ref` names the plugin dataset a run was trained on, with a recorded config."""
    return (
        ref.kind == "plugin"
        and ref.name == record.get("dataset")
        and ref.source == record.get("dataset_id")
        and "dataset" in (record.get("configs") or {})
    )
