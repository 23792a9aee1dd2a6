"""The fastText baseline (architecture `fasttext`, tokenizer `wordpunct`) on tiny data."""

import json

import pytest
from conftest import run_cli

TINY = [
    "--set",
    "dim=8",
    "--set",
    "buckets=97",
    "--set",
    "batch_size=8",
    "--set",
    "eval_interval=3",
]


def build(ngrams=2, vocab=40):
    import torch
    from zoo.plugins.fasttext import FastTextConfig
    from zoo.plugins.fasttext.model import build as build_fasttext

    from zoo.train.model import TaskSpec

    torch.manual_seed(0)
    module = build_fasttext(
        FastTextConfig(dim=8, ngrams=ngrams, buckets=31, block_size=16),
        TaskSpec("classification", vocab, num_classes=2),
    )
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.5)
    return module.eval()


def test_features_are_the_words_and_hashed_bigrams_of_real_tokens():
    import torch

    module = build()
    ids = torch.tensor([[2, 5, 6, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 0, 0]])
    features = module.features(ids, mask)[0].tolist()
    assert features[:5] == [2, 5, 6, 0, 0]  # words, padding left as the pad id
    bigrams = features[5:]
    assert all(40 <= f < 40 + 31 for f in bigrams[:2]) and bigrams[2:] == [0, 0]
    assert bigrams[0] != bigrams[1]  # (2, 5) and (5, 6) are different pairs


def test_padding_never_changes_the_logits():
    import torch

    module = build()
    seq = torch.tensor([[2, 7, 9, 11]])
    alone = module(seq, torch.ones_like(seq))
    padded = torch.tensor([[2, 7, 9, 11, 3, 3, 3]])
    mask = torch.tensor([[1, 1, 1, 1, 0, 0, 0]])
    torch.testing.assert_close(module(padded, mask), alone)
    assert not torch.allclose(module(padded, torch.ones_like(padded)), alone)


@pytest.mark.slow
def test_word_order_needs_the_bigrams(negated_reviews):
    """Unigrams cannot tell "not good" from "good" in this set; bigrams can."""
    scores = {}
    for ngrams in (1, 2):
        result = run_cli(
            "run",
            "fasttext-wordpunct",
            negated_reviews,
            "--steps",
            150,
            "--json",
            *TINY,
            "--set",
            f"ngrams={ngrams}",
            "--set",
            "lr=0.05",
            "--set",
            "patience=0",
        )
        assert result.code == 0, result
        summary = json.loads(result.out)
        assert summary["architecture"] == "fasttext" and summary["tokenizer"] == "wordpunct"
        scores[ngrams] = summary["metrics"]["test_accuracy"]
    assert scores[2] >= 0.95 and scores[1] <= 0.8, scores


def test_wordpunct_tokenizer_lowercases_and_splits_punctuation():
    from zoo.plugins.fasttext import WordPunctConfig
    from zoo.plugins.fasttext.wordpunct import WordPunctTokenizer

    tok = WordPunctTokenizer.train(["A fine film, truly fine.", "a dull film"], WordPunctConfig())
    ids = tok.encode("FINE film, unseen")
    assert ids[:3] == [tok.token_to_id("fine"), tok.token_to_id("film"), tok.token_to_id(",")]
    assert ids[3] == tok.unk_id and tok.decode(ids[:3]) == "fine film ,"
    assert (tok.pad_id, tok.unk_id, tok.cls_id) == (0, 1, 2)


def test_fasttext_serves_classification_only(tiny_text):
    result = run_cli("run", "fasttext-wordpunct", tiny_text, "--steps", 2)
    assert result.code == 2 and "fasttext" in result.err
