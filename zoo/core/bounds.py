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
MAX_WIDTH = 2**15  # n_embd and other layer widths
MAX_MLP_WIDTH = MAX_WIDTH * 64  # an MLP's hidden width: the widest layer at mlp_ratio's limit
MAX_LAYERS = 1024
MAX_BATCH = 2**16  # sequences in a batch (zoo verify --batch, batch_size)
MAX_PREDICT_BYTES = 64 * 2**20  # zoo predict --file, counted as read (pipes included)
MAX_PREDICT_TEXT_BYTES = 2**20  # one text (line) of it: a tokenizer takes ~300 bytes per byte
MAX_PREDICT_LINES = 1_000_000
MAX_GENERATE_TOKENS = 1_000_000  # zoo generate --tokens: the text is held whole

# Size-like config fields (model, tokenizer, training and dataset sections) and their
# limits, enforced on every config however it arrives: --set, a preset, or a run's
# config.json (a tampered one included). Names many architectures share; an architecture's
# own sizes are bounded by its memory estimate (check_memory).
SIZE_FIELDS = {
    "vocab_size": MAX_VOCAB,
    "block_size": MAX_BLOCK,
    "max_len": MAX_BLOCK,
    "n_embd": MAX_WIDTH,
    "width": MAX_WIDTH,
    "n_head": MAX_WIDTH,
    "heads": MAX_WIDTH,
    "intermediate_size": MAX_MLP_WIDTH,
    "n_inner": MAX_MLP_WIDTH,
    "n_layer": MAX_LAYERS,
    "blocks": MAX_LAYERS,
    "mlp_ratio": 64,
    "ff_ratio": 64,
    "batch_size": MAX_BATCH,
    "eval_batch_size": MAX_BATCH,
    "eval_batches": MAX_BATCH,
    "bucket_batches": MAX_BATCH,
    "eval_windows": 2**20,
    "sample_tokens": 2**20,
    "samples": 10_000,
    "buckets": 2**24,
    "dim": MAX_WIDTH,
}
# The fields a transformer's size is read from, whichever architecture's names they are
# (the default estimate, for an architecture registered without its own).
WIDTH_FIELDS = ("n_embd", "width")
DEPTH_FIELDS = ("n_layer", "blocks")
MLP_WIDTH_FIELDS = ("intermediate_size", "n_inner")  # transformers' names for the MLP's width
MLP_RATIO_FIELDS = ("mlp_ratio", "ff_ratio")  # the MLP's width over the model's (encoder, digits)
BYTES_PER_PARAMETER = 16  # fp32 weights, gradients and two Adam moments


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


MAX_SPLIT_ROWS = 2**24  # any other `*_size` field: the rows of a split a dataset builds


def check_sizes(config, where: str = "") -> None:
    """Every size-like field of a config dataclass within its limit."""
    fields = getattr(config, "__dataclass_fields__", {})
    limits = {name: MAX_SPLIT_ROWS for name in fields if name.endswith("_size")}
    limits.update(SIZE_FIELDS)
    for name, limit in limits.items():
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > limit:
            raise ZooError(
                f"{where}{name} = {value:,} is more than zoo can allocate (at most {limit:,})"
            )


def check_memory(architecture, config, where: str = "") -> None:
    """The memory a model of this config needs to train, within this machine's memory: the
    architecture's own estimate (``register(..., memory=...)``), else a transformer's
    (``default_memory``)."""
    if config is None:
        return
    needed = architecture.memory_estimate(config)
    if needed is None:
        needed = default_memory(config)
    memory = physical_memory()
    if needed and memory and needed > memory:
        raise ZooError(
            f"{where}a {architecture.name} model of this config needs about "
            f"{needed / 2**30:,.0f} GiB to train; this machine has "
            f"{memory / 2**30:,.0f} GiB"
        )


def default_memory(config) -> int | None:
    """Bytes to train a transformer of this config (estimated_parameters), None for a
    config without a transformer's width and depth."""
    parameters = estimated_parameters(config)
    return parameters * BYTES_PER_PARAMETER if parameters else None


def estimated_parameters(config) -> int | None:
    """About how many parameters a transformer of this config has, before anything is built:
    per layer 4 x width^2 of attention and 2 x width x the MLP's width (intermediate_size or
    n_inner if set, else mlp_ratio or ff_ratio x width, else 4 x width), plus the position
    table. Biases, norms, the token embedding (whose vocabulary is not known yet) and the
    third matrix of a gated MLP (llama's) are left out. None for a config without a width
    and a depth."""
    width, depth = _first(config, WIDTH_FIELDS), _first(config, DEPTH_FIELDS)
    if not (width and depth):
        return None
    mlp = _first(config, MLP_WIDTH_FIELDS) or (_first(config, MLP_RATIO_FIELDS) or 4) * width
    block = _first(config, ("block_size",)) or 0
    return depth * (4 * width * width + 2 * width * mlp) + block * width


def _first(config, names) -> int | None:
    """The value of the first of ``names`` that the config sets to a positive whole number."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


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
