"""`digits` architecture plugin: the classic minimal transformer that reads a sequence and
predicts what comes next ("1 2 3" -> "4").

Token embedding plus fixed sinusoidal positions, post-LayerNorm blocks (attention, add and
norm, feed-forward, add and norm), one attention head by default, and the prediction read
at the last real position. The config lives here (no torch import, so listing the zoo stays
fast); the network is in ``model.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zoo.plugins.digits.data import DigitsDataConfig
from zoo.plugins.digits.transduction import TransductionConfig

from zoo.plugin import hookimpl
from zoo.plugin.config import sized


@dataclass
class DigitsConfig:
    width: int = sized(64, role="width")  # model dimension (embedding and attention width)
    blocks: int = sized(2, role="depth")  # post-LN transformer blocks
    heads: int = sized(1, role="heads")  # attention heads; width must divide evenly among them
    ff_ratio: int = sized(4, role="mlp_ratio")  # feed-forward hidden width = ff_ratio * width
    dropout: float = 0.0
    block_size: int = sized(
        32, role="context"
    )  # longest context in tokens; longer contexts keep their last tokens
    # Where the sinusoidal positions count from: "start" (token 0 is position 0) or "end"
    # (the last real token is position 0, the one before it 1, ...). The next item depends on
    # the last few items, so counting from the end lets attention find them at fixed
    # positions whatever the context's length.
    positions: Literal["start", "end"] = "start"

    def __post_init__(self):
        for name in ("width", "blocks", "heads", "ff_ratio", "block_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.width % self.heads:
            raise ValueError(f"width ({self.width}) must be divisible by heads ({self.heads})")
        if self.width % 2:
            raise ValueError(f"width must be even for sinusoidal positions, got {self.width}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.positions not in ("start", "end"):
            raise ValueError(f"positions must be 'start' or 'end', got {self.positions!r}")


@hookimpl
def register_architectures(register):
    register(
        "digits",
        "zoo.plugins.digits.model:build",
        config=DigitsConfig,
        tasks=("next-item",),
        description="minimal transformer (sinusoidal positions, post-LN, one head) that "
        "predicts the next item at the last position",
    )


@hookimpl
def register_datasets(register):
    register(
        "digits",
        "zoo.plugins.digits.data:load",
        config=DigitsDataConfig,
        tasks=("next-item",),
        columns={"text": "text", "label": "target"},
        description="synthetic digit sequences mod 10 (arithmetic, Fibonacci-like, "
        "periodic); predict the next digit (20,000/2,000/2,000, plus 2,000 "
        "each of two disjoint sets of held-out rules: heldout_validation to choose on, "
        "heldout to report)",
    )
    register(
        "digits-transduction",
        "zoo.plugins.digits.transduction:load",
        config=TransductionConfig,
        tasks=("seq2seq",),
        columns={"text": "source", "label": "target"},
        description="pairs of digit sequences for seq2seq, the target a rule of the source "
        "(rule = reverse, sort or add, whose numbers run least significant digit first); "
        "exact match is the check (10,000/500/500)",
    )
