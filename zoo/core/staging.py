"""What each hook's ``register`` does (typed in zoo.hookspecs): check what a plugin hands
over (its name, its target, the kind's own fields) and stage it, so a plugin whose hook
fails adds nothing. API 1.1's form, one ``register`` taking every kind's keywords, still
works with a ZooDeprecationWarning naming the replacement (``accepting_api_1_1``)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings
from collections.abc import Callable

from zoo.core.kinds import (
    COLUMN_ROLES,
    COMMAND_PATTERN,
    HOOK_FOR_KIND,
    NAME_PATTERN,
    NAME_RULE,
    ArchitectureEntry,
    Command,
    DatasetEntry,
    Entry,
    ExporterEntry,
    PipelineEntry,
    describe_target,
    target_problem,
)
from zoo.errors import ZooDeprecationWarning, ZooError, shown
from zoo.hookspecs import (
    RegisterArchitecture,
    RegisterCommand,
    RegisterDataset,
    RegisterExporter,
    RegisterLogger,
    RegisterPipeline,
    RegisterTokenizer,
)
from zoo.tasks import Task


class Stage:
    """One plugin's registrations of one kind, checked and collected before any is added."""

    def __init__(self, kind: str, plugin: str, staged: list):
        self.kind, self.plugin, self.staged = kind, plugin, staged

    def entry(self, cls: type[Entry], name, target, config, description, **own) -> Entry:
        """``cls`` filled in, after the checks every kind shares."""
        check_name(self.kind, name)
        check_target(self.kind, name, target)
        check_config(self.kind, name, config)
        if not isinstance(description, str):
            raise ZooError(f"{self.kind} {name!r}: description must be a string")
        return cls(self.kind, name, target, self.plugin, description, config, **own)

    def add(self, entry: Entry | Command) -> None:
        if any(e.name == entry.name and e.kind == entry.kind for e in self.staged):
            raise ZooError(
                f"{entry.kind} name {entry.name!r} registered twice by plugin {self.plugin!r}"
            )
        self.staged.append(entry)


def check_name(kind: str, name) -> None:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ZooError(f"{kind} name {shown(name)} must be {NAME_RULE}")


def check_target(kind: str, name: str, target) -> None:
    if isinstance(target, str) and ":" not in target:
        raise ZooError(f"{kind} {name!r}: target {target!r} must look like 'module:attr'")
    if target is None:
        raise ZooError(f"{kind} {name!r}: target is missing")
    if not isinstance(target, str) and (problem := target_problem(kind, target)):
        raise ZooError(f"{kind} {name!r}: {problem}")


def check_config(kind: str, name: str, config) -> None:
    if config is None or isinstance(config, str) and ":" in config:
        return
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise ZooError(
            f"{kind} {name!r}: config must be a dataclass or a 'module:Class' "
            f"string, not {type(config).__name__}"
        )


def task_names(kind: str, name: str, tasks) -> tuple[str, ...]:
    if not isinstance(tasks, (list, tuple)) or not all(isinstance(t, str) for t in tasks):
        raise ZooError(
            f"{kind} {name!r}: tasks must be a list of task names, like "
            f"('my-task',), not {tasks!r:.60}"
        )
    return tuple(tasks)


# -- one register per kind (zoo.hookspecs: RegisterArchitecture, ...) ----------------------
def architecture_register(stage: Stage) -> RegisterArchitecture:
    def register(name, build, *, config=None, tasks=(), memory=None, description=""):
        if not (memory is None or isinstance(memory, str) and ":" in memory or callable(memory)):
            raise ZooError(
                f"architecture {shown(name)}: memory must be a function memory(config, "
                f"vocab_size) -> bytes or a 'module:function' string, not {memory!r:.60}"
            )
        own = {"tasks": task_names(stage.kind, name, tasks), "memory": memory}
        stage.add(stage.entry(ArchitectureEntry, name, build, config, description, **own))

    return register


def tokenizer_register(stage: Stage) -> RegisterTokenizer:
    def register(name, tokenizer, *, config=None, description=""):
        if isinstance(name, str) and "-" in name:  # a model name splits at its last '-'
            raise ZooError(
                f"tokenizer name {name!r} may not contain '-' (model names are ARCH-TOKENIZER)"
            )
        stage.add(stage.entry(Entry, name, tokenizer, config, description))

    return register


def dataset_register(stage: Stage) -> RegisterDataset:
    def register(name, load, *, config=None, tasks=(), columns=None, description=""):
        if columns is not None and not (
            isinstance(columns, dict)
            and set(columns) <= set(COLUMN_ROLES)
            and all(isinstance(c, str) and c for c in columns.values())
        ):
            raise ZooError(
                f"dataset {shown(name)}: columns must map roles ({', '.join(COLUMN_ROLES)}) "
                f"to column names, like {{'text': 'text', 'label': 'target'}}, not "
                f"{columns!r:.60}"
            )
        own = {
            "tasks": task_names(stage.kind, name, tasks),
            "columns": tuple((columns or {}).items()),
        }
        stage.add(stage.entry(DatasetEntry, name, load, config, description, **own))

    return register


