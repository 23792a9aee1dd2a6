"""What `zoo list` prints: plain rows of the zoo's entries and the task matrix, then text
formatting."""

from __future__ import annotations

from zoo.core.catalogue import BUILTIN_FILE
from zoo.core.kinds import natural_key
from zoo.core.names import choose_task, model_names, resolve_model
from zoo.errors import ZooError

KIND_OF = {
    "architectures": "architecture",
    "tokenizers": "tokenizer",
    "datasets": "dataset",
    "pipelines": "pipeline",
}


def as_glob(pattern: str | None) -> str:
    """A name filter as typed: a wildcard pattern ('*-char') as it is, any other text as a
    part of the name ('char' matches 'encoder-char' and 'char')."""
    if not pattern:
        return "*"
    return pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"


def rows(zoo, kind: str, pattern: str = "*", *, all_pairs: bool = False) -> list[dict]:
    import fnmatch

    pattern = as_glob(pattern)

    if kind == "pipelines":  # one per task: the name is the task's
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
    if kind == "loggers":
        return [
            {"name": e.name, "description": e.description, "plugin": e.plugin}
            for e in zoo.loggers.entries(pattern)
        ]
    if kind in ("architectures", "tokenizers"):
        return [
            {
                "name": e.name,
                "description": e.description,
                "plugin": e.plugin,
                **({"tasks": list(e.tasks)} if kind == "architectures" else {}),
            }
            for e in zoo.entries_of[KIND_OF[kind]].entries(pattern)
        ]
    if kind == "datasets":
        from zoo.data import datasets as data
        from zoo.data import sources

        out = []
        for name, entry in zoo.catalogue.datasets.items():
            source = entry.hub or entry.path or f"plugin dataset {entry.plugin}"
            tasks = data.tasks_of(
                sources.DatasetRef(
                    name, "plugin" if entry.plugin else "hub", entry.plugin or "", entry
                ),
                zoo,
            )
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
    if kind == "models":  # the presets; with all_pairs or a pattern, every pair too
        out = []
        every = all_pairs or pattern != "*"
        names = model_names(zoo) if every else [*zoo.catalogue.models, *zoo.catalogue.ensembles]
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
            plugins = sorted({spec.architecture.plugin, spec.tokenizer.plugin})
            out.append(
                {
                    "name": name,
                    "architecture": spec.architecture.name,
                    "tokenizer": spec.tokenizer.name,
                    "preset": name in zoo.catalogue.models,
                    "description": spec.description,
                    "plugin": ", ".join(plugins),
                    "from": preset_origin(zoo, zoo.catalogue.models.get(name)),
                }
            )
        return out
    if kind == "plugins":
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
    raise ZooError(f"unknown kind {kind!r}")


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


def format_section(kind: str, items: list[dict]) -> str:
    lines = [f"{kind} ({len(items)})"]
    if not items:
        return lines[0] + "\n  (none)\n"
    width = max(len(r["name"]) for r in items) + 2
    for r in items:
        if kind == "plugins":
            detail = f"{r['source']}"
            if r["distribution"]:
                detail += f", {r['distribution']} {r['version']}"
            detail += f", {r['location']}"
            if r["error"]:
                lines.append(f"  {r['name']:<{width}}SET ASIDE ({detail}): {r['error']}")
            else:
                lines.append(f"  {r['name']:<{width}}{detail}; hooks: {', '.join(r['hooks'])}")
            continue
        extra = ""
        if kind == "models":
            extra = " [preset]" if r["preset"] else ""
            if r["from"] not in (None, "zoo"):  # a plugin's preset, or the user's own
                extra = f" [preset from {r['from']}]"
        if kind == "datasets":
            extra = f" [{r['task']}; {r['source']}]"
        if kind == "architectures":
            extra = f" [{', '.join(r['tasks'])}]"
        if kind == "pipelines":
            extra = f" [primary {r['primary']}, {r['better']} is better]"
        lines.append(f"  {r['name']:<{width}}{r['description']}{extra}  ({r['plugin']})")
    return "\n".join(lines) + "\n"


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


def format_matrix(table: list[dict]) -> str:
    import pandas as pd

    frame = pd.DataFrame(table)
    if frame.empty:
        return "(empty)"
    # a pair that cannot run shows a number; each distinct reason is written once, below
    reasons = list(dict.fromkeys(r for t, r in zip(frame["task"], frame["reason"]) if not t))
    number = {reason: i for i, reason in enumerate(reasons, 1)}
    frame["cell"] = [
        task or f"- ({number[reason]})" for task, reason in zip(frame["task"], frame["reason"])
    ]
    text = frame.pivot(index="architecture", columns="dataset", values="cell").to_string()
    notes = [
        f"({i}) {reason if len(reason) <= 100 else reason[:97] + '...'}"
        for reason, i in number.items()
    ]
    return (
        text
        + ("\n\n" + "\n".join(notes) if notes else "")
        + "\n(zoo list --matrix --json gives every reason in full)"
    )
