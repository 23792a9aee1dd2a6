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


IDENTITY = ("model", "dataset", "task", "split")  # what a run is, when not a row or column key


def setting_labels(table, rows_keys, column_keys=()) -> list[str]:
    """For rows that split into several settings, what tells them apart ('steps=100').

    Settings are compared within one task: each task's pipeline has its own training
    config, so a model's runs on two tasks differ in fields without differing in intent.
    A setting tells rows apart only where it differs within one column: one that differs
    only from column to column (a dataset's own options, with datasets as columns) is told
    by the column already. Where a row key pools several models (`--by tokenizer`, `--by
    seed`), a label names the model, and only the settings in which that model's own rows
    differ: two architectures' configs differ in every field, and listing them tells the
    reader nothing the model's name does not. Two configurations of one column never share
    a label: where their settings print alike, each label ends with its configuration's id."""
    labels = [""] * len(table)
    for _, group in table.groupby(unique_keys(rows_keys + ["task"]), sort=False):
        if group["variant"].nunique() < 2:
            continue
        columns = list(group.groupby(list(column_keys), sort=False)) if column_keys else []
        columns = [column for _, column in columns] or [group]
        told_by = _differing(columns)
        names = label_names(sorted({k for keys in told_by.values() for k in keys}))
        by_variant = {}
        for variant, cells in group.groupby("variant", sort=False):
            by_variant[variant] = ", ".join(
                f"{names[k]}={_values_text([s.get(k, '-') for s in cells['_settings']])}"
                for k in told_by.get(variant, [])
            )
        for column in columns:  # the same label for two configurations of one column
            variants = column["variant"].unique()
            texts = [by_variant[v] for v in variants]
            for variant, text in zip(variants, texts):
                if texts.count(text) > 1 and not text.endswith(variant):
                    by_variant[variant] = ", ".join(filter(None, [text, f"config {variant}"]))
        for index, row in group.iterrows():
            labels[table.index.get_loc(index)] = by_variant[row["variant"]]
    return labels


def _differing(columns) -> dict[str, list[str]]:
    """variant -> the settings its label names: the identity keys (model, ...) that differ
    within a column, then the settings that differ among the variants of its own identity
    within a column."""
    identity_keys: set[str] = set()
    own: dict[str, set[str]] = {}
    for column in columns:
        variants = column.drop_duplicates("variant")
        settings = dict(zip(variants["variant"], variants["_settings"]))
        identity_keys.update(
            k
            for k in IDENTITY
            if any(k in s for s in settings.values())
            and len({_compared(s, k) for s in settings.values()}) > 1
        )
        alike: dict[tuple, list[str]] = {}
        for variant, s in settings.items():
            alike.setdefault(tuple(_compared(s, k) for k in IDENTITY), []).append(variant)
        for members in alike.values():
            keys = {k for v in members for k in settings[v] if k not in IDENTITY}
            varied = {k for k in keys if len({_compared(settings[v], k) for v in members}) > 1}
            for variant in members:
                named = varied & set(settings[variant])
                # a variant without any setting its siblings vary (a plain run beside a
                # stacked one) names them as absent ('stacked=-'): no row goes unlabelled
                own.setdefault(variant, set()).update(named or varied)
    first = sorted(identity_keys, key=IDENTITY.index)
    return {variant: first + sorted(keys) for variant, keys in own.items()}


def _compared(settings: dict, key: str) -> str:
    """A setting's value as compared: a setting a run lacks differs from one set to None."""
    return json.dumps(settings[key], default=str) if key in settings else "\0unset"


def _values_text(values: list) -> str:
    """One setting over a row's cells: its value, or the range of a time-budgeted run's
    steps, which differ from column to column."""
    texts = list(dict.fromkeys(short_value(v) for v in values))
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(texts) > 1 and len(numbers) == len(values):
        return f"{short_value(min(numbers))}-{short_value(max(numbers))}"
    return "/".join(texts)


def label_names(keys: list[str]) -> dict[str, str]:
    """How a label names each setting: a section's setting by its bare name ('steps' for
    'train.steps') unless another differing setting or a run column has that name
    ('dataset.seed'); an ensemble member's ('enc-bpe.steps') by its whole name."""
    from zoo.records.columns import SECTIONS
    from zoo.records.database import COLUMNS

    bare = {}
    for key in keys:
        section, dot, name = key.partition(".")
        bare[key] = name if dot and section in SECTIONS else key
    taken = set(COLUMNS) | {b for b in bare.values() if list(bare.values()).count(b) > 1}
    return {k: k if bare[k] in taken else bare[k] for k in keys}


def short_value(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def row_text(cell, rows_keys) -> str:
    label = " / ".join(str(cell[k]) for k in rows_keys)
    return f"{label} ({cell['setting']})" if cell["setting"] else label


def unique_keys(keys: list[str]) -> list[str]:
    return list(dict.fromkeys(keys))
