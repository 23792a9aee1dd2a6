"""The encoder ensemble's naive Bayes member fitted before training (nb_c > 0): NBSVM's
one-against-the-rest logistic regressions, fitted to convergence in prepare(), optionally
over each token's character n-grams, then fixed."""
import numpy as np
import pytest

from conftest import run_cli

VOCAB, CLASSES = 40, 3


def member(**settings):
    from zoo.train.model import TaskSpec
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder.naive_bayes import FittedNaiveBayes

    cfg = EncoderConfig(nb_weight=0.5, nb_buckets=11, nb_c=1.0, **settings)
    return FittedNaiveBayes(cfg, TaskSpec("classification", VOCAB, num_classes=CLASSES))


def padded(rows):
    import torch

    width = max(map(len, rows))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    return ids, (ids != 0).long()


def test_the_fit_is_scikit_learns_logistic_regression_on_the_scaled_features():
    """Per class, LogisticRegression(C=nb_c) on the binary features times their log-count
    ratios for that class: the fitted member gives the same probabilities."""
    import torch
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    rows = [list(rng.integers(3, VOCAB, size=rng.integers(2, 7))) for _ in range(60)]
    y = torch.tensor(rng.integers(0, CLASSES, size=60))
    ids, mask = padded([[int(t) for t in row] for row in rows])
    nb = member()
    nb.prepare(ids, mask, y)

    features = nb.features(ids, mask).numpy()
    x = np.zeros((len(rows), VOCAB + 11))
    for i, row in enumerate(features):
        x[i, row[row != 0]] = 1.0  # each feature once per text
    x = x[:, x.sum(0) > 0]
    onehot = np.eye(CLASSES)[y.numpy()]
    ours, rest = x.T @ onehot + 1, x.T @ (1 - onehot) + 1  # texts holding each feature
    ratios = np.log(ours / ours.sum(0)) - np.log(rest / rest.sum(0))
    expected = np.stack([
        LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000)
        .fit(x * ratios[:, c], y.numpy() == c).predict_proba(x * ratios[:, c])[:, 1]
        for c in range(CLASSES)], axis=1)
    with torch.no_grad():
        scores = torch.sigmoid(torch.nn.functional.embedding_bag(
            nb.features(ids, mask), nb.coef, mode="sum", padding_idx=0) + nb.intercept)
        assert scores.numpy() == pytest.approx(expected, abs=2e-4)
        normalised = expected / expected.sum(1, keepdims=True)
        assert nb(ids, mask).exp().numpy() == pytest.approx(normalised, abs=2e-4)


def test_character_grams_carry_what_a_suffix_means_to_words_the_training_never_showed():
    """Class 1 texts hold -ly words, class 0 texts furniture. A word seen in no training text
    has weight 0 on its own; with character grams it is read by its letters."""
    import torch

    words = ["", "", "", "quickly", "slowly", "badly", "table", "chair", "lamp", "gladly",
             "wisely", "sofa"]
    vocabulary = words + [f"w{i}" for i in range(len(words), VOCAB)]
    train = [[3], [4], [5], [3, 4], [6], [7], [8], [6, 7]]
    y = torch.tensor([1, 1, 1, 1, 0, 0, 0, 0])
    unseen, mask = padded([[9], [10]])  # gladly, wisely

    with_grams = member(nb_char_buckets=4096)
    with_grams.prepare(*padded(train), y, vocabulary)
    words_only = member()
    words_only.prepare(*padded(train), y, vocabulary)
    with torch.no_grad():
        assert (with_grams(unseen, mask).exp()[:, 1] > 0.6).all()
        alone = words_only(unseen, mask).exp()
        assert alone[:, 1].numpy() == pytest.approx(alone[:, 0].numpy(), abs=1e-4)  # the prior
    assert tuple(with_grams.coef.shape) == (VOCAB + 11, CLASSES)  # the grams folded in


def test_a_fitted_member_learns_nothing_in_training_and_is_saved_with_the_weights():
    import torch

    from zoo.train.model import TaskSpec
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder.model import build

    torch.manual_seed(0)
    cfg = EncoderConfig(n_layer=1, n_head=2, n_embd=16, block_size=8, dropout=0.0, members=2,
                        nb_weight=0.4, nb_buckets=11, nb_c=1.0)
    ensemble = build(cfg, TaskSpec("classification", VOCAB, num_classes=CLASSES))
    ids, mask = padded([[3, 4, 5], [6, 7], [8, 9, 10, 11]])
    ensemble.prepare(ids, mask, torch.tensor([0, 1, 2]), None)
    assert not [name for name, _ in ensemble.named_parameters() if name.startswith("nb.")]
    assert {"nb.coef", "nb.intercept"} <= ensemble.state_dict().keys()
    assert ensemble.nb.coef.abs().sum() > 0
    ensemble.train()
    assert tuple(ensemble(ids, mask).shape) == (3, 2, CLASSES)  # the encoders only
    ensemble.eval()
    with torch.no_grad():
        probs = [net(ids, mask).softmax(-1) for net in [*ensemble.members, ensemble.nb]]
        expected = 0.3 * (probs[0] + probs[1]) + 0.4 * probs[2]
        assert ensemble(ids, mask).exp().allclose(expected, atol=1e-6)


@pytest.mark.parametrize("settings", [["nb_c=-1"], ["nb_char_buckets=-5"],
                                      ["nb_char_buckets=4096", "nb_weight=0.5"],
                                      ["nb_char_buckets=4096", "nb_c=1"]])
def test_bad_fitted_member_settings_fail_before_training(settings):
    args = [part for setting in settings for part in ("--set", setting)]
    result = run_cli("run", "encoder-bpe", "rotten_tomatoes", *args)
    assert result.code == 2, (settings, result)
    assert "nb_" in result.err and "Traceback" not in result.err
