"""The range of every integer setting, checked when a config is built (a --set, a preset, a
config file or a run's config.json), so nothing the planner accepts can overflow NumPy, the
store or a table later: a seed is a 32-bit whole number, a count of steps at most a billion,
a size never negative, and any other integer within what a float holds exactly.

These are generic limits by a field's name and kind; the largest size each field may take
is the plugin's declaration (zoo.core.sizes)."""

from __future__ import annotations

import dataclasses

from zoo.core.bounds import MAX_SEED
from zoo.errors import ZooError

MAX_STEPS = 10**9  # optimizer steps, intervals and patience counted in steps or validations
MAX_INTEGER = 2**53  # any other integer setting: exact as a float, within SQLite and pandas
COUNTS = ("steps", "interval", "every", "patience", "batches", "windows", "tokens", "samples")


def integer_range(field: dataclasses.Field) -> tuple[int, int]:
    """The smallest and largest value an integer config field may take."""
    name = field.name
    if name == "seed" or name.endswith("_seed"):
        return 0, MAX_SEED
    if name.endswith("_size") or "at_most" in field.metadata or "role" in field.metadata:
        return 0, MAX_INTEGER
    if any(name == word or name.endswith(f"_{word}") for word in COUNTS):
        return 0, MAX_STEPS
    return -MAX_INTEGER, MAX_INTEGER


def check_integer_ranges(cls, values: dict, where: str = "") -> None:
    """Each integer among ``values`` (field -> value, lists item by item) within its field's
    range: a ZooError naming the field and the range otherwise."""
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    for name, value in values.items():
        field = fields.get(name)
        if field is None:
            continue
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, int) and not isinstance(item, bool):
                low, high = integer_range(field)
                if not low <= item <= high:
                    raise ZooError(
                        f"{where}{name} = {_short(item)} is out of range: a whole number from "
                        f"{low:,} to {high:,}"
                    )


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 30 else f"{text[:12]}...{text[-6:]} ({len(text)} digits)"
