"""`nbsvm` architecture plugin: NBSVM (Wang and Manning 2012, "Baselines and Bigrams"), the
strong linear baseline for sentence classification beside `fasttext`.

A text's features are its tokens and hashed token bigrams (each counted once) and,
optionally, the hashed character 2- to 5-grams of its words. Each feature is scaled by its
log-count ratio (how much likelier it is in one class's texts than in the others') and one
logistic regression per class is fitted on the scaled features, to convergence, before the
training loop (L-BFGS, L2 penalty with inverse strength ``c`` as scikit-learn's C). The
fitted weights are kept; the training loop has nothing left to learn.

Config and registration only (torch is imported by ``model.py``, on first use).
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.plugin import hookimpl
from zoo.plugin.config import check_positive, sized


@dataclass
class NBSVMConfig:
    buckets: int = sized(262_144, at_most=2**24)  # hashed token-bigram rows (0: tokens only)
    char_buckets: int = 0  # hashed character 2- to 5-gram rows of each word (0: none)
    c: float = 1.0  # inverse L2 strength of the regressions, as scikit-learn's C
    block_size: int = sized(
        256, role="context"
    )  # longest input in tokens, <cls> included (inputs are truncated to it)

    def __post_init__(self):
        check_positive(self, "c", "block_size")
        for name in ("buckets", "char_buckets"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (none) or positive, got {getattr(self, name)}")


def memory(config: NBSVMConfig, vocab_size: int | None) -> int:
    """Bytes to fit: the feature table's float64 weights and the fit's working copies
    (about 8 per row and class, for at most a few classes: 64 bytes per row); its rows are
    the vocabulary's (when known), the bigram buckets and the character-gram buckets."""
    return 64 * ((vocab_size or 0) + config.buckets + config.char_buckets)


@hookimpl
def register_architectures(register):
    register(
        "nbsvm",
        "zoo.plugins.nbsvm.model:build",
        config=NBSVMConfig,
        tasks=("classification",),
        memory=memory,
        description="NBSVM: logistic regressions on log-count-ratio scaled token, bigram "
        "and character n-gram features, fitted before training (Wang and "
        "Manning 2012)",
    )
