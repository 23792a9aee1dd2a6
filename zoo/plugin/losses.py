"""Losses ready to name in a task declaration: ``Task(loss="zoo.plugin.losses:cross_entropy",
...)``. Each is ``loss(outputs, targets, reduction)`` on torch tensors, ``reduction`` "mean"
or "sum"; integer targets equal to ``zoo.plugin.IGNORE_INDEX`` count for nothing."""

from __future__ import annotations

from zoo.lazy import lazy_names

_LAZY = {
    "cross_entropy": "zoo.train.losses",  # class (or token) ids against logits [..., classes]
    "mse": "zoo.train.losses",  # mean squared error of real-valued outputs
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
