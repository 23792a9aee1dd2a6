"""`digits` dataset plugin: synthetic digit sequences whose next item is exactly learnable.

Each row is a context of digits written as text ("1 2 3 4 5"), its next item ("6"), the
rule family ("arithmetic") and the rule's parameters ("1 1"). Families (all mod 10):

  arithmetic  x[i] = a + i*d            parameters (a, d), d in 1..9
  fibonacci   x[i] = x[i-1] + x[i-2]     parameters (x[0], x[1]), not both 0
  periodic    a pattern repeated         parameters the pattern (length in `periods`,
                                         not itself a repetition of a shorter one)

Every sequence starts at its parameters (no offset), so a rule is named by them. A context
is long enough to single out its next item: at least 3 items for arithmetic ("1 2 3"), 4 for
Fibonacci-like ("1 2 3" could be either; "1 2 3 5" cannot), and two full periods for periodic
patterns; `check_identifiable` proves that no context of the configured lengths continues
two ways. Lengths are drawn uniformly from each rule's allowed range. A seeded
share of each family's parameters is held out and dealt alternately into two disjoint
sets: the `heldout_validation` split uses only the first (to choose settings by how well a
model generalises to rules it never saw), the `heldout` split only the second (to report
it, once), and `train`, `validation` and `test` use only the rest. A training rule whose context equals a
held-out one at some length (an arithmetic step of 5 is also a period-2 pattern) is dropped
from training too, so no held-out context is ever seen in training.

The splits are built with ``datasets.Dataset.from_generator`` from the config and the seed
alone, so they are the same on every machine, carry a stable fingerprint, and are cached
like any dataset. Randomness comes only from ``random.Random(seed).random()``, whose
sequence Python guarantees across versions.

This module imports no torch and imports ``datasets`` only when data is built.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import random
from dataclasses import dataclass, field
from pathlib import Path

from zoo.plugin.config import sized

FAMILIES = ("arithmetic", "fibonacci", "periodic")
SPLITS = ("train", "validation", "test", "heldout", "heldout_validation")
SIZES = tuple(f"{split}_size" for split in SPLITS)
MAX_PERIOD = 4  # 10**4 patterns; longer periods would make the rule tables huge
SHORTEST = {"arithmetic": 3, "fibonacci": 4}  # periodic: two full periods


@dataclass
class DigitsDataConfig:
    seed: int = 0  # chooses the held-out rules and draws every row
    families: list[str] = field(default_factory=lambda: list(FAMILIES))
    min_len: int = 3  # context lengths in digits; each family also has its own shortest
    max_len: int = sized(8, at_most=2**16)
    periods: list[int] = field(default_factory=lambda: [2, 3])  # pattern lengths of `periodic`
    heldout_fraction: float = 0.2  # share of each family's rule parameters kept out of training
    # Contexts whose rules are never held out (where a rule of these families and lengths
    # shows them): the documentation's examples, so a trained model can demonstrate them.
    always_train: list[str] = field(default_factory=lambda: ["1 2 3", "7 8 9", "2 4 6"])
    train_size: int = sized(20000, role="rows")
    validation_size: int = sized(2000, role="rows")
    test_size: int = sized(2000, role="rows")
    heldout_size: int = sized(2000, role="rows")
    heldout_validation_size: int = sized(2000, role="rows")

    def __post_init__(self):
        self.families = list(self.families)
        self.periods = [int(p) for p in self.periods]
        self.always_train = [" ".join(str(c).split()) for c in self.always_train]
        for context in self.always_train:
            if not all(len(item) == 1 and item.isdigit() for item in context.split()):
                raise ValueError(f"always_train holds digit contexts like '1 2 3', not {context!r}")
        unknown = [f for f in self.families if f not in FAMILIES]
        if unknown or not self.families:
            raise ValueError(
                f"families must be a non-empty list of {', '.join(FAMILIES)}; got {self.families}"
            )
        if len(set(self.families)) != len(self.families):
            raise ValueError(f"families are listed twice: {self.families}")
        if not 2 <= self.min_len <= self.max_len:
            raise ValueError(f"need 2 <= min_len <= max_len, got {self.min_len} and {self.max_len}")
        if "periodic" in self.families and (
            not self.periods or any(not 2 <= p <= MAX_PERIOD for p in self.periods)
        ):
            raise ValueError(f"periods must be lengths from 2 to {MAX_PERIOD}, got {self.periods}")
        for family in self.families:
            for size in self.periods if family == "periodic" else [2]:
                if not self.lengths(family, (0,) * size):
                    raise ValueError(
                        f"max_len {self.max_len} is too short for {family}"
                        + (f" patterns of {size}" if family == "periodic" else "")
                    )
        if not 0 < self.heldout_fraction < 1:
            raise ValueError(
                f"heldout_fraction must be between 0 and 1, got {self.heldout_fraction}"
            )
        for name in SIZES:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    def lengths(self, family: str, params: tuple[int, ...]) -> range:
        """The context lengths a rule is shown at."""
        shortest = 2 * len(params) if family == "periodic" else SHORTEST[family]
        return range(max(self.min_len, shortest), self.max_len + 1)


# -- rules ---------------------------------------------------------------------------------
def rules(family: str, config: DigitsDataConfig) -> list[tuple[int, ...]]:
    """Every parameter tuple of a family, in a fixed order."""
    if family == "arithmetic":
        return [(a, d) for a in range(10) for d in range(1, 10)]
    if family == "fibonacci":
        return [(a, b) for a in range(10) for b in range(10) if (a, b) != (0, 0)]
    if family == "periodic":
        return [
            p
            for n in sorted(set(config.periods))
            for p in itertools.product(range(10), repeat=n)
            if _primitive(p)
        ]
    raise ValueError(f"unknown family {family!r}")


def _primitive(pattern: tuple[int, ...]) -> bool:
    """Not a repetition of a shorter pattern ((1, 2, 1, 2) is period 2, (3, 3) period 1)."""
    n = len(pattern)
    return not any(n % q == 0 and pattern == pattern[:q] * (n // q) for q in range(1, n))


def sequence(family: str, params: tuple[int, ...], n: int) -> list[int]:
    """The first n items of the rule."""
    if family == "arithmetic":
        a, d = params
        return [(a + i * d) % 10 for i in range(n)]
    if family == "fibonacci":
        items = list(params)
        while len(items) < n:
            items.append((items[-1] + items[-2]) % 10)
        return items[:n]
    if family == "periodic":
        return [params[i % len(params)] for i in range(n)]
    raise ValueError(f"unknown family {family!r}")


def check_identifiable(config: DigitsDataConfig) -> None:
    """Fail when some context continues one way under one rule and another way under
    another: then no model could be exactly right, and the dataset would not be a check."""
    seen: dict[tuple, tuple[int, str, tuple]] = {}
    for family in config.families:
        for params in rules(family, config):
            items = sequence(family, params, config.max_len + 1)
            for length in config.lengths(family, params):
                context, target = tuple(items[:length]), items[length]
                other = seen.setdefault(context, (target, family, params))
                if other[0] != target:
                    raise ValueError(
                        f"contexts of {length} digits are ambiguous: {_text(context)} continues "
                        f"with {other[0]} ({other[1]} {_text(other[2])}) and with {target} "
                        f"({family} {_text(params)}); raise min_len"
                    )


def split_rules(config: DigitsDataConfig) -> tuple[dict, dict, dict]:
    """(training rules, held-out rules to report on, held-out rules to choose on) per
    family, chosen with the seed."""
    rng = random.Random(f"digits-rules:{config.seed}")
    kept = {tuple(int(i) for i in c.split()) for c in config.always_train}
    train, heldout, choosing = {}, {}, {}
    for family in config.families:
        pool = _shuffled(rules(family, config), rng)
        fixed = [p for p in pool if kept.intersection(contexts(family, p, config))]
        pool = [p for p in pool if p not in fixed]
        count = min(len(pool), max(1, round(config.heldout_fraction * (len(pool) + len(fixed)))))
        if count < 2:
            raise ValueError(
                f"fewer than two {family} rules are left to hold out (one to choose on, one "
                "to report on); raise heldout_fraction or shorten always_train"
            )
        choosing[family], heldout[family] = pool[:count:2], pool[1:count:2]
        train[family] = fixed + pool[count:]
    held_contexts = {
        context
        for held in (heldout, choosing)
        for f, pool in held.items()
        for p in pool
        for context in contexts(f, p, config)
    }
    for family, pool in train.items():
        clear = [p for p in pool if held_contexts.isdisjoint(contexts(family, p, config))]
        if not clear:
            raise ValueError(
                f"every {family} rule collides with a held-out one; lower heldout_fraction"
            )
        train[family] = clear
    return train, heldout, choosing


def contexts(family: str, params: tuple[int, ...], config: DigitsDataConfig) -> list[tuple]:
    items = sequence(family, params, config.max_len)
    return [tuple(items[:n]) for n in config.lengths(family, params)]


def _shuffled(items: list, rng: random.Random) -> list:
    items = list(items)
    for i in range(len(items) - 1, 0, -1):  # Fisher-Yates on rng.random() only
        j = _below(rng, i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def _below(rng: random.Random, n: int) -> int:
    return min(n - 1, int(rng.random() * n))


def _text(items) -> str:
    return " ".join(str(i) for i in items)


# -- rows ----------------------------------------------------------------------------------
def generate_rows(config: dict, split: str, source: str = ""):
    """Yield the rows of one split. ``source`` (a hash of this file) only keys the cache."""
    cfg = DigitsDataConfig(**config)
    train, heldout, choosing = split_rules(cfg)
    pools = {"heldout": heldout, "heldout_validation": choosing}.get(split, train)
    rng = random.Random(f"digits-rows:{cfg.seed}:{split}")
    for _ in range(getattr(cfg, f"{split}_size")):
        family = cfg.families[_below(rng, len(cfg.families))]
        params = pools[family][_below(rng, len(pools[family]))]
        lengths = cfg.lengths(family, params)
        length = lengths[_below(rng, len(lengths))]
        items = sequence(family, params, length + 1)
        yield {
            "text": _text(items[:-1]),
            "target": str(items[-1]),
            "family": family,
            "rule": _text(params),
        }


def _source_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def build(config: DigitsDataConfig, cache_dir: str | None = None):
    """The five splits of a checked config (see ``load``) as a ``datasets.DatasetDict``."""
    import datasets

    features = datasets.Features(
        {name: datasets.Value("string") for name in ("text", "target", "family", "rule")}
    )
    options, source = dataclasses.asdict(config), _source_hash()
    return datasets.DatasetDict(
        {
            split: datasets.Dataset.from_generator(
                generate_rows,
                features=features,
                cache_dir=cache_dir,
                split=datasets.Split(split),
                gen_kwargs={"config": options, "split": split, "source": source},
            )
            for split in SPLITS
        }
    )


# What building the splits costs (measured on one core): the rule tables hold every context
# of every rule (a tuple slot per digit, ~160 bytes per context) and are walked three times
# at about a microsecond per digit; a row takes ~40 us plus ~1 us per digit, and ~10 bytes
# per token (about two per digit, ~40 of overhead) while it is encoded and trained on. At
# the largest values allowed, a run peaks at about 0.7 GB (max_len) and 1.5 GB (train_size).
TABLE_BYTES_PER_DIGIT, TABLE_BYTES_PER_CONTEXT, TABLE_SECONDS_PER_DIGIT = 8, 160, 3e-6
ROW_SECONDS, ROW_SECONDS_PER_DIGIT, ROW_BYTES_PER_TOKEN, ROW_TOKENS = 40e-6, 1e-6, 10, 40


def table_cost(config: DigitsDataConfig, max_len: int, rule_count: int) -> tuple[float, float]:
    """(bytes, seconds) of the rule tables for contexts up to ``max_len`` digits."""
    lengths = range(min(config.min_len, max_len), max_len + 1)
    digits = sum(lengths)
    return (
        rule_count * (TABLE_BYTES_PER_DIGIT * digits + TABLE_BYTES_PER_CONTEXT * len(lengths)),
        rule_count * TABLE_SECONDS_PER_DIGIT * digits,
    )


def row_cost(config: DigitsDataConfig, rows: int) -> tuple[float, float]:
    """(bytes, seconds) of ``rows`` rows of the configured lengths."""
    mean = (config.min_len + config.max_len) / 2
    return (
        rows * ROW_BYTES_PER_TOKEN * (2 * mean + ROW_TOKENS),
        rows * (ROW_SECONDS + ROW_SECONDS_PER_DIGIT * mean),
    )


def check_cost(config: DigitsDataConfig) -> None:
    """max_len and the split sizes within zoo's budget for building a dataset (exit 2 with
    the largest value that fits), before any table or row exists."""
    from zoo.plugin.config import check_budget, within_budget

    def fits(cost):
        return within_budget(*cost)

    count = sum(len(rules(family, config)) for family in config.families)
    need = table_cost(config, config.max_len, count)
    if not fits(need):
        low, high = config.min_len, config.max_len  # the largest max_len that fits
        while low < high:
            middle = (low + high + 1) // 2
            if fits(table_cost(config, middle, count)):
                low = middle
            else:
                high = middle - 1
        check_budget(
            "dataset.max_len",
            config.max_len,
            need_bytes=need[0],
            need_seconds=need[1],
            maximum=low,
            what="digits dataset: ",
        )
    sizes = {name: getattr(config, name) for name in SIZES}
    rows = sum(sizes.values())
    need = row_cost(config, rows)
    if not fits(need):
        name = max(sizes, key=lambda size: sizes[size])  # the setting that makes it too big
        room = max(n for n in _powers_below(rows) if fits(row_cost(config, n)))
        check_budget(
            f"dataset.{name}",
            sizes[name],
            need_bytes=need[0],
            need_seconds=need[1],
            maximum=max(1, int(room) - (rows - sizes[name])),
            what="digits dataset: ",
        )


def _powers_below(limit: int):
    """1 and every count up to ``limit`` in steps of about 1%: candidates for a maximum."""
    n = 1
    while n <= limit:
        yield n
        n = max(n + 1, int(n * 1.01))


def load(config: DigitsDataConfig):
    """The registered loader. zoo builds the config from the catalogue entry's options and
    --set, checked against the fields; what the fields cannot say alone is checked here."""
    from zoo.plugin import ZooError

    check_cost(config)  # before any rule table or row is built
    try:
        check_identifiable(config)
        split_rules(config)  # fail here, with one line, rather than inside the generator
    except ValueError as exc:
        raise ZooError(f"digits dataset: {exc}") from None
    return build(config)
