"""The `pretrained` tokenizer: a checkpoint's own (fast) tokenizer, so a pretrained model
fine-tunes with the vocabulary it was trained on.

zoo's special roles map onto the checkpoint's tokens: padding is its pad token (else its
end-of-sequence, else its unknown token), unknown is its unk token, and the token the
classification pipeline puts first is its [CLS] (else its beginning-of-sequence token).
The checkpoint's ``tokenizer.json`` may pad every text to a fixed length and truncate it;
both are turned off, since zoo pads, truncates and masks itself (a checkpoint's padding
counted as text would be attended to and cut). The special tokens its post-processor puts
around a text (BERT: ``[CLS] text [SEP]``; GPT-2: none) are the tokenizer's ``frame``, which
the pipelines place once, so the model reads what it was trained on.
The run folder keeps ``tokenizer.json`` (the backend, as ``tokenizers`` writes it) and,
next to it, ``special_tokens_map.json`` with those roles, in transformers' format.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from zoo.plugin import CLS, PAD, UNK, TokenizersTokenizer, ZooError
from zoo.plugin.io import atomic_write_text, load_json

ROLES = "special_tokens_map.json"
# zoo role -> the checkpoint's tokens to use for it, first found wins
FALLBACKS = {
    PAD: ("pad_token", "eos_token", "unk_token"),
    UNK: ("unk_token",),
    CLS: ("cls_token", "bos_token", "eos_token"),
}


class PretrainedTokenizer(TokenizersTokenizer):
    cached = False  # loaded, not trained: nothing to save, and the checkpoint may change

    def __init__(self, backend, roles: dict[str, str]):
        backend.no_padding()  # zoo pads to each batch's longest text and masks the padding
        backend.no_truncation()  # zoo cuts to block_size, around the frame
        super().__init__(backend)
        self.roles = roles  # e.g. {"pad_token": "[PAD]", "cls_token": "[CLS]"}
        self._frame = post_processor_frame(backend)

    @classmethod
    def train(cls, texts: Iterable[str], config) -> PretrainedTokenizer:
        from transformers import AutoTokenizer
        from zoo.plugins.transformers.configs import check_source

        try:  # a missing folder, or a Hub id with no network: one line, at once
            check_source(config.pretrained)
        except ValueError as exc:
            raise ZooError(str(exc)) from None
        check_file_sizes(config.pretrained)
        try:
            loaded = AutoTokenizer.from_pretrained(config.pretrained)
        except Exception as exc:
            raise ZooError(
                f"cannot load the tokenizer of {config.pretrained!r}: "
                f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc!r}"
            ) from None
        backend = getattr(loaded, "backend_tokenizer", None)
        if backend is None:
            raise ZooError(
                f"the tokenizer of {config.pretrained!r} has no tokenizer.json "
                "(a slow tokenizer); zoo needs a fast one"
            )
        from zoo.plugin.config import MAX_VOCAB

        size = backend.get_vocab_size(with_added_tokens=True)
        if size > MAX_VOCAB:  # its embedding table alone would not fit in memory
            raise ZooError(
                f"the tokenizer of {config.pretrained!r} has {size:,} tokens; at "
                f"most {MAX_VOCAB:,} (a model's embedding grows with it)"
            )
        roles = {
            name: str(getattr(loaded, name))
            for name in (
                "pad_token",
                "unk_token",
                "cls_token",
                "bos_token",
                "eos_token",
                "mask_token",
            )
            if getattr(loaded, name, None) is not None
        }
        return cls(backend, roles)

    def _role(self, role: str) -> int | None:
        for name in FALLBACKS[role]:
            if name in self.roles:
                return self.backend.token_to_id(self.roles[name])
        return None

    @property
    def pad_id(self) -> int:
        found = self._role(PAD)
        return 0 if found is None else found  # padding is masked: any id serves

    @property
    def unk_id(self) -> int | None:
        return self._role(UNK)

    @property
    def cls_id(self) -> int | None:
        return self._role(CLS)

    @property
    def special_ids(self) -> dict[str, int | None]:
        return {PAD: self.pad_id, UNK: self.unk_id, CLS: self.cls_id}

    @property
    def frame(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self._frame

    @property
    def mask_id(self) -> int:
        """The checkpoint's [MASK] where it has one, else the padding id (as zoo's own)."""
        token = self.roles.get("mask_token")
        found = self.backend.token_to_id(token) if token else None
        return self.pad_id if found is None else found

    def save(self, path: str | Path) -> None:
        super().save(path)
        atomic_write_text(Path(path).with_name(ROLES), json.dumps(self.roles, indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> PretrainedTokenizer:
        from tokenizers import Tokenizer as Backend

        roles = load_json(Path(path).with_name(ROLES))
        if not (isinstance(roles, dict) and all(isinstance(v, str) for v in roles.values())):
            raise ValueError(f"{Path(path).with_name(ROLES)} must map role names to tokens")
        return cls(Backend.from_file(str(path)), roles)


def post_processor_frame(backend) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids the checkpoint's post-processor adds before and after a single text, read by
    encoding a probe with and without them (whatever the processor's kind: a template,
    BERT's, RoBERTa's, GPT-2's byte-level one that adds nothing)."""
    probe = "a b"
    plain = backend.encode(probe, add_special_tokens=False).ids
    framed = backend.encode(probe, add_special_tokens=True).ids
    for start in range(len(framed) - len(plain) + 1):
        if framed[start : start + len(plain)] == plain:
            return tuple(framed[:start]), tuple(framed[start + len(plain) :])
    raise ValueError(
        "the checkpoint's tokenizer changes a text's own tokens when it adds its "
        "special tokens; zoo cannot tell where they go"
    )


TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model")
MAX_TOKENIZER_BYTES = 128 * 2**20  # a vocabulary of 2^20 tokens and its merges, with room


def check_file_sizes(source: str) -> None:
    """A local checkpoint's tokenizer files, by size, before any is parsed: one too large
    for a vocabulary zoo accepts is refused at once, not after minutes and gigabytes."""
    folder = Path(str(source)).expanduser()
    for name in TOKENIZER_FILES:
        path = folder / name
        size = path.stat().st_size if path.is_file() else 0
        if size > MAX_TOKENIZER_BYTES:
            raise ZooError(
                f"the tokenizer of {source!r}: {name} is {size / 2**20:,.0f} MiB; at most "
                f"{MAX_TOKENIZER_BYTES // 2**20} MiB (a vocabulary of at most 2^20 tokens)"
            )
