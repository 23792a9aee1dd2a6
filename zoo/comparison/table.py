"""Comparison tables: the store pivoted into cells with honest statistics over seeds.

`summarize` turns runs into one row per cell (mean, standard deviation and count over
seeds, the best in each column, and with a baseline the difference and its 95% Welch
interval). `render` prints that table as text, markdown, csv, json, html or latex.

A cell pools runs that share the row keys, the column keys, the task and the metric, and
(unless asked to pool) the same settings apart from the seed: a model trained for 100
steps and the same model trained for 2000 become two rows, labelled by what differs.
The same configuration run twice with the same seed counts once (the latest run).

This module is named `comparison` and not `compare` so that `zoo.compare(...)`, the
function, is never shadowed by a submodule attribute.
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

from zoo.comparison.labels import (
    key_text,
    label_settings,
    setting_labels,
    unique_keys,
    variant_id,
)
from zoo.comparison.samples import (
    left_out_by_status,
    nan_metrics,
    non_finite_note,
    one_per_sample,
    sample_key,
    settings_of,
)
from zoo.comparison.significance import best_marks, power_notes, with_baseline
from zoo.core.names import get_task
from zoo.errors import UnknownNameError, ZooError
from zoo.tasks import describe_metric, metric_info, strip_split

SPLIT_PREFIXES = {"validation": ("val", "validation"), "test": ("test",), "train": ("train",)}
STAT_COLUMNS = (
    "task",
    "metric",
    "better",
    "mean",
    "std",
    "n",
    "best",
    "detectable",
    "setting",
    "configs",
    "runs",
)
BASELINE_COLUMNS = (
    "baseline",
    "diff",
    "ci_low",
    "ci_high",
    "df",
    "p",
    "p_holm",
    "significant",
    "test",
)


def direction(metric: str, task: str | None = None) -> str | None:
    """'lower' or 'higher' is better, as the task's registration (or the core, for run
    figures such as tokens_per_s) declares it; None when nobody declares the metric."""
    info = metric_info(get_task(task), metric)
    return info.better if info else None


def describe(metric: str, better: str | None = None, task: str | None = None) -> str:
    """'val_bpc (bits per character, lower is better)'."""
    return describe_metric(metric, get_task(task), better)


def primary_metric(task: str | None, kind: str = "train") -> str | None:
    """The task's declared headline metric; for eval rows without its split prefix ("bpc"),
    since an evaluation may score any split (see `eval_value`). None for a task no installed
    plugin declares."""
    declared = get_task(task)
    metric = declared.primary if declared else None
    if metric and kind == "eval":
        return strip_split(metric)
    return metric


def eval_names(name: str, split: str | None) -> list[str]:
    """Where an evaluation of `split` keeps metric `name`: pipelines prefix a split's metrics
    as their own runs do ("val_bpc", "test_accuracy", "heldout_accuracy"), or not at all."""
    prefixes = SPLIT_PREFIXES.get(split, (split,)) if split else ()
    return [f"{prefix}_{name}" for prefix in prefixes] + [name]


def eval_value(metrics: dict, name: str, split: str | None):
    """The value of metric `name` (unprefixed) in an evaluation row's metrics, or None."""
    for key in eval_names(name, split):
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    return None


# -- loading -------------------------------------------------------------------------
def load_runs(store=None, rows: list[dict] | None = None):
    """Every run, one column per scalar metric and per setting (zoo.records.columns), plus
    what comparisons need from the config: `settings` (the settings that change the result,
    without the seed), `trained_on` and `split` (eval rows). From ``store`` where given (an
    open zoo.records.store.Store, read-only for a viewer), else from ZOO_HOME's; only of
    ``rows`` (what its ``rows`` returned) where given."""
    from zoo.records.columns import with_setting_columns
    from zoo.records.store import Store

    if store is None:
        with Store() as opened:
            return load_runs(opened, rows)
    listed = store.rows() if rows is None else rows
    frame = store.frame(listed)
    by_id = {r["id"]: r for r in listed}
    return add_settings(with_setting_columns(frame, by_id), by_id)


