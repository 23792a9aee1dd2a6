"""The `pretrained` tokenizer: a checkpoint's own (fast) tokenizer, so a pretrained model
fine-tunes with the vocabulary it was trained on.

zoo's special roles map onto the checkpoint's tokens: padding is its pad token (else its
end-of-sequence, else its unknown token), unknown is its unk token, and the token the
classification pipeline puts first is its [CLS] (else its beginning-of-sequence token).
The run folder keeps ``tokenizer.json`` (the backend, as ``tokenizers`` writes it) and,
next to it, ``special_tokens_map.json`` with those roles, in transformers' format.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from zoo.plugin import CLS, PAD, UNK, TokenizersTokenizer, ZooError, atomic_write_text, load_json

ROLES = "special_tokens_map.json"
# zoo role -> the checkpoint's tokens to use for it, first found wins
FALLBACKS = {PAD: ("pad_token", "eos_token", "unk_token"),
             UNK: ("unk_token",),
             CLS: ("cls_token", "bos_token", "eos_token")}


class PretrainedTokenizer(TokenizersTokenizer):
    cached = False  # loaded, not trained: nothing to save, and the checkpoint may change

    def __init__(self, backend, roles: dict[str, str]):
        super().__init__(backend)
        self.roles = roles  # e.g. {"pad_token": "[PAD]", "cls_token": "[CLS]"}

    @classmethod
    def train(cls, texts: Iterable[str], config) -> "PretrainedTokenizer":
        from transformers import AutoTokenizer

        from zoo.plugins.transformers.configs import check_source

        try:  # a missing folder, or a Hub id with no network: one line, at once
            check_source(config.pretrained)
        except ValueError as exc:
            raise ZooError(str(exc)) from None
        try:
            loaded = AutoTokenizer.from_pretrained(config.pretrained)
        except Exception as exc:
            raise ZooError(f"cannot load the tokenizer of {config.pretrained!r}: "
                             f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc!r}"
                             ) from None
        backend = getattr(loaded, "backend_tokenizer", None)
        if backend is None:
            raise ZooError(f"the tokenizer of {config.pretrained!r} has no tokenizer.json "
                             "(a slow tokenizer); zoo needs a fast one")
        from zoo.plugin import MAX_VOCAB

        size = backend.get_vocab_size(with_added_tokens=True)
        if size > MAX_VOCAB:  # its embedding table alone would not fit in memory
            raise ZooError(f"the tokenizer of {config.pretrained!r} has {size:,} tokens; at "
                             f"most {MAX_VOCAB:,} (a model's embedding grows with it)")
        roles = {name: str(getattr(loaded, name)) for name in
                 ("pad_token", "unk_token", "cls_token", "bos_token", "eos_token")
                 if getattr(loaded, name, None) is not None}
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
    def special_ids(self) -> dict[str, int]:
        return {PAD: self.pad_id, UNK: self.unk_id, CLS: self.cls_id}

    def save(self, path: str | Path) -> None:
        super().save(path)
        atomic_write_text(Path(path).with_name(ROLES), json.dumps(self.roles, indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "PretrainedTokenizer":
        from tokenizers import Tokenizer as Backend

        roles = load_json(Path(path).with_name(ROLES))
        if not (isinstance(roles, dict) and all(isinstance(v, str) for v in roles.values())):
            raise ValueError(f"{Path(path).with_name(ROLES)} must map role names to tokens")
        return cls(Backend.from_file(str(path)), roles)
