"""The tokenizer contract shared by built-in and third-party tokenizer plugins.

A tokenizer plugin registers a subclass of ``Tokenizer``:

- ``train(texts, config)`` (a classmethod) builds it from an iterable of training texts;
- ``encode`` / ``decode`` and their ``_batch`` forms turn text into ids and back;
  ``encode_text`` turns a long text (a batch of dataset rows) into one NumPy array, and
  ``encode_rows`` many texts into one ragged pair of arrays (ids and offsets);
- ``vocab_size``, ``token_to_id`` and the special-token ids ``pad_id``, ``unk_id``, ``cls_id``;
- ``frame`` (a property): the special ids placed before and after one text that a model reads
  whole (a text to classify, a text to fill in): ``<cls>`` first for zoo's own tokenizers, what
  a checkpoint's post-processor adds for a pretrained one (BERT: ``[CLS]`` ... ``[SEP]``).
  Pipelines place these, once; ``encode`` never adds special tokens itself;
- ``mask_id``: the id that hides a token from a masked language model: the tokenizer's mask
  token where it has one (a BERT checkpoint's ``[MASK]``), else its padding id, which a
  model otherwise never reads (padding is masked out of attention);
- ``save(path)`` and ``load(path)`` (a classmethod) write and read one file.

Every tokenizer reserves the special tokens ``<pad>``, ``<unk>``, ``<cls>`` at ids 0, 1, 2,
so pipelines never declare their own. Tokenizers built on Hugging Face ``tokenizers``
subclass ``TokenizersTokenizer`` and get encode, decode, save and load for free; their saved
file is a ``tokenizer.json`` that ``tokenizers.Tokenizer.from_file`` reads. Text that happens
to spell a special token (a literal ``"<pad>"``) is encoded as ordinary text, never as the
special id.

Pipelines train tokenizers through the cache, so a sweep over models trains each tokenizer
once per dataset and config::

    from zoo.plugin.data import dataset_key, train_cached

    tokenizer = train_cached(job.tokenizer.load(), job.tokenizer.name, job.tokenizer_config,
                             lambda: train_split[column], dataset_key(job.dataset, "train", column),
                             say=job.say)

``train_cached(tokenizer_cls, name, config, texts_fn, fingerprint, *, say=None)`` returns the
tokenizer from the cache when one was trained before with the same class, name, config and
training texts (``fingerprint`` must identify the texts exactly: ``dataset_key`` builds it
from the dataset fingerprint, the split and the column); otherwise it calls ``texts_fn()``,
trains, and stores the result. The cache lives in ``$ZOO_CACHE/tokenizers`` (default
``$ZOO_HOME/.cache/tokenizers``), one folder per key holding ``tokenizer.json`` and
``key.json`` (what the key was made of). Entries are written to a temporary folder and
renamed into place, so concurrent runs never see half an entry.

``compression(tokenizer, texts)`` gives the metrics every pipeline should report for its
tokenizer (``vocab_size`` and ``chars_per_token``), which ``zoo show RUN_ID`` prints.
"""

from __future__ import annotations

import itertools
import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from zoo.errors import ContractBroken

if TYPE_CHECKING:  # annotations only; numpy is imported where it is used
    import numpy as np

PAD, UNK, CLS = "<pad>", "<unk>", "<cls>"
SPECIAL_TOKENS = (PAD, UNK, CLS)
"""The special tokens every zoo vocabulary starts with: ``<pad>`` (id 0, padding), ``<unk>``
(id 1, text outside the vocabulary) and ``<cls>`` (id 2, put before a text read whole)."""


