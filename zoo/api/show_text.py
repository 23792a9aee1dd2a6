"""What `zoo show` prints: a model's, architecture's, tokenizer's or dataset's fields, a task's
declaration, and a run's metrics, tokenizer and provenance."""

from __future__ import annotations

import dataclasses
import typing

from zoo.api.entry_rows import preset_origin
from zoo.core.names import model_names, resolve_model
from zoo.errors import UnknownNameError


def describe_fields(cls, overrides: dict | None = None) -> list[str]:
    if cls is None:
        return ["    (no fields)"]
    hints = typing.get_type_hints(cls)
    lines = []
    for f in dataclasses.fields(cls):
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else (
                f.default_factory()
                if f.default_factory is not dataclasses.MISSING
                else "(required)"
            )
        )
        value = (overrides or {}).get(f.name, default)
        note = f"  (default {default!r})" if overrides and f.name in overrides else ""
        hint = hints[f.name]
        kind = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
        lines.append(f"    {f.name:<16} {kind:<14} {value!r}{note}")
    return lines


def show(zoo, name: str) -> str:
    """Everything `name` names: a model, a plugin entry and a dataset may share one name
    (`digits` is an architecture and a dataset), so each match gets its own section."""
    sections = [
        text
        for text in (_show_model(zoo, name), *_show_entries(zoo, name), _show_dataset(zoo, name))
        if text
    ]
    return "\n\n".join(sections) if sections else show_run(zoo, name)


def _show_model(zoo, name: str) -> str | None:

    if not (name in zoo.catalogue.models or name in model_names(zoo)):
        return None
    if name in zoo.catalogue.ensembles:
        preset = zoo.catalogue.ensembles[name]
        return "\n".join(
            [
                f"model {name} (ensemble {_preset_words(preset_origin(zoo, preset))})",
                f"  {preset.description}",
                f"  members: {', '.join(preset.members)} (each its own run)",
                f"  weights: {preset.weights}",
                f"  zoo run {name} DATASET trains the members (or reuses their "
                "finished runs) and records their ensemble (zoo ensemble)",
            ]
        )
    spec = resolve_model(name, zoo)
    from zoo.core.config import split_overrides

    sections = {
        "model": spec.architecture.config_class(),
        "tokenizer": spec.tokenizer.config_class(),
    }
    train_entry = next(
        (zoo.pipelines.get(t) for t in spec.architecture.tasks if t in zoo.pipelines), None
    )
    sections["train"] = train_entry.config_class() if train_entry else None
    values = split_overrides(spec.overrides, sections)
    origin = preset_origin(zoo, zoo.catalogue.models.get(name))
    lines = [
        f"model {name}" + (f" ({_preset_words(origin)})" if origin else ""),
        f"  {spec.description}",
        f"  architecture: {spec.architecture.name} ({spec.architecture.plugin})",
        f"  tokenizer:    {spec.tokenizer.name} ({spec.tokenizer.plugin})",
        f"  tasks:        {', '.join(spec.architecture.tasks)}",
    ]
    preset = zoo.catalogue.models.get(name)
    if preset is not None and preset.base:
        lines.append(f"  builds on:    {', '.join(preset.base)} (registry.toml base)")
    for section, cls in sections.items():
        title = (
            section if section != "train" else f"train ({train_entry.name if train_entry else '-'})"
        )
        lines.append(f"  {title} config (set with --set KEY=VALUE):")
        lines += describe_fields(cls, values[section])
    return "\n".join(lines)


def _preset_words(origin: str | None) -> str:
    """'preset' for a built-in one, else where it comes from: 'preset from zoo-bow 0.1.0'."""
    return "preset" if origin == "zoo" else f"preset from {origin}"


def _show_entries(zoo, name: str) -> list[str]:
    shown = []
    for kind in ("architecture", "tokenizer", "pipeline"):
        if name in zoo.entries_of[kind]:
            entry = zoo.entries_of[kind].get(name)
            lines = [f"{kind} {name} (plugin {entry.plugin})", f"  {entry.description}"]
            if getattr(entry, "tasks", ()):  # an architecture's
                lines.append(f"  tasks: {', '.join(entry.tasks)}")
            if kind == "pipeline":
                lines += describe_task(entry.task)
            lines.append("  config:")
            lines += describe_fields(entry.config_class())
            shown.append("\n".join(lines))
    return shown


def describe_task(task) -> list[str]:
    """A pipeline's task declaration, as `zoo show TASK` prints it."""
    loss = (
        task.loss if isinstance(task.loss, str) else getattr(task.loss, "__qualname__", task.loss)
    )
    prediction = (
        task.prediction
        if isinstance(task.prediction, (str, type(None)))
        else getattr(task.prediction, "__qualname__", task.prediction)
    )
    lines = [
        f"  module output: {task.output}",
        f"  loss: {loss}",
        f"  primary metric: {task.primary}; training curve: {task.curve_metric}",
        f"  datasets: with columns {', '.join(task.columns)}"
        + (f", or of task {', '.join(task.serves)}" if task.serves else ""),
        f"  prediction: {prediction or 'none (no predict)'}",
        "  metrics:",
    ]
    width = max(len(m.name) for m in task.metrics)
    lines += [f"    {m.name:<{width}}  {m.describe()}" for m in task.metrics]
    return lines


