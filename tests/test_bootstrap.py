"""The two-level bootstrap (seeds, then examples shared by every row): its replicates
against an exact enumeration of every resampling of a small case, and what it tells
apart: two models that differ on 3 of 1,000 examples are not told apart, on 80 they are."""

import functools
import itertools
import time

import numpy as np
import pytest

from zoo.comparison.bootstrap import difference, replicate_means


def test_replicates_match_every_resampling_enumerated():
    a = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])  # 2 seeds x 3 examples
    b = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    exact = []  # every draw of seeds for each row and of examples shared by both
    for sa, sb, ex in itertools.product(
        itertools.product(range(2), repeat=2),
        itertools.product(range(2), repeat=2),
        itertools.product(range(3), repeat=3),
    ):
        ex = list(ex)
        exact.append(a[list(sa)][:, ex].mean() - b[list(sb)][:, ex].mean())
    exact = np.array(exact)
    means = replicate_means([a, b], draws=200_000, seed=1)
    drawn = means[:, 0] - means[:, 1]
    assert drawn.mean() == pytest.approx(exact.mean(), abs=0.004)
    assert drawn.var() == pytest.approx(exact.var(), rel=0.03)
    assert (drawn <= 0).mean() == pytest.approx((exact <= 0).mean(), abs=0.005)


def test_examples_are_shared_by_the_rows_paired():
    # b is a with one example's score changed: a paired draw never sees them farther apart
    a = np.tile((np.arange(200) % 2).astype(float), (3, 1))
    b = a.copy()
    b[:, 0] = 1 - b[:, 0]
    means = replicate_means([a, b], draws=500)
    assert np.abs(means[:, 0] - means[:, 1]).max() <= 0.05


def test_three_examples_of_a_thousand_are_no_difference_eighty_are():
    base = np.zeros((1, 1000))
    for changed, told_apart in ((3, False), (80, True)):
        other = base.copy()
        other[0, :changed] = 1.0
        means = replicate_means([other, base])
        found = difference(changed / 1000, means[:, 0], means[:, 1])
        assert (found.p < 0.05) is told_apart, (changed, found)
        assert (found.low > 0) is told_apart


def test_ten_rows_of_two_thousand_examples_take_under_a_second_of_cpu():
    rng = np.random.default_rng(0)
    scores = [(rng.random((3, 2000)) < 0.8).astype(float) for _ in range(10)]
    replicate_means(scores, draws=50)  # warm up: the first large allocation
    start = time.process_time()
    means = replicate_means(scores)
    assert means.shape == (2000, 10)
    assert time.process_time() - start < 1.0


