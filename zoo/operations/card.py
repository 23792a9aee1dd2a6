"""The model card (README.md) of an exported run, in the Hugging Face Hub's layout: YAML
metadata (library, pipeline tag, tags, Hub datasets, base model, license and the results as a
model-index with standard metric types and splits, which ``huggingface_hub.ModelCard``
parses and validates), then what the model is, its intended use, how it was trained, its
results, its labels, its limitations and a snippet that runs it without zoo.

No path of the machine that trained the run is written: a local checkpoint or dataset is
named by its folder's or file's name. Names that came from the user (a dataset's file name, a
column, a label) are data in the card, never markdown: shown as one-line code spans, and in
the title as a safe file-name part.

A run never exported has the same card, made from its record alone (``recorded_run``): what
only an export knows (the format, how to load the folder, the check of its predictions) is
left out, and the card says how to export it."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from zoo.errors import UnknownNameError, ZooError, shown
from zoo.io import load_json

SHOWN_SECTIONS = ("model", "tokenizer", "train")
# zoo's metric names -> the Hub's standard metric types (and their arguments)
METRIC_TYPES = {
    "macro_f1": ("f1", {"average": "macro"}),
    "ppl": ("perplexity", None),
    "bpc": ("bits_per_character", None),
    "bpb": ("bits_per_byte", None),
}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def check_card_metadata(license: str | None, base_model: str | None) -> None:
    """--license and --base-model as the Hub reads them, checked before any work: a license
    is one of the Hub's identifiers (``other`` for one it does not list), a base model a Hub
    id (``name`` or ``namespace/name``) or the id of a run in ZOO_HOME."""
    from zoo.operations.hub_licenses import HUB_LICENSES

    if license is not None and license not in HUB_LICENSES:
        if license.lower() in HUB_LICENSES:
            raise ZooError(
                f"license {shown(license)}: the Hub writes it {license.lower()!r}", option="license"
            )
        raise UnknownNameError(
            "license",
            license,
            HUB_LICENSES,
            hint="a Hub license identifier such as apache-2.0, mit or cc-by-4.0; "
            "'other' for a license the Hub does not list",
        )
    if base_model is None or _is_local_run(base_model):
        return
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(base_model)
    except HFValidationError:
        raise ZooError(
            f"base_model {shown(base_model)} is neither a Hub model id ('name' or "
            "'namespace/name': letters, digits, '-', '_' and '.', at most 96 characters) "
            "nor a run in ZOO_HOME",
            option="base_model",
        ) from None


def _is_local_run(text: str) -> bool:
    """Whether ``text`` is exactly the id of a run in ZOO_HOME."""
    from zoo.records.paths import RUN_ID
    from zoo.records.store import Store, home

    if not RUN_ID.fullmatch(text) or not (home() / "zoo.db").is_file():
        return False
    try:
        with Store(read_only=True) as store:
            return store.get(text)["id"] == text
    except ZooError:
        return False


@dataclass(frozen=True)
class RecordedRun:
    """A run as its record has it, with no weights loaded: the fields of
    zoo.plugin.LoadedRun a model card reads."""

    run_id: str
    task: str
    row: dict
    config: dict
    declared_task: Any
    context_length: int | None
    folder: Any  # zoo.plugin.RunFolder


def recorded_run(row: dict, home: Path | None = None) -> RecordedRun:
    """``row`` (a store row) as a card's subject: its config, with what the row's columns
    say where the config does not (a run recorded before zoo wrote them there), its task's
    declaration and its context length as its architecture reads its settings."""
    from zoo.core.names import get_task
    from zoo.records.paths import run_folder
    from zoo.train.job import RunFolder

    columns = ("model", "architecture", "tokenizer", "dataset", "task", "seed", "config_hash")
    config = {**{k: row.get(k) for k in columns}, **(row.get("config") or {})}
    return RecordedRun(
        run_id=row["id"],
        task=str(config["task"]),
        row=row,
        config=config,
        declared_task=get_task(config["task"]),
        context_length=_context_length(config),
        folder=RunFolder(run_folder(row["id"], home)),
    )


def _context_length(config: dict) -> int | None:
    """The longest input the run's architecture takes with its recorded settings; None
    where the architecture is not installed or declares none."""
    from zoo.core.config import build_config
    from zoo.core.limits import context_length
    from zoo.core.loading import get_zoo

    try:
        architecture = get_zoo().architectures.get(config["architecture"])
        settings = (config.get("configs") or {}).get("model") or {}
        return context_length(build_config(architecture.config_class(), settings))
    except (ZooError, ImportError, AttributeError, TypeError):  # a plugin no longer installed
        return None


def model_card(
    trained,
    facts: dict | None = None,
    checked: dict | None = None,
    *,
    format: str | None = None,
    folder_name: str | None = None,
    license: str | None = None,
    base_model: str | None = None,
) -> str:
    """README.md text for the export of ``trained`` (zoo.plugin.LoadedRun) in ``format``;
    ``facts`` is what its exporter's ``write`` returned, ``checked`` its ``check``. Without
    them, the card of a run never exported (``trained``: a RecordedRun), which says how to
    export it instead of how to load the export and how it was checked."""
    facts = facts or {}
    config, row = trained.config, trained.row
    metrics = {k: v for k, v in (row.get("metrics") or {}).items() if _number(v)}
    task = trained.declared_task
    # the title and model name: letters, digits, '.', '_' and '-' only, whatever the dataset
    name = re.sub(r"[^A-Za-z0-9._-]", "_", f"zoo-{config['model']}-{_dataset(config)}")[:160]
    name = f"{name}-{trained.run_id}"
    hub_dataset = hub_id(config.get("dataset_id"))
    base = dict(facts.get("base") or {})  # the checkpoint it started from, as its exporter read it
    if base_model:
        base.update(id=base_model, source="--base-model")
    license = license or base.get("license") or "unknown"
    pipeline_tag = facts.get("pipeline_tag")
    results = [
        EvalResult(
            task_type=pipeline_tag or trained.task,
            dataset_type=hub_dataset or _dataset(config),
            dataset_name=_dataset(config),
            dataset_split=_split(metric),
            metric_type=_metric_type(metric)[0],
            metric_args=_metric_type(metric)[1],
            metric_value=float(value),
            metric_name=_describe(task, metric),
        )
        for metric, value in metrics.items()
        if _split(metric)
    ]
    data = ModelCardData(
        library_name=facts.get("library_name"),
        pipeline_tag=pipeline_tag,
        license=license,
        base_model=base.get("id"),
        tags=[
            tag
            for tag in (
                "zoo",
                format,
                trained.task,
                config["architecture"],
                f"tokenizer-{config['tokenizer']}",
            )
            if tag
        ],
        datasets=[hub_dataset] if hub_dataset else None,
        metrics=sorted({_metric_type(m)[0] for m in metrics if _split(m)}) or None,
        model_name=name,
        eval_results=results or None,
    )
    sections = [
        f"# {name}",
        _what(trained, facts, base, exported=checked is not None),
        "## Intended use\n\n" + _intended(trained),
        "## How to use it\n\n" + _usage(facts, folder_name or ""),
        "## Results\n\n" + _metrics_table(task, metrics, config, row),
        "## Labels\n\n" + _labels(trained),
        "## Data\n\n" + _data(config),
        "## How it was trained\n\n" + _training(config, row),
        "## Checked on export\n\n"
        + (_checked(checked, format or "") if checked is not None else ""),
        "## Limitations\n\n" + _limitations(trained),
        "## License\n\n" + _license(license, base),
        "## Config\n\n" + _config(config),
    ]
    body = "\n\n".join(s for s in sections if not s.endswith("\n\n"))
    card = ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}\n")
    return str(card)


def hub_id(text) -> str | None:
    """``text`` when it reads as a Hub id (``owner/name``), not a local file or folder."""
    text = str(text or "")
    if not HUB_ID.match(text) or Path(text).expanduser().exists():
        return None
    return text


def _dataset(config: dict) -> str:
    """The run's dataset as the card names it: its catalogue name or Hub id, or a local
    file's or folder's name without where it lives."""
    name = str(config["dataset"])
    if name.startswith(("/", "~", "./", "../")) or re.match(r"^[A-Za-z]:[\\/]", name):
        return PurePath(name.replace("\\", "/")).name
    return name


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _split(metric: str) -> str | None:
    for prefix, split in (("val_", "validation"), ("test_", "test")):
        if metric.startswith(prefix):
            return split
    return None


def _metric_type(metric: str) -> tuple[str, dict | None]:
    bare = metric.split("_", 1)[1] if _split(metric) else metric
    return METRIC_TYPES.get(bare, (bare, None))


def _describe(task, metric: str) -> str:
    declared = task.metric(metric) if task is not None else None
    return f"{metric} ({declared.describe()})" if declared is not None else metric


def _what(trained, facts: dict, base: dict, exported: bool) -> str:
    config = trained.config
    started = ""
    if base.get("name"):
        started = f", fine-tuned from the checkpoint {_code(base['name'])}" + (
            f" ({_code(base['id'])} on the Hub, as {base['source']} names it)"
            if base.get("id")
            else ""
        )
    held = (
        f"This folder holds {facts.get('summary', 'the exported model')}."
        if exported
        else f"Not exported yet: `zoo export {trained.run_id} FOLDER` writes it as a folder "
        "that runs without zoo, with this card, how to load it and how its predictions "
        "were checked against zoo's."
    )
    return (
        f"A {trained.task} model: zoo's `{config['architecture']}` architecture with a "
        f"`{config['tokenizer']}` tokenizer{started}, trained by zoo as run "
        f"`{trained.run_id}` ({_code(config['model'])} on {_code(_dataset(config))}). {held}"
    )


def _intended(trained) -> str:
    task = trained.declared_task
    what = (task.description if task is not None and task.description else trained.task).rstrip(".")
    return (
        f"Research and comparison on data like its dataset's ({_code(_dataset(trained.config))}): "
        f"{what[:1].lower() + what[1:]}; a baseline against other models, and an example of a "
        "small model deployed without its training code. It is not meant for decisions about "
        "people."
    )


def _usage(facts: dict, folder_name: str) -> str:
    usage = facts.get("usage")
    if not usage:
        return ""
    return (
        f"Run from the folder that holds {_code(folder_name)} (or set `folder` to its Hub id once "
        "uploaded); zoo is not needed.\n\n```python\n"
        + usage.replace('"FOLDER"', json.dumps(folder_name)).rstrip()
        + "\n```"
    )


def _metrics_table(task, metrics: dict, config: dict, row: dict) -> str:
    if not metrics:
        return "The run recorded no figures."
    status = row.get("status")
    said = []
    if status != "finished":
        stopped = metrics.get("stopped_step") or metrics.get("steps")
        said.append(
            f"The run is {status}"
            + (f" (it stopped at step {stopped})" if stopped is not None else "")
            + ": these are its figures when it stopped, not a finished run's."
        )
    held_out = set(config.get("held_out") or ())
    if "test" in held_out:  # a zoo tune trial: test is read once, for the best trial only
        said.append(
            "The test split was held out of this run (it chose settings on validation), so it "
            f"has no test figures: `zoo eval {row.get('id')} DATASET --split test` scores it."
        )
    else:
        said.append(
            "Validation figures chose the kept weights; test figures were measured once, at "
            "the end."
        )
    lines = ["| metric | value | unit | better |", "| --- | ---: | --- | --- |"]
    for metric, value in metrics.items():
        declared = task.metric(metric) if task is not None else None
        unit = declared.unit if declared else ""
        better = declared.better if declared else ""
        shown = f"{value:,}" if isinstance(value, int) else f"{value:.4f}"
        lines.append(f"| {metric} | {shown} | {unit} | {better} |")
    # how a figure was computed, where the run recorded it (sacreBLEU's signatures)
    signatures = [
        f"- {name}: `{value}`"
        for name, value in (row.get("metrics") or {}).items()
        if name.endswith("_signature") and isinstance(value, str)
    ]
    if signatures:
        lines += ["", "Metric signatures:", "", *signatures]
    return " ".join(said) + "\n\n" + "\n".join(lines)


def _labels(trained) -> str:
    names = (trained.row.get("metrics") or {}).get("class_names")
    path = trained.folder.file("classes.json")
    if not names and path.is_file():
        names = load_json(path)
    if not names:
        return ""
    return "Class ids and names, in the order of the model's outputs:\n\n" + "\n".join(
        f"- {i}: {_code(name)}" for i, name in enumerate(names)
    )


def _data(config: dict) -> str:
    where = hub_id(config.get("dataset_id"))
    local = "" if where else PurePath(str(config.get("dataset_id") or config["dataset"])).name
    location = str(config.get("dataset_location") or "")
    if location.startswith("plugin "):  # generated by a dataset plugin: no file behind it
        source = f" (generated by the dataset plugin {_code(location.removeprefix('plugin '))})"
    else:
        source = f" ({_code(where)} on the Hub)" if where else f" (a local file, {_code(local)})"
    held_out = set(config.get("held_out") or ())
    tested = "tested on nothing (test held out)" if "test" in held_out else "tested on test"
    parts = [
        f"Dataset {_code(_dataset(config))}"
        + source
        + f", text column {_code(config.get('text_column'))}"
        + (f", label column {_code(config['label_column'])}" if config.get("label_column") else "")
        + f": trained on its train split, validated on validation, {tested}."
    ]
    if config.get("dataset_fingerprint"):
        parts.append(f"Fingerprint of the data: `{config['dataset_fingerprint']}`.")
    return " ".join(parts)


def _training(config: dict, row: dict) -> str:
    train = (config.get("configs") or {}).get("train") or {}
    versions = config.get("versions") or {}
    lines = [
        f"- recipe: the {_code(config['model'])} preset (`{config['architecture']}` + "
        f"`{config['tokenizer']}`) on {_code(_dataset(config))}, task {config.get('task')}",
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
    if config.get("dataset_fingerprint"):
        lines.append(f"- data fingerprint `{config['dataset_fingerprint']}`")
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


def _checked(checked: dict, format: str) -> str:
    return (
        f"Before it was written, this folder was loaded as above and its predictions on "
        f"{checked.get('compared')} validation texts compared with zoo's: the same predictions, "
        f"largest probability difference {checked.get('max_difference', math.nan):.2g} "
        f"({format} format, fp32)."
    )


def _limitations(trained) -> str:
    return (
        f"A small model trained for research and comparison on one dataset "
        f"({_code(_dataset(trained.config))}): it reflects that data's language, topics and "
        "biases, is not tuned for safety or factuality, and should not be used for "
        "decisions about people. Figures hold for that dataset's splits only. Texts longer "
        f"than {trained.context_length or 'its context'} tokens are cut, as in training."
    )


def _license(license: str, base: dict) -> str:
    if license != "unknown":
        return f"{_code(license)}."
    if base.get("name"):
        return (
            f"Unknown: the checkpoint {_code(base['name'])} names no license in its folder; it "
            "applies to this model too. Check its source, and export with --license."
        )
    return "Unknown: none was given (zoo export --license NAME sets it)."


def _config(config: dict) -> str:
    sections = {k: v for k, v in (config.get("configs") or {}).items() if k in SHOWN_SECTIONS and v}
    return (
        "```json\n"
        + json.dumps(_local_names(sections), indent=1, sort_keys=True, default=str)
        + "\n```"
    )


def _code(value, limit: int = 200) -> str:
    """``value`` as a one-line markdown code span: no line breaks or backticks, so it can
    start no heading, rule, link or HTML, and end no span."""
    text = re.sub(r"[\x00-\x1f\x7f`]+", " ", str(value)).strip()[:limit]
    return f"`{text}`" if text else "``"


def _local_names(value):
    """Settings with every absolute path replaced by its last part."""
    if isinstance(value, dict):
        return {k: _local_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_local_names(v) for v in value]
    if isinstance(value, str) and (
        value.startswith(("/", "~")) or re.match(r"^[A-Za-z]:\\", value)
    ):
        return Path(value).name
    return value
