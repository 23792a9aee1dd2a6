"""zoo ensemble: finished runs of one task and dataset, their probabilities averaged with
equal weights or weights fitted on the validation split alone, recorded as a row of their
own beside the runs they combine; ensemble presets train their members and combine them."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli, train_once, write_negated_reviews

TINY = {
    "encoder-wordpunct": ["n_embd=16", "n_head=2", "batch_size=8", "eval_interval=10"],
    "lstm-wordpunct": ["n_embd=16", "hidden=8", "batch_size=8", "eval_interval=10"],
    "nbsvm-wordpunct": ["buckets=101", "char_buckets=0"],
}


def probs(*rows):
    return [np.asarray(run, dtype=np.float64) for run in zip(*rows)]  # R arrays [N, K]


def test_fitted_weights_reach_the_log_loss_minimum():
    from zoo.operations.weights import log_loss_weights, mean_log_loss

    rng = np.random.default_rng(1)
    right = rng.uniform(0.05, 1.0, size=(300, 3)) * np.array([1.0, 0.6, 0.8])
    weights = log_loss_weights(right)
    assert weights.min() >= 0 and weights.sum() == pytest.approx(1.0)
    grid = [(a, b, 100 - a - b) for a in range(101) for b in range(101 - a)]  # every 0.01 split
    best_on_grid = min(mean_log_loss(right, np.array(split) / 100) for split in grid)
    assert mean_log_loss(right, weights) <= best_on_grid + 1e-12


def test_a_run_that_only_adds_noise_gets_shrunk_toward_equal_not_trusted_blindly():
    from zoo.operations.weights import chosen_shrinkage, fit_weights

    rng = np.random.default_rng(0)
    targets = rng.integers(0, 2, 400)
    good = np.where(targets[:, None] == np.arange(2), 0.8, 0.2)  # right 80% sure, always
    runs = [good, good.copy()]  # two equally good runs: no fit can tell them apart
    weights = fit_weights(runs, targets)
    assert weights == pytest.approx([0.5, 0.5])
    # a useless run is fitted away: shrinkage only where held-out folds ask for it
    useless = np.full((400, 2), 0.5)
    right = np.stack([good[np.arange(400), targets], useless[np.arange(400), targets]], 1)
    assert chosen_shrinkage(right) == 0.0
    assert fit_weights([good, useless], targets)[0] > 0.99


def test_too_few_validation_rows_give_equal_weights():
    from zoo.operations.weights import fit_weights

    weights = fit_weights(
        probs([[0.9, 0.1], [0.4, 0.6]], [[0.9, 0.1], [0.9, 0.1]]), np.array([0, 0])
    )
    assert weights.tolist() == [0.5, 0.5]


def train(model, data) -> dict:
    result = run_cli(*run_args(model, data), "--json")
    assert result.code == 0, result
    return json.loads(result.out)


def run_args(model, data) -> list:
    sets = [part for setting in TINY[model] for part in ("--set", setting)]
    return ["run", model, data, "--steps", 20, "--quiet", *sets]


@pytest.fixture(scope="module")
def trained_home(tmp_path_factory):
    """The three runs of TINY on the negated reviews, trained once for the module."""
    base = tmp_path_factory.mktemp("ensemble")
    reviews = write_negated_reviews(base / "reviews.csv")
    printed = train_once(base, {model: run_args(model, reviews) for model in TINY})
    return base / "runs", [printed[model] for model in TINY]


@pytest.fixture
def three_runs(trained_home, isolated):
    """The three runs, in a copy of their store that is this test's ZOO_HOME."""
    from zoo.records.store import home

    source, runs = trained_home
    shutil.copytree(source, home())
    return runs


def combine(runs, *options) -> dict:
    result = run_cli("ensemble", *(r["run_id"] for r in runs), "--json", *options)
    assert result.code == 0, result
    return json.loads(result.out)


def test_equal_and_fitted_weights_are_recorded_beside_the_runs(three_runs):
    equal = combine(three_runs)
    assert equal["model"] == "ensemble(encoder-wordpunct+lstm-wordpunct+nbsvm-wordpunct)"
    assert [part["weight"] for part in equal["runs"]] == pytest.approx([1 / 3] * 3)
    fitted = combine(three_runs, "--weights", "fit")
    assert fitted["model"].startswith("ensemble-fit(")
    weights = [part["weight"] for part in fitted["runs"]]
    assert sum(weights) == pytest.approx(1.0)
    assert all(w >= 0 for w in weights)
    from zoo.records.store import Store

    with Store() as store:  # the rule is part of the ensemble's configuration
        assert store.get(fitted["id"])["config"]["weights_rule"].startswith("log-loss")
    for ensemble in (equal, fitted):
        assert {"val_accuracy", "test_accuracy", "test_loss"} <= ensemble["metrics"].keys()

    rows = json.loads(run_cli("runs", "--json").out)
    kinds = {row["model"]: row["kind"] for row in rows}
    assert kinds[equal["model"]] == kinds[fitted["model"]] == "ensemble"
    table = run_cli("compare", "--format", "csv")
    assert table.code == 0, table
    for name in [equal["model"], fitted["model"], *TINY]:
        assert name in table.out  # one row each, side by side
    shown = run_cli("show", fitted["id"])
    assert all(run["run_id"] in shown.out for run in three_runs)


