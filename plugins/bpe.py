"""`bpe` tokenizer plugin: byte-level byte-pair encoding on Hugging Face ``tokenizers``.

Text is read as UTF-8 bytes and the 256 byte values are always in the vocabulary, so no
input is ever unknown and decoding returns exactly the text that was encoded. Merges are
learnt from the training texts (streamed from an iterator, no temporary files) until the
vocabulary holds ``vocab_size`` tokens: the three special tokens, the 256 bytes, and the
merges. ``tokenizers`` is imported only when a tokenizer is trained or loaded.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from zoo.plugin import SPECIAL_TOKENS, TokenizersTokenizer, hookimpl
from zoo.plugin.config import sized

BYTES = 256
MIN_VOCAB = BYTES + len(SPECIAL_TOKENS)


@dataclass
class BPEConfig:
    vocab_size: int = sized(
        512, role="vocabulary"
    )  # special tokens + 256 bytes + merges; 259 means bytes only
    min_frequency: int = 2  # a pair must occur this often in training to be merged

    def __post_init__(self):
        if self.vocab_size < MIN_VOCAB:
            raise ValueError(
                f"vocab_size must be at least {MIN_VOCAB} (3 special tokens + "
                f"256 bytes), got {self.vocab_size}"
            )
        if self.min_frequency < 1:
            raise ValueError(f"min_frequency must be at least 1, got {self.min_frequency}")


def lines(texts: Iterable[str]) -> Iterator[str]:
    # Long texts (a whole book in one row) go to the trainer line by line: the same pieces
    # the language-modeling pipeline encodes, and batches the trainer can spread over cores.
    return itertools.chain.from_iterable(map(operator.methodcaller("splitlines", True), texts))


class BPETokenizer(TokenizersTokenizer):
    @classmethod
    def train(cls, texts: Iterable[str], config: BPEConfig | None = None) -> BPETokenizer:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        config = config or BPEConfig()
        backend = Tokenizer(models.BPE())
        # No prefix space: decode(encode(text)) must give back text exactly.
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=config.vocab_size,
            min_frequency=config.min_frequency,
            special_tokens=list(SPECIAL_TOKENS),  # first, so they get ids 0, 1, 2
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        backend.train_from_iterator(lines(texts), trainer=trainer)
        return cls(backend)


@hookimpl
def register_tokenizers(register):
    register(
        "bpe",
        "zoo.plugins.bpe:BPETokenizer",
        config=BPEConfig,
        description="byte-level BPE (Hugging Face tokenizers); every input is encodable",
    )
