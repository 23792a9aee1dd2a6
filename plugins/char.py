"""`char` tokenizer plugin: one token per character seen in the training split.

Characters never seen map to <unk>. Saved as a tokenizers WordLevel model, so the run's
tokenizer.json loads with ``tokenizers.Tokenizer.from_file`` like every other tokenizer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zoo.plugin import SPECIAL_TOKENS, UNK, TokenizersTokenizer, hookimpl
from zoo.plugin.data import unragged

if TYPE_CHECKING:  # annotations only; numpy is imported where it is used
    import numpy as np

# Training texts whose characters are counted together: rows of a dataset are short, while
# a language-modeling piece is 10,000 rows already (16 of Tiny Shakespeare's are 4 M
# characters: 45 MB at the peak of np.unique, against 160 MB for 64).
TEXTS_PER_PIECE = 16


@dataclass
class CharConfig:
    lowercase: bool = False  # fold case before building the vocabulary and encoding


def codepoints(text: str) -> np.ndarray:
    """The text's characters as an array of Unicode code points, with no per-character
    Python step."""
    import numpy as np  # here, not at the top: the plugin is imported by `zoo list`

    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


class CharTokenizer(TokenizersTokenizer):
    def __init__(self, backend):
        super().__init__(backend)
        # One character is one dict lookup, or for long texts one table lookup in NumPy:
        # both far faster than the backend, which builds an Encoding with offsets per token.
        # Lowercasing is left to the backend's normalizer, whose Unicode rules Python's
        # str.lower need not match.
        self._ids = backend.get_vocab() if backend.normalizer is None else None
        self._unk = backend.token_to_id(UNK)
        self._table = None if self._ids is None else self._lookup_table(self._ids, self._unk)

    @staticmethod
    def _lookup_table(vocab: dict[str, int], unk: int) -> np.ndarray:
        """ids by code point, up to the largest in the vocabulary; the last slot is <unk>
        for every code point beyond it."""
        import numpy as np

        chars = {ord(token): i for token, i in vocab.items() if len(token) == 1}
        table = np.full(max(chars, default=0) + 2, unk, dtype=np.int64)
        table[list(chars)] = list(chars.values())
        return table

    def encode(self, text: str) -> list[int]:
        if self._ids is None:
            return super().encode(text)
        ids, unk = self._ids, self._unk
        return [ids.get(c, unk) for c in text]

    def encode_batch(self, texts):
        if self._ids is None or not texts:
            return super().encode_batch(texts)
        return unragged(*self.encode_rows(texts))

    def encode_rows(self, texts):
        import numpy as np

        if self._table is None:
            return super().encode_rows(texts)
        # All texts joined and looked up at once; a text's ids are as many as its characters.
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
        return self.encode_text("".join(texts)), offsets

    def encode_text(self, text: str) -> np.ndarray:
        import numpy as np

        if self._table is None:
            return super().encode_text(text)
        table = self._table
        return table[np.minimum(codepoints(text), len(table) - 1)]

    @classmethod
    def train(cls, texts: Iterable[str], config: CharConfig | None = None) -> CharTokenizer:
        import numpy as np
        from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers
        from tokenizers.models import WordLevel

        config = config or CharConfig()
        texts, seen = iter(texts), set()
        # Texts are joined a few at a time and their characters found by one np.unique.
        while chunk := list(itertools.islice(texts, TEXTS_PER_PIECE)):
            text = "".join(map(str.lower, chunk) if config.lowercase else chunk)
            seen.update(np.unique(codepoints(text)).tolist())
        vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
        for char in sorted(map(chr, seen)):
            vocab.setdefault(char, len(vocab))
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
    register(
        "char",
        "zoo.plugins.char:CharTokenizer",
        config=CharConfig,
        description="one token per character seen in training; unseen characters are <unk>",
    )
