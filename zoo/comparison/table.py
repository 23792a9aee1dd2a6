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
from collections.abc import Sequence
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
    SAMPLE_CONFIG_KEYS,
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
# What the tables read of a run's config: its settings and sample (zoo.comparison.samples)
# and whether it is a tune trial. A store's rows are read with these keys alone.
CONFIG_KEYS = SAMPLE_CONFIG_KEYS + ("tune",)


def load_runs(store=None, rows: list[dict] | None = None):
    """Every run, one column per scalar metric and per setting (zoo.records.columns), plus
    what comparisons need from the config: `settings` (the settings that change the result,
    without the seed), `trained_on` and `split` (eval rows). From ``store`` where given (an
    open zoo.records.store.Store, read-only for a viewer), else from ZOO_HOME's; only of
    ``rows`` (what its ``rows`` returned, with at least CONFIG_KEYS of each config) where
    given."""
    from zoo.records.columns import with_setting_columns
    from zoo.records.store import Store

    if store is None:
        with Store() as opened:
            return load_runs(opened, rows)
    listed = store.rows(config_keys=CONFIG_KEYS) if rows is None else rows
    frame = store.frame(listed)
    by_id = {r["id"]: r for r in listed}
    flat, results = settings_by_id(by_id)
    return add_settings(with_setting_columns(frame, flat), by_id, results)


def settings_by_id(rows: dict) -> tuple[dict, dict]:
    """Run id -> zoo.records.columns.flat_settings of its config, and run id -> its
    result_settings, each worked out once per config object (the rows Store.rows reads with
    config_keys share one where their settings are the same: the seeds of a configuration)."""
    from zoo.records.columns import flat_settings, result_settings

    shared: dict[tuple, tuple] = {}  # kept alive here, so an id stays its object's own
    flat, results = {}, {}
    for run_id, row in rows.items():
        config = row.get("config") or {}
        # the settings declared incidental depend on these where the config lists none
        key = (id(config), row.get("architecture"), row.get("tokenizer"), row.get("task"))
        found = shared.get(key)
        if found is None or found[0] is not config:
            settings = flat_settings(config)
            found = shared[key] = (config, settings, result_settings(row, settings))
        flat[run_id], results[run_id] = found[1], found[2]
    return flat, results


def add_settings(frame, rows: dict, results: dict | None = None):
    """`frame` with each run's `settings`, `trained_on`, `split` and `sample` (equal for the
    same configuration at the same seed: zoo.comparison.samples). ``results``: each run's
    zoo.records.columns.result_settings, where the caller has them already."""
    import numpy as np

    ids = frame["id"].tolist()  # once: iterating a column of strings is slow
    derived = {run_id: settings_of(row, rows, results) for run_id, row in rows.items()}
    found = [derived.get(run_id) for run_id in ids]
    texts: dict = {}  # the JSON of each settings dict, which rows may share
    columns: dict[str, list] = {
        "settings": [f[0] if f else {} for f in found],
        "trained_on": [f[1] if f else None for f in found],
        "split": [f[2] if f else None for f in found],
        "sample": [
            sample_key(rows[run_id], rows, f, texts) if f else run_id
            for run_id, f in zip(ids, found)
        ],
        "nan_metrics": [nan_metrics(rows[i]) if i in rows else frozenset() for i in ids],
    }
    trials = [bool(i in rows and (rows[i].get("config") or {}).get("tune")) for i in ids]
    frame = frame.assign(**{k: _objects(v) for k, v in columns.items()})
    return frame.assign(tune_trial=np.array(trials, dtype=bool))


def _objects(values: list):
    """A column of Python objects, whatever they are (dicts, sets, text or None)."""
    import numpy as np

    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


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


@dataclass(frozen=True)
class ComparisonSpec:
    """What a comparison table shows, each as ``zoo.compare``'s argument of that name: which
    runs and figure (metric, where, evals, status), how they are laid out (by, columns,
    baseline) and how its cells are told apart (better, pool, level, examples).
    ``zoo.sweep(compare=zoo.ComparisonSpec(...))`` compares a sweep's own runs this way."""

    metric: str | None = None
    """The figure compared; None: each task's primary metric."""
    where: str | None = None
    """A filter over run columns (``zoo runs --where``)."""
    by: Sequence[str] | str | None = None
    """The run columns of the rows (default: model; for evaluations model and trained_on)."""
    columns: Sequence[str] | str | None = None
    """The run columns of the columns (default: dataset; for evaluations dataset and split)."""
    baseline: str | None = None
    """The row every other is tested against."""
    evals: bool = False
    """Compare evaluations (zoo eval's rows) rather than trained runs."""
    status: tuple[str, ...] = ("finished",)
    """The run statuses counted ("all": every one)."""
    better: str | None = None
    """"lower" or "higher", for a figure no task declares a direction for."""
    pool: bool = False
    """Pool a row's runs with different settings into one cell (n then counts runs)."""
    level: float = 0.95
    """The confidence of each column's tests."""
    examples: bool = True
    """Count the evaluation set's sampling noise where runs kept per-example scores."""

    def __post_init__(self):
        if self.better not in (None, "lower", "higher"):
            raise ZooError(f"better must be 'lower' or 'higher', not {self.better!r}")

    @property
    def row_keys(self) -> list[str]:
        """The run columns that name a row, checked."""
        # Evaluation rows are told apart by what the model was trained on and the split scored.
        return _keys(self.by or (("model", "trained_on") if self.evals else ("model",)), "by")

    @property
    def column_keys(self) -> list[str]:
        """The run columns that name a column, checked."""
        default = ("dataset", "split") if self.evals else ("dataset",)
        return _keys(self.columns or default, "columns")

    @property
    def figure(self) -> str:
        """The compared figure's name in a message."""
        return self.metric or "their task's primary metric"


