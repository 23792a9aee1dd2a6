"""The model protocol pipelines train against, whatever framework computes the model.

An architecture's target is ``build(config, spec) -> model``. It returns either a
``torch.nn.Module`` (wrapped by ``zoo.engine.TorchModel``, which owns the optimizer) or any
object with the methods of ``Model`` below (the NumPy reference does this).

Module outputs by task, given ``input_ids`` [B, T] and ``attention_mask`` [B, T] (1 = real):
  language-modeling: logits [B, T, vocab_size]
  classification:    logits [B, num_classes] (inputs are right-padded and start with <cls>)
  next-item:         logits [B, vocab_size] for the token after the last real position
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

TASKS = ("language-modeling", "classification", "next-item")
IGNORE_INDEX = -100  # targets with this value add nothing to the loss


@dataclass(frozen=True)
class TaskSpec:
    """What a model must fit: the task, the vocabulary, and the classes if any."""

    task: str
    vocab_size: int
    num_classes: int | None = None
    pad_id: int = 0


@runtime_checkable
class Model(Protocol):
    def num_parameters(self) -> int: ...

    def configure_optimizer(self, lr: float, weight_decay: float, betas=(0.9, 0.95)) -> None: ...

    def train_step(self, inputs: np.ndarray, targets: np.ndarray, lr: float,
                   mask: np.ndarray | None = None, grad_clip: float = 1.0) -> float:
        """One optimizer step on a batch; returns the mean loss (nats per target)."""

    def loss_sum(self, inputs: np.ndarray, targets: np.ndarray,
                 mask: np.ndarray | None = None) -> tuple[float, int]:
        """Summed negative log-likelihood (nats) and number of targets, without training."""

    def logits(self, inputs: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray: ...

    def state_dict(self) -> dict[str, np.ndarray]: ...

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None: ...
