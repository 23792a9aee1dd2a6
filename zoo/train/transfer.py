"""Starting a run from another run's weights (`zoo run MODEL DATASET --init RUN_ID`).

The source is a finished run. The new run takes its tokenizer (file and config, so the ids
mean the same tokens) and every parameter whose name and shape match the new model's; the
rest (a classifier's head on a language model's body, a resized position table) starts
fresh, as the architecture initialises it, and is listed. Works across tasks and datasets:
pretrain on one, fine-tune on another.

The source run's id is part of the new run's config hash and provenance (``init`` in
config.json: the source's id, model, dataset and task, the SHA-256 of its weights, and
which tensors were copied and which are new), so `zoo reproduce` and `zoo resume` start
from the same weights, and `zoo compare` tells the runs apart.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from zoo.errors import RunRefused, ZooError

WEIGHTS, TOKENIZER = "model.safetensors", "tokenizer.json"
NEEDS = "a finished training run (its weights and tokenizer) of a model with the same tokenizer"


@dataclass(frozen=True)
class InitSource:
    """A finished run whose weights a new run starts from."""

    run_id: str
    folder: Path
    provenance: dict  # the source run's config.json

    @property
    def tokenizer(self) -> str:
        return self.provenance["tokenizer"]

    @property
    def tokenizer_config(self) -> dict:
        return dict((self.provenance.get("configs") or {}).get("tokenizer") or {})

    def record(self) -> dict:
        """What the new run's provenance keeps about its source."""
        digest = hashlib.sha256((self.folder / WEIGHTS).read_bytes()).hexdigest()
        return {
            "run_id": self.run_id,
            "model": self.provenance.get("model"),
            "dataset": self.provenance.get("dataset"),
            "task": self.provenance.get("task"),
            "weights_sha256": digest,
        }

    def weights(self) -> dict:
        from zoo.io import load_safetensors

        return load_safetensors(self.folder / WEIGHTS)

    def load_tokenizer(self, entry):
        from zoo.io import load_tokenizer

        return load_tokenizer(entry.load(), self.folder / TOKENIZER)


def source_run(run_id: str, *, used_by: str | None = None) -> InitSource:
    """The finished run named by ``run_id`` (an id or unique prefix), with its weights and
    tokenizer on disk; a ZooError in one line otherwise. ``used_by`` names the run that
    started from it, for the message when it has been removed since."""
    from zoo.records.folder import read_config
    from zoo.records.paths import run_folder
    from zoo.records.store import Store

    whose = f"run {used_by} started from run {run_id} (--init), which" if used_by else None
    if not isinstance(run_id, str) or not run_id.strip():
        raise ZooError(f"init needs a run id: {NEEDS}; zoo runs lists them", option="init")
    try:
        with Store() as store:
            row = store.get(run_id)
    except ZooError as exc:
        if whose:
            raise ZooError(f"{whose} was removed; it cannot be rerun or resumed") from None
        raise ZooError(f"init: {exc}", option="init") from None
    if row["kind"] != "train" or row["status"] != "finished":
        what = {
            "eval": f"an evaluation of run {row.get('parent_id')}, with no weights of its own",
            "ensemble": "an ensemble (its members' predictions combined), with no weights of "
            "its own",
        }.get(row["kind"], f"{row['status']}, not finished")
        raise ZooError(f"init {row['id']}: that run is {what}; init needs {NEEDS}", option="init")
    folder = run_folder(row["id"])  # its id checked, and its folder inside ZOO_HOME
    missing = [
        name for name in ("config.json", WEIGHTS, TOKENIZER) if not (folder / name).is_file()
    ]
    if missing:
        where = whose or f"--init {row['id']}: that run"
        raise ZooError(f"{where} has no {' or '.join(missing)} in {folder} (removed?)")
    return InitSource(row["id"], folder, read_config(folder / "config.json"))


def check_source_fits(source: InitSource, zoo) -> None:
    """The source's weights are what its config.json builds, checked before the new run
    trains: a config.json edited to another shape (or weights from elsewhere) would
    otherwise copy whatever happens to match, and train on."""
    from zoo.core.config import build_config
    from zoo.core.containment import call_plugin
    from zoo.core.limits import check_memory
    from zoo.core.loading import task_loss
    from zoo.core.names import get_task
    from zoo.train.model import TaskSpec
    from zoo.train.torch_model import as_model

    where = f"init {source.run_id}: its config.json ({source.folder / 'config.json'})"
    provenance = source.provenance
    try:
        architecture = zoo.architectures.get(provenance["architecture"])
        model_config = build_config(
            architecture.config_class(), (provenance.get("configs") or {}).get("model") or {}
        )
        spec = TaskSpec(**provenance["spec"])
    except (ZooError, KeyError, TypeError) as exc:
        raise ZooError(f"{where} cannot be read back ({str(exc)[:200]})", option="init") from None
    check_memory(architecture, model_config, where, vocab_size=spec.vocab_size)
    built = call_plugin(
        architecture.load(),
        model_config,
        spec,
        what=f"architecture {architecture.name!r}",
        plugin=architecture.plugin,
    )
    task = get_task(provenance.get("task"), zoo)
    model = as_model(built, "cpu", loss=task_loss(task) if task is not None else None)
    expected = {name: tuple(array.shape) for name, array in model.state_dict().items()}
    weights = source.weights()
    wrong = [
        f"{name} {list(weights[name].shape)}, built {list(shape)}"
        for name, shape in expected.items()
        if name in weights and tuple(weights[name].shape) != shape
    ]
    missing = sorted(set(expected) - set(weights))
    if wrong or missing:
        detail = "; ".join(wrong[:2] + [f"no {name}" for name in missing[:2]])
        raise ZooError(
            f"{where} builds a model its weights do not fit ({detail}): the folder was "
            "edited or damaged; start from another run",
            option="init",
        )


def initialize(model, source: InitSource, say=None) -> dict:
    """Copy the source's tensors into ``model`` (a ``zoo.Model``) where name and shape match.
    Returns ``{"copied": [...], "fresh": [...]}``; RunRefused when nothing matches."""
    say = say or (lambda message: None)
    theirs = source.weights()
    ours = model.state_dict()
    copied = sorted(
        k for k, v in ours.items() if k in theirs and tuple(theirs[k].shape) == tuple(v.shape)
    )
    fresh = sorted(set(ours) - set(copied))
    if not copied:
        sample = ", ".join(sorted(theirs)[:3])
        raise RunRefused(
            f"init {source.run_id}: none of its {len(theirs)} tensors ({sample}, "
            f"...) matches a parameter of this model by name and shape; start from "
            "a run of the same architecture and size",
            option="init",
        )
    model.load_state_dict(
        {**ours, **{k: theirs[k].astype(ours[k].dtype, copy=False) for k in copied}}
    )
    numbers = sum(int(ours[k].size) for k in copied)
    total = sum(int(v.size) for v in ours.values())
    new = f"; new: {', '.join(fresh[:6])}{', ...' if len(fresh) > 6 else ''}" if fresh else ""
    say(
        f"--init {source.run_id}: {len(copied)} of {len(ours)} tensors copied "
        f"({numbers:,} of {total:,} numbers){new}"
    )
    return {"copied": copied, "fresh": fresh}