def summarize(frame, spec: ComparisonSpec | None = None) -> Comparison:
    """The comparison of the runs of ``frame`` (``load_runs()``) that ``spec`` selects: one
    cell per row and column key, with each column's best marked and the notes on what was
    left out or pooled."""
    spec = spec or ComparisonSpec()
    rows_keys, column_keys = spec.row_keys, spec.column_keys
    data, notes = _selected_runs(frame, spec, rows_keys + column_keys)
    long, notes = _figures(data, spec, rows_keys + column_keys, notes)
    ranked_on = long.attrs["ranked_on"]
    table, statuses, machines = _cells(long, spec, rows_keys, column_keys)
    reported = {m for m in table["metric"] if m.startswith("test_")} if ranked_on else set()
    replicates, examples_alone = _example_replicates(
        table, column_keys, spec.examples and not spec.evals
    )
    level = spec.level
    table["best"], marks, ties = best_marks(
        table, rows_keys, column_keys, level, reported, replicates
    )
    table["detectable"], power = power_notes(
        table, rows_keys, column_keys, level, reported, examples_alone
    )
    notes += marks + power
    notes += _pooling_notes(spec, len(data), long.attrs, statuses, machines)
    counted = sorted({table.loc[i, "metric"] for i in replicates})
    if spec.baseline is not None:
        table = with_baseline(table, rows_keys, column_keys, spec.baseline, level, replicates)
    table = _laid_out(table.drop(columns=["_settings", "variant"]), spec)
    if (table["configs"] > 1).any():
        notes.append("some cells pool runs with different settings (--pool)")
    table.attrs["notes"] = notes  # zoo.compare() returns the cells: the notes travel with them
    return Comparison(
        table,
        rows_keys,
        column_keys,
        spec.baseline,
        notes,
        pooled=spec.pool,
        examples_counted=counted,
        ties=ties,
        level=level,
    )


def _selected_runs(frame, spec: ComparisonSpec, keys: list[str]):
    """The runs of ``frame`` the spec selects (a model's own rows or evaluations, where,
    status; ensembles of mixed seeds left out), and the notes on what was left out. Unknown
    keys and metrics, and a selection with no run, are errors."""
    if frame is None or frame.empty:
        raise ZooError("no runs recorded yet (zoo run or zoo sweep records some)")
    if "settings" not in frame.columns:
        frame = frame.assign(settings=[{}] * len(frame), trained_on=None, split=None)
    if "sample" not in frame.columns:  # no settings known: a run is its config hash
        frame = frame.assign(sample=frame["config_hash"].fillna(frame["id"]))
    _check_names(frame, spec, keys)
    # a model's own rows (trained runs, ensembles of them), or evaluations on other data
    data = frame[(frame["kind"] == "eval") == spec.evals]
    if spec.where:
        data = _query(data, spec.where)
    notes = []
    if spec.status and "all" not in spec.status:
        notes += left_out_by_status(data, spec.status)
        data = data[data["status"].isin(list(spec.status))]
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
    if data.empty:
        where = f" where {spec.where!r}" if spec.where else ""
        raise ZooError(f"no {_described(spec)} match{where}")
    return data, notes


def _check_names(frame, spec: ComparisonSpec, keys: list[str]) -> None:
    """Every row and column key a run column, and the metric one some run records."""
    for key in keys:
        if key not in frame.columns:
            raise UnknownNameError(
                "column",
                key,
                [c for c in frame.columns if c != "settings"],
                hint="group by a run column such as model, architecture, "
                "tokenizer, dataset, task, seed",
            )
    metric = spec.metric
    if not (
        metric is None
        or metric in frame.columns
        or (spec.evals and any(c.endswith("_" + metric) for c in frame.columns))
    ):
        raise UnknownNameError("metric", metric, metric_names(frame))


def _described(spec: ComparisonSpec) -> str:
    kind = "evaluation" if spec.evals else "training"
    return f"{kind} runs with status {', '.join(spec.status) or 'any'}"


