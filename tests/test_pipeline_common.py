"""The steps the built-in pipelines share (zoo.pipelines.common)."""

import numpy as np
from zoo.pipelines.common import (
    log_softmax,
    loop_metrics,
    pad_rows,
    padded_batch,
    softmax,
    special_ids,
)
from zoo.plugins.char import CharTokenizer

from zoo.tokenizer import ragged


def test_softmax_is_stable_normalized_and_ignores_masked_entries():
    logits = np.array([[1000.0, 1001.0, -np.inf], [0.0, np.log(3.0), -np.inf]])
    probs = softmax(logits)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(probs[1], [0.25, 0.75, 0.0])
    np.testing.assert_allclose(probs[0, :2], [1 / (1 + np.e), np.e / (1 + np.e)])
    np.testing.assert_allclose(np.exp(log_softmax(logits)), probs)


def test_special_ids_are_the_contract_tokens():
    tokenizer = CharTokenizer.train(["abc"], None)
    assert (
        special_ids(tokenizer)
        == [tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id]
        == [0, 1, 2]
    )


def test_loop_metrics_are_what_every_task_reports():
    class Result:
        steps, best_step, train_loss, tokens_per_s, train_time = 3, 2, 1.5, 100.0, 0.25
        runners_up = []

    assert loop_metrics(Result()) == {
        "steps": 3,
        "best_step": 2,
        "train_loss": 1.5,
        "tokens_per_s": 100.0,
        "train_time": 0.25,
    }
    Result.runners_up = [(0.8, 3, {}), (0.7, 1, {})]  # average_best: the steps averaged
    assert loop_metrics(Result())["averaged_steps"] == [2, 3, 1]


def reference_pad(rows: list[list[int]], limit: int, pad_id: int, keep_last: bool):
    """The per-row loop pad_rows replaces, as a reference."""
    cut = [row[-limit:] if keep_last else row[:limit] for row in rows]
    width = max((len(row) for row in cut), default=0)
    return [row + [pad_id] * (width - len(row)) for row in cut], [len(row) for row in cut]


def test_pad_rows_equals_the_per_row_reference():
    rng = np.random.default_rng(0)
    rows = [rng.integers(3, 50, size=n).tolist() for n in rng.integers(0, 12, size=40)]
    rows[5] = []  # an empty row pads to all padding
    ids, offsets = ragged(rows)
    for limit in (1, 4, 11, 100):
        for keep_last in (False, True):
            inputs, lengths = pad_rows(ids.astype(np.uint8), offsets, limit, 0, keep_last=keep_last)
            expected, expected_lengths = reference_pad(rows, limit, 0, keep_last)
            assert inputs.dtype == np.int64 and inputs.tolist() == expected
            assert lengths.tolist() == expected_lengths
    assert pad_rows(*ragged([]), 5, 0)[0].shape == (0, 0)


def test_padded_batch_cuts_to_the_longest_row_and_masks_padding():
    inputs, lengths = pad_rows(*ragged([[5, 6, 7, 8], [9], [3, 4]]), 10, 0)
    batch, mask = padded_batch(inputs, lengths, np.array([2, 1]))
    assert batch.tolist() == [[3, 4], [9, 0]] and mask.tolist() == [[1, 1], [1, 0]]
