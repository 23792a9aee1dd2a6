"""The model card (README.md) of an exported run, in Hugging Face's layout: a YAML metadata
header (library, tags, datasets, metrics and the results as a model-index, which
``huggingface_hub.ModelCard.load`` reads back), then the run's config, its metrics with
units, its data, how it was trained, its limitations and how to load it.

Names that came from the user (a dataset's file name, a column) are data in the card, never
markdown: shown as one-line code spans, in the title as a safe file-name part, and a local
file is named without the folder it lives in (a card is published; the path is private)."""

from __future__ import annotations

import json
import math
import re
from pathlib import PurePath

from huggingface_hub import EvalResult, ModelCard, ModelCardData

PIPELINE_TAG = {
    "language-modeling": "text-generation",
    "classification": "text-classification",
    "next-item": "text-generation",
}
SHOWN_SECTIONS = ("model", "tokenizer", "train", "dataset")


def model_card(trained, model_class: str, *, exported_as: str) -> str:
    """README.md text for the export of `trained` (zoo.plugin.Trained) as `model_class`."""
    config, row = trained.config, trained.row
    metrics = {k: v for k, v in (row.get("metrics") or {}).items() if _number(v)}
    task = trained.declared_task
    # the title and model name: letters, digits, '.', '_' and '-' only, whatever the dataset
    name = re.sub(r"[^A-Za-z0-9._-]", "_", f"zoo-{config['model']}-{config['dataset']}")[:160]
    name = f"{name}-{trained.run_id}"
    dataset_id = config.get("dataset_id") or config["dataset"]
    hub_dataset = _hub_id(dataset_id)
    results = [
        EvalResult(
            task_type=PIPELINE_TAG.get(trained.task, trained.task),
            dataset_type=hub_dataset or str(config["dataset"]),
            dataset_name=str(config["dataset"]),
            dataset_split=_split(metric),
            metric_type=metric,
            metric_value=float(value),
            metric_name=_describe(task, metric),
        )
        for metric, value in metrics.items()
        if _split(metric)
    ]
    data = ModelCardData(
        library_name="transformers",
        pipeline_tag=PIPELINE_TAG.get(trained.task),
        tags=["zoo", trained.task, config["architecture"], f"tokenizer-{config['tokenizer']}"],
        datasets=[hub_dataset] if hub_dataset else None,
        metrics=sorted({_bare(m) for m in metrics if _split(m)}) or None,
        model_name=name,
        eval_results=results or None,
    )
    body = "\n\n".join(
        [
            f"# {name}",
            f"A {config['architecture']} model with a {config['tokenizer']} tokenizer, trained by "
            f"zoo as run `{trained.run_id}` ({config['model']} on "
            f"{_code(config['dataset'])}, {trained.task}) and exported as a transformers "
            f"`{model_class}` ({exported_as}).",
            "## Results\n\n" + _metrics_table(task, metrics),
            "## Data\n\n" + _data(config),
            "## How it was trained\n\n" + _training(config, row),
            "## Config\n\n" + _config(config),
            "## Limitations\n\n" + _limitations(trained),
            "## How to load\n\n" + _loading(trained.task),
        ]
    )
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}\n"))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _split(metric: str) -> str | None:
    for prefix, split in (("val_", "validation"), ("test_", "test")):
        if metric.startswith(prefix):
            return split
    return None


def _bare(metric: str) -> str:
    return metric.split("_", 1)[1] if _split(metric) else metric


def _describe(task, metric: str) -> str:
    declared = task.metric(metric) if task is not None else None
    if declared is None:
        return metric
    notes = [n for n in (declared.unit, f"{declared.better} is better") if n]
    return f"{metric} ({', '.join(notes)})"


