"""`char` tokenizer plugin: one token per character seen in the training split.

Characters never seen map to <unk>. Saved as a tokenizers WordLevel model, so the run's
tokenizer.json loads with ``tokenizers.Tokenizer.from_file`` like every other tokenizer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from zoo import SPECIAL_TOKENS, UNK, TokenizersTokenizer, hookimpl


@dataclass
class CharConfig:
    lowercase: bool = False  # fold case before building the vocabulary and encoding


class CharTokenizer(TokenizersTokenizer):
    def __init__(self, backend):
        super().__init__(backend)
        # One character is one dict lookup: in Python that is ~20x faster than the backend,
        # which builds an Encoding with offsets per token. Lowercasing is left to the
        # backend's normalizer, whose Unicode rules Python's str.lower need not match.
        self._ids = backend.get_vocab() if backend.normalizer is None else None
        self._unk = backend.token_to_id(UNK)

    def encode(self, text: str) -> list[int]:
        if self._ids is None:
            return super().encode(text)
        ids, unk = self._ids, self._unk
        return [ids.get(c, unk) for c in text]

    def encode_batch(self, texts):
        if self._ids is None:
            return super().encode_batch(texts)
        return [self.encode(t) for t in texts]

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
