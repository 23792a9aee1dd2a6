"""Limits on values the user gives, checked before anything is written or allocated.

A seed too large for NumPy or SQLite, or a size that no machine can allocate (a BPE
vocabulary of 10^9 makes the Rust allocator abort the process), is a user error: exit 2
with one line, before a run folder or store row exists.
"""

from __future__ import annotations

import argparse
import math
import os

from zoo.errors import ZooError

DEVICES = ("auto", "cpu", "cuda")  # auto: CUDA when torch sees it, else the CPU
MAX_SEED = 2**32 - 1  # NumPy's global seed is 32-bit; SQLite and torch take more
MAX_VOCAB = 2**20  # tokens in a trained vocabulary (GPT-2 has 50,257)
MAX_BLOCK = 2**16  # tokens in a context window
MAX_WIDTH = 2**15  # a layer's width
MAX_MLP_WIDTH = MAX_WIDTH * 64  # an MLP's hidden width: the widest layer at 64 x the width
MAX_LAYERS = 1024
MAX_BATCH = 2**16  # sequences in a batch (zoo verify --batch, a training batch)
MAX_PREDICT_BYTES = 64 * 2**20  # zoo predict --file, counted as read (pipes included)
MAX_PREDICT_TEXT_BYTES = 2**20  # one text (line) of it: a tokenizer takes ~300 bytes per byte
MAX_PREDICT_LINES = 1_000_000
MAX_GENERATE_TOKENS = 1_000_000  # zoo generate --tokens: the text is held whole


def check_seed(seed, what: str = "--seed") -> int:
    """A seed zoo can use everywhere: a whole number from 0 to MAX_SEED."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ZooError(f"{what} must be a whole number from 0 to {MAX_SEED}, not {seed!r}")
    return seed


def seed_argument(text: str) -> int:
    """argparse type for --seed."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {MAX_SEED}, not {text}")
    return value


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_file_size(path, limit: int, what: str) -> None:
    """A file the user names, read whole, within ``limit`` bytes."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return  # reading it reports the problem
    if size > limit:
        raise ZooError(
            f"{what} {path} is {size / 2**20:,.1f} MiB; at most {limit / 2**20:,.0f} MiB"
        )


# What building a dataset (or a tokenizer's vocabulary) may take before training starts. A
# plugin estimates what its settings need and calls check_budget: a setting beyond these is
# exit 2 with a workable maximum, never an out-of-memory kill minutes later.
DATA_MEMORY_BUDGET = 2**30  # bytes of Python structures while building
DATA_TIME_BUDGET = 120.0  # seconds on one core


def within_budget(need_bytes: float = 0, need_seconds: float = 0) -> bool:
    """Whether an estimated cost fits zoo's budget for building a dataset or vocabulary."""
    return need_bytes <= DATA_MEMORY_BUDGET and need_seconds <= DATA_TIME_BUDGET


def check_budget(
    setting: str,
    value,
    *,
    need_bytes: float = 0,
    need_seconds: float = 0,
    maximum=None,
    what: str = "",
) -> None:
    """Refuse ``setting = value`` when its estimated memory or time is over the budget,
    naming the setting and ``maximum``, the largest value that fits."""
    over = []
    if need_bytes > DATA_MEMORY_BUDGET:
        over.append(f"about {_bytes(need_bytes)} of memory (budget {_bytes(DATA_MEMORY_BUDGET)})")
    if need_seconds > DATA_TIME_BUDGET:
        over.append(f"about {_duration(need_seconds)} (budget {_duration(DATA_TIME_BUDGET)})")
    if over:
        most = f"; at most {maximum:,}" if maximum is not None else ""
        shown = f"{value:,}" if isinstance(value, int) else repr(value)
        raise ZooError(
            f"{what}{setting} = {shown} needs {' and '.join(over)} before training starts{most}"
        )


def _bytes(count: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:,.0f} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1024
    return f"{count:,.1f} TiB"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.0f} min"
    return f"{seconds / 3600:,.0f} h"


def integer_argument(name: str, value) -> int:
    """An int given to the Python API (not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZooError(f"{name} must be an integer, got {value!r}")
    return value


def positive_argument(name: str, value, kind: type):
    """A positive int (or finite float) given to the Python API, as the command line's
    option parser checks it."""
    if kind is int:
        value = integer_argument(name, value)
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ZooError(f"{name} must be a positive number, got {value!r}")
    if not value > 0:
        raise ZooError(f"{name} must be positive, got {value!r}")
    return value
