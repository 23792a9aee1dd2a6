"""A search space written on the command line, parsed without eval.

Each dimension is ``key=kind(args)``::

    lr=log(1e-4,1e-2)          a float, sampled on a log scale
    dropout=float(0,0.5)       a float, uniform
    n_layer=int(1,4)           an integer, both ends included
    pooling=choice(mean,max)   one of the listed values

Several dimensions go in one ``--space`` (separated by spaces or ``;``) or in several. A key
is any typed setting, as ``--set`` takes it (``train.lr`` picks a section). The space is
checked against every model's config fields before anything trains (`check_space`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from zoo.errors import UnknownNameError, ZooError

KINDS = ("log", "float", "int", "choice")
# key=kind(args): the key as --set writes it, one of KINDS, and arguments without parentheses
_DIMENSION = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*=\s*([A-Za-z_]\w*)\s*\(([^()]*)\)\s*$")


@dataclass(frozen=True)
class Dimension:
    key: str
    kind: str  # one of KINDS
    low: float | int | None = None
    high: float | int | None = None
    choices: tuple[str, ...] = ()

    def __str__(self) -> str:
        args = self.choices if self.kind == "choice" else (_number(self.low), _number(self.high))
        return f"{self.key}={self.kind}({','.join(args)})"

    @property
    def ends(self) -> tuple[float | int, float | int]:
        """A numeric dimension's low and high ends (a choice has none)."""
        if self.low is None or self.high is None:
            raise ValueError(f"{self.key}: a {self.kind} dimension has no ends")
        return self.low, self.high

    def distribution(self):
        """The Optuna distribution this dimension samples from."""
        import optuna

        if self.kind == "choice":
            return optuna.distributions.CategoricalDistribution(list(self.choices))
        low, high = self.ends
        if self.kind == "int":
            return optuna.distributions.IntDistribution(int(low), int(high))
        return optuna.distributions.FloatDistribution(
            float(low), float(high), log=self.kind == "log"
        )

    def samples(self) -> list:
        """The values that span the dimension (its ends, or every choice): each is checked
        against a model's config before anything trains."""
        if self.kind == "choice":
            return list(self.choices)
        low, high = self.ends
        if self.kind == "int":
            return [low, high]
        # a float just above the low end is no integer: an int field refuses it now
        return [low, math.nextafter(float(low), float(high)), high]


def _number(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def split_items(texts: list[str] | str) -> list[str]:
    """The dimensions of one or more --space texts (spaces or ';' between dimensions,
    none inside the parentheses)."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    items = []
    for text in texts:
        depth, current = 0, ""
        for char in text:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and (char.isspace() or char == ";"):
                if current.strip():
                    items.append(current.strip())
                current = ""
            else:
                current += char
        if current.strip():
            items.append(current.strip())
    return items


def parse_space(texts: list[str] | str | dict) -> list[Dimension]:
    """The dimensions of a --space (or, from Python, a dict such as
    ``{"lr": "log(1e-4,1e-2)"}``), each checked for form; a bad one is a ZooError."""
    if isinstance(texts, dict):
        texts = [f"{key}={value}" for key, value in texts.items()]
    dimensions: dict[str, Dimension] = {}
    for item in split_items(texts):
        dimension = parse_dimension(item)
        bare = dimension.key.rpartition(".")[2]
        if bare in {k.rpartition(".")[2] for k in dimensions}:
            raise ZooError(f"space {dimension.key} is given twice", option="space")
        dimensions[dimension.key] = dimension
    if not dimensions:
        raise ZooError(
            "space is empty: give at least one key=kind(...), e.g. lr=log(1e-4,1e-2)",
            option="space",
        )
    return list(dimensions.values())


def parse_dimension(text: str) -> Dimension:
    match = _DIMENSION.match(text)
    if match is None:
        raise ZooError(
            f"space expects key=kind(args) with kind one of {', '.join(KINDS)}, "
            f"e.g. lr=log(1e-4,1e-2); got {text!r}",
            option="space",
        )
    key, kind, body = match.groups()
    if kind not in KINDS:
        raise UnknownNameError(
            "space kind", kind, KINDS, hint=f"in {text!r}; kinds: " + ", ".join(KINDS)
        )
    args = [arg.strip() for arg in body.split(",")]
    if kind == "choice":
        if not all(args) or len(args) < 2:
            raise ZooError(
                f"space {key}: choice needs two or more values, got {text!r}", option="space"
            )
        if len(set(args)) != len(args):
            raise ZooError(f"space {key}: a choice is listed twice in {text!r}", option="space")
        return Dimension(key, kind, choices=tuple(args))
    if len(args) != 2:
        raise ZooError(f"space {key}: {kind} takes (low,high), got {text!r}", option="space")
    low, high = (_parse_number(arg, kind, key) for arg in args)
    if not low < high:
        raise ZooError(
            f"space {key}: low ({args[0]}) must be below high ({args[1]})", option="space"
        )
    if kind == "log" and low <= 0:
        raise ZooError(f"space {key}: log needs a positive low end, got {args[0]}", option="space")
    return Dimension(key, kind, low, high)


def _parse_number(text: str, kind: str, key: str):
    try:
        if kind == "int":
            return int(text)
        value = float(text)
    except ValueError:
        what = "an integer" if kind == "int" else "a number"
        raise ZooError(f"space {key}: {text!r} is not {what}", option="space") from None
    if not math.isfinite(value):
        raise ZooError(f"space {key}: {text!r} is not a finite number", option="space")
    return value


def check_space(
    space: list[Dimension], plans: dict[Any, Any], overrides: dict, replan=None
) -> dict:
    """Which dimensions each model searches: ``plans`` maps each model to a plan made without
    the space (zoo.train.plan.plan_run). A key no model has is a ZooError with a did-you-mean;
    a value that is not of its field's type, or a key also fixed by --set, is a ZooError too.
    A key only some models have is searched for those (the others return without it).
    ``replan(name, overrides)`` plans a model as a trial would: each end of a range (and each
    choice) is planned with the other settings, so a value a trial could not run
    (``batch_size=int(0,4)``, ``n_layer`` past its limit) is refused before the first one."""
    from zoo.core.config import split_overrides

    searched: dict[str, list[Dimension]] = {name: [] for name in plans}
    for dimension in space:
        bare = dimension.key.rpartition(".")[2]
        if any(key.rpartition(".")[2] == bare for key in overrides):
            raise ZooError(
                f"{dimension.key} is both searched (space) and fixed (a setting, "
                "steps or a preset option); give it once"
            )
        unknown = None
        for name, plan in plans.items():
            sections = {
                section: type(config) if config is not None else None
                for section, config in plan.configs.items()
            }
            try:
                for value in dimension.samples():
                    split_overrides({dimension.key: value}, sections)
                    if replan is not None:
                        replan(name, {**overrides, dimension.key: value})
            except UnknownNameError as exc:
                unknown = unknown or exc
                continue
            except ZooError as exc:  # the field exists but this kind of value does not fit it
                what = " on ".join(name) if isinstance(name, tuple) else name
                raise ZooError(f"space {dimension}: {exc} (for {what})", option="space") from None
            searched[name].append(dimension)
        if not any(dimension in dims for dims in searched.values()):
            raise ZooError(f"space: {unknown}", option="space")
    return searched
