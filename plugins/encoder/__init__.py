"""`encoder` architecture plugin: a BERT-style bidirectional transformer encoder with a
pooled head, for classification and next-item.

Config and registration only (torch is imported by ``model.py``, on first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zoo.plugin import hookimpl
from zoo.plugin.config import check_divisible, check_positive, check_probability, sized


@dataclass
class EncoderConfig:
    n_layer: int = sized(4, role="depth")
    n_head: int = sized(4, role="heads")
    n_embd: int = sized(128, role="width")
    mlp_ratio: int = sized(4, role="mlp_ratio")  # MLP hidden width = mlp_ratio * n_embd
    block_size: int = sized(
        128, role="context"
    )  # longest input in tokens, <cls> included (inputs are truncated to it)
    dropout: float = 0.1  # on embeddings, attention weights, residual branches and the head input
    bias: bool = True  # biases in Linear and LayerNorm layers
    # How a sequence becomes one vector for the head: the hidden state of the <cls> token the
    # pipeline puts first, or the mean over the real (unpadded) tokens.
    pooling: Literal["cls", "mean", "max"] = "mean"
    # next-item and masked-language-modeling: the output layer shares the token embeddings
    tie_weights: bool = True

    def __post_init__(self):
        check_positive(self, "n_layer", "n_head", "n_embd", "block_size", "mlp_ratio")
        check_divisible(self, "n_embd", "n_head")
        check_probability(self, "dropout")
        if self.pooling not in ("cls", "mean", "max"):
            raise ValueError(f"pooling must be 'cls', 'mean' or 'max', got {self.pooling!r}")


@hookimpl
def register_architectures(register):
    register(
        "encoder",
        "zoo.plugins.encoder.model:build",
        config=EncoderConfig,
        tasks=("classification", "next-item", "masked-language-modeling"),
        description="BERT-style bidirectional transformer (pre-LN, padding-masked SDPA, "
        "cls, mean or max pooling)",
    )
