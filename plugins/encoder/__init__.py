"""`encoder` architecture plugin: a BERT-style bidirectional transformer encoder with a
pooled head, for classification and next-item.

Config and registration only (torch is imported by ``model.py``, on first use).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zoo.plugin import check_divisible, check_positive, check_probability, hookimpl


@dataclass
class EncoderConfig:
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    mlp_ratio: int = 4  # MLP hidden width = mlp_ratio * n_embd
    block_size: int = 128  # longest input in tokens, <cls> included (inputs are truncated to it)
    dropout: float = 0.1  # on embeddings, attention weights, residual branches and the head input
    bias: bool = True  # biases in Linear and LayerNorm layers
    # How a sequence becomes one vector for the head: the hidden state of the <cls> token the
    # pipeline puts first, or the mean over the real (unpadded) tokens.
    pooling: Literal["cls", "mean", "max"] = "mean"
    # next-item and masked-language-modeling: the output layer shares the token embeddings
    tie_weights: bool = True
    # An ensemble in one run: `members` encoders learn side by side, each on its own loss
    # (different initial weights, the same batches), and the prediction averages their
    # probabilities. With bag_dim > 0 a fastText-style member (mean of token and hashed
    # token-bigram embeddings, one linear layer) joins them; it holds bag_weight of the
    # average and learns bag_lr_scale times faster than the encoders (a bag of embeddings
    # wants a ten times larger step than attention). Classification only.
    members: int = 1
    bag_dim: int = 0  # 0: no bag member
    bag_buckets: int = 100_000  # hashed bigram rows of the bag member
    bag_weight: float = 0.5  # the bag member's share of the averaged probabilities
    bag_lr_scale: float = 10.0
    # A naive Bayes member (NBSVM: tokens and hashed token bigrams weighted by their
    # log-count ratios in the training split) with nb_weight of the average; 0: none.
    nb_weight: float = 0.0
    nb_buckets: int = 262_144  # hashed bigram rows of the naive Bayes member
    nb_lr_scale: float = 10.0  # how many times further than the encoders' its steps go
    # nb_c > 0: the member is fitted before training instead (logistic regressions, L-BFGS,
    # inverse L2 strength nb_c as scikit-learn's C) and then stays fixed; 0: it learns with
    # the encoders. With a fitted member, nb_char_buckets > 0 adds each token's hashed
    # character 2- to 5-grams to its features.
    nb_c: float = 0.0
    nb_char_buckets: int = 0
    # lstm_members bidirectional LSTMs (the lstm architecture: n_embd-wide embeddings,
    # lstm_layers layers of lstm_hidden states each way, the encoders' dropout and block)
    # join the encoders and share their part of the average equally with them.
    lstm_members: int = 0
    lstm_hidden: int = 64
    lstm_layers: int = 2
    # fit_shares: the shares of the average (encoders, LSTMs, bag, naive Bayes; equal within
    # a group) are fitted on the validation split at every validation and once more before
    # the final evaluation, in tenths, for the most right answers (then the lowest log loss),
    # and saved with the weights; bag_weight and nb_weight are then only the first shares.
    fit_shares: bool = False

    def __post_init__(self):
        check_positive(self, "n_layer", "n_head", "n_embd", "block_size", "mlp_ratio",
                       "bag_buckets", "bag_lr_scale", "nb_buckets", "nb_lr_scale",
                       "lstm_hidden", "lstm_layers")
        if self.lstm_members < 0:
            raise ValueError(f"lstm_members must be 0 (none) or positive, got {self.lstm_members}")
        if self.members < 0 or self.members + self.lstm_members < 1:
            raise ValueError(f"members must be 0 or positive, and members + lstm_members at "
                             f"least 1, got {self.members} and {self.lstm_members}")
        if self.nb_c < 0:
            raise ValueError(f"nb_c must be 0 (the member learns with the encoders) or "
                             f"positive, got {self.nb_c}")
        if self.nb_char_buckets < 0:
            raise ValueError(f"nb_char_buckets must be 0 or positive, got {self.nb_char_buckets}")
        if self.nb_char_buckets and not (self.nb_weight and self.nb_c):
            raise ValueError("nb_char_buckets needs a naive Bayes member fitted before training: "
                             "set nb_weight and nb_c above 0")
        if self.bag_dim < 0:
            raise ValueError(f"bag_dim must be 0 (no bag member) or positive, got {self.bag_dim}")
        if not 0 < self.bag_weight < 1:
            raise ValueError(f"bag_weight must be between 0 and 1, got {self.bag_weight}")
        if not 0 <= self.nb_weight < 1:
            raise ValueError(f"nb_weight must be at least 0 and below 1, got {self.nb_weight}")
        if self.nb_weight + (self.bag_weight if self.bag_dim else 0.0) >= 1:
            raise ValueError("bag_weight + nb_weight must leave the encoders a share: below 1, "
                             f"got {self.bag_weight} + {self.nb_weight}")
        check_divisible(self, "n_embd", "n_head")
        check_probability(self, "dropout")
        if self.pooling not in ("cls", "mean", "max"):
            raise ValueError(f"pooling must be 'cls', 'mean' or 'max', got {self.pooling!r}")


@hookimpl
def register_architectures(register):
    register("encoder", "zoo.plugins.encoder.model:build", config=EncoderConfig,
             tasks=("classification", "next-item", "masked-language-modeling"),
             description="BERT-style bidirectional transformer (pre-LN, padding-masked SDPA, "
                         "cls, mean or max pooling)")
