"""--grid: a sweep's settings, parsed, checked against the config fields of its cells and typed once, and every combination of them."""

from __future__ import annotations

import itertools

from zoo.core.config import parse_assignment, split_overrides
from zoo.errors import UnknownNameError, ZooError


def parse_grid(items: list[str] | None) -> dict[str, list[str]]:
    """`--grid key=v1,v2` options as {key: [v1, v2]}, in the order given."""
    grid: dict[str, list[str]] = {}
    for item in items or []:
        try:
            key, values = parse_assignment(item)
        except ZooError:
            raise ZooError(f"grid expects key=v1,v2,..., got {item!r}", option="grid") from None
        choices = list(dict.fromkeys(v.strip() for v in values.split(",")))
        if not all(choices):
            raise ZooError(f"grid {key}: empty value in {values!r}", option="grid")
        if _bare(key) in {_bare(k) for k in grid}:
            raise ZooError(
                f"grid {key} is given twice; put all its values in one entry", option="grid"
            )
        grid[key] = choices
    return grid


def short_value(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bare(key: str) -> str:
    return key.rpartition(".")[2]


def grid_settings(grid: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every combination of grid values ([{}] without a grid)."""
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def check_grid(grid: dict[str, list], overrides: dict, pair_sections: list[dict]) -> dict:
    """Fail before training when a grid key is no config field of any cell (with a
    did-you-mean), a value does not parse as the field's type, or a key is also --set.
    Returns the grid with each value of its field's type (typed once: the cells, their
    labels, the table and the JSON all hold 0.001 for '1e-3')."""
    for key in grid:
        clash = [k for k in overrides if _bare(k) == _bare(key)]
        if clash:
            raise ZooError(
                f"{key} is both swept (grid) and fixed (a setting, steps or time); give it once"
            )
    typed = {}
    for key, values in grid.items():
        unknown = None
        for sections in pair_sections:
            try:
                typed[key] = [_typed(split_overrides({key: value}, sections)) for value in values]
            except UnknownNameError as exc:
                unknown = unknown or exc
                continue
            except ZooError as exc:  # the field exists but this value is not of its type
                raise ZooError(f"grid {key}: {exc}", option="grid") from None
            break  # some cell has this key, and every value parses
        else:
            if unknown is not None:
                raise ZooError(f"grid: {unknown}", option="grid")
            typed[key] = list(values)  # no cell can run: the cells say why
        unique = {repr(v): v for v in typed[key]}  # 0.001 and 1e-3 are one value, one cell
        typed[key] = list(unique.values())
    return typed


def _typed(split: dict):
    """The one value split_overrides placed (in one section, or the same in several)."""
    return next(value for section in split.values() for value in section.values())