class Tokenizer(ABC):
    """A tokenizer: trained on a split's texts, then encodes and decodes, saves and loads.

    Subclasses implement ``train``, ``encode``, ``decode``, ``vocab_size``, ``save`` and
    ``load``; the batched and whole-split encoders (``encode_batch``, ``encode_text``,
    ``encode_rows``) have defaults built on ``encode``, which a vectorised tokenizer
    overrides. The special tokens (``SPECIAL_TOKENS``: ``<pad>``, ``<unk>``, ``<cls>``) are
    ids 0, 1 and 2; text that spells one is encoded as ordinary text."""

    special_tokens: ClassVar[tuple[str, ...]] = SPECIAL_TOKENS
    """The special tokens a trained vocabulary starts with (ids 0, 1, 2)."""
    cached: ClassVar[bool] = True
    """False for tokenizers that are loaded rather than trained (a checkpoint's own): the
    training cache then never stores or serves them."""

    @classmethod
    @abstractmethod
    def train(cls, texts: Iterable[str], config) -> Tokenizer:
        """Build the vocabulary from an iterable of training texts."""

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (no special tokens added)."""

    @abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``; special tokens are left out."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each text, as ``encode`` gives them (override it to batch faster)."""
        return [self.encode(t) for t in texts]

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """The text of each list of ids, as ``decode`` gives it."""
        return [self.decode(ids) for ids in batch]

    def encode_text(self, text: str) -> np.ndarray:
        """A long text (many lines) as one array of ids. Lines are encoded as one batch,
        each keeping its newline at its end; tokenizers with a faster way override this."""
        import numpy as np  # not on the path of `zoo list`

        ids = self.encode_batch(text.splitlines(keepends=True))
        return np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64)

    def encode_rows(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Many texts, each encoded on its own, as one ragged array: every text's ids one
        after another, and offsets [N + 1] (text i is ``ids[offsets[i]:offsets[i + 1]]``).
        Built from ``encode_batch`` without a Python step per text; tokenizers with a
        vectorised encoder override it."""
        return ragged(self.encode_batch(texts))

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """The number of ids (a property): every id is below it; it sizes the embedding."""

    @abstractmethod
    def token_to_id(self, token: str) -> int | None:
        """The id of one token of the vocabulary (a special token included), None when the
        vocabulary does not hold it."""

    def _reserved_id(self, token: str) -> int:
        """The id of one of the special tokens every zoo tokenizer reserves."""
        found = self.token_to_id(token)
        if found is None:
            raise ValueError(f"the tokenizer has no {token} token, which zoo reserves")
        return found

    @property
    def pad_id(self) -> int:
        """The id of ``<pad>`` (a property), what padded positions hold."""
        return self._reserved_id(PAD)

    @property
    def unk_id(self) -> int | None:
        """The id of ``<unk>`` (a property), what text outside the vocabulary becomes; None
        for a tokenizer without one (a checkpoint's byte-level tokenizer)."""
        return self._reserved_id(UNK)

    @property
    def cls_id(self) -> int | None:
        """The id of ``<cls>`` (a property), which pipelines put before a text read whole;
        None for a tokenizer without one."""
        return self._reserved_id(CLS)

    @property
    def special_ids(self) -> dict[str, int | None]:
        """Each special token's id (None for one the tokenizer lacks)."""
        return {token: self.token_to_id(token) for token in self.special_tokens}

    @property
    def mask_id(self) -> int:
        """The id that hides a token from a masked language model: zoo's tokenizers lend
        their padding id (attention never reads padding, so the id is free for this)."""
        return self.pad_id

    @property
    def frame(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The special ids before and after one text a model reads whole: ``<cls>`` first,
        nothing after. A checkpoint's tokenizer returns what its model was trained with."""
        return (self._reserved_id(CLS),), ()

    @abstractmethod
    def save(self, path: str | Path) -> None:
        """Write the whole tokenizer to one file, ``path`` (a run's ``tokenizer.json``),
        atomically (``zoo.plugin.io.atomic_write_text``)."""

    @classmethod
    @abstractmethod
    def load(cls, path: str | Path) -> Tokenizer:
        """The tokenizer ``save`` wrote to ``path``; a damaged file raises."""


class TokenizersTokenizer(Tokenizer):
    """A tokenizer backed by a ``tokenizers.Tokenizer`` (saved as tokenizer.json)."""

    def __init__(self, backend):
        # Not saved in tokenizer.json, so set on every construction: a literal "<pad>" in
        # the input is text, not the padding token.
        backend.encode_special_tokens = True
        self.backend = backend

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``; a special token written in the text is text, not the token."""
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each text, encoded by the backend in one call."""
        # encode_batch_fast (tokenizers >= 0.20) skips the offsets nobody here reads.
        batch = getattr(self.backend, "encode_batch_fast", self.backend.encode_batch)
        return list(map(operator.attrgetter("ids"), batch(list(texts), add_special_tokens=False)))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``; special tokens are left out."""
        return self.backend.decode(list(ids), skip_special_tokens=True)

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """The text of each list of ids, decoded by the backend in one call."""
        return self.backend.decode_batch(list(map(list, batch)), skip_special_tokens=True)

    @property
    def vocab_size(self) -> int:
        """Tokens in the vocabulary, the special tokens included (a property)."""
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token`` (a special token such as ``<pad>`` included), None if absent."""
        return self.backend.token_to_id(token)

    def save(self, path: str | Path) -> None:
        """The backend's tokenizer.json at ``path``, written atomically."""
        from zoo.io import atomic_write_text

        atomic_write_text(Path(path), self.backend.to_str(pretty=False))

    @classmethod
    def load(cls, path: str | Path) -> TokenizersTokenizer:
        """The tokenizer saved at ``path`` (a tokenizer.json)."""
        from tokenizers import Tokenizer as Backend

        return cls(Backend.from_file(str(path)))


def ragged(encoded: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Lists of ids as one flat int64 array and offsets [N + 1] (``map`` and
    ``itertools.chain`` walk the lists in C, not in Python steps)."""
    import numpy as np

    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    ids = np.fromiter(
        itertools.chain.from_iterable(encoded), dtype=np.int64, count=int(offsets[-1])
    )
    return ids, offsets


def check_ids(tokenizer: Tokenizer, ids: np.ndarray) -> np.ndarray:
    """``ids`` (what ``tokenizer`` encoded), checked to lie inside its vocabulary
    (``0 <= id < vocab_size``): an id outside would index past the model's embedding, or
    wrap around in a smaller dtype. One outside is a ``ContractBroken`` naming the
    tokenizer, which zoo reports as its plugin's failure."""
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= tokenizer.vocab_size):
        bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
        raise ContractBroken(
            f"{type(tokenizer).__qualname__} encoded an id {bad} outside its vocabulary "
            f"(vocab_size {tokenizer.vocab_size}: ids 0 to {tokenizer.vocab_size - 1})",
            tokenizer,
        )
    return ids


def unragged(ids: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
    """``ragged``'s inverse: one list of ids per text (sliced out of one flat list by
    ``map``, not in Python steps)."""
    flat = ids.tolist()
    return list(map(flat.__getitem__, map(slice, offsets[:-1].tolist(), offsets[1:].tolist())))


def compression(
    tokenizer: Tokenizer, texts: Sequence[str], encoded: Sequence[Sequence[int]] | None = None
) -> dict:
    """The tokenizer's vocabulary size and characters per token over ``texts``."""
    encoded = tokenizer.encode_batch(list(texts)) if encoded is None else encoded
    chars = sum(map(len, texts))
    tokens = sum(map(len, encoded))
    return {"vocab_size": tokenizer.vocab_size, "chars_per_token": chars / max(1, tokens)}
