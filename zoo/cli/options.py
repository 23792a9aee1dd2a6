"""Option types and option groups that several commands share."""
from __future__ import annotations

import argparse
import math

from zoo.errors import ZooError

RELOAD_DEVICE_HELP = ("where the reloaded run computes: auto (CUDA when present, as zoo run "
                      "picks; the default), cpu or cuda")


def add_output_options(p, *, quiet_to=None, quiet_help: str = "no progress output",
                       json_help: str = "print one JSON object on stdout") -> None:
    """--quiet and --json, alike on every command that trains (run, resume, sweep, reproduce)."""
    (quiet_to or p).add_argument("--quiet", action="store_true", help=quiet_help)
    p.add_argument("--json", action="store_true", help=json_help)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def temperature(text: str) -> float:
    """--temperature: zero (greedy) or a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected 0 (greedy) or a positive number, got "
                                         f"{text!r}")
    return value


def read_texts(path: str) -> list[str]:
    """predict --file: one text per line; blank lines skipped, size bounded."""
    from zoo.core.bounds import MAX_PREDICT_BYTES, MAX_PREDICT_LINES, check_file_size

    check_file_size(path, MAX_PREDICT_BYTES, "--file")
    try:
        with open(path, encoding="utf-8") as handle:
            texts = [line.rstrip("\n") for line in handle if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise ZooError(f"cannot read --file {path}: {reason}") from None
    if not texts:
        raise ZooError(f"--file {path} has no texts (every line is blank); put one text "
                       "per line")
    if len(texts) > MAX_PREDICT_LINES:
        raise ZooError(f"--file {path} has {len(texts):,} texts; at most "
                       f"{MAX_PREDICT_LINES:,}")
    return texts


def json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)
