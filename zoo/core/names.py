"""Names the user types, resolved against the registry: a model (a catalogue preset or an
ARCHITECTURE-TOKENIZER pair), the tasks a dataset serves, and the task a run will do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zoo.core.loading import get_zoo
from zoo.errors import UnknownNameError, ZooError
from zoo.tasks import Task


def registered_tasks(zoo=None) -> dict[str, Task]:
    """Every registered task by name, in registration order."""
    zoo = zoo or get_zoo()
    return {entry.name: entry.task for entry in zoo.pipelines.entries_in_order()}


def get_task(name: str | None, zoo=None) -> Task | None:
    """The declaration of a registered task; None for a task no plugin declares (a run
    recorded by a plugin that is no longer installed)."""
    if not name:
        return None
    return registered_tasks(zoo).get(name)


def tasks_for(dataset_task: str | None, roles: set[str], zoo=None) -> tuple[str, ...]:
    """The tasks a dataset serves, best first: the task it names (its catalogue entry's or
    plugin's) and the tasks declared to use such datasets; or, when it names none, the tasks
    whose column roles it has, the most specific (most roles) first."""
    tasks = registered_tasks(zoo)
    if dataset_task is not None:
        named = [t.name for t in tasks.values() if t.usable_with(dataset_task, roles)]
        return tuple([dataset_task] + [n for n in named if n != dataset_task])
    usable = [t for t in tasks.values() if t.usable_with(None, roles)]
    usable.sort(key=lambda t: -len(t.columns))  # stable: registration order among equals
    return tuple(t.name for t in usable)


def supported_tasks(architecture, zoo=None) -> tuple[str, ...]:
    """The tasks an architecture serves: those it lists, then those whose pipelines adapt
    an architecture of a listed task (``zoo.plugin.Task.adapts``)."""
    own = tuple(architecture.tasks)
    adapted = [
        task.name
        for task in registered_tasks(zoo).values()
        if task.name not in own and set(task.adapts) & set(own)
    ]
    return own + tuple(adapted)


@dataclass
class ModelSpec:
    name: str
    architecture: Any  # Entry
    tokenizer: Any  # Entry
    overrides: dict = field(default_factory=dict)
    description: str = ""


def resolve_model(name: str, zoo) -> ModelSpec:
    """A preset from the catalogue, or any ARCHITECTURE-TOKENIZER pair of registered plugins."""
    if name in zoo.catalogue.ensembles:
        members = ", ".join(zoo.catalogue.ensembles[name].members)
        raise ZooError(
            f"{name} is an ensemble preset (of {members}): `zoo run {name} DATASET` "
            "trains its members and combines them"
        )
    preset = zoo.catalogue.models.get(name)
    if preset is not None:
        return ModelSpec(
            name,
            zoo.architectures.get(preset.architecture),
            zoo.tokenizers.get(preset.tokenizer),
            dict(preset.overrides),
            preset.description,
        )
    arch, sep, tok = name.rpartition("-")  # tokenizer names have no '-'; hf-gpt_neox-char
    if sep and arch in zoo.architectures and tok in zoo.tokenizers:
        entry = zoo.architectures.get(arch)
        return ModelSpec(name, entry, zoo.tokenizers.get(tok), {}, entry.description)
    if name in zoo.catalogue.templates:
        raise ZooError(
            f"{name!r} is a template in registry.toml (no architecture or "
            "tokenizer): presets build on it with base; it does not train itself"
        )
    raise UnknownNameError("model", name, model_names(zoo), hint="zoo list models shows all")


def model_names(zoo) -> list[str]:
    names = set(zoo.catalogue.models) | set(zoo.catalogue.ensembles)
    names.update(f"{a}-{t}" for a in zoo.architectures.names() for t in zoo.tokenizers.names())
    return sorted(names)


def choose_task(
    architecture, dataset_tasks, wanted: str | None = None, *, dataset: str = "", known=()
) -> str:
    """The first task the dataset serves that the architecture supports (or `wanted`).
    ``dataset`` names the dataset in messages; ``known`` is every task a pipeline serves,
    for a did-you-mean when `wanted` is none of them."""
    supported = supported_tasks(architecture)
    if wanted:
        which = f"dataset {dataset}" if dataset else "the dataset"
        if known and wanted not in known:
            raise UnknownNameError(
                "task",
                wanted,
                known,
                hint=f"{which} serves: {', '.join(dataset_tasks) or 'no known task'}",
            )
        if wanted not in dataset_tasks:
            raise ZooError(
                f"{which} does not serve task {wanted!r}; it serves: "
                f"{', '.join(dataset_tasks) or 'nothing known'}"
            )
        if wanted not in supported:
            raise ZooError(
                f"{architecture.name} has no {wanted} head; it supports: {', '.join(supported)}"
            )
        return wanted
    for task in dataset_tasks:
        if task in supported:
            return task
    raise ZooError(task_mismatch(architecture, dataset_tasks))


def task_mismatch(architecture, dataset_tasks) -> str:
    wanted = dataset_tasks[0] if dataset_tasks else "?"
    return (
        f"{architecture.name} has no {wanted} head (it supports: "
        f"{', '.join(supported_tasks(architecture)) or 'no task'}; the dataset serves: "
        f"{', '.join(dataset_tasks) or 'no task'})"
    )
