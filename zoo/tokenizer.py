"""The tokenizer contract shared by built-in and third-party tokenizer plugins.

Every tokenizer reserves the special tokens below at ids 0, 1, 2, so pipelines never
declare their own. Tokenizers built on Hugging Face ``tokenizers`` subclass
``TokenizersTokenizer`` and get encode, decode, save and load for free; the saved file is
always a ``tokenizer.json`` that ``tokenizers.Tokenizer.from_file`` reads.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar, Iterable, Sequence

PAD, UNK, CLS = "<pad>", "<unk>", "<cls>"
SPECIAL_TOKENS = (PAD, UNK, CLS)


class Tokenizer(ABC):
    special_tokens: ClassVar[tuple[str, ...]] = SPECIAL_TOKENS

    @classmethod
    @abstractmethod
    def train(cls, texts: Iterable[str], config) -> "Tokenizer":
        """Build the vocabulary from an iterator of training texts."""

    @abstractmethod
    def encode(self, text: str) -> list[int]: ...

    @abstractmethod
    def decode(self, ids: Sequence[int]) -> str: ...

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]

    @property
    @abstractmethod
    def vocab_size(self) -> int: ...

    @abstractmethod
    def token_to_id(self, token: str) -> int | None: ...

    @property
    def pad_id(self) -> int:
        return self.token_to_id(PAD)

    @property
    def unk_id(self) -> int:
        return self.token_to_id(UNK)

    @property
    def cls_id(self) -> int:
        return self.token_to_id(CLS)

    @abstractmethod
    def save(self, path: str | Path) -> None: ...

    @classmethod
    @abstractmethod
    def load(cls, path: str | Path) -> "Tokenizer": ...


class TokenizersTokenizer(Tokenizer):
    """A tokenizer backed by a ``tokenizers.Tokenizer`` (saved as tokenizer.json)."""

    def __init__(self, backend):
        self.backend = backend

    def encode(self, text: str) -> list[int]:
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.backend.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=True)

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return self.backend.decode_batch([list(ids) for ids in batch], skip_special_tokens=True)

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def save(self, path: str | Path) -> None:
        from zoo.files import atomic_write_text

        atomic_write_text(Path(path), self.backend.to_str(pretty=False))

    @classmethod
    def load(cls, path: str | Path) -> "TokenizersTokenizer":
        from tokenizers import Tokenizer as Backend

        return cls(Backend.from_file(str(path)))
