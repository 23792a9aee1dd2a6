"""Losses a task can name in its declaration (``zoo.plugin.Task(loss="zoo.train.losses:cross_entropy")``).

Each is ``loss(outputs, targets, reduction)`` on float32 outputs, returning the mean or the
sum of the per-target losses. ``check_output`` holds a newly built model to the output shape
its task declares (``zoo.Task.output_shape``), on a tiny batch, before anything trains.
Imported only when a model trains or evaluates (torch).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from zoo.errors import ZooError
from zoo.train.model import IGNORE_INDEX

PROBE_BATCH, PROBE_LENGTH = 2, 3  # the tiny batch check_output runs


def check_output(model, task, spec, context_length: int | None, who: str) -> None:
    """Run ``model`` (a zoo.Model) on a tiny batch and raise a ZooError naming ``who`` (the
    architecture and its plugin) when its output's shape is not the one ``task`` declares."""
    if task.output_shape is None:
        return
    length = max(1, min(PROBE_LENGTH, context_length or PROBE_LENGTH))
    inputs = np.arange(PROBE_BATCH * length, dtype=np.int64).reshape(PROBE_BATCH, length)
    inputs %= max(1, spec.vocab_size)
    shape = tuple(np.shape(model.logits(inputs, np.ones_like(inputs))))
    sizes = {"B": PROBE_BATCH, "T": length}
    wanted = tuple(
        d if isinstance(d, int) else sizes.get(d, getattr(spec, d, None)) for d in task.output_shape
    )
    if shape != wanted:
        names = ", ".join(map(str, task.output_shape))
        raise ZooError(
            f"{who} returns outputs of shape [{', '.join(map(str, shape))}] for "
            f"{task.name}, which declares [{names}] (here "
            f"[{', '.join(map(str, wanted))}]): {task.output}"
        )


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
    """Cross entropy in nats of logits [..., C] against class ids [...]; IGNORE_INDEX targets
    count for nothing. Logits of any other shape are an error, not a broadcast."""
    if logits.shape[:-1] != targets.shape:
        raise ZooError(
            f"logits of shape {list(logits.shape)} do not fit targets of shape "
            f"{list(targets.shape)}: cross entropy needs [..., classes] against [...]"
        )
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction=reduction,
    )


def label_smoothed(smoothing: float):
    """Cross entropy against targets smoothed toward the uniform distribution: each target
    keeps ``1 - smoothing`` of its mass and every class gets ``smoothing / classes``
    (Szegedy et al., 2016; the translation transformer's 0.1). A loss for training steps
    (``Job.build_model(spec, train_loss=...)``); evaluation reports the plain cross entropy."""

    def loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
        if logits.shape[:-1] != targets.shape:
            cross_entropy(logits, targets, reduction)  # raises its readable error
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            targets.reshape(-1),
            ignore_index=IGNORE_INDEX,
            reduction=reduction,
            label_smoothing=smoothing,
        )

    return loss


def mse(outputs: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
    """Squared error of outputs against float targets of the same number of elements."""
    return F.mse_loss(
        outputs.reshape(targets.shape), targets.to(outputs.dtype), reduction=reduction
    )


def count_targets(targets: torch.Tensor) -> int:
    """How many targets a summed loss covers: every element, but integer targets equal to
    IGNORE_INDEX count for nothing."""
    if targets.is_floating_point():
        return int(targets.numel())
    return int((targets != IGNORE_INDEX).sum().item())