def test_the_average_is_the_weighted_mean_of_each_runs_probabilities(three_runs, monkeypatch):
    """The ensemble's validation loss is that of the mean of the runs' own probabilities."""
    from zoo.pipelines import classification

    from zoo import api

    seen = []
    original = classification.split_probabilities

    def spy(trained, dataset, split, batch_size=128):
        predicted = original(trained, dataset, split, batch_size)
        seen.append((split, predicted))
        return predicted

    monkeypatch.setattr(classification.Classification, "split_probabilities", staticmethod(spy))
    result = api.ensemble([r["run_id"] for r in three_runs])
    validation = [p for split, p in seen if split == "validation"]
    mean = np.mean([p.probabilities for p in validation], axis=0)
    right = mean[np.arange(len(mean)), validation[0].targets]
    assert result.metrics["val_loss"] == pytest.approx(-np.log(right).mean())


def test_fitted_weights_never_read_the_test_split(three_runs, monkeypatch):
    """Poisoned test probabilities (every run sure of the wrong class) change the test
    figures and not the weights."""
    from zoo.pipelines import classification

    from zoo import api

    ids = [r["run_id"] for r in three_runs]
    clean = api.ensemble(ids, weights="fit")
    original = classification.split_probabilities

    def poisoned(trained, dataset, split, batch_size=128):
        predicted = original(trained, dataset, split, batch_size)
        if split == "test":
            wrong = np.eye(len(predicted.classes))[1 - predicted.targets]
            predicted.probabilities = wrong * (1 + (trained.run_id == ids[0]))  # unequal too
            predicted.probabilities /= predicted.probabilities.sum(1, keepdims=True)
        return predicted

    monkeypatch.setattr(
        classification.Classification, "split_probabilities", staticmethod(poisoned)
    )
    dirty = api.ensemble(ids, weights="fit")
    assert [p.weight for p in dirty.runs] == [p.weight for p in clean.runs]
    assert dirty.metrics["val_accuracy"] == clean.metrics["val_accuracy"]
    assert dirty.metrics["test_accuracy"] == 0.0 < clean.metrics["test_accuracy"]


def test_runs_of_other_datasets_or_kinds_are_refused_with_one_line(
    three_runs, negated_reviews, tmp_path
):
    other = tmp_path / "other.csv"
    other.write_text(negated_reviews.read_text().replace("film", "movie"))
    elsewhere = train("nbsvm-wordpunct", other)
    result = run_cli("ensemble", three_runs[0]["run_id"], elsewhere["run_id"])
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1
    assert "differ in" in result.err
    evaluation = json.loads(run_cli("eval", three_runs[0]["run_id"], negated_reviews, "--json").out)
    result = run_cli("ensemble", three_runs[0]["run_id"], evaluation["run_id"])
    assert result.code == 2 and "not a trained run" in result.err
    result = run_cli("ensemble", three_runs[0]["run_id"])
    assert result.code == 2 and "at least two" in result.err
    result = run_cli("ensemble", three_runs[0]["run_id"], "no-such-run")
    assert result.code == 2 and "no-such-run" in result.err