def _figures(data, spec: ComparisonSpec, keys: list[str], notes: list[str]):
    """One row per run and figure, finite and one per sample, each labelled with the
    configuration (``variant``) it pools into; and the notes, with what was left out or
    ranked. Its ``attrs`` keep the validation figures rows are ranked on (``ranked_on``),
    and how many runs recorded no figure (``missing``) or were merged (``merged``)."""
    long = _values(data, spec.metric, spec.evals)
    if long.empty:
        raise ZooError(f"none of the {_described(spec)} recorded {spec.figure}")
    missing = len(data) - long.loc[long["role"] == "primary", "id"].nunique()
    finite = long["value"].map(math.isfinite)
    notes = notes + non_finite_note(long[~finite])
    long, merged = one_per_sample(long[finite])
    if long.empty:
        raise ZooError(f"none of the {_described(spec)} recorded a finite {spec.figure}")
    # A model, dataset, task or split that is neither a row nor a column key still tells
    # configurations apart: their runs are rows of their own, never one pooled cell.
    apart = [k for k in IDENTITY + (("split",) if spec.evals else ()) if k not in keys]
    if apart:
        long["settings"] = [
            {**settings, **{k: key_text(v) for k, v in zip(apart, values)}}
            for settings, *values in zip(long["settings"], *(long[k] for k in apart))
        ]
    long["variant"] = long["settings"].map(variant_id) if not spec.pool else ""
    for key in keys:
        long[key] = long[key].map(key_text)
    long, ranked_on = _choice_figures(long, keys, spec.pool)
    if ranked_on:
        notes.append(
            f"rows that differ in settings are ranked on {', '.join(ranked_on)}, the "
            "validation figure: the best mark is there, the test figure beside it reports "
            "and never chooses (--metric picks one figure)"
        )
    long, selected = _without_selected_trials(long, keys)
    if selected:
        notes.append(
            f"{selected} tune trial(s) left out where their settings were re-run: a trial "
            "chosen as the best is biased upwards by the choice (zoo tune reports its re-runs)"
        )
    long.attrs.update(ranked_on=ranked_on, missing=missing, merged=merged)
    return long, notes


def _cells(long, spec: ComparisonSpec, rows_keys: list[str], column_keys: list[str]):
    """One cell per row key, column key, task, metric and configuration: mean, std, n and
    the runs; and the statuses pooled in a cell, and how many cells pool machines."""
    import pandas as pd

    group = unique_keys(rows_keys + column_keys + ["task", "metric", "variant"])
    cells, statuses, machines = [], set(), 0
    for values, runs in long.groupby(group, sort=False, dropna=False):
        if runs["status"].nunique() > 1:
            statuses.update(runs["status"])
        machines += _pools_machines(runs)
        found = dict(zip(group, values))
        numbers = runs["value"].astype(float)
        cell = {k: found[k] for k in rows_keys + column_keys}
        cell.update(
            task=found["task"],
            metric=found["metric"],
            better=spec.better or direction(found["metric"], found["task"]),
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
    return table, statuses, machines


def _pooling_notes(spec: ComparisonSpec, matched: int, counts, statuses, machines: int):
    """The notes on runs left out or merged, and on cells that pool statuses or machines."""
    notes = []
    if counts["missing"]:
        notes.append(
            f"{counts['missing']} of {matched} matching runs recorded no "
            f"{spec.metric or 'primary metric'} and are left out"
        )
    if statuses:
        notes.append(
            f"some cells pool runs of several statuses ({', '.join(sorted(statuses))}); "
            "--status finished counts finished runs only"
        )
    if machines:
        notes.append(
            f"{machines} cell(s) pool runs trained on different CPU kinds or precisions "
            "(their last digits differ from machine to machine): zoo runs --columns "
            "cpu_kind,resolved_precision shows which"
        )
    if counts["merged"]:
        notes.append(
            f"{counts['merged']} duplicate run(s) of the same configuration and seed merged "
            "(a tune trial and its re-run, a repeat): each sample counts once, the latest "
            "run kept"
        )
    return notes


def _laid_out(table, spec: ComparisonSpec):
    """The cells' columns in the table's order (keys, statistics, the baseline's test),
    and its rows sorted by key, metric and setting."""
    keys = spec.row_keys + spec.column_keys
    tested = list(BASELINE_COLUMNS) if spec.baseline is not None else []
    table = table[unique_keys(keys + list(STAT_COLUMNS) + tested)]
    table = _sorted(table, unique_keys(keys + ["metric", "setting"]))
    return table.reset_index(drop=True)


def _example_replicates(table, column_keys, wanted: bool) -> tuple[dict, dict]:
    """Bootstrap replicates (seeds and examples; examples alone) of the cells whose runs
    kept per-example scores (zoo.comparison.bootstrap); none with --seeds-only."""
    from zoo.comparison.bootstrap import column_replicates
    from zoo.comparison.significance import columns_of

    return column_replicates(table, columns_of(table, column_keys)) if wanted else ({}, {})


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
        raise ZooError(f"{option} needs at least one run column", option=option)
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