def _metrics_table(task, metrics: dict) -> str:
    if not metrics:
        return "The run recorded no figures."
    lines = ["| metric | value | unit | better |", "| --- | ---: | --- | --- |"]
    for metric, value in metrics.items():
        declared = task.metric(metric) if task is not None else None
        unit = declared.unit if declared else ""
        better = declared.better if declared else ""
        shown = f"{value:,}" if isinstance(value, int) else f"{value:.4f}"
        lines.append(f"| {metric} | {shown} | {unit} | {better} |")
    return (
        "Validation figures chose the kept weights; test figures were measured once, at "
        "the end.\n\n" + "\n".join(lines)
    )


def _data(config: dict) -> str:
    where = str(config.get("dataset_id") or config["dataset"])
    if _hub_id(where) is None:  # a local file or folder: its name, not where it lives
        where = f"a local file, {PurePath(where).name}"
    parts = [
        f"Dataset {_code(config['dataset'])} ({_code(where)}), text column "
        f"{_code(config.get('text_column'))}"
        + (f", label column {_code(config['label_column'])}" if config.get("label_column") else "")
        + ": trained on its train split, validated on validation, tested on "
        "test."
    ]
    if config.get("dataset_fingerprint"):
        parts.append(f"Fingerprint of the data: `{config['dataset_fingerprint']}`.")
    return " ".join(parts)


def _training(config: dict, row: dict) -> str:
    train = (config.get("configs") or {}).get("train") or {}
    versions = config.get("versions") or {}
    lines = [
        f"- seed {config.get('seed')}, device {config.get('device')}",
        f"- {train.get('steps')} steps at most"
        + (f", {train['time']} s at most" if train.get("time") else "")
        + f", batch size {train.get('batch_size')}, AdamW at lr {train.get('lr')} "
        f"(cosine to {train.get('min_lr')} after {train.get('warmup_steps')} warmup "
        f"steps), weight decay {train.get('weight_decay')}",
    ]
    metrics = row.get("metrics") or {}
    if "steps" in metrics:
        lines.append(
            f"- trained {metrics['steps']} steps; best validation at step "
            f"{metrics.get('best_step')}"
        )
    if row.get("duration") is not None:
        lines.append(f"- {row['duration']:.1f} s in all; {row.get('params') or 0:,} parameters")
    if versions:
        lines.append(
            "- versions: "
            + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if isinstance(v, str))
        )
    lines.append(
        f"- config hash `{config.get('config_hash')}`; `zoo show {row.get('id')} "
        "--config` prints a file that trains it again"
    )
    return "\n".join(lines)


def _config(config: dict) -> str:
    sections = {k: v for k, v in (config.get("configs") or {}).items() if k in SHOWN_SECTIONS and v}
    return "```json\n" + json.dumps(sections, indent=1, sort_keys=True, default=str) + "\n```"


def _limitations(trained) -> str:
    return (
        f"A small model trained for research and comparison on one dataset "
        f"({_code(trained.config['dataset'])}): it reflects that data's language, topics and "
        "biases, is not tuned for safety or factuality, and should not be used for "
        "decisions about people. Figures hold for that dataset's splits only."
    )


def _loading(task: str) -> str:
    auto = (
        "AutoModelForSequenceClassification" if task == "classification" else "AutoModelForCausalLM"
    )
    return (
        "```python\n"
        f"from transformers import AutoTokenizer, {auto}\n\n"
        'tokenizer = AutoTokenizer.from_pretrained("PATH")\n'
        f'model = {auto}.from_pretrained("PATH")\n'
        "```"
    )


def _code(value, limit: int = 200) -> str:
    """``value`` as a one-line markdown code span: no line breaks or backticks, so it can
    start no heading, rule, link or HTML, and end no span."""
    text = re.sub(r"[\x00-\x1f\x7f`]+", " ", str(value)).strip()[:limit]
    return f"`{text}`" if text else "``"


def _hub_id(dataset_id: str) -> str | None:
    """The dataset's Hub id, where it has one (not a local file or folder)."""
    text = str(dataset_id)
    if text.startswith(("/", ".", "~")) or "\\" in text or text.count("/") > 1:
        return None
    return text
