"""Torch building blocks of the built-in architectures, for an architecture plugin's
``model.py`` (this namespace imports torch on first use of a name)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import lazy_names

_LAZY = {
    name: "zoo.train.layers"
    for name in (
        "attention",
        "SelfAttention",
        "MLP",
        "BlockSettings",
        "PreLNBlock",
        "ThreadInvariantLayerNorm",
        "RMSNorm",
        "Rotary",
        "SwiGLU",
        "MixtureOfExperts",
        "load_balancing_loss",
        "norm_layer",
        "check_length",
        "key_mask",
        "last_real",
        "init_gpt2",
        "modules_of",
        "token_bigram_ids",
        "split_source_target",
        "SOURCE",
        "TARGET",
    )
}

if TYPE_CHECKING:  # what _LAZY imports on first use, spelled out for readers and the reference
    from zoo.train.layers import (
        MLP,
        SOURCE,
        TARGET,
        BlockSettings,
        MixtureOfExperts,
        PreLNBlock,
        RMSNorm,
        Rotary,
        SelfAttention,
        SwiGLU,
        ThreadInvariantLayerNorm,
        attention,
        check_length,
        init_gpt2,
        key_mask,
        last_real,
        load_balancing_loss,
        modules_of,
        norm_layer,
        split_source_target,
        token_bigram_ids,
    )

__all__ = [
    "attention",
    "SelfAttention",
    "MLP",
    "BlockSettings",
    "PreLNBlock",
    "ThreadInvariantLayerNorm",
    "RMSNorm",
    "Rotary",
    "SwiGLU",
    "MixtureOfExperts",
    "load_balancing_loss",
    "norm_layer",
    "check_length",
    "key_mask",
    "last_real",
    "init_gpt2",
    "modules_of",
    "token_bigram_ids",
    "split_source_target",
    "SOURCE",
    "TARGET",
]

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
