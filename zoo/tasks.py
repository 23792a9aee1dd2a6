"""Task declarations: everything the core knows about a task, declared by its pipeline.

A pipeline registers with its ``Task(...)`` (see ``zoo.hookspecs.register_pipelines``).
The core reads the declaration instead of knowing any task by name: the loss the engine
trains with, the module output ``build(config, spec)`` must return, every metric with its
direction and unit, the primary metric, the datasets the task can use, the prediction type
and the validation metric the training curve draws.

This module imports nothing heavy: a loss is named as ``"module:attr"`` (or given as the
function) and imported on first use (``zoo.core.loading.task_loss``), so listing the zoo stays
fast.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from zoo.errors import ZooError

Direction = Literal["lower", "higher"]
DIRECTIONS = ("lower", "higher")
# Split prefixes a metric name may carry: "val_bpc" is the metric "bpc" on validation.
SPLIT_PREFIXES = ("val_", "validation_", "test_", "train_")


@dataclass(frozen=True)
class Metric:
    """One figure a task reports.

    ``name`` is the name without its split prefix ("accuracy" covers ``val_accuracy`` and
    ``test_accuracy``); it may be a shell-style pattern ("*_accuracy") for per-group figures.
    """

    name: str
    """The name without its split prefix (``accuracy`` covers ``val_accuracy`` and
    ``test_accuracy``); a shell-style pattern (``*_accuracy``) covers per-group figures."""
    better: Direction
    """Which direction is better: "lower" or "higher"."""
    unit: str = ""
    """The unit, e.g. "bits per character"; shown on tables and plot axes."""
    description: str = ""
    """What the figure measures, shown by ``zoo show`` and in legends."""

    def __post_init__(self):
        if self.better not in DIRECTIONS:
            raise ZooError(
                f"metric {self.name!r}: better must be 'lower' or 'higher', not {self.better!r}"
            )

    def matches(self, name: str) -> bool:
        """Whether a figure's name without its split prefix is this metric (or matches its
        pattern, ``*_accuracy``)."""
        return fnmatch.fnmatchcase(name, self.name)

    def describe(self) -> str:
        """'bits per character, lower is better'."""
        return ", ".join(x for x in (self.unit, f"{self.better} is better") if x)


@dataclass(frozen=True)
class Task:
    """What a task is, declared once by the pipeline that serves it.

    ``loss(outputs, targets, reduction)`` takes the module's outputs (float32 tensors) and
    the batch targets and returns the mean (``reduction="mean"``) or the sum
    (``reduction="sum"``) of the per-target losses as a scalar tensor; integer targets equal
    to ``zoo.plugin.IGNORE_INDEX`` count for nothing. ``zoo.plugin.losses`` has cross entropy and
    mean squared error ready to name (``"zoo.plugin.losses:cross_entropy"``).
    """

    name: str
    """The task's name: the pipeline's registration name and ``--task``."""
    loss: str | Callable
    """``"module:attr"`` of ``loss(outputs, targets, reduction)``(outputs, targets, reduction), or the function."""
    output: str
    """The module output build(config, spec) returns, e.g. "logits [B, num_classes]"."""
    metrics: tuple[Metric, ...]
    """Every metric the pipeline records."""
    primary: str
    """The headline metric of `zoo runs`, `zoo compare` and `zoo sweep`."""
    prediction: Any = None
    """The dataclass predict() returns one of per input (or "module:Class")."""
    columns: tuple[str, ...] = ("text",)
    """Column roles a dataset needs: "text", "label"."""
    serves: tuple[str, ...] = ()
    """Other tasks whose datasets this task can use as well."""
    adapts: tuple[str, ...] = ()
    """Tasks whose architectures this task's pipeline trains as well, built for that task
    (sequence to sequence trains any language model as a prefix LM): an architecture that lists one of
    these serves this task too."""
    curve_metric: str = "val_loss"
    """The validation figure logged while training (plots draw it)."""
    description: str = ""
    """One line for ``zoo list`` and ``zoo show``."""
    output_shape: tuple | None = None
    """The output's dimensions, checked on a tiny batch when a model is built: "B" (the batch),
    "T" (the input length), a zoo.TaskSpec field ("num_classes", "vocab_size") or a number.
    None: not checked."""

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise ZooError(f"a task needs a name, not {self.name!r}")
        metrics = tuple(self.metrics)
        if not all(isinstance(m, Metric) for m in metrics):
            raise ZooError(f"task {self.name!r}: metrics must be zoo.plugin.Metric declarations")
        object.__setattr__(self, "metrics", metrics)
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "serves", tuple(self.serves))
        object.__setattr__(self, "adapts", tuple(self.adapts))
        if self.output_shape is not None:
            object.__setattr__(self, "output_shape", tuple(self.output_shape))
            if not all(
                isinstance(d, str) or isinstance(d, int) and not isinstance(d, bool)
                for d in self.output_shape
            ):
                raise ZooError(
                    f"task {self.name!r}: output_shape must name dimensions ('B', "
                    f"'T', a TaskSpec field or a number), not {self.output_shape!r}"
                )
        for name in (self.primary, self.curve_metric):
            if self.metric(name) is None:
                raise ZooError(
                    f"task {self.name!r}: {name!r} is not one of its metrics "
                    f"({', '.join(m.name for m in metrics)})"
                )
        if isinstance(self.loss, str) and ":" not in self.loss:
            raise ZooError(f"task {self.name!r}: loss {self.loss!r} must look like 'module:attr'")
        if not (isinstance(self.loss, str) or callable(self.loss)):
            raise ZooError(f"task {self.name!r}: loss must be a function or 'module:attr'")

    def metric(self, name: str) -> Metric | None:
        """The declaration of a recorded metric ("test_accuracy", "bpc", "val_arith_accuracy"),
        or None when the task does not declare it."""
        return _find(self.metrics, name)

    def usable_with(self, dataset_task: str | None, roles: set[str]) -> bool:
        """Whether a dataset can feed this task: by the task its catalogue entry (or plugin)
        names, or, when it names none, by the column roles it has."""
        if dataset_task is not None:
            return dataset_task == self.name or dataset_task in self.serves
        return set(self.columns) <= roles


# Figures the core itself records for every run, whatever the task.
RUN_METRICS = (
    Metric("time", "lower", "seconds", "training wall time (train_time)"),
    Metric("tokens_per_s", "higher", "tokens per second", "training throughput"),
    Metric("params", "lower", "parameters"),
    Metric("duration", "lower", "seconds", "the whole run"),
)


def _find(metrics, name: str) -> Metric | None:
    candidates = [name] + [name[len(p) :] for p in SPLIT_PREFIXES if name.startswith(p)]
    for candidate in candidates:  # an exact declaration wins over a pattern
        for metric in metrics:
            if metric.name == candidate:
                return metric
    for candidate in candidates:
        for metric in metrics:
            if metric.matches(candidate):
                return metric
    return None


def metric_info(task: Task | None, name: str) -> Metric | None:
    """What is declared about a metric of a task's runs: by the task, else by the core."""
    found = task.metric(name) if task is not None else None
    return found or _find(RUN_METRICS, name)


