"""How an exported model reads text and what zoo predicts from it, per task: the exported
``tokenizer.json`` (the frame, the cut and the padding zoo applies, built into the file), zoo's
own probabilities on some texts, and the comparison of an export's with them.

Every exporter writes the same ``tokenizer.json``, so the folder encodes a text exactly as
zoo does with nothing but the ``tokenizers`` library:

- classification and masked language modeling: the tokenizer's frame around the text
  (``<cls>`` first for zoo's tokenizers, ``[CLS] ... [SEP]`` for a checkpoint's), the first
  tokens kept so that the whole fits ``block_size``;
- next-item and language modeling: no frame, the last ``block_size`` tokens kept (the
  context nearest what comes next);
- seq2seq: the source with no frame, its first ``block_size`` tokens kept;
- padding on the right with ``<pad>``, and an attention mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.plugin import ZooError


@dataclass(frozen=True)
class Reading:
    """How a task's model reads a text, and what its prediction is."""

    frame: bool  # the tokenizer's frame around each text
    keep: str  # which end a text longer than block_size keeps: "start" or "end"
    never: bool  # special tokens are never predicted (their probability is 0)
    per_position: bool  # a prediction at every position ([B, T, V]), not one per text
    pipeline_tag: str  # the Hub's pipeline tag


READINGS = {
    "classification": Reading(True, "start", False, False, "text-classification"),
    "next-item": Reading(False, "end", True, False, "text-generation"),
    "language-modeling": Reading(False, "end", True, True, "text-generation"),
    "masked-language-modeling": Reading(True, "start", False, True, "fill-mask"),
    # the source as the seq2seq pipeline reads it; outputs are decoded (the exporter's check)
    "seq2seq": Reading(False, "start", False, True, "text2text-generation"),
}


def reading_of(trained) -> Reading:
    reading = READINGS.get(trained.task)
    if reading is None:
        raise ZooError(
            f"{trained.task} runs have no export reading (exportable tasks: "
            f"{', '.join(READINGS)}); a plugin exporter can write them"
        )
    return reading


def never_ids(trained) -> list[int]:
    """The ids zoo never predicts for the run's task (its special tokens), or none."""
    if not reading_of(trained).never:
        return []
    return sorted({i for i in trained.tokenizer.special_ids.values() if i is not None})


def exported_tokenizer(trained):
    """The run's tokenizer as a ``tokenizers.Tokenizer`` that frames, cuts and pads a text
    as zoo does for the run's task (see the module docstring)."""
    from tokenizers import Tokenizer, processors

    backend = getattr(trained.tokenizer, "backend", None)
    if backend is None:
        raise ZooError(
            f"the {trained.config['tokenizer']} tokenizer is not built on Hugging Face "
            "tokenizers, so it cannot travel as tokenizer.json"
        )
    reading = reading_of(trained)
    exported = Tokenizer.from_str(backend.to_str())
    exported.encode_special_tokens = True  # a literal "<pad>" in a text is text, as in zoo
    before, after = trained.tokenizer.frame if reading.frame else ((), ())
    names = [backend.id_to_token(i) for i in (*before, *after)]
    template = " ".join([*names[: len(before)], "$A", *names[len(before) :]])
    exported.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=sorted({(n, backend.token_to_id(n)) for n in names})
    )
    if trained.context_length:
        exported.enable_truncation(
            trained.context_length, direction="right" if reading.keep == "start" else "left"
        )
    pad = trained.tokenizer.pad_id
    exported.enable_padding(pad_id=pad, pad_token=backend.id_to_token(pad))
    return exported


def encoded(tokenizer_file: Path, texts: list[str]) -> dict[str, np.ndarray]:
    """``input_ids`` and ``attention_mask`` [N, T] of texts, by the exported tokenizer
    alone (what a user without zoo runs)."""
    from tokenizers import Tokenizer

    batch = Tokenizer.from_file(str(tokenizer_file)).encode_batch(texts)
    return {
        "input_ids": np.array([e.ids for e in batch], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
    }


def probabilities(trained, logits: np.ndarray) -> np.ndarray:
    """What zoo predicts from a model's outputs: the softmax over the last axis, special
    tokens left out where the task never predicts them."""
    logits = np.asarray(logits, dtype=np.float64).copy()
    never = never_ids(trained)
    if never:
        logits[..., never] = -np.inf
    logits -= logits.max(axis=-1, keepdims=True)
    exp = np.exp(logits)
    return exp / exp.sum(axis=-1, keepdims=True)


def zoo_probabilities(trained, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """zoo's own predictions on texts, read as its pipelines read them: the probabilities
    (per text, or per real position) and the attention mask they were read with."""
    inputs, mask = zoo_encoded(trained, texts)
    return probabilities(trained, trained.model.logits(inputs, mask)), mask


def zoo_encoded(trained, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts as zoo's pipelines encode them for the run's task: right-padded ids and mask."""
    reading = reading_of(trained)
    before, after = trained.tokenizer.frame if reading.frame else ((), ())
    body = (trained.context_length or 10**9) - len(before) - len(after)
    rows = []
    for ids in trained.tokenizer.encode_batch(texts):
        ids = list(ids[-body:] if reading.keep == "end" else ids[:body])
        rows.append([*before, *ids, *after])
    width = max(map(len, rows), default=0)
    inputs = np.full((len(rows), width), trained.tokenizer.pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        inputs[i, : len(row)], mask[i, : len(row)] = row, 1
    return inputs, mask


def compare(trained, ours, our_mask, theirs, their_mask) -> dict:
    """The largest probability difference and whether the predicted labels agree, over
    every text (and every real position, for per-position tasks)."""
    theirs = np.asarray(theirs, dtype=np.float64)
    if theirs.shape != ours.shape or not np.array_equal(our_mask, their_mask):
        return {"max_difference": math.inf, "agree": False, "compared": len(ours)}
    if reading_of(trained).per_position:
        real = our_mask.astype(bool)
        ours, theirs = ours[real], theirs[real]
    difference = float(np.max(np.abs(ours - theirs), initial=0.0))
    return {
        "max_difference": difference if math.isfinite(difference) else math.inf,
        "agree": bool(np.array_equal(ours.argmax(axis=-1), theirs.argmax(axis=-1))),
        "compared": len(our_mask),
    }
