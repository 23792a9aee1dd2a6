"""Training curves: the training (raw and smoothed) and validation curves of runs from
their metrics.jsonl, and each run's curve.png, drawn when the run is recorded.

matplotlib is imported only when a plot is drawn. Figures are built with
`matplotlib.figure.Figure` (no pyplot, so no global state and no display needed) and
rendered by the Agg canvas; files are written by zoo.io (atomically).
"""

from __future__ import annotations

import io
import logging
import math
from pathlib import Path
from typing import Any

from zoo.core.names import get_task
from zoo.errors import ZooError
from zoo.io import kind_of, write_output
from zoo.tasks import describe_metric, metric_info

log = logging.getLogger(__name__)

X_AXES = {"step": "optimizer step", "elapsed": "training time (seconds)"}


def new_figure(width: float, height: float, layout: Any = "constrained"):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout=layout)


def save(figure, path, *, in_home: bool = False) -> Path:
    """Write the figure to a user-named path (see zoo.io); its suffix picks the format,
    and standard output (``-``), a device or a FIFO get PNG unless the name says otherwise.
    ``in_home``: a run's own curve.png, which zoo writes in the run folder."""
    name = str(path)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg", ".pdf"):
        if kind_of(name) == "file":
            raise ZooError(f"plot file {path} must end in .png, .svg or .pdf")
        suffix = ".png"
    write_output(name, image(figure, suffix[1:]), in_home=in_home)
    return path


