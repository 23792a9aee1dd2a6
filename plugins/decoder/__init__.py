"""`decoder` architecture plugin: a GPT-style decoder-only transformer.

The config lives here (no torch import, so listing the zoo stays fast); the network is in
``model.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zoo import hookimpl


@dataclass
class DecoderConfig:
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 128  # context length in tokens (size of the position table)
    dropout: float = 0.0
    bias: bool = True  # biases in Linear and LayerNorm layers
    tie_weights: bool = True  # the LM head shares the token embedding matrix
    # GELU's form: "tanh" (GPT-2's approximation) or "exact" (with erf, as torch.nn.GELU()
    # and nanoGPT; its kernel is twice as fast on the CPU, benchmarks/RESULTS.md)
    gelu: Literal["tanh", "exact"] = "tanh"

    def __post_init__(self):
        for name in ("n_layer", "n_head", "n_embd", "block_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.gelu not in ("tanh", "exact"):
            raise ValueError(f"gelu must be tanh or exact, got {self.gelu!r}")


@hookimpl
def register_architectures(register):
    register("decoder", "zoo.plugins.decoder.model:build", config=DecoderConfig,
             tasks=("language-modeling", "classification", "next-item"),
             description="GPT-style causal transformer (pre-LN, fused QKV, SDPA attention)")
