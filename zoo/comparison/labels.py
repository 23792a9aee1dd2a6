"""How a comparison names its rows: the settings that tell a model's variants apart
('steps=100'), a time-budgeted run's steps as trained, and one cell's row text."""

from __future__ import annotations

import hashlib
import json


def variant_id(settings) -> str:
    payload = json.dumps(settings or {}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]


def label_settings(runs) -> dict:
    """The settings a cell's row label shows: a time-budgeted run's `steps` is the number of
    steps it trained (the mean over the cell's runs), not the step limit it never reached."""
    settings = dict(runs["settings"].iloc[0])
    if settings.get("train.time") is not None and "steps" in runs.columns:
        trained = runs["steps"].dropna()
        if len(trained):
            settings["train.steps"] = round(float(trained.astype(float).mean()))
    return settings


def key_text(value) -> str:
    import pandas as pd

    if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value)):
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def setting_labels(table, rows_keys, column_keys=()) -> list[str]:
    """For rows that split into several settings, what tells them apart ('steps=100').

    Settings are compared within one task: each task's pipeline has its own training
    config, so a model's runs on two tasks differ in fields without differing in intent.
    A setting tells rows apart only where it differs within one column: one that differs
    only from column to column (a dataset's own options, with datasets as columns) is told
    by the column already."""
    labels = [""] * len(table)
    for _, group in table.groupby(unique_keys(rows_keys + ["task"]), sort=False):
        variants = group.drop_duplicates("variant")
        if len(variants) < 2:
            continue
        differing: set[str] = set()
        shown: dict[str, set[str]] = {}  # the differing keys a variant's column has
        in_columns = group.groupby(list(column_keys), sort=False) if column_keys else None
        for _, column in in_columns if in_columns is not None else [(None, group)]:
            column = column.drop_duplicates("variant")
            settings = list(column["_settings"])
            keys = sorted({k for s in settings for k in s})
            differing.update(
                k for k in keys if len({json.dumps(s.get(k), default=str) for s in settings}) > 1
            )
            for variant in column["variant"]:
                shown.setdefault(variant, set()).update(keys)
        ordered = sorted(differing)
        bare = {k: k.rpartition(".")[2] for k in ordered}
        clash = {b for b in bare.values() if list(bare.values()).count(b) > 1}
        by_variant = {}
        for _, row in variants.iterrows():
            parts = [
                f"{k if bare[k] in clash else bare[k]}={short_value(row['_settings'].get(k, '-'))}"
                for k in ordered
                if k in shown[row["variant"]]
            ]
            by_variant[row["variant"]] = ", ".join(parts)
        for index, row in group.iterrows():
            labels[table.index.get_loc(index)] = by_variant[row["variant"]]
    return labels


def short_value(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def row_text(cell, rows_keys) -> str:
    label = " / ".join(str(cell[k]) for k in rows_keys)
    return f"{label} ({cell['setting']})" if cell["setting"] else label


def unique_keys(keys: list[str]) -> list[str]:
    return list(dict.fromkeys(keys))