def _show_dataset(zoo, name: str) -> str | None:
    from zoo.data import datasets as data
    from zoo.data import sources

    if not (name in zoo.catalogue.datasets or name in zoo.datasets):
        return None
    ref = data.resolve(name, zoo)
    lines = [
        f"dataset {name}",
        f"  source: {ref.kind} {ref.source}",
        f"  tasks:  {', '.join(data.tasks_of(ref, zoo)) or 'detected on load'}",
    ]
    if ref.kind == "hub":
        mirror = sources.find_in_mirrors(ref.source, zoo)
        lines.append(f"  loads from: {mirror or 'the Hub (no mirror holds it)'}")
    plugin = ref.plugin_entry(zoo)
    description = (ref.entry.description if ref.entry else "") or (
        plugin.description if plugin else ""
    )
    if description:
        lines.append(f"  {description}")
    if plugin is not None:
        lines.append(f"  plugin: {plugin.name} ({plugin.plugin})")
    lines += [
        f"  text column: {ref.column('text', zoo) or 'detected'}",
        f"  label column: {ref.column('label', zoo) or 'detected'}",
    ]
    if ref.entry and ref.entry.splits:
        lines.append(f"  splits: {ref.entry.splits}")
    cls = sources.config_class(ref, zoo)
    if cls is not None:
        lines.append("  dataset config (set with --set KEY=VALUE, or dataset.KEY=VALUE):")
        lines += describe_fields(cls, sources.catalogue_options(ref))
    return "\n".join(lines)


