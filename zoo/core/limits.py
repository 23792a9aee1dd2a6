"""Limits on what the user gives, checked before anything is written or allocated.

A seed too large for NumPy or SQLite, or a size that no machine can allocate (a BPE
vocabulary of 10^9 makes the Rust allocator abort the process), is a user error: exit 2
with one line, before a run folder or store row exists. Three kinds of limit live here:

- values given on the command line or to the Python API (a seed, a device, a file's size);
- the range of every integer config setting, by its kind (a seed, a count of steps, a size),
  checked whenever a config is built (``--set``, a preset, a config file, a run's config.json);
- the sizes a plugin's config declares with ``sized``, each with its limit and what it
  measures (its role), and the memory and time a model or a dataset needs:

    @dataclass
    class TinyConfig:
        n_layer: int = sized(4, role="depth")
        block_size: int = sized(128, role="context")
        buckets: int = sized(200_000, at_most=2**24)

A role says what a field measures, so the core reads a config by meaning: the ``context``
field is the longest input pipelines cut to, and the ``width``, ``depth``,
``mlp_width``/``mlp_ratio`` fields give the default memory estimate of a transformer.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import warnings
from typing import Any

from zoo.errors import ZooDeprecationWarning, ZooError

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


# The range of an integer setting by its kind, for fields no plugin declared sized: a seed
# is a 32-bit whole number, a count of steps at most a billion, a size never negative, and
# any other integer within what a float holds exactly.
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


MAX_SPLIT_ROWS = 2**24  # rows of a split a dataset builds
BYTES_PER_PARAMETER = 16  # fp32 weights, gradients and two Adam moments

# role -> (its limit unless the field gives its own, what a field of that role measures)
ROLES: dict[str, tuple[int, str]] = {
    "context": (MAX_BLOCK, "the longest input in tokens; pipelines cut inputs to it"),
    "vocabulary": (MAX_VOCAB, "the most tokens a vocabulary holds"),
    "width": (MAX_WIDTH, "the model's width (embedding and hidden size)"),
    "heads": (MAX_WIDTH, "attention heads"),
    "depth": (MAX_LAYERS, "layers (blocks)"),
    "mlp_width": (MAX_MLP_WIDTH, "the hidden width of a block's MLP"),
    "mlp_ratio": (64, "the hidden width of a block's MLP over the model's width"),
    "batch": (MAX_BATCH, "sequences in a batch, or batches"),
    "rows": (MAX_SPLIT_ROWS, "rows of a split a dataset builds"),
}


def sized(
    default: Any,
    *,
    role: str | None = None,
    at_most: int | None = None,
    incidental: bool = False,
) -> Any:
    """A size-like config field: ``n_layer: int = sized(4, role="depth")``.

    :param default: the field's default value.
    :param role: what it measures, one of ``context``, ``vocabulary``, ``width``, ``heads``,
        ``depth``, ``mlp_width``, ``mlp_ratio``, ``batch``, ``rows``. The role gives the
        limit unless ``at_most`` does; the ``context`` field is required of an architecture
        (pipelines cut inputs to it).
    :param at_most: the largest value zoo accepts (needed without a role).
    :param incidental: the field does not change a run's result (as ``incidental``).
    """
    if role is not None and role not in ROLES:
        raise ValueError(f"unknown size role {role!r}; one of {', '.join(ROLES)}")
    if role is None and at_most is None:
        raise ValueError("sized() needs a role or at_most")
    limit = at_most if at_most is not None else ROLES[role or ""][0]
    metadata: dict[str, Any] = {"at_most": limit}
    if role is not None:
        metadata["role"] = role
    if incidental:
        metadata["result"] = False
    return dataclasses.field(default=default, metadata=metadata)


def declared(config) -> dict[str, dict]:
    """field name -> what ``sized`` declared of it (``at_most``, ``role``), for a config
    dataclass or instance. A subclass that gives a field a new default without ``sized``
    keeps what its base declared (a pipeline's own ``batch_size`` default stays bounded)."""
    cls = config if isinstance(config, type) else type(config)
    if not dataclasses.is_dataclass(cls):
        return {}
    found: dict[str, dict] = {}
    for klass in reversed(cls.__mro__):
        for f in getattr(klass, "__dataclass_fields__", {}).values():
            if "at_most" in f.metadata:
                found[f.name] = {k: f.metadata[k] for k in ("at_most", "role") if k in f.metadata}
    return found


def size_limits(config) -> dict[str, int]:
    """field name -> the most it may hold, for each field the config declares sized."""
    return {name: facts["at_most"] for name, facts in declared(config).items()}


def field_for(config, role: str) -> str | None:
    """The name of the config's field declared with ``role`` (the first, if several)."""
    if config is None:
        return None
    for name, facts in declared(config).items():
        if facts.get("role") == role:
            return name
    if role == "context" and _plain_block_size(config):
        return "block_size"
    return None


def _plain_block_size(config) -> bool:
    """API 1.0 read the context length from a field named ``block_size``; such a config
    still works, with a warning, until plugin API 2.0."""
    cls = config if isinstance(config, type) else type(config)
    if "block_size" not in getattr(cls, "__dataclass_fields__", {}):
        return False
    warnings.warn(
        f"{cls.__name__}.block_size is read as the context length by its name, which is "
        'deprecated: declare it block_size: int = sized(128, role="context") (from '
        "zoo.plugin.config import sized); plugin API 2.0 reads only the role",
        ZooDeprecationWarning,
        stacklevel=3,
    )
    return True


def value_of(config, role: str) -> int | None:
    """The positive whole number the config's field of ``role`` holds, else None."""
    name = field_for(config, role)
    value = getattr(config, name, None) if name else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def context_length(config) -> int | None:
    """The longest input in tokens: the config's ``context`` field, None without one."""
    return value_of(config, "context")


def check_sizes(config, where: str = "") -> None:
    """Every declared size of a config dataclass within its limit."""
    for name, limit in size_limits(config).items():
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > limit:
            raise ZooError(
                f"{where}{name} = {value:,} is more than zoo can allocate (at most {limit:,})"
            )


def check_memory(architecture, config, where: str = "", vocab_size: int | None = None) -> None:
    """The memory a model of this config needs to train, within this machine's memory: the
    architecture's own estimate (``register(..., memory=...)``), else a transformer's
    (``default_memory``). ``vocab_size`` is the vocabulary's size where known (a trained
    tokenizer's), else the most its tokenizer's config allows, else None."""
    if config is None:
        return
    needed = architecture.memory_estimate(config, vocab_size)
    if needed is None:
        needed = default_memory(config, vocab_size)
    memory = physical_memory()
    if needed and memory and needed > memory:
        raise ZooError(
            f"{where}a {architecture.name} model of this config needs about "
            f"{needed / 2**30:,.0f} GiB to train; this machine has "
            f"{memory / 2**30:,.0f} GiB"
        )


def default_memory(config, vocab_size: int | None = None) -> int | None:
    """Bytes to train a transformer of this config (estimated_parameters), None for a
    config that declares no width and depth."""
    parameters = estimated_parameters(config, vocab_size)
    return parameters * BYTES_PER_PARAMETER if parameters else None


def estimated_parameters(config, vocab_size: int | None = None) -> int | None:
    """About how many parameters a transformer of this config has, before anything is built:
    per layer 4 x width^2 of attention and 2 x width x the MLP's width (the ``mlp_width``
    field if set, else the ``mlp_ratio`` field x width, else 4 x width), plus the position
    table (``context`` x width) and the token embedding (vocab_size x width, when known).
    Biases, norms and the third matrix of a gated MLP (llama's) are left out. None for a
    config without a declared width and depth."""
    width, depth = value_of(config, "width"), value_of(config, "depth")
    if not (width and depth):
        return None
    mlp = value_of(config, "mlp_width") or (value_of(config, "mlp_ratio") or 4) * width
    positions = context_length(config) or 0
    return depth * (4 * width * width + 2 * width * mlp) + (positions + (vocab_size or 0)) * width
