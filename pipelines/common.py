"""Steps every built-in pipeline takes the same way: the run's tokenizer (the saved one when
resuming, else trained through the shared cache and saved), the training loop's own figures,
the special tokens a prediction never picks, probabilities from logits, and ragged token
ids (many texts' ids in one array with offsets) padded into one array with NumPy."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from zoo.plugin import Job
from zoo.plugin.data import train_cached

TOKENIZER_FILE = "tokenizer.json"


def run_tokenizer(job: Job, texts: Callable[[], Iterable[str]], key: str):
    """The tokenizer a run trains with. Resuming, it is the one the run saved, so the run
    keeps exactly the vocabulary it started with (a cache or a retrained one might differ);
    starting from another run (--init), it is that run's; otherwise it is trained on
    ``texts()`` through the shared cache under ``key`` (``zoo.plugin.data.dataset_key``). It is
    saved in the run folder."""
    tokenizer = job.saved_tokenizer()  # resuming, or the --init run's
    if tokenizer is None:
        tokenizer = train_cached(
            job.tokenizer.load(), job.tokenizer.name, job.tokenizer_config, texts, key, say=job.say
        )
    if not job.run.file(TOKENIZER_FILE).is_file():
        tokenizer.save(job.run.file(TOKENIZER_FILE))
    return tokenizer


def loop_metrics(result) -> dict:
    """What the training loop measured (``zoo.plugin.train``'s result), reported by every task."""
    metrics = {
        "steps": result.steps,
        "best_step": result.best_step,
        "train_loss": result.train_loss,
        "tokens_per_s": result.tokens_per_s,
        "train_time": result.train_time,
    }
    if result.runners_up:  # average_best: the steps whose weights were averaged, best first
        metrics["averaged_steps"] = [result.best_step, *(step for _, step, _ in result.runners_up)]
    return metrics


def special_ids(tokenizer) -> list[int]:
    """The ids of the special tokens (<pad>, <unk>, <cls>): never a prediction."""
    return [i for i in (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id) if i is not None]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities over the last axis, computed stably (float64 in, float64 out)."""
    top = logits.max(axis=-1, keepdims=True)
    return logits - (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True)))


def softmax(logits: np.ndarray) -> np.ndarray:
    """Probabilities over the last axis."""
    return np.exp(log_softmax(logits))


def pad_rows(
    ids: np.ndarray, offsets: np.ndarray, limit: int, pad_id: int, *, keep_last: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Ragged rows (row i is ``ids[offsets[i]:offsets[i + 1]]``) right-padded into one array
    [N, T] of int64, each row cut to its first ``limit`` ids (its last with ``keep_last``),
    and each row's length [N]. T is the longest row after cutting. One NumPy scatter, no
    Python step per row."""
    starts, ends = offsets[:-1], offsets[1:]
    lengths = np.minimum(ends - starts, limit)
    if keep_last:
        starts = ends - lengths
    inputs = np.full((len(lengths), int(lengths.max(initial=0))), pad_id, dtype=np.int64)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    columns = np.arange(len(rows)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    inputs[rows, columns] = ids[np.repeat(starts, lengths) + columns]
    return inputs, lengths


def padded_batch(
    inputs: np.ndarray, lengths: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Some rows of a padded array, cut to the longest of them, and their attention mask
    [B, T] (1 = real token)."""
    lengths = lengths[rows]
    width = int(lengths.max())
    mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
    return inputs[rows, :width], mask