def show_run(zoo, run_id: str) -> str:
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
    config = row["config"]
    kind = row.get("kind") or "train"
    lines = [
        f"run {row['id']}  [{row['status']}]" + ("" if kind == "train" else f"  ({kind})"),
        f"  model {row['model']} ({row['architecture']} + {row['tokenizer']}) on "
        f"{row['dataset']}, task {row['task']}, seed {row['seed']}",
        f"  parameters {row['params']}, duration {row['duration'] or 0:.1f} s",
    ]
    if kind == "eval":
        lines.append(
            f"  evaluates run {row['parent_id']} (trained on {config.get('trained_on')}) "
            f"on split {config.get('split')!r} of {row['dataset']}"
        )
    init = config.get("init")
    if isinstance(init, dict) and init.get("run_id"):  # it started from that run's weights
        lines.append(
            f"  started from run {init['run_id']} ({init.get('model')} on {init.get('dataset')}, "
            f"{init.get('task')})"
        )
    if config.get("stacked"):
        lines.append(
            f"  trained with other seeds as one batched model (stacked={config['stacked']})"
        )
    for part in config.get("combines") or []:  # an ensemble row (zoo ensemble)
        lines.append(
            f"  combines run {part.get('run_id')} ({part.get('model')}) with weight "
            f"{part.get('weight')}, {config.get('weighting')} weights"
        )
    if row.get("error"):
        lines.append(f"  error: {row['error']}")
    if kind == "train":  # an evaluation row has no tokenizer of its own
        lines.append(tokenizer_line(row))
    lines.append("  metrics:")
    lines += format_metrics(row["metrics"], indent="    ")
    lines.append("  provenance:")
    lines.append(f"    seed: {row['seed']}")
    from zoo.train.provenance import SHOWN_KEYS

    for key in SHOWN_KEYS:
        if config.get(key) is not None:
            lines.append(f"    {key}: {config[key]}")
    lines += machine_lines(config.get("machine"))
    for name, version in (config.get("versions") or {}).items():
        lines.append(f"    version {name}: {version}")
    trackers = config.get("trackers")
    if isinstance(trackers, dict) and trackers:  # where --log-to sent the run
        from zoo.train.tracking import tracker_lines

        lines.append("  trackers:")
        lines += [f"    {line}" for line in tracker_lines(trackers)]
    with Store() as store:
        evaluations = store.evaluations(row["id"])
    from zoo.comparison.table import eval_value, primary_metric

    metric = primary_metric(row["task"], "eval")
    for child in evaluations:
        value = eval_value(child["metrics"], metric, child["config"].get("split"))
        shown = f", {metric} {value:.4f}" if isinstance(value, float) else ""
        lines.append(
            f"  evaluation {child['id']} [{child['status']}] on {child['dataset']} "
            f"split {child['config'].get('split')!r}{shown}"
        )
    from zoo.records.paths import run_folder

    folder = run_folder(row["id"])
    if folder.is_dir():
        files = ", ".join(sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")))
        lines.append(f"  folder {folder}: {files}")
    lines.append("  config:")
    for section, values in (config.get("configs") or {}).items():
        lines.append(f"    {section}: {values}")
    return "\n".join(lines)


def machine_lines(machine) -> list[str]:
    """Where a run trained: the CPU and its instruction sets, torch's kernels, the precision."""
    if not isinstance(machine, dict):
        return []  # recorded before zoo recorded its machine
    flags = ", ".join(machine.get("cpu_flags") or []) or "none of AVX2, AVX-512, AMX"
    gpu = f", GPU {machine['gpu']}" if machine.get("gpu") else ""
    return [
        f"    machine: {machine.get('cpu')} ({flags}){gpu}",
        f"    precision: {machine.get('precision')} on {machine.get('device')} "
        f"(torch's CPU kernels: {machine.get('cpu_capability')})",
    ]


def format_metrics(metrics: dict, indent: str = "  ") -> list[str]:
    """Scalars one per line, then structured metrics laid out as tables: a dict of dicts
    (per-class figures) as rows, a square list of lists (a confusion matrix) as a grid
    labelled with `class_names` when the run has them, a list of names on one line."""
    import json

    lines, tables = [], []
    names = metrics.get("class_names")
    for key, value in metrics.items():
        if isinstance(value, float):
            lines.append(f"{indent}{key:<16} {value:.4f}")
        elif not isinstance(value, (dict, list)):
            lines.append(f"{indent}{key:<16} {value}")
        elif isinstance(value, dict) and _is_row_table(value):
            tables += [f"{indent}{key}:"] + _row_table(value, indent + "  ")
        elif isinstance(value, list) and _is_grid(value):
            tables += [f"{indent}{key} (rows: true, columns: predicted):"] + _grid(
                value, names if names and len(names) == len(value) else None, indent + "  "
            )
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            lines.append(f"{indent}{key:<16} {', '.join(value)}")
        else:
            lines.append(f"{indent}{key}: {json.dumps(value)}")
    return lines + tables


def _is_row_table(value) -> bool:
    return bool(
        isinstance(value, dict)
        and value
        and all(isinstance(v, dict) for v in value.values())
        and len({tuple(v) for v in value.values()}) == 1
    )


def _is_grid(value) -> bool:
    return bool(
        isinstance(value, list)
        and value
        and all(isinstance(r, list) and len(r) == len(value) for r in value)
    )


def _cell(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _row_table(table: dict, indent: str) -> list[str]:
    columns = list(next(iter(table.values())))
    first = max(len(str(k)) for k in table)
    cells = {k: [_cell(v[c]) for c in columns] for k, v in table.items()}
    widths = [max(len(c), *(len(r[i]) for r in cells.values())) for i, c in enumerate(columns)]
    out = [indent + " " * first + "".join(f"  {c:>{w}}" for c, w in zip(columns, widths))]
    for key, row in cells.items():
        out.append(indent + f"{key:<{first}}" + "".join(f"  {c:>{w}}" for c, w in zip(row, widths)))
    return out


def _grid(grid: list, names: list | None, indent: str) -> list[str]:
    labels = [str(n) for n in names] if names else [str(i) for i in range(len(grid))]
    first = max(len(x) for x in labels)
    width = max(max(len(x) for x in labels), *(len(_cell(v)) for r in grid for v in r))
    out = [indent + " " * first + "".join(f"  {x:>{width}}" for x in labels)]
    for label, row in zip(labels, grid):
        out.append(indent + f"{label:<{first}}" + "".join(f"  {_cell(v):>{width}}" for v in row))
    return out


def tokenizer_line(row: dict) -> str:
    """The run's tokenizer: vocabulary size and compression (characters per token) on validation."""
    metrics = row["metrics"] or {}
    vocab = metrics.get("vocab_size")
    if vocab is None:  # a pipeline that does not report it: read the saved tokenizer
        vocab = saved_vocab_size(row["id"])
    chars_per_token = metrics.get("chars_per_token")
    parts = [
        f"vocabulary {vocab:,} tokens"
        if isinstance(vocab, int)
        else "vocabulary size not recorded",
        f"{chars_per_token:.3f} characters per token on validation"
        if isinstance(chars_per_token, (int, float))
        else "characters per token not recorded",
    ]
    return f"  tokenizer {row['tokenizer']}: " + ", ".join(parts)


def saved_vocab_size(run_id: str) -> int | None:
    """The vocabulary size of the run folder's tokenizer.json, if it is a tokenizers file."""
    from zoo.records.paths import run_folder

    path = run_folder(run_id) / "tokenizer.json"
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path)).get_vocab_size(with_added_tokens=True)
    except Exception:  # a third-party format: nothing to say
        return None
