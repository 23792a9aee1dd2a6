"""The `wordpunct` tokenizer: a Hugging Face ``tokenizers`` WordLevel model over lowercased
words and punctuation marks (the ``Whitespace`` pre-tokenizer: ``\\w+`` or a run of other
non-space characters, as NLTK's WordPunctTokenizer). Words never seen in training, or rarer than ``min_frequency``, map
to <unk>. Decoding joins the tokens with spaces, so it gives back the words, not the exact
spacing or case."""

from __future__ import annotations

from collections.abc import Iterable

from zoo.plugin import SPECIAL_TOKENS, UNK, TokenizersTokenizer


class WordPunctTokenizer(TokenizersTokenizer):
    @classmethod
    def train(cls, texts: Iterable[str], config=None) -> WordPunctTokenizer:
        from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
        from tokenizers.models import WordLevel
        from zoo.plugins.fasttext import WordPunctConfig

        config = config or WordPunctConfig()
        backend = Tokenizer(WordLevel(unk_token=UNK))
        if config.lowercase:
            backend.normalizer = normalizers.Lowercase()
        backend.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(
            vocab_size=config.vocab_size,
            min_frequency=config.min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            show_progress=False,
        )  # ids 0, 1, 2
        backend.train_from_iterator(texts, trainer=trainer)
        return cls(backend)
