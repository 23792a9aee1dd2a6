"""The run list (`zoo runs`, `zoo.runs()`): every run with its metrics and settings as
typed columns, filtered by a condition, sorted and cut to the newest N."""

from __future__ import annotations

import json
import math

from zoo.errors import UnknownNameError, ZooError

SUMMARY = (
    "id",
    "kind",
    "status",
    "model",
    "dataset",
    "task",
    "params",
    "seed",
    "duration",
    "metric",
    "value",
)
FORMATS = ("table", "csv", "json", "markdown")


def run_frame(runs=None):
    """All runs: the store's columns, one per scalar metric and one per setting
    (zoo.records.columns), `metric` and `value` (the task's primary metric and its value;
    an evaluation's named by the split it scored, val_accuracy or test_accuracy). Built from
    ``runs`` (what zoo.comparison.table.load_runs returned) where given."""
    import pandas as pd

    from zoo.comparison.table import load_runs

    frame = load_runs() if runs is None else runs.copy()
    if frame.empty:
        return frame.drop(columns=["settings", "nan_metrics", "tune_trial"], errors="ignore")
    frame["params"] = pd.array(
        [None if pd.isna(v) else int(v) for v in frame["params"]], dtype="Int64"
    )  # failed rows hold none: still integers
    frame["duration"] = pd.to_numeric(frame["duration"], errors="coerce")
    frame["metric"], frame["value"] = primary_values(frame)
    return frame.drop(columns=["settings", "nan_metrics", "tune_trial"])


def primary_values(frame):
    """Each run's primary metric (an evaluation's under the name of the split it scored)
    and its value, worked out once per task, kind and split rather than once per run."""
    import pandas as pd

    from zoo.comparison.table import eval_names, primary_metric

    metrics = pd.Series(None, index=frame.index, dtype="object")
    values = pd.Series(math.nan, index=frame.index, dtype="float64")
    split = frame["split"] if "split" in frame.columns else pd.Series(None, index=frame.index)
    keys = pd.DataFrame({"task": frame["task"], "kind": frame["kind"], "split": split})
    for (task, kind, part), positions in keys.groupby(
        ["task", "kind", "split"], dropna=False, sort=False
    ).indices.items():
        part = part if isinstance(part, str) else None
        metric = primary_metric(task if isinstance(task, str) else None, kind)
        if metric is None:
            continue
        # an evaluation keeps its metric under its split's prefix
        names = eval_names(metric, part) if kind == "eval" else [metric]
        metrics.iloc[positions] = names[0] if kind == "eval" and part else metric
        found = values.iloc[positions].to_numpy(copy=True)
        for name in (n for n in names if n in frame.columns):
            column = frame[name].iloc[positions]
            for at, value in enumerate(column):
                if math.isnan(found[at]) and _number(value):
                    found[at] = float(value)
        values.iloc[positions] = found
    return metrics, values


def _number(value) -> bool:
    import pandas as pd

    return isinstance(value, (int, float)) and not isinstance(value, bool) and pd.notna(value)


def select(frame, *, where: str | None = None, sort: str | None = None, limit: int | None = None):
    """The runs for which `where` holds, ordered by `sort` ('val_bpc', '-created': a leading
    minus sorts descending; comma-separated keys) or by creation, the last `limit` of them."""
    from zoo.comparison.query import select as query

    if frame.empty:
        return frame
    if where:
        frame = query(frame, where)
    keys, ascending = [], []
    for key in (sort or "created").split(","):
        key = key.strip()
        descending = key.startswith("-")
        key = key.lstrip("-")
        if key not in frame.columns:
            raise UnknownNameError("sort column", key, [str(c) for c in frame.columns])
        keys.append(key)
        ascending.append(not descending)
    frame = frame.sort_values(keys, ascending=ascending, na_position="last", kind="stable")
    if limit is not None:
        frame = frame.tail(limit) if not sort else frame.head(limit)
    return frame


def render(frame, fmt: str = "table", columns: list[str] | None = None) -> str:
    """The runs' summary columns (and `columns`) as a table, CSV, JSON records or markdown.
    JSON keeps types: numbers are numbers, a missing value is null."""
    if fmt not in FORMATS:
        raise UnknownNameError("format", fmt, FORMATS)
    wanted = list(SUMMARY) + [c for c in columns or [] if c not in SUMMARY]
    for column in wanted:
        if column not in frame.columns and not frame.empty:
            raise UnknownNameError("column", column, [str(c) for c in frame.columns])
    table = frame[[c for c in wanted if c in frame.columns]] if not frame.empty else frame
    if fmt == "json":
        return json.dumps([_record(r) for r in table.to_dict("records")]) + "\n"
    if fmt == "csv":
        return table.to_csv(index=False)
    shown = table.copy()
    if "duration" in shown:
        shown["duration"] = shown["duration"].round(1)
    if "value" in shown:
        shown["value"] = [("" if math.isnan(v) else f"{v:.4f}") for v in shown["value"]]
    shown = shown.astype(object).where(shown.notna(), "")
    if fmt == "markdown":
        lines = [
            "| " + " | ".join(shown.columns) + " |",
            "| " + " | ".join("---" for _ in shown.columns) + " |",
        ]
        lines += [
            "| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"
            for row in shown.itertuples(index=False)
        ]
        return "\n".join(lines) + "\n"
    return shown.to_string(index=False) + "\n"


def _record(record: dict) -> dict:
    """A row as JSON values: NumPy and pandas scalars as numbers, NaN and NA as null."""
    import pandas as pd

    out = {}
    for key, value in record.items():
        if isinstance(value, (list, tuple, dict)):
            out[key] = list(value) if isinstance(value, tuple) else value
            continue
        if value is None or pd.isna(value):
            value = None
        elif hasattr(value, "item"):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        out[key] = value
    return out


def check_limit(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ZooError(f"-n must be a positive integer, got {value!r}")
    return value
