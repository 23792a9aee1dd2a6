"""The ``bits`` dataset: random bit strings and their value as a binary fraction."""

from __future__ import annotations

import random


def value(bits: str) -> float:
    """'1011' -> 0.1011 in base 2 = 0.6875."""
    return sum(int(b) / 2 ** (i + 1) for i, b in enumerate(bits))


def load(config):
    """A DatasetDict with train, validation and test splits (80/10/10) of ``config.rows``
    strings (``config`` is a ``BitsConfig``: ``--set rows=400`` reaches it)."""
    import datasets

    rows, length = config.rows, config.length
    rng = random.Random(config.seed)
    texts = ["".join(rng.choice("01") for _ in range(length)) for _ in range(rows)]
    labels = [value(t) for t in texts]
    cut = [0, rows * 8 // 10, rows * 9 // 10, rows]
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.Value("float32")}
    )
    return datasets.DatasetDict(
        {
            role: datasets.Dataset.from_dict(
                {"text": texts[a:b], "label": labels[a:b]}, features=features
            )
            for role, a, b in zip(("train", "validation", "test"), cut, cut[1:])
        }
    )
