"""Checks on what a run folder holds, since anyone can edit it: ``config.json``,
``metrics.jsonl`` and ``classes.json`` are read only through here. A file that is missing
keys, holds the wrong types, extra keys or deep nesting is a ZooError naming the file (exit
2), never a KeyError, TypeError or RecursionError from deep inside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zoo.errors import ZooError
from zoo.io import load_json

# config.json: what reloading, resuming and reproducing a run read, and the types they need.
CONFIG_KEYS = {
    "architecture": str,
    "tokenizer": str,
    "task": str,
    "dataset": str,
    "model": str,
    "seed": int,
    "configs": dict,
}
SPEC_KEYS: dict[str, Any] = {
    "task": str,
    "vocab_size": int,
    "num_classes": (int, type(None)),
    "pad_id": int,
}
MAX_VALUE_DEPTH = 4  # a config value is a number, a string, or a short list of them


def read_config(path: Path) -> dict:
    """A run's config.json, checked: the keys and types the zoo reads from it."""
    config = load_json(path)
    if not isinstance(config, dict):
        raise ZooError(f"{path}: expected a JSON object, found {_kind(config)}")
    for key, kind in CONFIG_KEYS.items():
        if key not in config:
            raise ZooError(f"{path}: the key {key!r} is missing")
        if not _is(config[key], kind):
            raise ZooError(f"{path}: {key!r} must be {_name(kind)}, not {_kind(config[key])}")
    configs = config["configs"]
    for section, values in configs.items():  # model, tokenizer, train, dataset, ...
        if values is not None and not isinstance(values, dict):
            raise ZooError(
                f"{path}: configs.{section} must be an object or null, not {_kind(values)}"
            )
        for key, value in (values or {}).items():
            if _depth(value) > MAX_VALUE_DEPTH:
                raise ZooError(f"{path}: configs.{section}.{key} is nested too deeply")
    if "spec" in config:
        _check_spec(path, config["spec"])
    return config


def _check_spec(path: Path, spec) -> None:
    """What load_trained rebuilds the model from: known keys of the right types."""
    if not isinstance(spec, dict):
        raise ZooError(f"{path}: 'spec' must be an object, not {_kind(spec)}")
    for key in spec:
        if key not in SPEC_KEYS:
            raise ZooError(
                f"{path}: unknown key {key!r} in 'spec' (expected {', '.join(SPEC_KEYS)})"
            )
    for key, kind in SPEC_KEYS.items():
        if key in spec and not _is(spec[key], kind):
            raise ZooError(f"{path}: spec.{key} must be {_name(kind)}, not {_kind(spec[key])}")
    if "task" not in spec or "vocab_size" not in spec:
        raise ZooError(f"{path}: 'spec' needs task and vocab_size")


def read_curve(path: Path) -> list[dict]:
    """metrics.jsonl: one JSON object per line. A last line cut short (a crash while it was
    written) is left out; any other line that is not an object is a ZooError."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ZooError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    lines = text.split("\n")
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            if number == len(lines):  # no newline after it: cut short mid-write
                break
            raise ZooError(f"{path}: line {number} is not valid JSON") from None
        if not isinstance(record, dict):
            raise ZooError(f"{path}: line {number} is {_kind(record)}, not a JSON object")
        records.append(record)
    return records


def read_classes(path: Path) -> list[str]:
    """classes.json: the class names, a list of strings."""
    classes = load_json(path)
    if not (isinstance(classes, list) and classes and all(isinstance(c, str) for c in classes)):
        raise ZooError(
            f"{path}: expected a non-empty list of class names (strings), found {_kind(classes)}"
        )
    return classes


def _is(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def _name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    words = {str: "a string", int: "an integer", dict: "an object", type(None): "null"}
    return " or ".join(words.get(k, k.__name__) for k in kinds)


def _kind(value) -> str:
    words = {
        dict: "an object",
        list: "a list",
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true/false",
        type(None): "null",
    }
    return words.get(type(value), type(value).__name__)


def _depth(value, level: int = 0) -> int:
    if level > MAX_VALUE_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level
