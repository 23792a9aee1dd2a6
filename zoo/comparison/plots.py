"""Plots of compared runs: comparison tables as grouped bars, and the legend labels of runs
drawn together (their training curves are drawn by zoo.train.curves).

matplotlib is imported only when a plot is drawn (see zoo.train.curves).
"""

from __future__ import annotations

from zoo.comparison.render import column_label, number, row_label
from zoo.comparison.table import Comparison, describe, settings_of
from zoo.core.kinds import natural_key
from zoo.train.curves import colors, finite, new_figure, save, training_curves

__all__ = ["comparison_bars", "run_labels", "save", "training_curves"]  # what `zoo plot` draws with


def run_label(row: dict, differing: list[str] | tuple[str, ...] = ()) -> str:
    settings = settings_of(row)[0]
    extra = "".join(f", {key.rpartition('.')[2]}={settings.get(key)}" for key in differing)
    return f"{row['id']} {row['model']} on {row['dataset']} (seed {row['seed']}{extra})"


MAX_LABEL_SETTINGS = 4  # settings named in one legend label; more are counted


def run_labels(rows: list[dict]) -> list[str]:
    """Labels for runs drawn together, naming the settings in which they differ: those all
    of them have (a setting only one model has says nothing its name does not), at most a
    few, the rest counted."""
    settings = [settings_of(row)[0] for row in rows]
    shared = set.intersection(*(set(s) for s in settings)) if settings else set()
    differing = [k for k in sorted(shared) if len({repr(s.get(k)) for s in settings}) > 1]
    labels = [run_label(row, differing[:MAX_LABEL_SETTINGS]) for row in rows]
    if len(differing) > MAX_LABEL_SETTINGS:
        more = len(differing) - MAX_LABEL_SETTINGS
        labels = [label[:-1] + f", {more} more)" for label in labels]
    return labels


def comparison_bars(comparison: Comparison):
    """Grouped bars: one group per column of the table, one bar per row, error bars = std."""
    table = comparison.cells
    metrics = list(dict.fromkeys(table["metric"]))
    figure = new_figure(max(7.5, 3.5 + 0.9 * len(table)), 4.2 * len(metrics))
    for index, metric in enumerate(metrics):
        axes = figure.add_subplot(len(metrics), 1, index + 1)
        cells = [c for _, c in table[table["metric"] == metric].iterrows()]
        groups = sorted({column_label(comparison, c) for c in cells}, key=natural_key)
        series = list(dict.fromkeys(row_label(comparison, c) for c in cells))
        width = 0.8 / len(series)
        palette = colors(len(series))
        for s, name in enumerate(series):
            for g, group in enumerate(groups):
                cell = next(
                    (
                        c
                        for c in cells
                        if row_label(comparison, c) == name and column_label(comparison, c) == group
                    ),
                    None,
                )
                if cell is None:
                    continue
                x = g - 0.4 + width * (s + 0.5)
                error = cell["std"] if finite(cell["std"]) else 0.0
                axes.bar(
                    x,
                    cell["mean"],
                    width * 0.92,
                    yerr=error,
                    capsize=4,
                    color=palette[s],
                    edgecolor="black" if cell["best"] else "none",
                    linewidth=1.5,
                )
                axes.annotate(
                    f"{number(cell['mean'])}\nn={cell['n']}" + (" best" if cell["best"] else ""),
                    (x, cell["mean"] + error),
                    textcoords="offset points",
                    xytext=(0, 3),
                    ha="center",
                    va="bottom",
                    fontsize="x-small",
                )
        axes.set_xticks(range(len(groups)), groups)
        axes.set_xlabel(" / ".join(comparison.columns))
        axes.set_ylabel(describe(metric, cells[0]["better"], cells[0]["task"]))
        zoomed = not _fraction(cells[0]["task"], metric) and _zoom(axes, cells)
        axes.set_title(
            f"{metric}: mean ± std over seeds (black edge: best, told apart from every other row)"
            + ("\naxis does not start at 0" if zoomed else "")
        )
        if not zoomed:
            axes.margins(y=0.15)
        axes.grid(True, axis="y", alpha=0.3)
        # plain patches: a handle copied from a bar would carry its "best" edge
        from matplotlib.patches import Patch

        handles = [Patch(color=palette[s], label=name) for s, name in enumerate(series)]
        axes.legend(
            handles=handles,
            fontsize="small",
            title=" / ".join(comparison.rows),
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
        )
    return figure


def _fraction(task: str | None, metric: str) -> bool:
    from zoo.core.names import get_task
    from zoo.tasks import metric_info

    info = metric_info(get_task(task), metric)
    return "fraction" in ((info.unit if info else None) or "")


def _zoom(axes, cells) -> bool:
    """Bars of a metric that is not a fraction (bits per character, perplexity): the axis
    spans the data and their error bars, so 3.56 against 3.66 is visible. False (the axis
    starts at 0) where the data reach 0 or below."""
    errors = [c["std"] if finite(c["std"]) else 0.0 for c in cells]
    low = min(c["mean"] - e for c, e in zip(cells, errors))
    high = max(c["mean"] + e for c, e in zip(cells, errors))
    pad = (high - low) * 0.25 or abs(high) * 0.05 or 1.0
    if low - pad <= 0:
        return False
    axes.set_ylim(low - pad, high + pad * 1.2)  # room above for the labels
    return True
