"""The recurrent baseline (architecture `lstm`, preset `lstm-wordpunct`) and the LSTM members
of the encoder ensemble (`lstm_members`), on tiny data."""
import json

import pytest

from conftest import run_cli

TINY = ["--set", "n_embd=16", "--set", "hidden=8", "--set", "batch_size=8", "--set", "dropout=0",
        "--set", "eval_interval=5"]


def build(**settings):
    import torch

    from zoo.train.model import TaskSpec
    from zoo.plugins.lstm import LSTMConfig
    from zoo.plugins.lstm.model import build as build_lstm

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
    """"not good" against "good": a bag of words cannot separate them, the LSTM does."""
    result = run_cli("run", "lstm-wordpunct", negated_reviews, "--steps", 120, "--json", *TINY,
                     "--set", "lr=1e-2", "--set", "patience=0")
    assert result.code == 0, result
    summary = json.loads(result.out)
    assert summary["architecture"] == "lstm" and summary["tokenizer"] == "wordpunct"
    assert summary["metrics"]["test_accuracy"] >= 0.95, summary["metrics"]


def test_lstm_members_join_the_ensemble_and_share_the_encoders_part():
    import torch

    from zoo.train.model import TaskSpec
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder.model import build as build_encoder
    from zoo.plugins.lstm.model import BiLSTM

    torch.manual_seed(0)
    cfg = EncoderConfig(n_layer=1, n_head=2, n_embd=16, block_size=12, members=1,
                        lstm_members=2, lstm_hidden=5, lstm_layers=1, nb_weight=0.4)
    model = build_encoder(cfg, TaskSpec("classification", 50, num_classes=3))
    assert [type(m).__name__ for m in model.members] == ["Encoder", "BiLSTM", "BiLSTM"]
    assert model.members[1].lstm.hidden_size == 5 and model.members[1].lstm.num_layers == 1
    assert "members.2.emb.weight" in model.state_dict()
    torch.testing.assert_close(model.weights, torch.tensor([0.2, 0.2, 0.2, 0.4]))
    ids = torch.randint(3, 50, (4, 10))
    model.train()
    assert model(ids, torch.ones_like(ids)).shape == (4, 4, 3)  # every member, NB included, learns
    assert isinstance(model.members[2], BiLSTM)


def test_a_negative_lstm_members_is_a_clear_error(negated_reviews):
    result = run_cli("run", "encoder-wordpunct", negated_reviews, "--set", "lstm_members=-1")
    assert result.code == 2 and "lstm_members must be 0 (none) or positive" in result.err
