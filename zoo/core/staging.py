"""What a plugin's `register` callables do: check each entry a hook hands over (name, target,
config class, tasks, columns) and stage it, so a plugin whose hook fails adds nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from zoo.core.kinds import (
    COLUMN_ROLES,
    COMMAND_PATTERN,
    NAME_PATTERN,
    NAME_RULE,
    Command,
    Entry,
    describe_target,
    target_problem,
)
from zoo.errors import ZooError, shown
from zoo.tasks import Task


def entry_stager(kind: str, plugin_name: str, staged: list[Entry]) -> Callable:
    def register(
        name,
        target,
        *,
        description="",
        config=None,
        tasks=(),
        task=None,
        columns=None,
        memory=None,
        architectures=(),
    ):
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise ZooError(f"{kind} name {shown(name)} must be {NAME_RULE}")
        if kind == "tokenizer" and "-" in name:  # a model name splits at its last '-'
            raise ZooError(
                f"{kind} name {name!r} may not contain '-' (model names are ARCH-TOKENIZER)"
            )
        if isinstance(target, str) and ":" not in target:
            raise ZooError(f"{kind} {name!r}: target {target!r} must look like 'module:attr'")
        if target is None:
            raise ZooError(f"{kind} {name!r}: target is missing")
        if not isinstance(target, str) and (problem := target_problem(kind, target)):
            raise ZooError(f"{kind} {name!r}: {problem}")
        if not (
            config is None
            or isinstance(config, str)
            and ":" in config
            or isinstance(config, type)
            and dataclasses.is_dataclass(config)
        ):
            raise ZooError(
                f"{kind} {name!r}: config must be a dataclass or a 'module:Class' "
                f"string, not {type(config).__name__}"
            )
        if not isinstance(tasks, (list, tuple)) or not all(isinstance(t, str) for t in tasks):
            raise ZooError(
                f"{kind} {name!r}: tasks must be a list of task names, like "
                f"('my-task',), not {tasks!r:.60}"
            )
        if not isinstance(description, str):
            raise ZooError(f"{kind} {name!r}: description must be a string")
        if kind == "pipeline":
            if not isinstance(task, Task):
                raise ZooError(
                    f"pipeline {name!r}: task=zoo.plugin.Task(...) must declare the task it "
                    f"serves (loss, metrics, primary metric), not {task!r:.60}"
                )
            if task.name != name:
                raise ZooError(
                    f"pipeline {name!r} declares task {task.name!r}; register it "
                    f"under the task's name"
                )
        elif task is not None:
            raise ZooError(f"{kind} {name!r}: only pipelines declare a task (use tasks=(...))")
        if memory is not None and kind != "architecture":
            raise ZooError(f"{kind} {name!r}: only architectures declare a memory estimate")
        if not (memory is None or isinstance(memory, str) and ":" in memory or callable(memory)):
            raise ZooError(
                f"architecture {name!r}: memory must be a function memory(config, vocab_size) "
                f"-> bytes or a 'module:function' string, not {memory!r:.60}"
            )
        if architectures and kind != "exporter":
            raise ZooError(f"{kind} {name!r}: only exporters declare architectures")
        if kind == "exporter" and not (
            isinstance(architectures, (list, tuple))
            and architectures
            and all(isinstance(a, str) and a for a in architectures)
        ):
            raise ZooError(
                f"exporter {name!r}: architectures must name the architectures it "
                f"exports, like ('decoder',), or ('*',) for any, not {architectures!r:.60}"
            )
        if columns is not None and kind != "dataset":
            raise ZooError(f"{kind} {name!r}: only datasets declare columns")
        if columns is not None and not (
            isinstance(columns, dict)
            and set(columns) <= set(COLUMN_ROLES)
            and all(isinstance(c, str) and c for c in columns.values())
        ):
            raise ZooError(
                f"dataset {name!r}: columns must map roles ({', '.join(COLUMN_ROLES)}) "
                f"to column names, like {{'text': 'text', 'label': 'target'}}, not "
                f"{columns!r:.60}"
            )
        if any(e.name == name and e.kind == kind for e in staged):
            raise ZooError(f"{kind} name {name!r} registered twice by plugin {plugin_name!r}")
        staged.append(
            Entry(
                kind,
                name,
                target,
                plugin_name,
                description,
                config,
                tuple(tasks),
                task,
                tuple((columns or {}).items()),
                memory,
                tuple(architectures),
            )
        )

    return register


def command_stager(kind: str, plugin_name: str, staged: list) -> Callable:
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
        if any(e.name == name and e.kind == kind for e in staged):
            raise ZooError(f"command {name!r} registered twice by plugin {plugin_name!r}")
        staged.append(Command(name, handler, plugin_name, help, description, arguments))

    return register