def add_settings(frame, rows: dict):
    """`frame` with each run's `settings`, `trained_on`, `split` and `sample` (equal for the
    same configuration at the same seed: zoo.comparison.samples)."""
    frame = frame.copy()
    derived = {run_id: settings_of(row, rows) for run_id, row in rows.items()}
    samples = {run_id: sample_key(row, rows, derived[run_id]) for run_id, row in rows.items()}
    diverged = {run_id: nan_metrics(row) for run_id, row in rows.items()}
    frame["settings"] = frame["id"].map(lambda i: derived.get(i, ({}, None, None))[0])
    frame["trained_on"] = frame["id"].map(lambda i: derived.get(i, ({}, None, None))[1])
    frame["split"] = frame["id"].map(lambda i: derived.get(i, ({}, None, None))[2])
    frame["sample"] = frame["id"].map(lambda i: samples.get(i, i))
    frame["nan_metrics"] = frame["id"].map(lambda i: diverged.get(i, frozenset()))
    trials = {run_id for run_id, row in rows.items() if (row.get("config") or {}).get("tune")}
    frame["tune_trial"] = frame["id"].isin(trials)
    return frame


# -- the table -----------------------------------------------------------------------
IDENTITY = ("model", "dataset", "task")  # what a run is, besides its settings


