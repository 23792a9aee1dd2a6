"""Typed config dataclasses and ``key=value`` overrides (from --set and presets).

A key is checked against the fields of every config section (model, tokenizer, train);
``section.key`` picks one explicitly (a key several sections mark shared sets them all).
Values from the command line are parsed by the field's annotation (int, float, bool, str,
Literal, X | None, list[X], tuple[X, ...], tuple[X, Y]); unknown keys get a did-you-mean.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from typing import Any

from zoo.core.limits import check_integer_ranges, check_sizes
from zoo.errors import UnknownNameError, ZooError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ZooError(f"set: a setting is key=value, got {text!r}", option="set")
    return key.strip(), value.strip()


def field_types(cls) -> dict[str, Any]:
    return dict(_field_types(cls))


@functools.lru_cache(maxsize=1024)
def _field_types(cls) -> tuple:
    """Resolving type hints compiles every annotation: once per class, not once per cell of
    a sweep's plan."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.init)


def split_overrides(overrides: dict[str, Any], sections: dict[str, type | None]) -> dict[str, dict]:
    """Assign each key to the one section whose dataclass has that field."""
    result: dict[str, dict] = {name: {} for name in sections}
    fields = {name: field_types(cls) if cls else {} for name, cls in sections.items()}
    for key, value in overrides.items():
        section, _, bare = key.rpartition(".")
        if section:
            if section not in sections:
                raise UnknownNameError("config section", section, sections)
            owners = [section] if bare in fields[section] else []
        else:
            owners = [name for name, f in fields.items() if bare in f]
        if not owners:
            pool = fields[section] if section else {k for f in fields.values() for k in f}
            raise UnknownNameError(
                f"{section} config key" if section else "config key",
                bare,
                pool,
                hint="valid keys: " + ", ".join(sorted(pool)),
            )
        if len(owners) > 1 and not all(is_shared(sections[o], bare) for o in owners):
            raise ZooError(
                f"config key {bare!r} is ambiguous; write one of "
                + ", ".join(f"{o}.{bare}" for o in owners)
            )
        for owner in owners:
            result[owner][bare] = coerce(value, fields[owner][bare], bare)
    return result


def incidental(default: Any):
    """A config field that does not change a run's result (how often to checkpoint, what to
    print or sample): ``steps_between_saves: int = incidental(500)``. Such fields stay out of
    the config hash, a sweep cell's identity and the labels of comparison rows."""
    return dataclasses.field(default=default, metadata={"result": False})


def affects_result(cls, name: str) -> bool:
    """Whether field `name` of config class `cls` changes the result (all do unless declared
    with ``incidental``)."""
    if cls is None or not dataclasses.is_dataclass(cls):
        return True
    return all(f.metadata.get("result", True) for f in dataclasses.fields(cls) if f.name == name)


def incidental_keys(configs: dict[str, Any]) -> dict[str, list[str]]:
    """section -> the fields of its config (a dataclass instance or class) declared
    incidental, for the sections that have any."""
    found = {}
    for section, config in configs.items():
        if config is None or not dataclasses.is_dataclass(config):
            continue
        keys = [f.name for f in dataclasses.fields(config) if not f.metadata.get("result", True)]
        if keys:
            found[section] = keys
    return found


def is_shared(cls, name: str) -> bool:
    """Whether a field is marked ``field(metadata={"shared": True})``: a bare key that several
    sections declare shared sets all of them (a checkpoint path both the model and its
    tokenizer read), where any other key several sections have is ambiguous."""
    return any(f.name == name and f.metadata.get("shared") for f in dataclasses.fields(cls))


# Checks for a config dataclass's __post_init__: a ValueError there is one exit-2 line.
def check_positive(config, *names: str) -> None:
    """Each named field is a positive number."""
    for name in names:
        if getattr(config, name) <= 0:
            raise ValueError(f"{name} must be positive, got {getattr(config, name)}")


def check_divisible(config, width: str, parts: str) -> None:
    """Field `width` splits evenly into `parts` (attention heads, say)."""
    if getattr(config, width) % getattr(config, parts):
        raise ValueError(
            f"{width} ({getattr(config, width)}) must be divisible by {parts} "
            f"({getattr(config, parts)})"
        )


