"""What `zoo show` prints, rendered from what ``zoo.show`` finds (zoo.results' details): a
model's, architecture's, tokenizer's or dataset's fields, a task's declaration, and a run's
metrics, tokenizer and provenance."""

from __future__ import annotations

from zoo.results import (
    ConfigField,
    DatasetDetails,
    EntryDetails,
    ModelDetails,
    RunDetails,
    Shown,
)


def show_text(shown: Shown) -> str:
    """Each of the name's details in its own section."""
    return "\n\n".join(details_text(d) for d in shown.details)


def details_text(details) -> str:
    if isinstance(details, ModelDetails):
        return model_text(details)
    if isinstance(details, EntryDetails):
        return entry_text(details)
    if isinstance(details, DatasetDetails):
        return dataset_text(details)
    return run_text(details)


def fields_text(fields: list[ConfigField] | None) -> list[str]:
    if not fields:
        return ["    (no fields)"]
    lines = []
    for f in fields:
        default = "(required)" if f.required else f.default
        note = f"  (default {default!r})" if f.set_here else ""
        lines.append(f"    {f.name:<16} {f.type:<14} {f.value!r}{note}")
    return lines


def model_text(model: ModelDetails) -> str:
    if model.members:  # an ensemble preset
        return "\n".join(
            [
                f"model {model.name} (ensemble {_preset_words(model.origin)})",
                f"  {model.description}",
                f"  members: {', '.join(model.members)} (each its own run)",
                f"  weights: {model.weights}",
                f"  zoo run {model.name} DATASET trains the members (or reuses their "
                "finished runs) and records their ensemble (zoo ensemble)",
            ]
        )
    origin = model.origin
    lines = [
        f"model {model.name}" + (f" ({_preset_words(origin)})" if origin else ""),
        f"  {model.description}",
        f"  architecture: {model.architecture} ({model.architecture_plugin})",
        f"  tokenizer:    {model.tokenizer} ({model.tokenizer_plugin})",
        f"  tasks:        {', '.join(model.tasks)}",
    ]
    if model.base:
        lines.append(f"  builds on:    {', '.join(model.base)} (registry.toml base)")
    for section, fields in model.configs.items():
        title = section if section != "train" else f"train ({model.pipeline or '-'})"
        lines.append(f"  {title} config (set with --set KEY=VALUE):")
        lines += fields_text(fields)
    return "\n".join(lines)


def _preset_words(origin: str | None) -> str:
    """'preset' for a built-in one, else where it comes from: 'preset from zoo-bow 0.1.0'."""
    return "preset" if origin == "zoo" else f"preset from {origin}"


def entry_text(entry: EntryDetails) -> str:
    lines = [f"{entry.kind} {entry.name} (plugin {entry.plugin})", f"  {entry.description}"]
    if entry.tasks:
        lines.append(f"  tasks: {', '.join(entry.tasks)}")
    if entry.task is not None:
        lines += describe_task(entry.task)
    lines.append("  config:")
    lines += fields_text(entry.config)
    return "\n".join(lines)


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


def dataset_text(dataset: DatasetDetails) -> str:
    lines = [
        f"dataset {dataset.name}",
        f"  source: {dataset.source_kind} {dataset.source}",
        f"  tasks:  {', '.join(dataset.tasks) or 'detected on load'}",
    ]
    if dataset.source_kind == "hub":
        lines.append(f"  loads from: {dataset.mirror or 'the Hub (no mirror holds it)'}")
    if dataset.description:
        lines.append(f"  {dataset.description}")
    if dataset.plugin is not None:
        lines.append(f"  plugin: {dataset.plugin}")
    lines += [
        f"  text column: {dataset.text_column or 'detected'}",
        f"  label column: {dataset.label_column or 'detected'}",
    ]
    if dataset.splits:
        lines.append(f"  splits: {dataset.splits}")
    if dataset.config is not None:
        lines.append("  dataset config (set with --set KEY=VALUE, or dataset.KEY=VALUE):")
        lines += fields_text(dataset.config)
    return "\n".join(lines)


def run_text(run: RunDetails) -> str:
    row = run.row
    config = row["config"]
    kind = row.get("kind") or "train"
    lines = [
        f"run {row['id']}  [{row['status']}]" + ("" if kind == "train" else f"  ({kind})"),
        f"  model {row['model']} ({row['architecture']} + {row['tokenizer']}) on "
        f"{row['dataset']}, task {row['task']}, seed {row['seed']}",
        f"  parameters {row['params']}, duration {row['duration'] or 0:.1f} s",
        *origin_lines(row),
    ]
    if row.get("error"):
        lines.append(f"  error: {row['error']}")
    if kind == "train":  # an evaluation row has no tokenizer of its own
        lines.append(tokenizer_line(row, run.vocab_size))
    lines.append("  metrics:")
    lines += format_metrics(row["metrics"], indent="    ")
    lines += provenance_lines(row)
    for child in run.evaluations:
        value = child["value"]
        figure = f", {child['metric']} {value:.4f}" if isinstance(value, float) else ""
        lines.append(
            f"  evaluation {child['id']} [{child['status']}] on {child['dataset']} "
            f"split {child['split']!r}{figure}"
        )
    if run.files is not None:
        lines.append(f"  folder {run.folder}: {', '.join(run.files)}")
    lines.append("  config:")
    for section, values in (config.get("configs") or {}).items():
        lines.append(f"    {section}: {values}")
    return "\n".join(lines)


def origin_lines(row: dict) -> list[str]:
    """What the run evaluates, started from, trained beside or combines."""
    config = row["config"]
    lines = []
    if row.get("kind") == "eval":
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
    return lines


def provenance_lines(row: dict) -> list[str]:
    """Seed, versions, machine and trackers: what `zoo reproduce` needs and checks."""
    from zoo.train.provenance import SHOWN_KEYS
    from zoo.train.tracking import tracker_lines

    config = row["config"]
    lines = ["  provenance:", f"    seed: {row['seed']}"]
    for key in SHOWN_KEYS:
        if config.get(key) is not None:
            lines.append(f"    {key}: {config[key]}")
    lines += machine_lines(config.get("machine"))
    for name, version in (config.get("versions") or {}).items():
        lines.append(f"    version {name}: {version}")
    trackers = config.get("trackers")
    if isinstance(trackers, dict) and trackers:  # where the run's trackers wrote
        lines.append("  trackers:")
        lines += [f"    {line}" for line in tracker_lines(trackers)]
    return lines


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


def tokenizer_line(row: dict, vocab: int | None) -> str:
    """The run's tokenizer: vocabulary size and compression (characters per token) on validation."""
    chars_per_token = (row["metrics"] or {}).get("chars_per_token")
    parts = [
        f"vocabulary {vocab:,} tokens"
        if isinstance(vocab, int)
        else "vocabulary size not recorded",
        f"{chars_per_token:.3f} characters per token on validation"
        if isinstance(chars_per_token, (int, float))
        else "characters per token not recorded",
    ]
    return f"  tokenizer {row['tokenizer']}: " + ", ".join(parts)
