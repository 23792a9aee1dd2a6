"""The recurrent baseline (architecture `lstm`, preset `lstm-wordpunct`), on tiny data."""

import json

import pytest
from conftest import run_cli

TINY = [
    "--set",
    "n_embd=16",
    "--set",
    "hidden=8",
    "--set",
    "batch_size=8",
    "--set",
    "dropout=0",
    "--set",
    "eval_interval=5",
]


def build(**settings):
    import torch
    from zoo.plugins.lstm import LSTMConfig
    from zoo.plugins.lstm.model import build as build_lstm

    from zoo.train.model import TaskSpec

    torch.manual_seed(0)
    cfg = LSTMConfig(n_embd=8, hidden=6, n_layer=2, dropout=0.0, block_size=12, **settings)
    return build_lstm(cfg, TaskSpec("classification", 40, num_classes=3)).eval()


def test_padding_never_changes_the_logits():
    import torch

    module = build()
    seq = torch.tensor([[2, 7, 9, 11]])
    alone = module(seq, torch.ones_like(seq))
    padded = torch.tensor([[2, 7, 9, 11, 3, 3, 3], [2, 5, 3, 3, 3, 3, 3]])
    mask = torch.tensor([[1, 1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0]])
    torch.testing.assert_close(module(padded, mask)[:1], alone)
    assert not torch.allclose(module(padded[:1], torch.ones_like(padded[:1])), alone)


@pytest.mark.slow
def test_word_order_is_learned(negated_reviews):
    """ "not good" against "good": a bag of words cannot separate them, the LSTM does."""
    result = run_cli(
        "run",
        "lstm-wordpunct",
        negated_reviews,
        "--steps",
        120,
        "--json",
        *TINY,
        "--set",
        "lr=1e-2",
        "--set",
        "patience=0",
    )
    assert result.code == 0, result
    summary = json.loads(result.out)
    assert summary["architecture"] == "lstm" and summary["tokenizer"] == "wordpunct"
    assert summary["metrics"]["test_accuracy"] >= 0.95, summary["metrics"]
