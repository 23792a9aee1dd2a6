"""Losses ready to name in a task declaration: ``Task(loss="zoo.plugin.losses:cross_entropy",
...)``. Each is ``loss(outputs, targets, reduction)`` on torch tensors, ``reduction`` "mean"
or "sum"; integer targets equal to ``zoo.plugin.IGNORE_INDEX`` count for nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import lazy_names

_LAZY = {
    "cross_entropy": "zoo.train.losses",  # class (or token) ids against logits [..., classes]
    "mse": "zoo.train.losses",  # mean squared error of real-valued outputs
    "label_smoothed": "zoo.train.losses",  # label_smoothed(0.1): smoothed cross entropy
}

if TYPE_CHECKING:  # what _LAZY imports on first use, spelled out for readers and the reference
    from zoo.train.losses import cross_entropy, label_smoothed, mse

__all__ = [
    "cross_entropy",
    "mse",
    "label_smoothed",
]

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
