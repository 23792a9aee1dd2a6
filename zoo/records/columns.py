"""A run's resolved settings as results: flat, typed and queryable.

Every recorded run keeps its resolved configs (model, tokenizer, train and, for generated
datasets, dataset sections) in its provenance. Here they become one column per setting, so
`zoo.runs()`, `zoo runs --where` and `zoo compare --where/--by` ask ``lr < 1e-3`` as they
ask ``val_bpc < 5``. A column is named by the bare field (``lr``); where that name is
already a run column or metric (``steps``) or two sections share it, by ``section.field``
(``train.steps``), which conditions write as they read.

Settings declared incidental (``zoo.plugin.config.incidental``: checkpoint cadence, samples) are
columns too, but they never split comparison rows.
"""

from __future__ import annotations

import functools
from typing import Any

from zoo.errors import ZooError

SECTIONS = ("model", "tokenizer", "train", "dataset")
# Where a run trained (its provenance's `machine`): columns to query and to note when a
# comparison pools machines, never settings that split its rows.
MACHINE_COLUMNS = ("machine.cpu", "machine.cpu_kind", "machine.resolved_precision")


# What flat_settings and incidental_of read of a run's config.
SETTINGS_CONFIG_KEYS = ("configs", "init", "stacked", "machine", "incidental")


def flat_settings(config: dict) -> dict[str, Any]:
    """'section.key' -> value for every recorded setting of a run's provenance."""
    flat = {}
    for section, values in (config.get("configs") or {}).items():
        for key, value in (values or {}).items():
            flat[f"{section}.{key}"] = value
    if config.get("init"):  # started from another run's weights: a setting of its own
        flat["init"] = config["init"].get("run_id")
    if config.get("stacked"):  # trained with other seeds as one batched model: its own row
        flat["stacked"] = config["stacked"]
    machine = config.get("machine")
    if isinstance(machine, dict):
        from zoo.core.machine import kind

        flat["machine.cpu"] = machine.get("cpu")
        flat["machine.cpu_kind"] = kind(machine.get("cpu_flags"))
        flat["machine.resolved_precision"] = machine.get("precision")
    return flat


def incidental_of(row: dict) -> set[str]:
    """The 'section.key' settings of a run that change nothing it learns: as recorded, or
    for a run recorded before zoo recorded them, as its config classes declare today."""
    config = row.get("config") or {}
    recorded = config.get("incidental")
    if isinstance(recorded, dict):
        keys = {f"{s}.{k}" for s, keys in recorded.items() for k in keys or ()}
    else:
        keys = set(
            _declared_incidental(row.get("architecture"), row.get("tokenizer"), row.get("task"))
        )
    return keys | set(MACHINE_COLUMNS)


@functools.lru_cache(maxsize=64)
def _declared_incidental(architecture, tokenizer, task) -> tuple[str, ...]:
    from zoo.core.config import incidental_keys
    from zoo.core.loading import get_zoo

    zoo = get_zoo()
    classes = {}
    for section, registry, name in (
        ("model", zoo.architectures, architecture),
        ("tokenizer", zoo.tokenizers, tokenizer),
        ("train", zoo.pipelines, task),
    ):
        try:
            classes[section] = registry.get(name).config_class()
        except (ZooError, ImportError, AttributeError):  # a plugin no longer installed
            continue  # nothing known to skip
    return tuple(f"{s}.{k}" for s, keys in incidental_keys(classes).items() for k in keys)


def result_settings(row: dict, flat: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings that change a run's result ('section.key' -> value); ``flat``: its
    flat_settings, where the caller has them."""
    skip = incidental_of(row)
    if flat is None:
        flat = flat_settings(row.get("config") or {})
    return {k: v for k, v in flat.items() if k not in skip}


def column_names(keys: set[str], taken: set[str]) -> dict[str, str]:
    """'section.key' -> its column: the bare key where no other section has it and no run
    column or metric is called that, else 'section.key'."""
    bare_count: dict[str, int] = {}
    for key in keys:
        bare = key.rpartition(".")[2]
        bare_count[bare] = bare_count.get(bare, 0) + 1
    names = {}
    for key in sorted(keys):
        bare = key.rpartition(".")[2]
        names[key] = bare if bare_count[bare] == 1 and bare not in taken else key
    return names


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLOAT_INT_MAX = 2**1000  # an integer float() takes without overflow


def typed_column(values: list):
    """A pandas column that keeps the settings' types: integers stay integers (nullable
    where a run lacks the setting), booleans booleans, numbers floats, the rest objects."""
    import pandas as pd

    # decided on the values' few types, not value by value (a column of 10,000 runs)
    kinds = set(map(type, values)) - {type(None)}
    if kinds and all(issubclass(k, bool) for k in kinds):
        return pd.array(values, dtype="boolean")
    numbers = all(issubclass(k, (int, float)) and not issubclass(k, bool) for k in kinds)
    if kinds and numbers:
        ints = [v for v in values if isinstance(v, int)] if kinds - {float} else []
        if all(issubclass(k, int) for k in kinds):
            if INT64_MIN <= min(ints) and max(ints) <= INT64_MAX:
                return pd.array(values, dtype="Int64")
        elif not ints or max(abs(min(ints)), abs(max(ints))) <= FLOAT_INT_MAX:
            return pd.array(
                [float("nan") if v is None else float(v) for v in values], dtype="float64"
            )
    # text, lists, or a number too large for a column of numbers (a row edited by hand, or
    # written before zoo bounded its settings): shown as it is, never an error
    return pd.array([_hashable(v) for v in values], dtype="object")


def _hashable(value):
    """Lists (a list-valued setting) as tuples, so rows can be grouped and compared."""
    return tuple(value) if isinstance(value, list) else value


def with_setting_columns(frame, flat: dict[str, dict[str, Any]]):
    """`frame` (one row per run, an 'id' column) with a typed column per setting; ``flat``:
    run id -> flat_settings of its config."""
    import pandas as pd

    keys = {k for settings in flat.values() for k in settings}
    if not keys or frame.empty:
        return frame
    names = column_names(keys, set(frame.columns))
    found = [flat.get(run_id, {}) for run_id in frame["id"].tolist()]
    columns = {name: typed_column([f.get(key) for f in found]) for key, name in names.items()}
    return pd.concat([frame, pd.DataFrame(columns, index=frame.index)], axis=1)
