"""What `zoo show NAME` finds, as data: a model's architecture, tokenizer and settings, an
architecture's, tokenizer's or pipeline's fields and task, a dataset's source and columns,
a run's row, evaluations and folder. The command line renders them (zoo.cli.show_text)."""

from __future__ import annotations

import dataclasses
import typing

from zoo.api.entry_rows import preset_origin
from zoo.core.names import model_names, resolve_model
from zoo.errors import UnknownNameError
from zoo.results import (
    ConfigField,
    DatasetDetails,
    EntryDetails,
    ModelDetails,
    RunDetails,
    Shown,
)


def shown(zoo, name: str) -> Shown:
    """Everything ``name`` names: a model, a plugin entry and a dataset may share one name
    (``digits`` is an architecture and a dataset), so each match is its own details; a
    name that is none of them is looked up as a run id (a ZooError with a did-you-mean
    when it is no run either)."""
    found: list = [model_details(zoo, name), *entry_details(zoo, name), dataset_details(zoo, name)]
    details = [d for d in found if d is not None]
    if not details:
        run = run_details(zoo, name)
        return Shown("run", run.row["id"], {"type": "run", **run.row}, [run])
    first = details[0]
    if isinstance(first, ModelDetails):
        return Shown("model", name, model_record(first, zoo), details)
    entries = [entry_record(d) for d in details]
    return Shown("entry", name, {"type": "entry", "name": name, "entries": entries}, details)


def config_fields(cls, values: dict | None = None) -> list[ConfigField]:
    """The fields of a config dataclass, each with the value ``values`` gives it (else its
    default)."""
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        hint = hints[f.name]
        kind = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
        set_here = bool(values) and f.name in (values or {})
        value = (values or {})[f.name] if set_here else default
        fields.append(ConfigField(f.name, kind, value, default, required, set_here))
    return fields


def model_details(zoo, name: str) -> ModelDetails | None:
    if name in zoo.catalogue.ensembles:
        preset = zoo.catalogue.ensembles[name]
        return ModelDetails(
            name,
            preset.description,
            preset_origin(zoo, preset),
            members=list(preset.members),
            weights=preset.weights,
        )
    if name not in zoo.catalogue.models and name not in model_names(zoo):
        return None
    from zoo.core.config import split_overrides

    spec = resolve_model(name, zoo)
    pipeline = next(
        (zoo.pipelines.get(t) for t in spec.architecture.tasks if t in zoo.pipelines), None
    )
    classes = {
        "model": spec.architecture.config_class(),
        "tokenizer": spec.tokenizer.config_class(),
        "train": pipeline.config_class() if pipeline else None,
    }
    values = split_overrides(spec.overrides, classes)
    preset = zoo.catalogue.models.get(name)
    return ModelDetails(
        name,
        spec.description,
        preset_origin(zoo, preset),
        spec.architecture.name,
        spec.architecture.plugin,
        spec.tokenizer.name,
        spec.tokenizer.plugin,
        list(spec.architecture.tasks),
        list(preset.base) if preset is not None and preset.base else [],
        pipeline.name if pipeline else None,
        {
            section: config_fields(cls, values[section]) if cls is not None else []
            for section, cls in classes.items()
        },
    )


def model_record(model: ModelDetails, zoo) -> dict:
    """What `zoo show MODEL --json` prints."""
    if model.members:
        return {
            "type": "model",
            "name": model.name,
            "members": model.members,
            "weights": model.weights,
            "description": model.description,
            "preset": True,
        }
    return {
        "type": "model",
        "name": model.name,
        "architecture": model.architecture,
        "tokenizer": model.tokenizer,
        "description": model.description,
        "preset": model.name in zoo.catalogue.models,
        "settings": resolve_model(model.name, zoo).overrides,
    }


def entry_details(zoo, name: str) -> list[EntryDetails]:
    found = []
    for kind in ("architecture", "tokenizer", "pipeline"):
        if name in zoo.entries_of[kind]:
            entry = zoo.entries_of[kind].get(name)
            found.append(
                EntryDetails(
                    kind,
                    name,
                    entry.plugin,
                    entry.description,
                    list(getattr(entry, "tasks", ())),  # an architecture's
                    entry.task if kind == "pipeline" else None,
                    config_fields(entry.config_class()),
                )
            )
    return found


def entry_record(details: EntryDetails | DatasetDetails) -> dict:
    """An entry's or dataset's details as JSON: a task declaration by its primary metric."""
    record: dict = {"kind": "dataset"} if isinstance(details, DatasetDetails) else {}
    record.update(dataclasses.asdict(details))
    if isinstance(details, EntryDetails):
        task = details.task
        record["task"] = None if task is None else {"primary": task.primary}
    return record


def dataset_details(zoo, name: str) -> DatasetDetails | None:
    from zoo.data import datasets as data
    from zoo.data import sources

    if name not in zoo.catalogue.datasets and name not in zoo.datasets:
        return None
    ref = data.resolve(name, zoo)
    mirror = sources.find_in_mirrors(ref.source, zoo) if ref.kind == "hub" else None
    plugin = ref.plugin_entry(zoo)
    description = (ref.entry.description if ref.entry else "") or (
        plugin.description if plugin else ""
    )
    cls = sources.config_class(ref, zoo)
    return DatasetDetails(
        name,
        ref.kind,
        str(ref.source),
        list(data.tasks_of(ref, zoo)),
        None if mirror is None else str(mirror),
        description,
        None if plugin is None else f"{plugin.name} ({plugin.plugin})",
        ref.column("text", zoo),
        ref.column("label", zoo),
        ref.entry.splits if ref.entry and ref.entry.splits else None,
        None if cls is None else config_fields(cls, sources.catalogue_options(ref)),
    )


def run_details(zoo, run_id: str) -> RunDetails:
    from zoo.comparison.table import eval_value, primary_metric
    from zoo.records.paths import run_folder
    from zoo.records.store import Store

    with Store() as store:
        try:
            row = store.get(run_id)
        except UnknownNameError:
            names = (
                model_names(zoo)
                + zoo.architectures.names()
                + zoo.tokenizers.names()
                + list(zoo.catalogue.datasets)
                + zoo.datasets.names()
            )
            raise UnknownNameError(
                "name",
                run_id,
                names,
                hint="not a model, architecture, tokenizer, dataset or run id",
            ) from None
        children = store.evaluations(row["id"])
    metric = primary_metric(row["task"], "eval")
    evaluations = [
        {
            "id": child["id"],
            "status": child["status"],
            "dataset": child["dataset"],
            "split": child["config"].get("split"),
            "metric": metric,
            "value": None
            if metric is None  # a task no installed plugin declares
            else eval_value(child["metrics"], metric, child["config"].get("split")),
        }
        for child in children
    ]
    folder = run_folder(row["id"])
    files = (
        sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        if folder.is_dir()
        else None
    )
    vocab = (row["metrics"] or {}).get("vocab_size")
    if vocab is None and row.get("kind", "train") == "train":
        vocab = saved_vocab_size(folder / "tokenizer.json")
    return RunDetails(row, evaluations, folder, files, vocab)


def saved_vocab_size(path) -> int | None:
    """The vocabulary size of a run folder's tokenizer.json, if it is a tokenizers file."""
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path)).get_vocab_size(with_added_tokens=True)
    except Exception:  # a third-party format: nothing to say
        return None
