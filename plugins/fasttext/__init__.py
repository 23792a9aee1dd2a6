"""`fasttext` plugin: the fastText classifier (Joulin et al. 2016, "Bag of Tricks for
Efficient Text Classification") and the `wordpunct` tokenizer it pairs with.

fastText averages the embeddings of a text's words and of its word bigrams (hashed into a
fixed number of buckets) and classifies that mean with one linear layer: no attention, no
hidden layer. It is the strong linear baseline a transformer trained from scratch should
beat. The architecture builds the bigrams itself from adjacent token ids, so it works with
any tokenizer; with `wordpunct` (lowercased words and punctuation marks, one token each) the
features are fastText's own.

Configs live here (no torch import, so listing the zoo stays fast); the network is in
``model.py`` and the tokenizer in ``wordpunct.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.plugin import hookimpl
from zoo.plugin.config import sized


@dataclass
class FastTextConfig:
    dim: int = sized(
        64, role="width"
    )  # embedding width (fastText's default for supervised learning is 100)
    ngrams: int = 2  # 1: words only; 2: words and word bigrams (fastText's -wordNgrams 2)
    buckets: int = sized(
        200_000, at_most=2**24
    )  # hashed bigram rows (fastText's default is 2M; small sets need few)
    dropout: float = 0.0  # on the averaged vector, before the linear layer
    block_size: int = sized(
        256, role="context"
    )  # longest input in tokens, <cls> included (inputs are truncated to it)

    def __post_init__(self):
        for name in ("dim", "buckets", "block_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.ngrams not in (1, 2):
            raise ValueError(f"ngrams must be 1 or 2, got {self.ngrams}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


@dataclass
class WordPunctConfig:
    vocab_size: int = sized(
        30_000, role="vocabulary"
    )  # at most this many tokens (the special tokens included)
    min_frequency: int = 1  # a word must occur this often in training to get its own id
    lowercase: bool = True

    def __post_init__(self):
        if self.vocab_size < 4:
            raise ValueError(
                f"vocab_size must be at least 4 (3 special tokens and a word), "
                f"got {self.vocab_size}"
            )
        if self.min_frequency < 1:
            raise ValueError(f"min_frequency must be at least 1, got {self.min_frequency}")


def memory(config: FastTextConfig, vocab_size: int | None) -> int:
    """Bytes to train (16 per parameter): the embedding table, (the vocabulary's rows when
    known + the hashed bigram buckets) x dim."""
    return 16 * ((vocab_size or 0) + (config.buckets if config.ngrams == 2 else 0)) * config.dim


@hookimpl
def register_architectures(register):
    register(
        "fasttext",
        "zoo.plugins.fasttext.model:build",
        config=FastTextConfig,
        tasks=("classification",),
        memory=memory,
        description="fastText: mean of word and hashed-bigram embeddings, then one "
        "linear layer (Joulin et al. 2016)",
    )


@hookimpl
def register_tokenizers(register):
    register(
        "wordpunct",
        "zoo.plugins.fasttext.wordpunct:WordPunctTokenizer",
        config=WordPunctConfig,
        description="one token per word or punctuation mark seen in training "
        "(lowercased); unseen words are <unk>",
    )
