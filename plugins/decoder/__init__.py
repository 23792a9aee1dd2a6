"""`decoder` architecture plugin: a GPT-style decoder-only transformer (causal pre-LN
blocks from ``zoo.train.layers``), for language modeling, classification and next-item.

This module holds the config and the registration only, so listing the zoo imports no
torch; ``model.py`` builds the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zoo.plugin import hookimpl
from zoo.plugin.config import check_divisible, check_positive, check_probability, sized


@dataclass
class DecoderConfig:
    n_layer: int = sized(4, role="depth")
    n_head: int = sized(4, role="heads")
    n_embd: int = sized(128, role="width")
    block_size: int = sized(
        128, role="context"
    )  # context length in tokens (size of the position table)
    dropout: float = 0.0
    bias: bool = True  # biases in Linear and LayerNorm layers
    tie_weights: bool = True  # the LM head shares the token embedding matrix
    # GELU's form: "tanh" (GPT-2's approximation) or "exact" (with erf, as torch.nn.GELU()
    # and nanoGPT; its kernel is twice as fast on the CPU)
    gelu: Literal["tanh", "exact"] = "tanh"

    def __post_init__(self):
        check_positive(self, "n_layer", "n_head", "n_embd", "block_size")
        check_divisible(self, "n_embd", "n_head")
        check_probability(self, "dropout")
        if self.gelu not in ("tanh", "exact"):
            raise ValueError(f"gelu must be tanh or exact, got {self.gelu!r}")


@hookimpl
def register_architectures(register):
    register(
        "decoder",
        "zoo.plugins.decoder.model:build",
        config=DecoderConfig,
        tasks=("language-modeling", "classification", "next-item"),
        description="GPT-style causal transformer (pre-LN, fused QKV, SDPA attention)",
    )