def pipeline_register(stage: Stage) -> RegisterPipeline:
    def register(task, pipeline, *, config=None, description=""):
        if not isinstance(task, Task):
            raise ZooError(
                f"pipeline {shown(task)}: register(task, pipeline) takes the "
                f"zoo.plugin.Task(...) it serves (loss, metrics, primary metric), not "
                f"{task!r:.60}"
            )
        entry = stage.entry(PipelineEntry, task.name, pipeline, config, description, task=task)
        stage.add(entry)

    return register


def logger_register(stage: Stage) -> RegisterLogger:
    def register(name, tracker, *, description=""):
        stage.add(stage.entry(Entry, name, tracker, None, description))

    return register


def exporter_register(stage: Stage) -> RegisterExporter:
    def register(name, exporter, *, architectures, description=""):
        if not (
            isinstance(architectures, (list, tuple))
            and architectures
            and all(isinstance(a, str) and a for a in architectures)
        ):
            raise ZooError(
                f"exporter {shown(name)}: architectures must name the architectures it "
                f"exports, like ('decoder',), or ('*',) for any, not {architectures!r:.60}"
            )
        own = {"architectures": tuple(architectures)}
        stage.add(stage.entry(ExporterEntry, name, exporter, None, description, **own))

    return register


def command_register(stage: Stage) -> RegisterCommand:
    def register(name, handler, *, help="", description="", arguments=None):
        if not isinstance(name, str) or not COMMAND_PATTERN.match(name):
            raise ZooError(
                f"command name {name!r} must be lower-case letters, digits and '-', "
                "starting with a letter"
            )
        for what, target in (("handler", handler), ("arguments", arguments)):
            if target is None and what == "arguments":
                continue
            if isinstance(target, str) and ":" not in target:
                raise ZooError(
                    f"command {name!r}: {what} {target!r} must look like 'module:function'"
                )
            if not isinstance(target, str) and not callable(target):
                raise ZooError(
                    f"command {name!r}: {what} is {describe_target(target)}, not a function"
                )
        if not isinstance(help, str) or not isinstance(description, str):
            raise ZooError(f"command {name!r}: help and description must be strings")
        stage.add(Command(name, handler, stage.plugin, help, description, arguments))

    return register


REGISTERS: dict[str, Callable[[Stage], Callable]] = {
    "architecture": architecture_register,
    "tokenizer": tokenizer_register,
    "dataset": dataset_register,
    "pipeline": pipeline_register,
    "logger": logger_register,
    "exporter": exporter_register,
    "command": command_register,
}


def register_for(kind: str, plugin: str, staged: list) -> Callable:
    """The ``register`` a plugin's hook of ``kind`` receives, staging into ``staged``."""
    register = REGISTERS[kind](Stage(kind, plugin, staged))
    return register if kind == "command" else accepting_api_1_1(kind, plugin, register)


# -- API 1.1's form: one register for every kind -------------------------------------------
# Its keywords that belong to some kinds only -> which
OWNERS = {
    "tasks": "architectures and datasets",
    "task": "pipelines",
    "columns": "datasets",
    "memory": "architectures",
    "architectures": "exporters",
    "config": "architectures, tokenizers, datasets and pipelines",
}


def accepting_api_1_1(kind: str, plugin: str, register: Callable) -> Callable:
    """``register`` that also takes API 1.1's form (``target=``, ``register(name, target,
    task=TASK)`` for a pipeline, another kind's keywords left empty) with a
    ZooDeprecationWarning naming the replacement; API 2.0 drops it."""
    parameters = list(inspect.signature(register).parameters)
    usage = f"register({', '.join(parameters[:2])}, *, {', '.join(parameters[2:])})"

    @functools.wraps(register)
    def compatible(*args, **keywords):
        named_pipeline = kind == "pipeline" and args and isinstance(args[0], str)
        old = {
            k: keywords.pop(k)
            for k in list(keywords)
            if (k in OWNERS or k == "target")
            and k not in parameters
            or (k == "task" and named_pipeline)
        }
        if not old and not named_pipeline:
            return register(*args, **keywords)
        args = from_api_1_1(kind, args, old)
        warnings.warn(
            f"{HOOK_FOR_KIND[kind]} of plugin {plugin!r}: register(...) with "
            f"{', '.join(f'{k}=' for k in old) or 'a name'} is API 1.1's form, deprecated; "
            f"call {usage} (plugin API 2.0 takes only that)",
            ZooDeprecationWarning,
            stacklevel=2,
        )
        return register(*args, **keywords)

    return compatible


def from_api_1_1(kind: str, args: tuple, old: dict) -> tuple:
    """The positional arguments of the new form for API 1.1's call; an old keyword that
    says something this kind cannot take is a ZooError, as it always was."""
    name = args[0] if args else None
    if "target" in old:
        args = (*args[:1], old.pop("target"), *args[1:])
    if kind == "pipeline" and isinstance(name, str):
        task = old.pop("task", None)
        if isinstance(task, Task) and task.name != name:
            raise ZooError(
                f"pipeline {name!r} declares task {task.name!r}; register it under the "
                "task's name (or call register(task, pipeline))"
            )
        args = (task, *args[1:])
    for key, value in old.items():
        if value not in (None, (), [], {}):
            raise ZooError(f"{kind} {shown(name)}: only {OWNERS[key]} declare {key}=")
    return args
