"""Declaring and checking a plugin's config dataclass.

    from dataclasses import dataclass

    from zoo.plugin.config import check_positive, incidental, sized

    @dataclass
    class TinyConfig:
        n_layer: int = sized(4, role="depth")
        block_size: int = sized(128, role="context")  # required of an architecture
        buckets: int = sized(200_000, at_most=2**24)
        samples: int = incidental(3)  # changes no result

        def __post_init__(self):
            check_positive(self, "n_layer", "block_size", "buckets")

A ``ValueError`` raised in ``__post_init__`` reaches the user as one line (exit 2). Sizes are
checked against their declared limits before anything is allocated, however a config
arrives (``--set``, a preset, a recorded run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import lazy_names

_LAZY = {
    "sized": "zoo.core.limits",
    "ROLES": "zoo.core.limits",
    "incidental": "zoo.core.config",
    "check_positive": "zoo.core.config",
    "check_divisible": "zoo.core.config",
    "check_probability": "zoo.core.config",
    "check_budget": "zoo.core.limits",
    "within_budget": "zoo.core.limits",
    "MAX_VOCAB": "zoo.core.limits",  # the most tokens a vocabulary may hold
}

if TYPE_CHECKING:  # what _LAZY imports on first use, spelled out for readers and the reference
    from zoo.core.config import check_divisible, check_positive, check_probability, incidental
    from zoo.core.limits import MAX_VOCAB, ROLES, check_budget, sized, within_budget

__all__ = [
    "sized",
    "ROLES",
    "incidental",
    "check_positive",
    "check_divisible",
    "check_probability",
    "check_budget",
    "within_budget",
    "MAX_VOCAB",
]

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
