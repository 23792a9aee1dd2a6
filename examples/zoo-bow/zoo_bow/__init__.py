"""zoo-bow: registers the `bow` architecture, the `words` tokenizer and the `bow-small` preset.

This module is imported whenever zoo starts, so it stays light: config dataclasses and
hooks only. The torch network lives in zoo_bow.model and is imported on first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zoo.plugin import SPECIAL_TOKENS, UNK, TokenizersTokenizer, hookimpl
from zoo.plugin.config import sized


@dataclass
class BowConfig:
    n_embd: int = sized(64, role="width")
    block_size: int = sized(64, role="context")  # longest input, in tokens

    def __post_init__(self):
        if self.n_embd <= 0 or self.block_size <= 0:
            raise ValueError("n_embd and block_size must be positive")


@dataclass
class WordsConfig:
    vocab_size: int = sized(5000, role="vocabulary")  # the most frequent words; the rest are <unk>
    min_frequency: int = 1


class WordsTokenizer(TokenizersTokenizer):
    """Whitespace-separated words (punctuation split off), decoded with single spaces."""

    @classmethod
    def train(cls, texts: Iterable[str], config: WordsConfig | None = None) -> WordsTokenizer:
        from tokenizers import Tokenizer, pre_tokenizers
        from tokenizers.models import WordLevel
        from tokenizers.trainers import WordLevelTrainer

        config = config or WordsConfig()
        backend = Tokenizer(WordLevel(unk_token=UNK))
        backend.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = WordLevelTrainer(
            vocab_size=config.vocab_size,
            min_frequency=config.min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
        )
        backend.train_from_iterator(texts, trainer=trainer)
        return cls(backend)


@hookimpl
def register_architectures(register):
    register(
        "bow",
        "zoo_bow.model:build",
        config=BowConfig,
        tasks=("language-modeling", "classification", "next-item"),
        description="bag of embeddings: the mean of the context's token embeddings",
    )


@hookimpl
def register_tokenizers(register):
    register(
        "words",
        WordsTokenizer,
        config=WordsConfig,
        description="whitespace words, the most frequent vocab_size of them",
    )


@hookimpl
def register_presets(register):
    # what a [models.NAME] table of registry.toml says, shipped with the package
    register(
        "bow-small",
        architecture="bow",
        tokenizer="words",
        description="a small bag of words: 32-wide embeddings of the 2,000 most frequent words",
        set={"n_embd": 32, "vocab_size": 2000},
    )