def image(figure, fmt: str = "png") -> bytes:
    """The figure as a file of format ``fmt`` (png, svg or pdf)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=120)
    return buffer.getvalue()


def _smooth(values: list[float], window: int) -> list[float]:
    """Exponential moving average with bias correction (no lag at the start)."""
    alpha = 2 / (window + 1)
    out, average, weight = [], 0.0, 0.0
    for value in values:
        average = (1 - alpha) * average + alpha * value
        weight = (1 - alpha) * weight + alpha
        out.append(average / weight)
    return out


def curve_keys(records: list[dict], metric: str) -> tuple[str | None, str | None]:
    """The training and validation keys of a metric in metrics.jsonl records ('loss', or a
    split's own figure: 'val_accuracy' is a validation curve)."""
    keys = {k for r in records for k in r}
    for prefix in ("val_", "validation_"):
        if metric.startswith(prefix):
            return None, metric if metric in keys else None
    train = next((k for k in (f"train_{metric}", metric) if k in keys), None)
    validation = f"val_{metric}" if f"val_{metric}" in keys else None
    return train, validation


def training_curves(
    runs: list[dict],
    metric: str = "loss",
    x: str = "step",
    title: str | None = None,
    task: str | None = None,
):
    """Overlay the training (raw and smoothed) and validation curves of several runs.

    Each run is {"label": str, "records": list of metrics.jsonl dicts}. With ``task`` (the
    runs' task), the y axis names the unit the task declares for the metric, and the loss
    plot also draws the task's validation metric (``Task.curve_metric``, e.g. val_accuracy)
    on a second axis when it is not the loss itself.
    """
    if x not in X_AXES:
        raise ZooError(f"x axis must be one of {', '.join(X_AXES)}, not {x!r}")
    # fixed margins: a layout engine would double the time of the plot saved after every run
    figure = new_figure(8, 4.8, layout=None)
    figure.subplots_adjust(left=0.1, right=0.97, bottom=0.11, top=0.92)
    axes = figure.add_subplot()
    palette = colors(len(runs))
    drawn = sum(_draw_run(axes, run, color, metric, x) for run, color in zip(runs, palette))
    if not drawn:
        raise ZooError(
            f"no {metric!r} values to plot (metrics.jsonl has: "
            f"{', '.join(sorted({k for r in runs for rec in r['records'] for k in rec}))})"
        )
    axes.set_xlabel(X_AXES[x])
    axes.set_ylabel(describe_metric(metric, get_task(task)) if metric != "lr" else "learning rate")
    axes.set_title(title or f"{metric}: training and validation curves")
    axes.grid(True, alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()
    extra = validation_metric(task) if metric == "loss" else None
    if extra is not None and extra != f"val_{metric}":
        handles, labels = _draw_task_metric(figure, axes, runs, palette, task, extra, x)
    axes.legend(handles, labels, fontsize="small")
    return figure


def _points(records: list[dict], x: str, key: str) -> tuple[list, list]:
    """The (x, value) pairs of the records with a finite ``key``, as xs and ys."""
    points = [(r[x], r[key]) for r in records if x in r and finite(r.get(key))]
    xs, ys = zip(*points) if points else ((), ())
    return list(xs), list(ys)


def _draw_run(axes, run: dict, color, metric: str, x: str) -> int:
    """Draw one run's training and validation curves of ``metric``: how many it had."""
    train_key, val_key = curve_keys(run["records"], metric)
    drawn = 0
    if train_key is not None:
        xs, ys = _points(run["records"], x, train_key)
        if xs and len(ys) >= 20:  # noisy per-step losses: faint raw line, smoothed on top
            axes.plot(xs, ys, color=color, alpha=0.25, linewidth=0.8)
            smoothed = _smooth(ys, max(5, len(ys) // 30))
            axes.plot(
                xs, smoothed, color=color, linewidth=1.6, label=f"{run['label']}: train (smoothed)"
            )
        elif xs:
            axes.plot(xs, ys, color=color, linewidth=1.6, label=f"{run['label']}: train")
        drawn += bool(xs)
    if val_key is not None:
        xs, ys = _points(run["records"], x, val_key)
        if xs:
            axes.plot(
                xs,
                ys,
                color=color,
                linestyle="--",
                marker="o",
                markersize=4,
                linewidth=1.4,
                label=f"{run['label']}: validation",
            )
        drawn += bool(xs)
    return drawn


def _draw_task_metric(figure, axes, runs: list[dict], palette, task, extra: str, x: str):
    """Draw the task's validation metric beside the loss: on the loss's axis when it has the
    loss's unit, else on a second axis of its own; the legend's handles and labels."""
    shared = _unit(task, extra) == _unit(task, "loss")
    second = axes if shared else axes.twinx()
    if not shared:
        figure.subplots_adjust(right=0.88)
    for run, color in zip(runs, palette):
        xs, ys = _points(run["records"], x, extra)
        if xs:
            second.plot(
                xs,
                ys,
                color=color,
                linestyle=":",
                marker="s",
                markersize=4,
                linewidth=1.4,
                label=f"{run['label']}: {extra}",
            )
    handles, labels = axes.get_legend_handles_labels()
    if not shared:
        second.set_ylabel(describe_metric(extra, get_task(task)))
        more_handles, more_labels = second.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    return handles, labels


def _unit(task: str | None, metric: str) -> str | None:
    info = metric_info(get_task(task), metric)
    return info.unit if info else None


def validation_metric(task: str | None) -> str | None:
    """The validation figure a task declares for its training curve (e.g. val_accuracy)."""
    declared = get_task(task)
    return declared.curve_metric if declared else None


def finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def colors(count: int) -> list:
    """`count` distinct colours: matplotlib's ten, then tab20's twenty, then as many as
    needed spaced along a continuous map, never one twice."""
    import matplotlib

    if count <= 10:
        return [f"C{i}" for i in range(count)]
    if count <= 20:
        return [matplotlib.colormaps["tab20"](i) for i in range(count)]
    return [matplotlib.colormaps["turbo"](i / (count - 1)) for i in range(count)]


def save_run_curve(folder, row: dict) -> Path | None:
    """curve.png in a run folder from its metrics.jsonl; None when there is no curve."""
    from zoo.train.job import RunFolder

    run = RunFolder(folder)
    records = run.curve()
    if not records:
        return None
    title = f"{row['model']} on {row['dataset']}, seed {row['seed']} (run {row['id']})"
    figure = training_curves(
        [{"label": row["model"], "records": records}], "loss", "step", title, task=row.get("task")
    )
    return save(figure, run.file("curve.png"), in_home=True)


def save_curve(run, summary: dict) -> tuple[str | None, str | None]:
    """curve.png in the run folder. A plotting failure never fails a recorded run, but it
    is reported (on stderr and in the result), never passed over in silence."""
    try:
        path = save_run_curve(run.path, {**summary, "id": run.id})
    except Exception as exc:  # matplotlib missing, a font cache problem, a full disk...
        message = f"{type(exc).__name__}: {exc}"
        log.warning(f"no training-curve plot for run {run.id}: {message}")
        return None, message
    if path is None:
        return None, "the run logged no training curve (metrics.jsonl is empty)"
    return str(path), None
