"""`lstm` architecture plugin: a bidirectional LSTM text classifier, the recurrent baseline
beside the transformers.

Config and registration only (torch is imported by ``model.py``, on first use).
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.plugin import check_positive, check_probability, hookimpl


@dataclass
class LSTMConfig:
    n_embd: int = 128  # token embedding width
    hidden: int = 64  # LSTM state width in each direction
    n_layer: int = 2  # stacked bidirectional layers
    dropout: float = 0.3  # on the embeddings, between layers and on the pooled vector
    block_size: int = 64  # longest input in tokens, <cls> included (inputs are truncated to it)

    def __post_init__(self):
        check_positive(self, "n_embd", "hidden", "n_layer", "block_size")
        check_probability(self, "dropout")


def memory(config: LSTMConfig) -> int:
    """Bytes to train (16 per parameter: weights, gradients, two Adam moments): per layer
    and direction, four gates over the layer's input and its state. The embedding (its
    vocabulary is not known yet) is left out."""
    inputs = [config.n_embd] + [2 * config.hidden] * (config.n_layer - 1)
    return 16 * sum(8 * config.hidden * (fan_in + config.hidden) for fan_in in inputs)


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