@dataclass
class Comparison:
    """What `zoo compare` shows: the cells (one row each, numeric) and how to lay them out.
    ``zoo.comparison.render.render(comparison, "markdown")`` gives the command's text,
    ``zoo.plot_comparison`` its bars."""

    cells: Any
    """A pandas DataFrame, one row per table cell: the row keys (default model) and column
    keys (default dataset), task, metric, better, mean, std, n (distinct seeds), best,
    detectable (the smallest difference to the leader its seeds find with 80% power),
    setting, configs, runs; with a baseline also diff, ci_low, ci_high, df, p, p_holm,
    significant (None where there is no test) and test."""
    rows: list[str]
    """The run columns that make the table's rows (``by``)."""
    columns: list[str]
    """The run columns that make the table's columns."""
    baseline: str | None = None
    """The row the others are tested against, if any."""
    notes: list[str] = field(default_factory=list)
    """What the command prints under the table: merged duplicates, runs left out, rows
    not told apart."""
    pooled: bool = False
    """``pool``: n counts runs (configurations x seeds), not seeds."""
    examples_counted: list[str] = field(default_factory=list)
    """The metrics whose tests count the evaluation set's sampling noise (per-example
    scores kept: zoo.comparison.bootstrap)."""
    ties: list = field(default_factory=list)
    """The columns whose leader is not told apart from every other row, with the rows
    tied with it (zoo.comparison.significance.Tie): what more seeds would settle."""
    level: float = 0.95
    """The confidence of each column's tests."""

    def __getitem__(self, key):
        """zoo.compare() returned the cells before: deprecated, read ``.cells``."""
        _earlier_frame(f"[{key!r}]")
        return self.cells[key]

    def __getattr__(self, name: str):
        cells = self.__dict__.get("cells")  # None while a copy or pickle is being built
        if name.startswith("_") or cells is None or not hasattr(cells, name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        _earlier_frame(f".{name}")
        return getattr(cells, name)

    @functools.cached_property
    def metric_pairs(self):
        """The (task, metric) pairs of the table, each once (a column's label names its
        metric where there are several: computed once, not for every cell)."""
        return self.cells[["task", "metric"]].drop_duplicates()


def _earlier_frame(access: str) -> None:
    import warnings

    from zoo.errors import ZooDeprecationWarning

    warnings.warn(
        f"zoo.compare(){access} is deprecated: zoo.compare returns a zoo.Comparison; its "
        f"cells are .cells{access} (the DataFrame access goes in zoo 0.2)",
        ZooDeprecationWarning,
        stacklevel=3,
    )


def summarize(
    frame,
    *,
    metric: str | None = None,
    where: str | None = None,
    by=None,
    columns=None,
    baseline: str | None = None,
    evals: bool = False,
    status=("finished",),
    better: str | None = None,
    pool: bool = False,
    level: float = 0.95,
    examples: bool = True,
) -> Comparison:
    import pandas as pd

    # Evaluation rows are told apart by what the model was trained on and the split scored.
    rows_keys = _keys(by or (("model", "trained_on") if evals else ("model",)), "--by")
    column_keys = _keys(columns or (("dataset", "split") if evals else ("dataset",)), "--columns")
    if better not in (None, "lower", "higher"):
        raise ZooError(f"better must be 'lower' or 'higher', not {better!r}")
    if frame is None or frame.empty:
        raise ZooError("no runs recorded yet (zoo run or zoo sweep records some)")
    if "settings" not in frame.columns:
        frame = frame.assign(settings=[{}] * len(frame), trained_on=None, split=None)
    if "sample" not in frame.columns:  # no settings known: a run is its config hash
        frame = frame.assign(sample=frame["config_hash"].fillna(frame["id"]))
    # a model's own rows (trained runs, ensembles of them), or evaluations on other data
    data = frame[(frame["kind"] == "eval") == evals]
    if where:
        data = _query(data, where)
    notes = []
    if status and "all" not in status:
        notes += left_out_by_status(data, status)
        data = data[data["status"].isin(list(status))]
    # An ensemble of members at different seeds shares members with others (seed 0's model
    # with seed 1's, and with seed 2's): no count of independent seeds holds for it.
    mixed = (data["kind"] == "ensemble") & data["seed"].isna()
    if mixed.any():
        notes.append(
            f"{int(mixed.sum())} ensemble(s) of members trained at different seeds left out: "
            "they share members, so n would not count independent seeds"
        )
        if mixed.all():
            raise ZooError(notes[-1] + "; combine members of one seed to compare them")
        data = data[~mixed]
    for key in rows_keys + column_keys:
        if key not in frame.columns:
            raise UnknownNameError(
                "column",
                key,
                [c for c in frame.columns if c != "settings"],
                hint="group by a run column such as model, architecture, "
                "tokenizer, dataset, task, seed",
            )
    if not (
        metric is None
        or metric in frame.columns
        or (evals and any(c.endswith("_" + metric) for c in frame.columns))
    ):
        raise UnknownNameError("metric", metric, metric_names(frame))
    what = f"{'evaluation' if evals else 'training'} runs with status {', '.join(status) or 'any'}"
    if data.empty:
        raise ZooError(f"no {what} match" + (f" where {where!r}" if where else ""))
    long = _values(data, metric, evals)
    if long.empty:
        raise ZooError(f"none of the {what} recorded " + (metric or "their task's primary metric"))
    missing = len(data) - long.loc[long["role"] == "primary", "id"].nunique()
    finite = long["value"].map(math.isfinite)
    notes += non_finite_note(long[~finite])
    long, merged = one_per_sample(long[finite])
    if long.empty:
        raise ZooError(f"none of the {what} recorded a finite " + (metric or "primary metric"))
    # A model, dataset, task or split that is neither a row nor a column key still tells
    # configurations apart: their runs are rows of their own, never one pooled cell.
    apart = [
        k for k in IDENTITY + (("split",) if evals else ()) if k not in rows_keys + column_keys
    ]
    if apart:
        long["settings"] = [
            {**settings, **{k: key_text(v) for k, v in zip(apart, values)}}
            for settings, *values in zip(long["settings"], *(long[k] for k in apart))
        ]
    long["variant"] = long["settings"].map(variant_id) if not pool else ""
    for key in rows_keys + column_keys:
        long[key] = long[key].map(key_text)
    long, ranked_on = _choice_figures(long, rows_keys + column_keys, pool)
    if ranked_on:
        notes.append(
            f"rows that differ in settings are ranked on {', '.join(ranked_on)}, the "
            "validation figure: the best mark is there, the test figure beside it reports "
            "and never chooses (--metric picks one figure)"
        )
    long, selected = _without_selected_trials(long, rows_keys + column_keys)
    if selected:
        notes.append(
            f"{selected} tune trial(s) left out where their settings were re-run: a trial "
            "chosen as the best is biased upwards by the choice (zoo tune reports its re-runs)"
        )
    group = unique_keys(rows_keys + column_keys + ["task", "metric", "variant"])
    cells, mixed, machines = [], set(), 0
    for values, runs in long.groupby(group, sort=False, dropna=False):
        if runs["status"].nunique() > 1:
            mixed.update(runs["status"])
        machines += _pools_machines(runs)
        found = dict(zip(group, values))
        numbers = runs["value"].astype(float)
        cell = {k: found[k] for k in rows_keys + column_keys}
        cell.update(
            task=found["task"],
            metric=found["metric"],
            better=better or direction(found["metric"], found["task"]),
            mean=float(numbers.mean()),
            std=float(numbers.std(ddof=1)) if len(numbers) > 1 else float("nan"),
            n=int(len(numbers)),
            configs=int(runs["settings"].map(variant_id).nunique()),
            runs=" ".join(runs["id"]),
            variant=found["variant"],
            _settings=label_settings(runs),
        )
        cells.append(cell)
    table = pd.DataFrame(cells)
    table["setting"] = setting_labels(table, rows_keys, column_keys)
    reported = {m for m in table["metric"] if m.startswith("test_")} if ranked_on else set()
    replicates = _example_replicates(table, column_keys, examples and not evals)
    table["best"], marks, ties = best_marks(
        table, rows_keys, column_keys, level, reported, replicates
    )
    table["detectable"], power = power_notes(table, rows_keys, column_keys, level, reported)
    notes += marks + power
    if missing:
        notes.append(
            f"{missing} of {len(data)} matching runs recorded no "
            f"{metric or 'primary metric'} and are left out"
        )
    if mixed:
        notes.append(
            f"some cells pool runs of several statuses ({', '.join(sorted(mixed))}); "
            "--status finished counts finished runs only"
        )
    if machines:
        notes.append(
            f"{machines} cell(s) pool runs trained on different CPU kinds or precisions "
            "(their last digits differ from machine to machine): zoo runs --columns "
            "cpu_kind,resolved_precision shows which"
        )
    if merged:
        notes.append(
            f"{merged} duplicate run(s) of the same configuration and seed merged (a tune "
            "trial and its re-run, a repeat): each sample counts once, the latest run kept"
        )
    counted = sorted({table.loc[i, "metric"] for i in replicates})
    if baseline is not None:
        table = with_baseline(table, rows_keys, column_keys, baseline, level, replicates)
    table = table.drop(columns=["_settings", "variant"])
    order = unique_keys(
        rows_keys
        + column_keys
        + list(STAT_COLUMNS)
        + (list(BASELINE_COLUMNS) if baseline is not None else [])
    )
    table = table[order]
    table = _sorted(table, unique_keys(rows_keys + column_keys + ["metric", "setting"]))
    if (table["configs"] > 1).any():
        notes.append("some cells pool runs with different settings (--pool)")
    table = table.reset_index(drop=True)
    table.attrs["notes"] = notes  # zoo.compare() returns the cells: the notes travel with them
    return Comparison(
        table,
        rows_keys,
        column_keys,
        baseline,
        notes,
        pooled=pool,
        examples_counted=counted,
        ties=ties,
        level=level,
    )


def _example_replicates(table, column_keys, wanted: bool) -> dict:
    """Bootstrap replicates (seeds and examples) of the cells whose runs kept per-example
    scores (zoo.comparison.bootstrap); none with --seeds-only."""
    from zoo.comparison.bootstrap import column_replicates
    from zoo.comparison.significance import columns_of

    return column_replicates(table, columns_of(table, column_keys)) if wanted else {}


def _choice_figures(long, keys, pool: bool):
    """A table whose rows differ in settings (a grid sweep, a search's trials) chooses among
    them: with no --metric, it ranks them on the validation figure and keeps the test
    figure beside it. `long` keeps its validation records (role 'validation') only then;
    returns it and the validation metrics ranked on."""
    validation = long["role"] == "validation"
    if not validation.any():
        return long, []
    primary = long[~validation]
    configs = primary.groupby(unique_keys(keys + ["task", "metric"]), dropna=False)
    if pool or configs["variant"].nunique().max() < 2:
        return long[~validation], []
    return long, sorted(set(long.loc[validation, "metric"]))


def _without_selected_trials(long, keys):
    """`long` without the `zoo tune` trials whose configuration was also run outside the
    search (the winner's re-runs at other seeds): the trial was chosen for its validation
    figure, so pooling it with its re-runs brings back the selection bias they avoid."""
    if "tune_trial" not in long.columns or not long["tune_trial"].any():
        return long, 0
    trial = long["tune_trial"].fillna(False).astype(bool)
    config = long[unique_keys(keys + ["task", "metric"])].astype(str).agg("\0".join, axis=1)
    config = config + "\0" + long["settings"].map(variant_id)
    selected = trial & config.isin(set(config[~trial]))
    return long[~selected], int(selected.sum())


def _pools_machines(runs) -> bool:
    """Whether a cell's runs trained on more than one CPU kind or resolved precision."""
    kinds = [c for c in ("cpu_kind", "resolved_precision") if c in runs.columns]
    return bool(kinds) and len(runs[kinds].dropna().drop_duplicates()) > 1


def _keys(keys, option: str) -> list[str]:
    if isinstance(keys, str):
        keys = [k.strip() for k in keys.split(",")]
    keys = [k for k in keys if k]
    if not keys:
        raise ZooError(f"{option} needs at least one run column")
    return list(dict.fromkeys(keys))


def _query(data, where: str):
    from zoo.comparison.query import select

    return select(data, where)


def metric_names(frame) -> list[str]:
    skip = {
        "id",
        "kind",
        "parent_id",
        "status",
        "model",
        "architecture",
        "tokenizer",
        "dataset",
        "task",
        "config_hash",
        "error",
        "pid",
        "host",
        "settings",
        "nan_metrics",
        "tune_trial",
        "sample",
        "trained_on",
        "split",
        "created",
        "finished",
        "seed",
    }
    return [c for c in frame.columns if c not in skip]


def _values(data, metric: str | None, evals: bool):
    """One row per run: the value of the chosen (or the task's primary) metric."""
    import numpy as np
    import pandas as pd

    records = []
    for row in data.to_dict("records"):  # plain dicts: a Series per row costs seconds at 10k
        name = metric or primary_metric(row["task"], "eval" if evals else "train")
        if name is None:
            continue
        names = [(name, "primary")]
        if metric is None and not evals and name.startswith("test_"):
            # what a choice among settings ranks on (see _choice_figures)
            names.append(("val_" + name.removeprefix("test_"), "validation"))
        for name, role in names:
            # an evaluation's metric sits under its split's prefix: reported by the bare name
            for key in eval_names(name, row["split"]) if evals else [name]:
                value = row[key] if key in data.columns else None
                if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
                    # a NaN in a frame is a metric not recorded, unless the run recorded NaN
                    if math.isnan(value) and key not in row.get("nan_metrics", ()):
                        continue
                    record = {**row, "metric": name, "value": float(value)}
                    records.append({**record, "role": role})
                    break
    return pd.DataFrame(records)


def _sorted(table, keys):
    from zoo.core.kinds import natural_key

    order = sorted(
        range(len(table)), key=lambda i: [natural_key(str(table.iloc[i][k])) for k in keys]
    )
    return table.iloc[order]
