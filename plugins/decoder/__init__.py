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
    # The modern block (decoder-modern; Llama's with bias = false): rotary positions instead
    # of the learned table, RMSNorm, the SwiGLU MLP, fewer key/value heads than query heads.
    position: Literal["learned", "rotary"] = "learned"
    rope_base: float = 10000.0  # rotary: the angle of feature pair i is position / base^(2i/D)
    norm: Literal["layer", "rms"] = "layer"
    mlp: Literal["gelu", "swiglu"] = "gelu"
    mlp_width: int = sized(0, role="mlp_width")  # the MLP's hidden width; 0: 4 * n_embd
    n_kv_head: int = sized(0, at_most=2**15)  # key/value heads, dividing n_head; 0: n_head
    # A mixture of experts in place of each block's MLP (0: one dense MLP): each token goes
    # to its expert_top_k best of n_expert MLPs; the load-balancing loss, times
    # aux_loss_weight, is added to the training loss and recorded as train_aux_loss.
    n_expert: int = sized(0, at_most=1024)
    expert_top_k: int = sized(2, at_most=1024)
    aux_loss_weight: float = 0.01

    def __post_init__(self):
        check_positive(self, "n_layer", "n_head", "n_embd", "block_size")
        check_divisible(self, "n_embd", "n_head")
        check_probability(self, "dropout")
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"{name} must be {' or '.join(choices)}, got {getattr(self, name)!r}"
                )
        if self.n_kv_head < 0 or (self.n_kv_head and self.n_head % self.n_kv_head):
            raise ValueError(f"n_kv_head must divide n_head ({self.n_head}), got {self.n_kv_head}")
        if self.position == "rotary" and (self.n_embd // self.n_head) % 2:
            raise ValueError("rotary positions need an even head width (n_embd / n_head)")
        if self.n_expert and not 1 <= self.expert_top_k <= self.n_expert:
            raise ValueError(f"expert_top_k must be between 1 and n_expert ({self.n_expert})")
        if self.aux_loss_weight < 0:
            raise ValueError(f"aux_loss_weight must be 0 or more, got {self.aux_loss_weight}")

    @property
    def modern(self) -> bool:
        """Whether any block setting differs from GPT-2's (which the incremental decoder
        computes)."""
        gpt2 = ("learned", "layer", "gelu", 0, 0)
        return (self.position, self.norm, self.mlp, self.n_kv_head, self.n_expert) != gpt2


CHOICES = {
    "gelu": ("tanh", "exact"),
    "position": ("learned", "rotary"),
    "norm": ("layer", "rms"),
    "mlp": ("gelu", "swiglu"),
}


@hookimpl
def register_architectures(register):
    register(
        "decoder",
        "zoo.plugins.decoder.model:build",
        config=DecoderConfig,
        tasks=("language-modeling", "classification", "next-item"),
        description="GPT-style causal transformer (pre-LN, fused QKV, SDPA attention)",
    )
