"""Decoding for the seq2seq task: beam search over a model's next-token logits (greedy is a
beam of one), with the model's key/value cache where it has one.

A hypothesis's score is the sum of its tokens' log-probabilities divided by its length to
the power ``length_penalty`` (0: no normalization; 1: the mean per token), its length
counting the end token. A row stops when it holds ``beam`` finished hypotheses (or after
``max_new`` tokens, when the live ones count as finished); its best finished one is the
answer. With ``beam`` at least the number of hypotheses there are, no hypothesis is ever
dropped, so the answer is the exhaustive search's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from zoo.pipelines.common import log_softmax


@dataclass
class Search:
    """How to decode: beam size, length penalty, the longest output, the token that ends a
    hypothesis, and the ids never generated (padding, unknown)."""

    beam: int
    length_penalty: float
    max_new: int
    end_id: int
    banned: list[int]


def normalized(score: float, length: int, penalty: float) -> float:
    return score / (max(1, length) ** penalty)


class Steps:
    """A model continuing a batch of hypotheses: ``first()`` gives the logits after the
    prompts, ``next(tokens)`` after each row's latest token, and ``keep(rows)`` keeps the
    rows of the surviving hypotheses. Cached models carry their key/value cache; otherwise
    each step recomputes every hypothesis's whole prefix through ``logits_after``."""

    def __init__(self, model, prompts, logits_after: Callable, use_cache: bool):
        self.model, self.prompts, self.logits_after = model, prompts, logits_after
        self.cache = None
        self.use_cache = use_cache
        self.rows = np.arange(len(prompts[0]))
        self.tokens = np.zeros((len(self.rows), 0), dtype=np.int64)

    def first(self) -> np.ndarray:
        if self.use_cache:
            logits, self.cache = self.model.start_decoding(*self.prompts)
            return logits
        return self.logits_after(self.rows, self.tokens)

    def keep(self, rows: np.ndarray, new_tokens: np.ndarray) -> None:
        self.tokens = np.concatenate([self.tokens[rows], new_tokens[:, None]], axis=1)
        self.rows = self.rows[rows]
        if self.use_cache and not np.array_equal(rows, np.arange(len(rows))):
            self.cache = self.model.reorder_cache(self.cache, rows)

    def next(self) -> np.ndarray:
        if self.use_cache:
            logits, self.cache = self.model.decode_step(self.tokens[:, -1], self.cache)
            return logits
        return self.logits_after(self.rows, self.tokens)


def beam_search(steps: Steps, rows: int, search: Search) -> list[list[int]]:
    """The best hypothesis of each of ``rows`` rows (their ids, without the end token).
    ``steps`` holds rows * beam hypotheses, row n's in positions n * beam ... + beam - 1."""
    K = search.beam
    scores = np.full((rows, K), -np.inf)
    scores[:, 0] = 0.0  # the first step expands one hypothesis per row, not K equal ones
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(rows)]
    done = np.zeros(rows, dtype=bool)
    logits = steps.first()
    for step in range(search.max_new):
        logp = log_softmax(logits.astype(np.float64))
        logp[:, search.banned] = -np.inf
        V = logp.shape[1]
        total = (scores.reshape(-1, 1) + logp).reshape(rows, K * V)
        total[done] = -np.inf
        scores, keep, new_tokens = _advance(total, steps.tokens, finished, step, search)
        done |= np.array([len(f) >= K for f in finished])
        steps.keep(keep, new_tokens)
        if done.all() or step == search.max_new - 1:
            break
        logits = steps.next()
    # max_new reached: the live hypotheses (max_new tokens, no end) count as finished
    for n in np.flatnonzero(~done):
        for k in np.flatnonzero(np.isfinite(scores[n])):
            ids = steps.tokens[n * K + k].tolist()
            finished[n].append((normalized(scores[n, k], len(ids), search.length_penalty), ids))
    return [_best(f) for f in finished]


def _advance(total, tokens, finished, step: int, search: Search):
    """One step of every row: the 2K best extensions; those that end join ``finished``,
    the best K others live on. Returns the live scores [N, K], the hypothesis each live one
    extends [N * K] and its new token [N * K]."""
    rows, KV = total.shape
    K = search.beam
    V = KV // K
    width = min(2 * K, KV)
    top = np.argpartition(-total, width - 1, axis=1)[:, :width]
    order = np.argsort(-np.take_along_axis(total, top, axis=1), axis=1, kind="stable")
    top = np.take_along_axis(top, order, axis=1)
    scores = np.full((rows, K), -np.inf)
    keep = np.repeat(np.arange(rows) * K, K)  # dead slots point at their row's first
    new_tokens = np.full(rows * K, search.end_id, dtype=np.int64)
    for n in range(rows):
        live = 0
        for index in top[n]:
            score = total[n, index]
            if not np.isfinite(score) or live == K:
                break
            k, token = divmod(int(index), V)
            if token == search.end_id:
                ids = tokens[n * K + k].tolist()
                finished[n].append((normalized(score, step + 1, search.length_penalty), ids))
                continue
            scores[n, live] = score
            keep[n * K + live], new_tokens[n * K + live] = n * K + k, token
            live += 1
    return scores, keep, new_tokens


def _best(hypotheses: list[tuple[float, list[int]]]) -> list[int]:
    if not hypotheses:
        return []
    return max(hypotheses, key=lambda h: h[0])[1]