# -- in the comparison table -----------------------------------------------------------
def record_with_examples(model, seed, correct, rows=b"reviews test rows"):
    """A finished run and the per-example scores its pipeline handed back, with the digest
    of the test rows it scored (`rows`)."""
    from safetensors.numpy import save_file

    from zoo.records.paths import run_folder
    from zoo.records.store import Store

    run_id = f"{model}-{seed}"
    correct = np.asarray(correct, dtype=np.float32)
    with Store() as store:
        store.insert(
            run_id,
            model=model,
            architecture=model.partition("-")[0],
            tokenizer="word",
            dataset="reviews",
            task="classification",
            seed=seed,
            kind="train",
            status="finished",
            config_hash=run_id,
            config={"configs": {"model": {"dim": 8}, "train": {"steps": 100}}},
            metrics={"test_accuracy": float(correct.mean())},
        )
    folder = run_folder(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    digest = np.frombuffer(rows.ljust(16)[:16], dtype=np.uint8)
    scores = {"test_accuracy": correct, "examples:test": digest}
    save_file(scores, str(folder / "per_example.safetensors"))


def flipped(base, count, start=0):
    out = base.copy()
    out[start : start + count] = 1.0
    return out


def record_translations(model, seed, hypotheses, references):
    """A finished seq2seq run with the BLEU statistics of each of its sentences kept."""
    from safetensors.numpy import save_file
    from zoo.pipelines.seq2seq import text_scores

    from zoo.records.paths import run_folder
    from zoo.records.store import Store

    run_id = f"{model}-{seed}"
    figures, kept = text_scores(hypotheses, references)
    with Store() as store:
        store.insert(
            run_id,
            model=model,
            architecture=model.partition("-")[0],
            tokenizer="char",
            dataset="pairs",
            task="seq2seq",
            seed=seed,
            kind="train",
            status="finished",
            config_hash=run_id,
            config={"configs": {"model": {"dim": 8}, "train": {"steps": 100}}},
            metrics={"test_bleu": figures["bleu"]},
        )
    folder = run_folder(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    digest = np.frombuffer(b"pairs test rows".ljust(16), dtype=np.uint8)
    tensors = {"statistics:test_bleu": kept["bleu"], "examples:test": digest}
    save_file(tensors, str(folder / "per_example.safetensors"))


def test_corpus_bleu_replicates_rescore_the_drawn_sentences_enumerated():
    import sacrebleu
    from zoo.pipelines.seq2seq import score_statistics, text_scores

    from zoo.comparison.bootstrap import replicates

    hypotheses = ["the cat sat on the mat", "a dog ran", "birds fly south"]
    references = ["the cat sat on a mat", "a dog ran home", "birds fly south"]
    exact = [  # every resample of the 3 sentences, scored by sacreBLEU itself
        sacrebleu.corpus_bleu([hypotheses[i] for i in drawn], [[references[i] for i in drawn]])
        for drawn in itertools.product(range(3), repeat=3)
    ]
    exact = np.array([score.score for score in exact])
    table = text_scores(hypotheses, references)[1]["bleu"][None]  # 1 seed
    scorer = functools.partial(score_statistics, "test_bleu")
    means = replicates([table], draws=20_000, seed=3, scorers=[scorer])[0][:, 0]
    assert means.mean() == pytest.approx(exact.mean(), rel=0.02)
    assert means.var() == pytest.approx(exact.var(), rel=0.05)


def test_a_bleu_column_counts_the_sentences_noise():
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    references = [" ".join(rng.choice(words, size=8)) for _ in range(60)]
    for seed in range(2):  # b drops one word of 20 or 21 sentences: steady over seeds
        record_translations("a-char", seed, references, references)
        dropped = [r.rpartition(" ")[0] if i < 20 + seed else r for i, r in enumerate(references)]
        record_translations("b-char", seed, dropped, references)
    comparison = summarize(load_runs(), ComparisonSpec(metric="test_bleu", baseline="b-char"))
    assert comparison.examples_counted == ["test_bleu"]
    cell = comparison.cells.set_index("model").loc["a-char"]
    assert cell["test"] == "Welch and bootstrap" and cell["ci_low"] < cell["diff"] < cell["ci_high"]
    seeds_only = summarize(load_runs(), ComparisonSpec(metric="test_bleu", examples=False))
    assert seeds_only.examples_counted == []


def test_a_table_counts_the_examples_and_a_flag_keeps_the_seeds_only_view():
    from zoo.comparison.render import render
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize

    base = np.zeros(1000)
    base[500:] = 1.0  # half right
    # a beats b on 3 examples at every seed, and on 1 or 2 more at some: Welch over the
    # seeds alone tells them apart, the test examples' noise does not
    for seed, (extra_a, extra_b) in enumerate([(0, 0), (1, 1), (2, 0)]):
        record_with_examples("a-word", seed, flipped(flipped(base, 3), extra_a, start=10))
        record_with_examples("b-word", seed, flipped(base, extra_b, start=20))
    seeds_only = summarize(load_runs(), ComparisonSpec(examples=False, baseline="b-word")).cells
    assert seeds_only.set_index("model").loc["a-word", "significant"] is True
    both = summarize(load_runs(), ComparisonSpec(baseline="b-word"))
    cell = both.cells.set_index("model").loc["a-word"]
    assert cell["test"] == "Welch and bootstrap" and cell["significant"] is False
    assert not both.cells["best"].any()
    assert "the evaluation set's sampling noise" in render(both, "table")


def test_the_power_note_counts_the_examples_where_they_dominate():
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize

    base = np.zeros(1000)
    base[500:] = 1.0
    # a leads b by 3 to 5 of 1,000 examples, steadily over seeds: the seeds alone could
    # find a gap this small, the test set's own noise hides it whatever the seeds
    for seed, (extra_a, extra_b) in enumerate([(0, 0), (1, 1), (2, 0)]):
        record_with_examples("a-word", seed, flipped(flipped(base, 3), extra_a, start=10))
        record_with_examples("b-word", seed, flipped(base, extra_b, start=20))
    seeds_only = summarize(load_runs(), ComparisonSpec(examples=False))
    both = summarize(load_runs(), ComparisonSpec())
    alone = seeds_only.cells.set_index("model").loc["b-word", "detectable"]
    counted = both.cells.set_index("model").loc["b-word", "detectable"]
    # the difference's sd from the examples is about sqrt(0.004 / 1000) = 0.002
    assert alone < 0.004 < counted and counted > 2.8 * 0.002
    (note,) = [n for n in both.notes if n.startswith("power")]
    assert "these seeds and examples find a row" in note
    assert "no number of seeds would tell b-word from it" in note
    (note,) = [n for n in seeds_only.notes if n.startswith("power")]
    assert "these seeds find a row" in note and "no number of seeds" not in note


def test_deterministic_models_are_told_apart_by_their_examples_alone():
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize

    base = np.zeros(1000)
    for seed in range(2):
        record_with_examples("same-word", seed, base)
        record_with_examples("close-word", seed, flipped(base, 3))
        record_with_examples("far-word", seed, flipped(base, 80))
    close = summarize(
        load_runs(), ComparisonSpec(where="model != 'far-word'", baseline="same-word")
    ).cells
    close = close.set_index("model").loc["close-word"]
    assert close["test"] == "Welch and bootstrap" and close["significant"] is False
    far = summarize(
        load_runs(), ComparisonSpec(where="model != 'close-word'", baseline="same-word")
    ).cells
    cells = far.set_index("model")
    assert cells.loc["far-word", "significant"] is True and cells.loc["far-word", "best"]
    # seeds only: no seed variance, so no test at all
    alone = summarize(
        load_runs(), ComparisonSpec(where="model != 'close-word'", examples=False)
    ).cells
    assert not alone["best"].any()


def test_rows_that_scored_other_examples_are_never_paired():
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize

    base = np.zeros(1000)
    for seed in range(2):  # as far apart as the pair told apart above, on other test rows
        record_with_examples("same-word", seed, base)
        record_with_examples("far-word", seed, flipped(base, 80), rows=b"other test rows")
    comparison = summarize(load_runs(), ComparisonSpec(baseline="same-word"))
    assert comparison.examples_counted == [] and not comparison.cells["best"].any()


def test_a_splits_rows_digest_follows_its_rows():
    import datasets

    from zoo.data.datasets import LoadedDataset
    from zoo.data.sources import DatasetRef

    def loaded(texts):
        split = datasets.Dataset.from_dict({"text": texts, "label": [0, 1] * (len(texts) // 2)})
        return LoadedDataset(
            DatasetRef("d", "path", "d"),
            datasets.DatasetDict({"test": split}),
            "here",
            "text",
            "label",
            None,
            ("classification",),
        )

    first = loaded(["a", "b", "c", "d"])
    assert first.rows_digest("test") == loaded(["a", "b", "c", "d"]).rows_digest("test")
    assert first.rows_digest("test") != loaded(["a", "b", "c", "e"]).rows_digest("test")
    assert first.rows_digest("test") != first.sampling_evaluation(2).rows_digest("test")


def test_weighted_replicates_are_ratios_of_the_drawn_sums_enumerated():
    # windows of unequal length: a seed's figure is its drawn windows' nats over their tokens
    loss = np.array([[1.0, 2.0, 4.0], [2.0, 2.0, 3.0]])  # 2 seeds x 3 windows, per token
    tokens = np.array([[8.0, 8.0, 2.0], [8.0, 8.0, 2.0]])
    exact = []
    for seeds, windows in itertools.product(
        itertools.product(range(2), repeat=2), itertools.product(range(3), repeat=3)
    ):
        nats, counts = (loss * tokens)[:, list(windows)], tokens[:, list(windows)]
        exact.append(np.mean([nats[s].sum() / counts[s].sum() for s in seeds]))
    means = replicate_means([loss], draws=100_000, seed=2, weights=[tokens])[:, 0]
    assert means.mean() == pytest.approx(np.mean(exact), abs=0.004)
    assert means.var() == pytest.approx(np.var(exact), rel=0.03)


def test_language_model_rows_on_the_same_windows_are_compared_window_by_window(tiny_text):
    from conftest import TINY_DECODER

    import zoo
    from zoo.comparison.render import render
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize

    tiny = {**dict(pair.split("=") for pair in TINY_DECODER[1::2]), "samples": 0}
    for seed in range(2):  # two widths, two seeds each, on the same character windows
        for width in (8, 16):
            tiny["n_embd"] = width
            zoo.run("decoder-char", str(tiny_text), steps=2, seed=seed, quiet=True, **tiny)
    spec = ComparisonSpec(metric="test_bpc", baseline="decoder-char (n_embd=8)")
    comparison = summarize(load_runs(), spec)
    assert comparison.examples_counted == ["test_bpc"]
    cell = comparison.cells.set_index("setting").loc["n_embd=16"]
    assert cell["test"] == "Welch and bootstrap" and cell["ci_low"] < cell["diff"] < cell["ci_high"]
    shown = render(comparison, "table")
    assert "for test_bpc, the evaluation set's sampling noise" in shown
    row = next(line for line in shown.splitlines() if "n_embd=16" in line)
    assert row.split("(n=2)")[-1].strip().count("[") == 1  # the difference's interval
    seeds_only = summarize(load_runs(), ComparisonSpec(metric="test_bpc", examples=False))
    assert seeds_only.examples_counted == []


def test_scores_that_do_not_average_to_their_figure_with_their_weights_are_refused():
    from zoo.errors import ZooError
    from zoo.train.job import RunResult
    from zoo.train.runner import checked_per_example

    def result(weights):  # windows of 8, 8 and 2 tokens at 1, 2 and 4 nats per token
        figure = (8 * 1 + 8 * 2 + 2 * 4) / 18
        scores = {"test_loss": [1.0, 2.0, 4.0]}
        return RunResult(1, {"test_loss": figure}, None, per_example=scores, **weights)

    checked_per_example(result({"per_example_weights": {"test_loss": [8, 8, 2]}}), "lm")
    with pytest.raises(ZooError, match="average 2.33333, not its test_loss 1.77778"):
        checked_per_example(result({}), "lm")  # unweighted, the mean is another figure
    with pytest.raises(ZooError, match="not one non-negative weight per score"):
        checked_per_example(result({"per_example_weights": {"test_loss": [8, 8]}}), "lm")


def test_statistics_whose_sums_do_not_give_their_figure_are_refused():
    from zoo.pipelines.seq2seq import Seq2Seq, text_scores

    from zoo.errors import ZooError
    from zoo.train.job import RunResult
    from zoo.train.runner import checked_statistics

    figures, kept = text_scores(["a b c d", "e f"], ["a b c d", "e g"])
    tables = {"test_bleu": kept["bleu"]}

    def result(bleu):
        return RunResult(1, {"test_bleu": bleu}, None, per_example_statistics=tables)

    checked_statistics(result(figures["bleu"]), "seq2seq", Seq2Seq)
    with pytest.raises(ZooError, match="statistics 'test_bleu' score"):
        checked_statistics(result(figures["bleu"] + 1), "seq2seq", Seq2Seq)
    with pytest.raises(ZooError, match="no score_statistics"):
        checked_statistics(result(figures["bleu"]), "seq2seq", object())
