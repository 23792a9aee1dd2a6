"""`mamba` architecture plugin: a selective state-space model (Mamba), for language modeling,
classification and next-item.

Each block mixes the sequence with a linear recurrence whose step size and input and output
maps depend on the token (selective), instead of attention: its cost grows linearly with the
length. Config and registration only (torch is imported by ``model.py``, on first use).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from zoo.plugin import hookimpl
from zoo.plugin.config import check_positive, check_probability, sized


@dataclass
class MambaConfig:
    n_layer: int = sized(4, role="depth")
    n_embd: int = sized(128, role="width")
    expand: int = sized(2, at_most=64)  # the mixer's inner width = expand * n_embd
    d_state: int = sized(16, at_most=1024)  # N: state numbers per inner channel
    d_conv: int = sized(4, at_most=64)  # kernel of the depthwise causal convolution
    dt_rank: int = sized(0, at_most=2**15)  # rank of the step size's projection; 0: n_embd / 16
    block_size: int = sized(128, role="context")  # longest input in tokens
    dropout: float = 0.0  # on the embeddings and each mixer's output
    bias: bool = False  # biases of the input and output projections (Mamba has none)
    conv_bias: bool = True
    tie_weights: bool = True  # the LM head shares the token embedding matrix
    # positions per chunk: the CPU's scan saves the state at each chunk's start for the
    # backward pass; the parallel scan (an accelerator's) computes a chunk's positions at once
    scan_chunk: int = sized(32, at_most=2**15)
    # classification: the state at the last real token (it has read the whole text), or the
    # mean over the real tokens
    pooling: Literal["last", "mean"] = "last"

    def __post_init__(self):
        check_positive(
            self, "n_layer", "n_embd", "expand", "d_state", "d_conv", "block_size", "scan_chunk"
        )
        check_probability(self, "dropout")
        if self.dt_rank < 0:
            raise ValueError(f"dt_rank must be 0 (n_embd / 16) or positive, got {self.dt_rank}")
        if self.pooling not in ("last", "mean"):
            raise ValueError(f"pooling must be 'last' or 'mean', got {self.pooling!r}")

    @property
    def rank(self) -> int:
        """The step size projection's rank (Mamba's default: n_embd / 16, rounded up)."""
        return self.dt_rank or math.ceil(self.n_embd / 16)


def memory(config: MambaConfig, vocab_size: int | None) -> int:
    """Bytes to train (16 per parameter: weights, gradients, two Adam moments), plus the
    [T, inner, N] states per sequence of a batch of 32 that the chunked scan (an
    accelerator's) keeps for the backward pass: an upper bound, since the CPU's scan keeps
    only every scan_chunk-th state."""
    C, D, N = config.n_embd, config.expand * config.n_embd, config.d_state
    mixer = 3 * C * D + D * config.d_conv + D * (config.rank + 2 * N) + config.rank * D + D * N
    parameters = config.n_layer * mixer + (vocab_size or 0) * C
    states = 32 * config.block_size * D * N * 4 * 4 * config.n_layer  # a few fp32 copies
    return 16 * parameters + states


@hookimpl
def register_architectures(register):
    register(
        "mamba",
        "zoo.plugins.mamba.model:build",
        config=MambaConfig,
        tasks=("language-modeling", "classification", "next-item"),
        memory=memory,
        description="selective state-space model (Mamba: input-dependent step size, B and C; "
        "causal convolution; gated output; decodes from its state)",
    )
