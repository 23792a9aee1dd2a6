"""`digits-transduction` dataset plugin: pairs of digit sequences, the target a fixed
function of the source, as quick correctness checks for seq2seq models (exact match).

Rules (the ``rule`` option):

  reverse   "3 1 4 1 5"  -> "5 1 4 1 3"
  sort      "3 1 4 1 5"  -> "1 1 3 4 5"
  add       "4 1 3 + 8 5" -> "2 7 3"      (314 + 58 = 372, least significant digit first)

``add`` writes its two numbers and their sum digit by digit, least significant digit first
(``add_order = "least-first"``, the task's definition): each output digit then depends on the
digits read so far and one carry, as in written addition. ``add_order = "most-first"``
writes them as numbers are usually written ("3 1 4 + 5 8" -> "3 7 2"), which asks a
left-to-right decoder for the carries of digits it has not written yet.

Sources hold ``min_len`` to ``max_len`` digits (for ``add``, each number up to
``max_len`` digits). Rows are drawn from ``random.Random`` seeded by the seed and the split,
so every machine builds the same splits; a source drawn for validation or test that also
occurs in training is drawn again, so the evaluation splits hold only unseen sources.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from zoo.plugin.config import sized

RULES = ("reverse", "sort", "add")
ADD_ORDERS = ("least-first", "most-first")
SPLITS = ("train", "validation", "test")


@dataclass
class TransductionConfig:
    rule: str = "reverse"
    # add: the digits' order in the numbers and the sum (see the module docstring)
    add_order: str = "least-first"
    seed: int = 0
    min_len: int = 3
    max_len: int = sized(8, at_most=64)
    train_size: int = sized(10000, role="rows")
    validation_size: int = sized(500, role="rows")
    test_size: int = sized(500, role="rows")

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if self.add_order not in ADD_ORDERS:
            raise ValueError(
                f"add_order must be one of {', '.join(ADD_ORDERS)}, got {self.add_order!r}"
            )
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got {self.min_len}, {self.max_len}")
        for name in ("train_size", "validation_size", "test_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


def _digits(rng: random.Random, cfg: TransductionConfig) -> list[int]:
    n = cfg.min_len + int(rng.random() * (cfg.max_len - cfg.min_len + 1))
    return [int(rng.random() * 10) for _ in range(n)]


def pair(rng: random.Random, cfg: TransductionConfig) -> tuple[str, str]:
    """One (source, target) of the rule."""
    if cfg.rule == "add":
        a, b = _digits(rng, cfg), _digits(rng, cfg)  # most significant digit first
        total = [int(c) for c in str(int("".join(map(str, a))) + int("".join(map(str, b))))]
        if cfg.add_order == "least-first":
            a, b, total = a[::-1], b[::-1], total[::-1]
        return f"{_text(a)} + {_text(b)}", _text(total)
    items = _digits(rng, cfg)
    target = items[::-1] if cfg.rule == "reverse" else sorted(items)
    return _text(items), _text(target)


def _text(items) -> str:
    return " ".join(str(i) for i in items)


def rows(cfg: TransductionConfig) -> dict[str, list[dict]]:
    """Every split's rows; validation and test sources never occur in training."""
    seen: set[str] = set()
    out = {}
    for split in SPLITS:
        rng = random.Random(f"digits-transduction:{cfg.rule}:{cfg.seed}:{split}")
        size = getattr(cfg, f"{split}_size")
        found: list[dict] = []
        for _ in range(100 * size):  # bounded: a tiny space may run out of unseen sources
            if len(found) == size:
                break
            source, target = pair(rng, cfg)
            if split != "train" and source in seen:
                continue
            found.append({"source": source, "target": target})
        if len(found) < size:
            raise ValueError(
                f"only {len(found)} {split} sources unseen in training; raise max_len "
                "or lower the sizes"
            )
        if split == "train":
            seen = {row["source"] for row in found}
        out[split] = found
    return out


def load(config: TransductionConfig):
    """The registered loader: the splits as a ``datasets.DatasetDict``."""
    import datasets

    from zoo.plugin import ZooError

    try:
        splits = rows(config)
    except ValueError as exc:
        raise ZooError(f"digits-transduction dataset: {exc}") from None
    return datasets.DatasetDict(
        {split: datasets.Dataset.from_list(found) for split, found in splits.items()}
    )