def test_an_ensemble_preset_trains_its_members_then_reuses_them(
    negated_reviews, one_thread, isolated
):
    (isolated / "registry.toml").write_text(
        '[models.tiny-nb]\narchitecture = "nbsvm"\ntokenizer = "wordpunct"\n'
        "[models.tiny-nb.set]\nbuckets = 101\nsteps = 1\n"
        '[models.tiny-lstm]\narchitecture = "lstm"\ntokenizer = "wordpunct"\n'
        "[models.tiny-lstm.set]\nn_embd = 16\nhidden = 8\nsteps = 10\neval_interval = 5\n"
        '[models.tiny-mix]\nmembers = ["tiny-nb", "tiny-lstm"]\nweights = "fit"\n'
    )
    first = run_cli("run", "tiny-mix", negated_reviews, "--json", "--quiet")
    assert first.code == 0, first
    combined = json.loads(first.out)
    assert combined["model"] == "ensemble-fit(tiny-lstm+tiny-nb)"
    rows = json.loads(run_cli("runs", "--json").out)
    assert sorted(row["model"] for row in rows if row["kind"] == "train") == [
        "tiny-lstm",
        "tiny-nb",
    ]
    again = json.loads(run_cli("run", "tiny-mix", negated_reviews, "--json", "--quiet").out)
    assert [p["run_id"] for p in again["runs"]] == [p["run_id"] for p in combined["runs"]]
    assert len(json.loads(run_cli("runs", "--json").out)) == 4  # two runs, two ensembles
    import zoo
    from zoo.errors import ZooDeprecationWarning

    run = zoo.run("tiny-mix", str(negated_reviews), quiet=True)  # one type: a Run
    assert isinstance(run, zoo.Run) and run.ensemble is not None and run.folder is None
    assert (run.id, run.model) == (run.ensemble.id, combined["model"])
    with pytest.warns(ZooDeprecationWarning, match=r"\.ensemble\.runs"):
        assert run.runs == run.ensemble.runs  # what zoo.run's Ensemble had
    shown = run_cli("show", "tiny-mix")
    assert shown.code == 0 and "tiny-nb, tiny-lstm" in shown.out


def test_a_setting_reaches_the_members_that_have_it_and_no_member_refuses_it(
    negated_reviews, one_thread, isolated
):
    """`pretrained` is a BERT member's setting, not an LSTM's: an ensemble preset's --set
    applies where it exists, and a key that no member has fails before training."""
    (isolated / "registry.toml").write_text(
        '[models.tiny-nb]\narchitecture = "nbsvm"\ntokenizer = "wordpunct"\n'
        "[models.tiny-nb.set]\nbuckets = 101\nsteps = 1\n"
        '[models.tiny-lstm]\narchitecture = "lstm"\ntokenizer = "wordpunct"\n'
        "[models.tiny-lstm.set]\nn_embd = 16\nhidden = 8\nsteps = 4\neval_interval = 2\n"
        '[models.tiny-mix]\nmembers = ["tiny-nb", "tiny-lstm"]\nweights = "equal"\n'
    )
    refused = run_cli("run", "tiny-mix", negated_reviews, "--set", "hiden=4", "--quiet")
    assert refused.code == 2 and len(refused.err.strip().splitlines()) == 1
    assert "Unknown config key 'hiden'" in refused.err and "hidden" in refused.err
    assert run_cli("runs", "--json").out.strip() in ("", "[]")  # nothing trained
    result = run_cli("run", "tiny-mix", negated_reviews, "--set", "hidden=4", "--quiet")
    assert result.code == 0, result
    from zoo.records.store import Store

    with Store() as store:
        configs = {r["model"]: r["config"]["configs"] for r in store.rows() if r["kind"] == "train"}
    assert configs["tiny-lstm"]["model"]["hidden"] == 4
    assert "hidden" not in configs["tiny-nb"]["model"]


def test_zoo_ensemble_stays_the_api_function_once_its_module_is_imported():
    import zoo
    import zoo.api
    import zoo.operations.ensemble

    assert callable(zoo.ensemble) and zoo.ensemble is zoo.api.ensemble


def test_runs_whose_data_changed_since_are_neither_combined_nor_scored_on_it(three_runs):
    """A local file edited after training: its carved validation and test splits are drawn
    again and may hold rows the runs trained on."""
    import zoo

    path = Path(zoo.show(three_runs[0]["run_id"]).record["config"]["dataset_id"])
    before = path.read_text(encoding="utf-8")
    try:
        path.write_text(before + "the film was fine,pos\n", encoding="utf-8")
        result = run_cli("ensemble", three_runs[0]["run_id"], three_runs[1]["run_id"])
        assert result.code == 2 and "the dataset changed since run" in result.err, result
        scored = run_cli("eval", three_runs[2]["run_id"], path)
        assert scored.code == 2 and "the dataset changed since run" in scored.err, scored
    finally:
        path.write_text(before, encoding="utf-8")


def test_eval_reads_a_runs_own_data_through_the_columns_it_trained_on(isolated):
    rows = ["text,gold,label"] + [
        f"the film was {'good' if i % 2 else 'awful'},{i % 2},{(i // 2) % 2}" for i in range(200)
    ]
    (isolated / "two.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    sets = [part for setting in TINY["nbsvm-wordpunct"] for part in ("--set", setting)]
    trained = run_cli(
        "run",
        "nbsvm-wordpunct",
        "two.csv",
        "--label-column",
        "gold",
        "--steps",
        5,
        "--quiet",
        "--json",
        *sets,
    )
    assert trained.code == 0, trained
    run = json.loads(trained.out)
    scored = json.loads(run_cli("eval", run["run_id"], "two.csv", "--json").out)
    assert scored["metrics"]["test_accuracy"] == run["metrics"]["test_accuracy"]
