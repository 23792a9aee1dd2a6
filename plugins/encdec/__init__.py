"""`encdec` architecture plugin: the encoder-decoder transformer of "Attention Is All You
Need" in zoo's pre-LN form, for the seq2seq task: an encoder of bidirectional blocks reads
the source, a decoder of causal blocks with cross-attention to the encoder's output writes
the target.

This module holds the config and the registration only, so listing the zoo imports no
torch; ``model.py`` builds the network.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.plugin import hookimpl
from zoo.plugin.config import check_divisible, check_positive, check_probability, sized


@dataclass
class EncDecConfig:
    encoder_layers: int = sized(3, role="depth")
    decoder_layers: int = sized(3, role="depth")
    n_head: int = sized(4, role="heads")
    n_embd: int = sized(256, role="width")
    mlp_ratio: int = sized(4, role="mlp_ratio")  # feed-forward width = mlp_ratio * n_embd
    # the longest source and the longest target in tokens (each side's position table)
    block_size: int = sized(128, role="context")
    dropout: float = 0.1
    bias: bool = True  # biases in Linear and LayerNorm layers
    tie_weights: bool = True  # the output projection shares the token embedding matrix

    def __post_init__(self):
        check_positive(
            self, "encoder_layers", "decoder_layers", "n_head", "n_embd", "mlp_ratio", "block_size"
        )
        check_divisible(self, "n_embd", "n_head")
        check_probability(self, "dropout")


@hookimpl
def register_architectures(register):
    register(
        "encdec",
        "zoo.plugins.encdec.model:build",
        config=EncDecConfig,
        tasks=("seq2seq",),
        description="encoder-decoder transformer (pre-LN encoder and decoder blocks, "
        "cross-attention, key/value-cached decoding)",
    )
