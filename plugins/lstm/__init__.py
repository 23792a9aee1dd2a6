"""`lstm` architecture plugin: a bidirectional LSTM text classifier, the recurrent baseline
beside the transformers.

Config and registration only (torch is imported by ``model.py``, on first use).
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.plugin import hookimpl
from zoo.plugin.config import check_positive, check_probability, sized


@dataclass
class LSTMConfig:
    n_embd: int = sized(128, role="width")  # token embedding width
    hidden: int = sized(64, at_most=2**15)  # LSTM state width in each direction
    n_layer: int = sized(2, role="depth")  # stacked bidirectional layers
    dropout: float = 0.3  # on the embeddings, between layers and on the pooled vector
    block_size: int = sized(
        64, role="context"
    )  # longest input in tokens, <cls> included (inputs are truncated to it)

    def __post_init__(self):
        check_positive(self, "n_embd", "hidden", "n_layer", "block_size")
        check_probability(self, "dropout")


def memory(config: LSTMConfig, vocab_size: int | None) -> int:
    """Bytes to train (16 per parameter: weights, gradients, two Adam moments): per layer
    and direction, four gates over the layer's input and its state, and the embedding when
    the vocabulary's size is known."""
    inputs = [config.n_embd] + [2 * config.hidden] * (config.n_layer - 1)
    gates = sum(8 * config.hidden * (fan_in + config.hidden) for fan_in in inputs)
    return 16 * (gates + (vocab_size or 0) * config.n_embd)


@hookimpl
def register_architectures(register):
    register(
        "lstm",
        "zoo.plugins.lstm.model:build",
        config=LSTMConfig,
        tasks=("classification",),
        memory=memory,
        description="bidirectional LSTM over token embeddings, mean of its states over "
        "the real tokens, one linear layer",
    )
