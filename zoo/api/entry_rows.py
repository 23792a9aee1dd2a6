"""What `zoo list` finds, as rows of plain data: each kind's entries, and the task matrix
(which task each dataset serves with which architecture). The command line renders them."""

from __future__ import annotations

from zoo.core.catalogue import BUILTIN_FILE
from zoo.core.kinds import natural_key
from zoo.core.names import choose_task, model_names, resolve_model
from zoo.errors import ZooError


def as_glob(pattern: str | None) -> str:
    """A name filter as typed: a wildcard pattern ('*-char') as it is, any other text as a
    part of the name ('char' matches 'encoder-char' and 'char')."""
    if not pattern:
        return "*"
    return pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"


def rows(zoo, kind: str, pattern: str = "*", *, all_pairs: bool = False) -> list[dict]:
    """The rows of one kind whose names match ``pattern`` (see ``as_glob``): name, plugin,
    description and the kind's own fields. Models are the presets (with ``all_pairs``, or
    a pattern, every ARCHITECTURE-TOKENIZER pair too)."""
    pattern = as_glob(pattern)
    if kind == "models":
        return model_rows(zoo, pattern, every=all_pairs or pattern != "*")
    listed = ROWS.get(kind)
    if listed is None:
        raise ZooError(f"unknown kind {kind!r}")
    return listed(zoo, pattern)


def pipeline_rows(zoo, pattern: str) -> list[dict]:
    """One per task: the name is the task's."""
    return [
        {
            "name": e.name,
            "description": e.description,
            "plugin": e.plugin,
            "primary": e.task.primary,
            "better": e.task.metric(e.task.primary).better,
        }
        for e in zoo.pipelines.entries(pattern)
    ]


def logger_rows(zoo, pattern: str) -> list[dict]:
    return [
        {"name": e.name, "description": e.description, "plugin": e.plugin}
        for e in zoo.loggers.entries(pattern)
    ]


def architecture_rows(zoo, pattern: str) -> list[dict]:
    return [
        {"name": e.name, "description": e.description, "plugin": e.plugin, "tasks": list(e.tasks)}
        for e in zoo.architectures.entries(pattern)
    ]


def tokenizer_rows(zoo, pattern: str) -> list[dict]:
    return [
        {"name": e.name, "description": e.description, "plugin": e.plugin}
        for e in zoo.tokenizers.entries(pattern)
    ]


def dataset_rows(zoo, pattern: str) -> list[dict]:
    """The catalogue's datasets, then those plugins generate, in natural order."""
    import fnmatch

    from zoo.data import datasets as data
    from zoo.data import sources

    out = []
    for name, entry in zoo.catalogue.datasets.items():
        source = entry.hub or entry.path or f"plugin dataset {entry.plugin}"
        kind = "plugin" if entry.plugin else "hub"
        tasks = data.tasks_of(sources.DatasetRef(name, kind, entry.plugin or "", entry), zoo)
        out.append(
            {
                "name": name,
                "description": entry.description,
                "source": source,
                "task": tasks[0] if tasks else "",
                "plugin": "catalogue",
            }
        )
    for entry in zoo.datasets.entries():
        if entry.name not in zoo.catalogue.datasets:
            out.append(
                {
                    "name": entry.name,
                    "description": entry.description,
                    "source": "generated",
                    "task": ", ".join(entry.tasks),
                    "plugin": entry.plugin,
                }
            )
    return sorted(
        (r for r in out if fnmatch.fnmatch(r["name"], pattern)),
        key=lambda r: natural_key(r["name"]),
    )


def model_rows(zoo, pattern: str, *, every: bool) -> list[dict]:
    """The presets (``every``: every ARCHITECTURE-TOKENIZER pair too) matching ``pattern``."""
    import fnmatch

    names = model_names(zoo) if every else [*zoo.catalogue.models, *zoo.catalogue.ensembles]
    out = []
    for name in sorted(fnmatch.filter(names, pattern), key=natural_key):
        if name in zoo.catalogue.ensembles:  # a preset of presets
            preset = zoo.catalogue.ensembles[name]
            out.append(
                {
                    "name": name,
                    "architecture": "ensemble",
                    "tokenizer": None,
                    "preset": True,
                    "description": preset.description,
                    "plugin": "catalogue",
                    "from": preset_origin(zoo, preset),
                    "members": preset.members,
                    "weights": preset.weights,
                }
            )
            continue
        spec = resolve_model(name, zoo)
        out.append(
            {
                "name": name,
                "architecture": spec.architecture.name,
                "tokenizer": spec.tokenizer.name,
                "preset": name in zoo.catalogue.models,
                "description": spec.description,
                "plugin": ", ".join(sorted({spec.architecture.plugin, spec.tokenizer.plugin})),
                "from": preset_origin(zoo, zoo.catalogue.models.get(name)),
            }
        )
    return out


def plugin_rows(zoo, pattern: str) -> list[dict]:
    import fnmatch

    return [
        {
            "name": i.name,
            "source": i.source,
            "distribution": i.distribution,
            "version": i.version,
            "location": i.location,
            "hooks": i.hooks,
            "status": "set aside" if i.error else "loaded",
            "error": i.error,
        }
        for i in zoo.plugins.values()
        if fnmatch.fnmatch(i.name, pattern)
    ]


ROWS = {  # kind -> its rows (models take one more option: every pair, or the presets)
    "architectures": architecture_rows,
    "tokenizers": tokenizer_rows,
    "datasets": dataset_rows,
    "pipelines": pipeline_rows,
    "loggers": logger_rows,
    "plugins": plugin_rows,
}


def preset_origin(zoo, preset) -> str | None:
    """Where a preset comes from: "zoo" (the built-in catalogue), the distribution (and
    version) of the plugin that registered it, or the user's registry.toml; None for a
    name that is no preset (an ARCHITECTURE-TOKENIZER pair)."""
    if preset is None:
        return None
    if preset.plugin:
        info = zoo.plugins.get(preset.plugin)
        if info is not None and info.distribution:
            return f"{info.distribution} {info.version}".strip()
        return f"plugin {preset.plugin}"
    if preset.name in zoo.catalogue.builtin_presets and preset.source == BUILTIN_FILE:
        return "zoo"
    return str(preset.source)


def matrix(zoo) -> list[dict]:
    """For every architecture x dataset: the task that would run, or why none can."""
    from zoo.data import datasets as data

    out = []
    datasets = [r["name"] for r in rows(zoo, "datasets")]
    for arch in zoo.architectures.entries():
        for name in datasets:
            ref = data.resolve(name, zoo)
            tasks = data.tasks_of(ref, zoo)
            try:
                task, reason = choose_task(arch, tasks), ""
                if task not in zoo.pipelines:
                    task, reason = "", f"no pipeline is registered for {task}"
            except ZooError as exc:
                task, reason = "", str(exc)
            out.append({"architecture": arch.name, "dataset": name, "task": task, "reason": reason})
    return out
