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
    # The modern block (encoder-modern; the decoder's settings of the same names, with the
    # same layers): rotary positions instead of the learned table, RMSNorm, the SwiGLU MLP,
    # fewer key/value heads than query heads.
    position: Literal["learned", "rotary"] = "learned"
    rope_base: float = 10000.0  # rotary: the angle of feature pair i is position / base^(2i/D)
    norm: Literal["layer", "rms"] = "layer"
    mlp: Literal["gelu", "swiglu"] = "gelu"
    mlp_width: int = sized(0, role="mlp_width")  # the MLP's hidden width; 0: mlp_ratio * n_embd
    n_kv_head: int = sized(0, at_most=2**15)  # key/value heads, dividing n_head; 0: n_head

    def __post_init__(self):
        check_positive(self, "n_layer", "n_head", "n_embd", "block_size", "mlp_ratio")
        check_divisible(self, "n_embd", "n_head")
        check_probability(self, "dropout")
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"{name} must be {' or '.join(map(repr, choices))}, got {getattr(self, name)!r}"
                )
        if self.n_kv_head < 0 or (self.n_kv_head and self.n_head % self.n_kv_head):
            raise ValueError(f"n_kv_head must divide n_head ({self.n_head}), got {self.n_kv_head}")
        if self.position == "rotary" and (self.n_embd // self.n_head) % 2:
            raise ValueError("rotary positions need an even head width (n_embd / n_head)")


CHOICES = {
    "pooling": ("cls", "mean", "max"),
    "position": ("learned", "rotary"),
    "norm": ("layer", "rms"),
    "mlp": ("gelu", "swiglu"),
}


@hookimpl
def register_architectures(register):
    register(
        "encoder",
        "zoo.plugins.encoder.model:build",
        config=EncoderConfig,
        tasks=("classification", "next-item", "masked-language-modeling"),
        description="BERT-style bidirectional transformer (pre-LN, padding-masked SDPA, "
        "cls, mean or max pooling; rotary, RMSNorm, SwiGLU and grouped-query attention as "
        "settings)",
    )