def check_probability(config, *names: str) -> None:
    """Each named field is a probability of dropping, in [0, 1)."""
    for name in names:
        if not 0 <= getattr(config, name) < 1:
            raise ValueError(f"{name} must be in [0, 1), got {getattr(config, name)}")


def build_config(cls, values: dict[str, Any]):
    """Dataclass defaults plus values; a config that cannot work is a ZooError."""
    if cls is None:
        if values:
            raise ZooError(f"no config fields to set: {', '.join(values)}")
        return None
    try:
        types_ = field_types(cls)
        # Values recorded in a run's config.json are checked like --set values: a tampered
        # "n_layer": "two" is the same one-line error.
        values = {k: coerce(v, types_[k], k) if k in types_ else v for k, v in values.items()}
        config = cls(**values)
    except (ValueError, TypeError) as exc:
        raise ZooError(f"invalid {cls.__name__}: {exc}") from None
    check_sizes(config, f"invalid {cls.__name__}: ")  # before anything is allocated
    check_integer_ranges(cls, values, f"invalid {cls.__name__}: ")  # nothing the store cannot hold
    return config


def coerce(value: Any, annotation: Any, key: str) -> Any:
    """Convert a --set string (or check a TOML value) to the field's type."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(value, typing.get_args(annotation), key)
    if origin in (list, tuple):
        return _coerce_sequence(value, origin, typing.get_args(annotation), key)
    if origin is typing.Literal:
        for choice in typing.get_args(annotation):
            if str(choice) == str(value):
                return choice
        choices = ", ".join(map(str, typing.get_args(annotation)))
        raise ZooError(f"{key} must be one of {choices}, not {value!r}")
    parse = _SCALARS.get(annotation)
    if parse is None:  # a type zoo does not parse: the value as given
        return value
    try:
        return parse(value)
    except (ValueError, OverflowError, TypeError):
        raise ZooError(f"{key} must be {_type_name(annotation)}, not {value!r}") from None


def _coerce_union(value: Any, args: tuple, key: str) -> Any:
    """``none`` (or null) where the union has None; else the first member type that takes it."""
    if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
        if type(None) in args:
            return None
    errors = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return coerce(value, arg, key)
        except ZooError as exc:
            errors.append(str(exc))
    raise ZooError(errors[0] if errors else f"{key}: cannot be {value!r}")


def _coerce_sequence(value: Any, origin, args: tuple, key: str) -> list | tuple:
    """ "2,3" from --set, or a TOML list; each item as its type (tuple[int, str]: one value
    per position)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ZooError(f"{key} must be a list (comma-separated on the command line), not {value!r}")
    items = [item.strip() if isinstance(item, str) else item for item in items]
    if origin is list or (len(args) == 2 and args[1] is Ellipsis):
        return (list if origin is list else tuple)(
            coerce(item, args[0], key) if args else item for item in items
        )
    if args and len(items) != len(args):
        raise ZooError(f"{key} takes {len(args)} comma-separated values, not {value!r}")
    return tuple(coerce(item, arg, key) for item, arg in zip(items, args)) if args else tuple(items)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise ValueError


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str):
        raise ValueError
    written_as_float = any(c in value for c in ".eE") and not value.lstrip("-").isdigit()
    number = float(value) if written_as_float else int(value)
    if isinstance(number, float) and not number.is_integer():
        raise ValueError
    return int(number)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError
    number = float(value)
    if not math.isfinite(number):  # nan or inf would train to garbage, or forever
        raise ValueError
    return number


def _to_str(value: Any) -> str:
    if not isinstance(value, str):  # a TOML number or list where text belongs
        raise ValueError
    return value


# Each scalar type's parser: it raises ValueError (or TypeError, OverflowError) for a value
# that is not one.
_SCALARS: dict[Any, typing.Callable[[Any], Any]] = {
    bool: _to_bool,
    int: _to_int,
    float: _to_float,
    str: _to_str,
}


def _type_name(annotation) -> str:
    return {
        int: "an integer",
        float: "a finite number",
        bool: "true or false",
        str: "a string",
    }.get(annotation, str(annotation))
