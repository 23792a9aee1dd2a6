"""Sizes a plugin's config declares: each field's limit and what it measures.

A plugin marks its size-like config fields with ``sized``:

    @dataclass
    class TinyConfig:
        n_layer: int = sized(4, role="depth")
        block_size: int = sized(128, role="context")
        buckets: int = sized(200_000, at_most=2**24)

zoo checks every declared field against its limit on every config however it arrives
(``--set``, a preset, a run's ``config.json``), before anything is allocated. A role says
what the field measures, so the core reads a config by meaning and never by a field's name:
the ``context`` field is the longest input pipelines cut to, and the ``width``, ``depth``,
``mlp_width``/``mlp_ratio`` fields give the default memory estimate of a transformer.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

from zoo.core.bounds import (
    MAX_BATCH,
    MAX_BLOCK,
    MAX_LAYERS,
    MAX_MLP_WIDTH,
    MAX_VOCAB,
    MAX_WIDTH,
    physical_memory,
)
from zoo.errors import ZooDeprecationWarning, ZooError

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
    metadata: dict[str, Any] = {"at_most": at_most if at_most is not None else ROLES[role][0]}
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


def limits(config) -> dict[str, int]:
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
    for name, limit in limits(config).items():
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
