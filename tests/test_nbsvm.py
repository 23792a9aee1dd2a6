"""nbsvm: NBSVM's one-against-the-rest logistic regressions on log-count-ratio scaled
features, fitted before training through the Model protocol's optional fit, then fixed."""

import json

import numpy as np
import pytest
from conftest import run_cli

VOCAB, CLASSES, BUCKETS = 40, 3, 11


def model(**settings):
    from zoo.plugins.nbsvm import NBSVMConfig
    from zoo.plugins.nbsvm.model import build

    from zoo.train.model import TaskSpec

    cfg = NBSVMConfig(buckets=BUCKETS, c=1.0, **settings)
    return build(cfg, TaskSpec("classification", VOCAB, num_classes=CLASSES))


def padded(rows):
    import torch

    width = max(map(len, rows))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    return ids, (ids != 0).long()


def test_the_fit_is_scikit_learns_logistic_regression_on_the_scaled_features():
    """Per class, LogisticRegression(C=c) on the binary features times their log-count
    ratios for that class: the fitted model gives the same probabilities."""
    import torch
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    rows = [list(rng.integers(3, VOCAB, size=rng.integers(2, 7))) for _ in range(60)]
    y = torch.tensor(rng.integers(0, CLASSES, size=60))
    ids, mask = padded([[int(t) for t in row] for row in rows])
    nb = model()
    nb.fit(ids, mask, y)

    features = nb.features(ids, mask).numpy()
    x = np.zeros((len(rows), VOCAB + BUCKETS))
    for i, row in enumerate(features):
        x[i, row[row != 0]] = 1.0  # each feature once per text
    x = x[:, x.sum(0) > 0]
    onehot = np.eye(CLASSES)[y.numpy()]
    ours, rest = x.T @ onehot + 1, x.T @ (1 - onehot) + 1  # texts holding each feature
    ratios = np.log(ours / ours.sum(0)) - np.log(rest / rest.sum(0))
    expected = np.stack(
        [
            LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000)
            .fit(x * ratios[:, c], y.numpy() == c)
            .predict_proba(x * ratios[:, c])[:, 1]
            for c in range(CLASSES)
        ],
        axis=1,
    )
    with torch.no_grad():
        scores = torch.sigmoid(
            torch.nn.functional.embedding_bag(
                nb.features(ids, mask), nb.coef, mode="sum", padding_idx=0
            )
            + nb.intercept
        )
        assert scores.numpy() == pytest.approx(expected, abs=2e-4)
        normalised = expected / expected.sum(1, keepdims=True)
        assert nb(ids, mask).exp().numpy() == pytest.approx(normalised, abs=2e-4)


def test_character_grams_carry_what_a_suffix_means_to_words_the_training_never_showed():
    """Class 1 texts hold -ly words, class 0 texts furniture. A word seen in no training text
    has weight 0 on its own; with character grams it is read by its letters."""
    import torch

    words = [
        "",
        "",
        "",
        "quickly",
        "slowly",
        "badly",
        "table",
        "chair",
        "lamp",
        "gladly",
        "wisely",
        "sofa",
    ]
    vocabulary = words + [f"w{i}" for i in range(len(words), VOCAB)]
    train = [[3], [4], [5], [3, 4], [6], [7], [8], [6, 7]]
    y = torch.tensor([1, 1, 1, 1, 0, 0, 0, 0])
    unseen, mask = padded([[9], [10]])  # gladly, wisely

    with_grams = model(char_buckets=4096)
    with_grams.fit(*padded(train), y, vocabulary)
    words_only = model()
    words_only.fit(*padded(train), y, vocabulary)
    with torch.no_grad():
        assert (with_grams(unseen, mask).exp()[:, 1] > 0.6).all()
        alone = words_only(unseen, mask).exp()
        assert alone[:, 1].numpy() == pytest.approx(alone[:, 0].numpy(), abs=1e-4)  # the prior
    assert tuple(with_grams.coef.shape) == (
        VOCAB + BUCKETS,
        CLASSES,
    )  # the grams folded in


def test_the_fitted_model_learns_nothing_in_training_steps():
    """After fit, a training step measures the loss and leaves every weight as it was."""
    import torch

    from zoo.train.losses import cross_entropy
    from zoo.train.torch_model import TorchModel

    wrapped = TorchModel(model(), "cpu", loss=cross_entropy)
    assert wrapped.fits_training_split
    ids, mask = padded([[3, 4, 5], [6, 7], [8, 9, 10, 11]])
    wrapped.fit(ids.numpy(), np.array([0, 1, 2]), mask.numpy())
    before = wrapped.state_dict()
    assert np.abs(before["coef"]).sum() > 0
    wrapped.configure_optimizer(1e-2, 0.1)
    loss = wrapped.train_step(ids.numpy(), np.array([0, 1, 2]), 1e-2, mask.numpy())
    assert np.isfinite(loss)
    after = wrapped.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert wrapped.num_parameters() == (VOCAB + BUCKETS) * CLASSES + CLASSES
    assert not TorchModel(torch.nn.Linear(2, 2), "cpu", loss=cross_entropy).fits_training_split


def test_the_pipeline_fits_it_and_a_reload_scores_as_the_run_did(negated_reviews, one_thread):
    result = run_cli(
        "run",
        "nbsvm-wordpunct",
        negated_reviews,
        "--json",
        "--quiet",
        "--set",
        "buckets=101",
        "--set",
        "char_buckets=1024",
    )
    assert result.code == 0, result
    run = json.loads(result.out)
    assert run["architecture"] == "nbsvm" and run["metrics"]["steps"] == 1
    assert run["metrics"]["test_accuracy"] > 0.9  # "not good": the bigrams carry it
    again = run_cli("eval", run["run_id"], negated_reviews, "--split", "test", "--json")
    assert again.code == 0, again
    assert json.loads(again.out)["metrics"]["test_loss"] == pytest.approx(
        run["metrics"]["test_loss"]
    )


@pytest.mark.parametrize(
    "setting, message",
    [
        ("c=-1", "c must be positive"),
        ("char_buckets=-5", "char_buckets must be 0"),
        ("buckets=100000000", "buckets = 100,000,000"),
    ],
)
def test_bad_settings_fail_before_training(negated_reviews, setting, message):
    result = run_cli("run", "nbsvm-wordpunct", negated_reviews, "--set", setting)
    assert result.code == 2, result
    assert message in result.err and len(result.err.strip().splitlines()) == 1
