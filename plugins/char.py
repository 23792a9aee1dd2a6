"""`char` tokenizer plugin: one token per character seen in the training split.

Characters never seen map to <unk>. Saved as a tokenizers WordLevel model, so the run's
tokenizer.json loads with ``tokenizers.Tokenizer.from_file`` like every other tokenizer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from zoo.hookspecs import hookimpl
from zoo.tokenizer import SPECIAL_TOKENS, UNK, TokenizersTokenizer


@dataclass
class CharConfig:
    lowercase: bool = False  # fold case before building the vocabulary and encoding


class CharTokenizer(TokenizersTokenizer):
    @classmethod
    def train(cls, texts: Iterable[str], config: CharConfig | None = None) -> "CharTokenizer":
        from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers
        from tokenizers.models import WordLevel

        config = config or CharConfig()
        seen: set[str] = set()
        for text in texts:
            seen.update(text.lower() if config.lowercase else text)
        vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
        for char in sorted(seen - set(vocab)):
            vocab[char] = len(vocab)
        backend = Tokenizer(WordLevel(vocab, unk_token=UNK))
        if config.lowercase:
            backend.normalizer = normalizers.Lowercase()
        # Every character, newlines included, is its own token.
        backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
        backend.decoder = decoders.Fuse()
        backend.add_special_tokens(list(SPECIAL_TOKENS))
        return cls(backend)


@hookimpl
def register_tokenizers(register):
    register("char", "zoo.plugins.char:CharTokenizer", config=CharConfig,
             description="one token per character seen in training; unseen characters are <unk>")