def describe_metric(metric: str, task: Task | None, better: str | None = None) -> str:
    """'val_bpc (bits per character, lower is better)': the unit and direction declared for
    the metric (``better`` given overrides the declared direction)."""
    info = metric_info(task, metric)
    better = (
        better if isinstance(better, str) else (info.better if info else None)
    )  # NaN from pandas
    notes = [
        n for n in (info.unit if info else None, f"{better} is better" if better else None) if n
    ]
    return f"{metric} ({', '.join(notes)})" if notes else metric


def strip_split(metric: str) -> str:
    """'val_bpc' -> 'bpc': an evaluation row may score any split."""
    for prefix in SPLIT_PREFIXES:
        if metric.startswith(prefix):
            return metric[len(prefix) :]
    return metric


@dataclass(frozen=True)
class Prediction:
    """Base of the prediction types tasks declare (``Task.prediction``): a frozen dataclass
    per task, one instance per input of ``predict``. ``zoo predict`` prints ``line()``, and
    with ``--json`` the fields (``record()``), with NaN and infinities as null."""

    def record(self) -> dict:
        """The prediction as a JSON-ready dict (``zoo predict --json`` prints it)."""
        return prediction_record(self)

    def line(self) -> str:
        """The scalar fields, tab-separated, in declaration order (floats to 3 decimals)."""
        values = [
            v
            for v in dataclasses.asdict(self).values()
            if isinstance(v, (str, int, float)) and not isinstance(v, bool)
        ]
        return "\t".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in values)


def prediction_record(prediction) -> dict:
    """A prediction (a dataclass or a dict) as JSON-safe data: non-finite floats become None."""

    def clean(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if hasattr(value, "item") and callable(value.item):  # a NumPy scalar
            return clean(value.item())
        return value

    if dataclasses.is_dataclass(prediction) and not isinstance(prediction, type):
        prediction = dataclasses.asdict(prediction)
    if not isinstance(prediction, dict):
        prediction = {"prediction": prediction}
    return clean(prediction)


def prediction_line(prediction) -> str:
    if isinstance(prediction, Prediction):
        return prediction.line()
    record = prediction_record(prediction)
    return "\t".join(
        f"{v:.3f}" if isinstance(v, float) else str(v)
        for v in record.values()
        if isinstance(v, (str, int, float)) and not isinstance(v, bool)
    )


@dataclass
class SplitProbabilities:
    """A trained run's predicted probabilities on one split of a labelled dataset, and the
    right answers: what a pipeline's ``split_probabilities(trained, dataset, split)`` returns
    (zoo.hookspecs), for tasks whose predictions are probabilities over classes. Ensembles
    (``zoo ensemble``) average these and score the average with the pipeline's
    ``score_probabilities``."""

    probabilities: Any
    """[N, K] float array, each row summing to 1."""
    targets: Any
    """[N] int array: the right class of each row."""
    classes: list[str]
    """The K class names, in column order."""
