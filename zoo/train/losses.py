"""Losses a task can name in its declaration (``zoo.plugin.Task(loss="zoo.train.losses:cross_entropy")``).

Each is ``loss(outputs, targets, reduction)`` on float32 outputs, returning the mean or the
sum of the per-target losses. Imported only when a model trains or evaluates (torch).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from zoo.train.model import IGNORE_INDEX


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
    """Cross entropy in nats of logits [..., C] against class ids [...]; IGNORE_INDEX targets
    count for nothing. Logits with one more axis, [B, M, C] against [B], are M predictions of
    each target (an ensemble's members in training): each is scored, and the mean is over
    all B * M of them."""
    if logits.dim() == targets.dim() + 2:
        targets = targets.unsqueeze(-1).expand(logits.shape[:-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=IGNORE_INDEX, reduction=reduction)


def mse(outputs: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
    """Squared error of outputs against float targets of the same number of elements."""
    return F.mse_loss(outputs.reshape(targets.shape), targets.to(outputs.dtype),
                      reduction=reduction)
