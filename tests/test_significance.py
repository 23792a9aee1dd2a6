"""Marks that mean what they say, from synthetic stores: "best" only where the leader is
told apart from every other row (Holm-adjusted), baseline marks Holm-adjusted within a
column, no mark from a zero-width interval or one seed, non-finite figures left out with a
note, numbers at their precision, one legend per task and metric, --baseline by label."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from zoo.comparison.render import render
from zoo.comparison.significance import best_marks, with_baseline
from zoo.comparison.stats import holm, t_quantile, t_two_sided_p
from zoo.comparison.table import ComparisonSpec, load_runs, summarize
from zoo.records.store import Store

_ids = itertools.count()


def record(model, seed, metrics, *, task="classification", dataset="reviews", **train):
    run_id = f"r{next(_ids)}"
    with Store() as store:
        store.insert(
            run_id,
            model=model,
            architecture=model.partition("-")[0],
            tokenizer=model.rpartition("-")[2],
            dataset=dataset,
            task=task,
            seed=seed,
            kind="train",
            status="finished",
            config_hash=f"hash-{run_id}",
            config={"configs": {"model": {"dim": 8}, "train": {"steps": 100, **train}}},
            metrics=metrics,
        )
    return run_id


def fill(model, values, metric="test_accuracy", **options):
    for seed, value in enumerate(values):
        record(model, seed, {metric: value}, **options)


# -- the numbers behind the marks --------------------------------------------------------
def test_t_tail_probabilities_invert_the_quantiles():
    for df in (1, 2, 3.7, 10, 30):
        assert t_two_sided_p(t_quantile(0.975, df), df) == pytest.approx(0.05, abs=1e-10)
    assert t_two_sided_p(0.0, 4) == pytest.approx(1.0)
    assert t_two_sided_p(1.0, 1) == pytest.approx(0.5)  # Cauchy: P(|T| > 1) = 1/2


def test_holm_adjusts_step_down_and_leaves_untestable_comparisons_out():
    # p sorted 0.01, 0.02, 0.04 of three tests: 3 * 0.01, max(0.03, 2 * 0.02), max(0.04, 0.04)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.030, 0.039]) == pytest.approx([0.06, 0.06])  # neither survives at 5%
    adjusted = holm([0.01, math.nan])
    assert adjusted[0] == pytest.approx(0.01) and math.isnan(adjusted[1])


# -- best marks ------------------------------------------------------------------------
def test_no_best_mark_when_the_leader_cannot_be_told_apart_from_one_row():
    fill("a-word", [0.59, 0.60, 0.61])  # 0.6000 ± 0.0100
    fill("b-word", [0.30, 0.31, 0.32])  # far behind
    fill("c-word", [0.05, 0.70, 0.74])  # 0.4967 ± 0.3874: not told apart from a-word
    comparison = summarize(load_runs())
    assert not comparison.cells["best"].any()
    text = render(comparison, "table")
    assert "on reviews, a-word leads but is not told apart from c-word (Holm-adjusted p=" in text
    assert "b-word (" not in text.split("no best marked")[1]  # b-word is told apart
    # without c-word, a-word beats every other row: marked
    clear = summarize(load_runs(), ComparisonSpec(where="model != 'c-word'")).cells.set_index(
        "model"
    )
    assert clear["best"].to_dict() == {"a-word": True, "b-word": False}


def test_no_mark_from_zero_seed_variance_or_one_seed():
    fill("a-word", [0.5, 0.5, 0.5])
    fill("b-word", [0.5000001] * 3)
    comparison = summarize(load_runs(), ComparisonSpec(baseline="a-word"))
    cells = comparison.cells.set_index("model")
    assert not cells["best"].any()
    assert cells.loc["b-word", "significant"] is None
    assert cells.loc["b-word", "test"] == "no seed variance"
    text = render(comparison, "table")
    body = text.split("\n\n")[0]
    assert "(no seed variance)" in body and "†" not in body and " *" not in body
    assert "sampling noise of the evaluation set is not" in text
    record("c-word", 0, {"test_accuracy": 0.9})  # one seed: cannot test, not "not significant"
    text = render(summarize(load_runs(), ComparisonSpec(baseline="a-word")), "table")
    assert "(cannot test: n<2)" in text


def _equal_rows_table(rng, rows=10, n=3):
    cells = []
    for r in range(rows):
        values = rng.normal(0.5, 0.01, n)
        cells.append(
            {
                "model": f"m{r}",
                "dataset": "d",
                "task": "classification",
                "metric": "test_accuracy",
                "better": "higher",
                "mean": float(values.mean()),
                "std": float(values.std(ddof=1)),
                "n": n,
                "setting": "",
                "_settings": {},
            }
        )
    return pd.DataFrame(cells)


def test_a_baseline_mark_is_holm_adjusted_over_the_columns_comparisons():
    fill("base-word", [0.49, 0.50, 0.51])
    # alone against the baseline: t = 0.04 / 0.008165 = 4.899 on Hsu's 2 df, p = 0.0392
    fill("b-word", [0.53, 0.54, 0.55])
    fill("c-word", [0.49, 0.50, 0.51])
    fill("d-word", [0.48, 0.50, 0.52])
    cells = summarize(load_runs(), ComparisonSpec(baseline="base-word")).cells.set_index("model")
    b = cells.loc["b-word"]
    assert b["ci_low"] > 0 and b["p"] == pytest.approx(0.0392, abs=1e-3)
    assert b["p_holm"] == pytest.approx(3 * b["p"]) and b["significant"] is False
    alone = summarize(
        load_runs(), ComparisonSpec(baseline="base-word", where="model in ['base-word', 'b-word']")
    )
    assert alone.cells.set_index("model").loc["b-word", "significant"] is True


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 5])
def test_ten_equal_rows_get_a_mark_in_at_most_5_percent_of_tables(n):
    rng = np.random.default_rng(0)
    tables = 400
    marked = best = 0
    for _ in range(tables):
        table = _equal_rows_table(rng, n=n)
        compared = with_baseline(table, ["model"], ["dataset"], "m0", 0.95)
        marked += bool((compared["significant"] == True).any())  # noqa: E712 (None stays out)
        best += any(best_marks(table, ["model"], ["dataset"], 0.95)[0])
    assert marked / tables <= 0.05, marked
    assert best / tables <= 0.05, best


# -- values and notes ------------------------------------------------------------------
def test_an_infinite_figure_is_left_out_with_a_note():
    fill("a-word", [0.5, 0.6])
    record("a-word", 2, {"test_accuracy": math.inf})
    comparison = summarize(load_runs())
    (cell,) = comparison.cells.itertuples()
    assert cell.n == 2 and cell.mean == pytest.approx(0.55)
    assert any("1 run(s) diverged (a non-finite test_accuracy)" in n for n in comparison.notes)
    import zoo

    assert any("non-finite" in note for note in zoo.compare().notes)


def test_a_nan_figure_is_named_as_diverged_not_as_missing():
    fill("a-word", [0.5, 0.6])
    nan_run = record("a-word", 2, {"test_accuracy": math.nan})
    record("a-word", 3, {"val_accuracy": 0.5})  # no test figure at all: missing, not diverged
    notes = summarize(load_runs()).notes
    assert any("1 run(s) diverged" in n and f"{nan_run} (nan)" in n for n in notes), notes
    assert any("1 of 4 matching runs recorded no primary metric" in n for n in notes), notes


def test_small_figures_keep_their_significant_digits():
    fill("a-word", [0.000127 - 0.0000208, 0.000127, 0.000127 + 0.0000208], metric="val_unk_rate")
    text = render(summarize(load_runs(), ComparisonSpec(metric="val_unk_rate")), "table")
    assert "0.0001270 ± 0.0000208 (n=3)" in text


def test_unfinished_runs_left_out_are_noted_and_mixed_statuses_are_noted():
    fill("a-word", [0.5, 0.6])
    with Store() as store:
        store.update(record("a-word", 5, {"test_accuracy": 0.1}), status="failed")
    comparison = summarize(load_runs())
    assert any("1 failed" in note and "--status all" in note for note in comparison.notes)
    pooled = summarize(load_runs(), ComparisonSpec(status=("all",)))
    assert any("statuses" in note for note in pooled.notes)


# -- baseline by label, ambiguity -----------------------------------------------------
def test_baseline_by_full_label_or_setting_filter_and_ambiguity_is_exit_2():
    fill("a-word", [0.50, 0.52, 0.51], steps=270)
    fill("a-word", [0.60, 0.62, 0.61], steps=9000)
    fill("b-word", [0.55, 0.56, 0.57])
    ambiguous = run_cli("compare", "--baseline", "a-word")
    assert ambiguous.code == 2
    assert "a-word (steps=270)" in ambiguous.err and "a-word (steps=9000)" in ambiguous.err
    for name in ("a-word (steps=270)", "a-word (train.steps=270)"):
        chosen = run_cli("compare", "--baseline", name)
        assert chosen.code == 0, chosen
        line = next(x for x in chosen.out.splitlines() if x.startswith("a-word (steps=9000)"))
        assert "+0.1000 [" in line
    unknown = run_cli("compare", "--baseline", "c-word")
    assert unknown.code == 2 and "c-word" in unknown.err


def test_a_baseline_that_is_every_row_is_exit_2():
    fill("a-word", [0.5, 0.6])
    result = run_cli("compare", "--baseline", "a-word")
    assert result.code == 2 and "no row of the table has a baseline" in result.err


# -- legends -----------------------------------------------------------------------------
def test_each_task_and_metric_of_a_table_has_its_own_legend_line():
    fill("enc-bpe", [0.7, 0.72])
    fill("enc-bpe", [0.3, 0.31], task="masked-language-modeling")
    text = render(summarize(load_runs()), "table")
    legend = text.split("\n\n", 1)[1]
    assert "[classification test_accuracy] test_accuracy (fraction correct" in legend
    assert "[masked-language-modeling test_accuracy] test_accuracy (fraction of masked" in legend
    assert legend.count("test split") == 2


def test_bars_of_a_metric_that_is_not_a_fraction_start_near_the_data():
    from zoo.comparison.plots import comparison_bars

    fill("a-char", [3.55, 3.57], metric="val_bpc", task="language-modeling")
    fill("b-char", [3.65, 3.67], metric="val_bpc", task="language-modeling")
    low, high = comparison_bars(summarize(load_runs())).axes[0].get_ylim()
    assert 3.0 < low < 3.55 and high < 4.0
    fill("c-word", [0.7, 0.72])
    accuracy = [ax for ax in comparison_bars(summarize(load_runs())).axes if ax.get_ylim()]
    assert min(ax.get_ylim()[0] for ax in accuracy) == 0


def test_the_statistics_page_says_what_each_mark_means_and_which_noise_is_counted():
    from pathlib import Path

    from zoo.comparison.stats import NO_VARIANCE, ONE_SEED

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "guide" / "statistics.md").read_text(encoding="utf-8")
    assert "guide/statistics.md" in (root / "mkdocs.yml").read_text(encoding="utf-8")
    for words in ("`*`", "`†`", ONE_SEED, NO_VARIANCE, "Holm", "seed-to-seed variance"):
        assert words in page, words
    assert "per_example.safetensors" in page and "--seeds-only" in page


def test_rows_that_differ_in_settings_are_ranked_on_validation_with_test_beside():
    # a grid over steps: the 200-step rows lead on validation; test is reported, not marked
    for seed in range(3):
        record("a-word", seed, {"val_accuracy": 0.90 + seed / 1000, "test_accuracy": 0.50})
        record("a-word", seed, {"val_accuracy": 0.60 + seed / 1000, "test_accuracy": 0.80}, steps=9)
    comparison = summarize(load_runs())
    cells = comparison.cells.set_index(["metric", "setting"])
    assert set(comparison.cells["metric"]) == {"val_accuracy", "test_accuracy"}
    assert cells.loc[("val_accuracy", "steps=100"), "best"]
    assert not comparison.cells.loc[comparison.cells["metric"] == "test_accuracy", "best"].any()
    assert any("ranked on val_accuracy" in note for note in comparison.notes)
    # models compared as they are (no choice among settings): the headline figure alone
    fill("b-word", [0.7, 0.71, 0.72])
    alone = summarize(load_runs(), ComparisonSpec(where="steps == 100"))
    assert set(alone.cells["metric"]) == {"test_accuracy"}
    # --metric picks one figure
    assert set(summarize(load_runs(), ComparisonSpec(metric="test_accuracy")).cells["metric"]) == {
        "test_accuracy"
    }


# -- power ---------------------------------------------------------------------------
def test_power_of_a_t_test_matches_the_noncentral_t_distribution():
    from zoo.comparison.stats import (
        detectable,
        detectable_differences,
        floor_bars,
        seeds_needed,
        t_test_power,
    )

    stats = pytest.importorskip("scipy.stats")
    for df, alpha, shift in [(1, 0.05, 5.0), (2, 0.0125, 3.0), (4, 0.05, 2.0), (9, 0.01, 4.0)]:
        c = stats.t.ppf(1 - alpha / 2, df)
        exact = stats.nct.sf(c, df, shift) + stats.nct.cdf(-c, df, shift)
        assert t_test_power(shift, df, alpha) == pytest.approx(exact, abs=1e-5)
    # the detectable difference is where the power reaches 80%
    least = detectable(math.sqrt(2), 5, 0.05)  # sd 1 a side, 5 seeds: se = sqrt(2/5)
    assert t_test_power(least / math.sqrt(2 / 5), 4, 0.05) == pytest.approx(0.8, abs=1e-3)
    # seeds needed: the first n whose detectable difference reaches the one observed
    n = seeds_needed(1.0, 1.0, 1.0, 0.05)
    assert detectable(math.sqrt(2), n, 0.05) <= 1.0 < detectable(math.sqrt(2), n - 1, 0.05)
    assert seeds_needed(1e-6, 1.0, 1.0, 0.05) is None  # beyond any budget
    # the examples' variance (a floor more seeds do not remove) asks for more seeds, and
    # where it alone hides the difference, no number of seeds is enough
    assert seeds_needed(1.0, 1.0, 1.0, 0.05, floor=0.05) > n
    assert seeds_needed(1.0, 1.0, 1.0, 0.05, floor=0.2) is None
    assert floor_bars(1.0, 0.2, 0.05) and not floor_bars(1.0, 0.05, 0.05)
    least = detectable_differences([math.sqrt(2)] * 2, [5, 5], [0.05] * 2, floors=[0, 0.1])
    assert least[1] == pytest.approx(least[0] * math.sqrt(1 + 0.1 / (2 / 5)))


def test_each_column_states_the_difference_its_seeds_could_find():
    fill("a-word", [0.60, 0.61, 0.62])
    fill("b-word", [0.59, 0.61, 0.62])  # 0.007 behind: far within what 3 seeds can find
    fill("c-word", [0.10, 0.11, 0.12])  # 0.5 behind: found
    comparison = summarize(load_runs())
    cells = comparison.cells.set_index("model")
    least = cells.loc["b-word", "detectable"]
    assert 0.01 < least < 0.2 and math.isnan(cells.loc["a-word", "detectable"])
    (note,) = [n for n in comparison.notes if n.startswith("power")]
    assert "closer, and so easily missed: b-word (" in note and "c-word (" not in note
    # the leader is not told apart from b-word: how many seeds would do it
    assert "seeds a side would tell b-word from it at the spread observed" in note


def test_power_figures_are_the_scalar_solvers_and_a_large_table_takes_little_time():
    import time

    from zoo.comparison import stats
    from zoo.comparison.significance import power_notes

    # (spread, seeds, alpha) and the figures of the solver before it was vectorised
    cases = [(math.sqrt(2), 2, 0.05), (1.0, 3, 0.05 / 9), (0.3, 5, 0.025), (2.5, 10, 0.0125)]
    before = [16.3349609375, 9.823975674179728, 0.6150060402178131, 3.210916208164133]
    found = stats.detectable_differences(*zip(*cases))
    assert found == pytest.approx(before, rel=1e-6)
    needed = [(1.0, 1.0, 1.0, 0.05), (0.5, 1.0, 0.2, 0.05 / 9), (3.0, 1.0, 2.0, 0.05)]
    assert [stats.seeds_needed(*case) for case in needed] == [18, 59, 7]
    # 16 columns of 10 rows at 2 to 9 seeds: one solve per distinct (seeds, alpha)
    rng = np.random.default_rng(0)
    cells = pd.DataFrame(
        {
            "model": [f"m{i % 10}" for i in range(160)],
            "dataset": [f"d{i // 10}" for i in range(160)],
            "task": "t",
            "metric": "m",
            "better": "higher",
            "mean": rng.normal(size=160),
            "std": rng.uniform(0.5, 1.5, size=160),
            "n": rng.integers(2, 10, size=160),
            "setting": "",
            "best": False,
        }
    )
    stats._SHIFTS.clear()  # as a first table would
    start = time.perf_counter()
    least, notes = power_notes(cells, ["model"], ["dataset"], 0.95)
    assert time.perf_counter() - start < 3.0  # one bisection per row took about 15 s
    assert np.isfinite(least).sum() == 144 and len(notes) == 1
