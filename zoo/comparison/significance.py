"""Which cell is best, and by how much: a best mark only where Welch's interval of the
difference to the runner-up excludes 0 (else the leaders are tied, and named), and the
difference to a baseline row with its interval."""

from __future__ import annotations

import math

from zoo.comparison.labels import key_text, row_text, unique_keys
from zoo.errors import UnknownNameError


def best_marks(table, rows_keys, column_keys, level: float) -> tuple[list[bool], list[str]]:
    """True for the best mean in each column, only where it beats the runner-up at `level`
    (Welch's interval of the difference excludes 0); otherwise the column's leaders are
    tied, and a note names them. Only among two or more cells."""
    from zoo.comparison.stats import welch_interval

    best, ties = [False] * len(table), []
    for _, group in table.groupby(unique_keys(column_keys + ["task", "metric"]), sort=False):
        better = group["better"].iloc[0]
        if better not in ("lower", "higher") or len(group) < 2:
            continue
        ranked = group.sort_values("mean", ascending=better == "lower")
        first, second = ranked.iloc[0], ranked.iloc[1]
        interval = welch_interval(
            first["mean"],
            first["std"],
            first["n"],
            second["mean"],
            second["std"],
            second["n"],
            level,
        )
        if interval.significant:
            best[table.index.get_loc(ranked.index[0])] = True
        else:
            where = " / ".join(key_text(first[k]) for k in column_keys)
            ties.append(
                f"{row_text(first, rows_keys)} and {row_text(second, rows_keys)} on {where}"
            )
    notes = []
    if ties:
        notes.append(
            f"tied (the difference of the two best is not significant at "
            f"{level:.0%}; no best marked): "
            + "; ".join(ties[:5])
            + (f"; and {len(ties) - 5} more" if len(ties) > 5 else "")
        )
    return best, notes


def with_baseline(table, rows_keys, column_keys, baseline: str, level: float):
    """Each cell against the baseline row of its column: the exact row when `baseline` is a
    full row label ('decoder-char (steps=100)'), else the row with that first key and the
    same setting, or its only setting in that column."""
    import pandas as pd

    from zoo.comparison.stats import welch_interval

    key = rows_keys[0]
    labels = table.apply(lambda c: row_text(c, rows_keys), axis=1)
    exact = baseline in set(labels)
    if not exact and baseline not in set(table[key]):
        raise UnknownNameError(
            f"baseline {key}",
            baseline,
            sorted(set(table[key]) | set(labels)),
            hint="it must be one of the rows of the table",
        )
    is_baseline = labels == baseline if exact else table[key] == baseline
    rows = []
    for index, row in table.iterrows():
        same_column = pd.Series(True, index=table.index)
        for k in unique_keys(column_keys + ["task", "metric"]):
            same_column &= table[k] == row[k]
        reference = table[same_column & is_baseline]
        if not exact and len(reference) > 1:
            reference = reference[reference["setting"] == row["setting"]]
        empty = {
            "baseline": baseline,
            "diff": math.nan,
            "ci_low": math.nan,
            "ci_high": math.nan,
            "df": math.nan,
            "significant": None,
        }
        if len(reference) != 1 or bool(is_baseline[index]):
            rows.append(empty)
            continue
        ref = reference.iloc[0]
        interval = welch_interval(
            row["mean"], row["std"], row["n"], ref["mean"], ref["std"], ref["n"], level
        )
        rows.append(
            {
                "baseline": baseline,
                "diff": interval.diff,
                "ci_low": interval.low,
                "ci_high": interval.high,
                "df": interval.df,
                "significant": interval.significant,
            }
        )
    return pd.concat([table.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
