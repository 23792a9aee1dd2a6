"""zoo compare: statistics against hand computations, --where, every --format, plots;
zoo eval rows, zoo reproduce and provenance on tiny runs."""

import io
import json
import math

import pandas as pd
import pytest
from conftest import TINY_DECODER, run_cli

from zoo.comparison.render import render
from zoo.comparison.stats import paired_interval, t_quantile, welch_interval
from zoo.comparison.table import ComparisonSpec, summarize
from zoo.records.store import Store

LM = "language-modeling"


def record(
    model, dataset, seed, metrics, *, steps=100, run_id=None, row=None, configs=None, **provenance
):
    """A run row written straight into the store, as execute would leave it. ``row`` sets
    its store fields (task, status, architecture, kind, config_hash, parent_id, created),
    ``configs`` its recorded sections beside ``steps`` (train, model, dataset), and the
    keywords are its provenance (machine, stacked, ...)."""
    row = {
        "task": LM,
        "status": "finished",
        "architecture": "decoder",
        "kind": "train",
        "parent_id": None,
        **(row or {}),
    }
    configs = configs or {}
    run_id = (
        run_id or f"{model}-{dataset}-{seed}-{steps}-{len(metrics)}-{row['status']}-{row['kind']}"
    )
    config = {
        "configs": {
            "model": configs.get("model") or {"n_layer": 2},
            "tokenizer": None,
            "train": {"steps": steps, **(configs.get("train") or {})},
            **({"dataset": configs["dataset"]} if configs.get("dataset") else {}),
        },
        **provenance,
    }
    created = row.pop("created", None)
    fields = dict(
        model=model,
        tokenizer=model.rpartition("-")[2],
        dataset=dataset,
        seed=seed,
        params=1000,
        config_hash=row.pop("config_hash", None) or run_id,
        config=config,
        metrics=metrics,
        duration=1.0,
        **row,
    )
    with Store() as store:
        store.insert(run_id, **fields)
        if created is not None:
            store.update(run_id, created=created)
    return run_id


def loaded():
    from zoo.comparison.table import load_runs

    return load_runs()


def fill_two_models():
    # hand example: a = [1.0, 1.2] (baseline), b = [5.0, 5.2], c = [1.5, 1.7] on "text"
    for seed, (a, b, c) in enumerate([(1.0, 5.0, 1.5), (1.2, 5.2, 1.7)]):
        record("base-char", "text", seed, {"val_bpc": a, "tokens_per_s": 100.0 + seed})
        record("big-char", "text", seed, {"val_bpc": b, "tokens_per_s": 50.0})
        record("mid-char", "text", seed, {"val_bpc": c, "tokens_per_s": 70.0})
    record("base-char", "other", 0, {"val_bpc": 3.0})
    record("big-char", "other", 0, {"val_bpc": 2.5})


# -- statistics ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "df, expected",
    [(1, 12.706204736), (2, 4.302652730), (5, 2.570581836), (10, 2.228138852), (30, 2.042272456)],
)
def test_t_quantiles_match_the_printed_tables(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-7)
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-7)


@pytest.mark.parametrize(
    "p, df, expected",  # scipy.stats.t.ppf: Welch's df is any real number
    [
        (0.975, 12, 2.1788128296672284),
        (0.975, 3.3481039716563217, 3.003207719719235),
        (0.995, 2.5, 7.163728138948783),
        (0.9, 7.25, 1.409884895325902),
    ],
)
def test_t_quantiles_at_any_degrees_of_freedom(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, rel=1e-9)


def test_t_quantiles_invert_the_tail_at_every_degree_of_freedom():
    from zoo.comparison.stats import t_two_sided_p

    wrong = [
        df
        for df in (1 + i / 100 for i in range(3900))
        if abs(t_two_sided_p(t_quantile(0.975, df), df) - 0.05) > 1e-9
    ]
    assert not wrong, f"{len(wrong)} wrong, first at df={wrong[0]}"


def test_welch_interval_against_a_hand_computation():
    # b - a with sd 0.1414 on both sides and n = 2: se = sqrt(0.02/2 + 0.02/2) = 0.141421,
    # Hsu's df = min(2, 2) - 1 = 1 (Welch-Satterthwaite's would say 2), t = 12.706205,
    # margin = 1.796929
    interval = welch_interval(2.1, math.sqrt(0.02), 2, 1.1, math.sqrt(0.02), 2)
    assert interval.df == pytest.approx(1.0)
    assert interval.diff == pytest.approx(1.0)
    assert interval.low == pytest.approx(1.0 - 1.796929, abs=1e-6)
    assert interval.high == pytest.approx(1.0 + 1.796929, abs=1e-6)
    assert interval.significant is False
    apart = welch_interval(3.1, math.sqrt(0.02), 2, 1.1, math.sqrt(0.02), 2)
    assert apart.low == pytest.approx(2.0 - 1.796929, abs=1e-6) and apart.significant is True
    assert welch_interval(1.6, float("nan"), 1, 1.1, 0.1, 2).significant is None
    # unequal seeds: the smaller side's n - 1
    assert welch_interval(1.0, 0.1, 3, 0.0, 0.1, 5).df == pytest.approx(2.0)


def test_figures_equal_at_every_seed_are_no_spread_whatever_their_rounding():
    # three seeds at 0.1 on each side: pandas' std is about 1.7e-17, not 0
    import pandas as pd

    sd = float(pd.Series([0.1, 0.1, 0.1]).std(ddof=1))
    assert 0 < sd < 1e-15  # the rounding this guards against
    tied = welch_interval(0.1, sd, 3, 0.2, sd, 3)
    # no interval at all, not [diff, diff]: a filter on its ends must not count it
    assert math.isnan(tied.low) and math.isnan(tied.high) and tied.significant is None
    assert not (tied.high < 0) and tied.untestable == "no seed variance"
    same = paired_interval([0.5, 0.6, 0.7], [0.55, 0.65, 0.75])  # -0.05 at every seed
    assert same.diff == pytest.approx(-0.05) and math.isnan(same.low) and math.isnan(same.high)
    assert same.untestable == "no seed variance" and same.significant is None
    one_side = welch_interval(0.1, sd, 3, 0.2, 0.05, 3)  # the other side's spread counts
    assert one_side.df == pytest.approx(2.0) and one_side.low < one_side.high


def test_cells_hold_mean_std_n_best_and_the_baseline_difference():
    fill_two_models()
    cells = summarize(loaded(), ComparisonSpec(baseline="base-char")).cells.set_index(
        ["model", "dataset"]
    )
    base, big, mid = (cells.loc[(m, "text")] for m in ("base-char", "big-char", "mid-char"))
    assert base["mean"] == pytest.approx(1.1) and base["n"] == 2
    assert base["std"] == pytest.approx(math.sqrt(0.02))  # sample std: |1.0 - 1.2| / sqrt(2)
    assert base["metric"] == "val_bpc" and base["better"] == "lower"
    # base leads mid, but the interval of their difference holds 0: tied, no best marked
    assert not bool(base["best"]) and not bool(big["best"]) and not bool(mid["best"])
    # se = 0.141421 a side pair, Hsu's df = 1: margin 12.706205 * 0.141421 = 1.796929
    assert big["diff"] == pytest.approx(4.0)
    assert big["ci_low"] == pytest.approx(2.203071, abs=1e-5) and bool(big["significant"])
    assert mid["ci_low"] == pytest.approx(-1.296929, abs=1e-5) and not bool(mid["significant"])
    assert math.isnan(base["diff"])  # the baseline is not compared with itself
    single = cells.loc[("big-char", "other")]
    assert single["n"] == 1 and math.isnan(single["std"]) and not bool(single["best"])
    assert math.isnan(single["ci_low"])  # one run: no interval
    assert set(big["runs"].split()) == {
        "big-char-text-0-100-2-finished-train",
        "big-char-text-1-100-2-finished-train",
    }


def test_text_table_marks_best_and_significance():
    fill_two_models()
    result = run_cli("compare", "--baseline", "base-char")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert lines[0].split()[:2] == ["model", "other"]
    base_line = next(line for line in lines if line.startswith("base-char"))
    assert "1.100 ± 0.141 (n=2)" in base_line and not base_line.endswith("*")
    assert "on text, base-char leads but is not told apart from mid-char" in result.out
    big_line = next(line for line in lines if line.startswith("big-char"))
    assert "+4.000 [2.203, 5.797] †" in big_line
    assert "lower is better" in result.out and "95% Welch interval" in result.out
    assert "Holm" in result.out


@pytest.mark.parametrize(
    "task, metric, better",
    [
        ("language-modeling", "val_bpc", "lower"),
        ("classification", "test_accuracy", "higher"),
        ("language-modeling", "tokens_per_s", "higher"),
        ("next-item", "params", "lower"),
        ("next-item", "test_arithmetic_accuracy", "higher"),
        ("next-item", "test_loss_arithmetic", "lower"),
        ("language-modeling", "unk_rate", "lower"),
        ("language-modeling", "vocab_size", None),
        ("classification", "steps", None),
        ("classification", "val_bpc", None),
        ("a-task-nobody-registers", "test_mse", None),
    ],
)
def test_direction_comes_from_the_task_registration(task, metric, better):
    from zoo.comparison.table import direction

    assert direction(metric, task) == better


def test_higher_is_better_for_accuracy_and_tasks_never_share_a_column_best():
    for seed, (enc, bow) in enumerate([(0.8, 0.6), (0.82, 0.61)]):
        record("enc-char", "emotion", seed, {"test_accuracy": enc}, row={"task": "classification"})
        record("bow-char", "emotion", seed, {"test_accuracy": bow}, row={"task": "classification"})
    record("dec-char", "emotion", 0, {"val_bpc": 0.1})  # an LM run on the same dataset
    cells = summarize(loaded()).cells.set_index("model")
    assert bool(cells.loc["enc-char", "best"]) and not bool(cells.loc["bow-char", "best"])
    assert not bool(cells.loc["dec-char", "best"])  # alone in its (task, metric) column
    text = render(summarize(loaded()), "table")
    assert "emotion [test_accuracy]" in text and "emotion [val_bpc]" in text


def test_where_filters_and_a_bad_expression_is_exit_2():
    fill_two_models()
    result = run_cli("compare", "--where", "model != 'big-char' and seed == 0", "--format", "csv")
    assert result.code == 0, result
    table = pd.read_csv(io.StringIO(result.out))
    assert sorted(set(table["model"])) == ["base-char", "mid-char"] and set(table["n"]) == {1}
    bad = run_cli("compare", "--where", "model ==")
    assert (
        bad.code == 2
        and bad.err.startswith("zoo: error: --where")
        and len(bad.err.splitlines()) == 1
    )
    none = run_cli("compare", "--where", "params > 1e9")
    assert none.code == 2 and "no training runs" in none.err


def test_only_finished_train_runs_count_by_default_and_repeats_count_once():
    fill_two_models()
    record("base-char", "text", 5, {"val_bpc": 99.0}, row={"status": "failed"})
    record(
        "base-char",
        "text",
        0,
        {"val_bpc": 1.05},
        steps=100,
        row={"config_hash": "base-char-text-0-100-2-finished-train", "created": 2e9},
    )  # a later rerun of seed 0: replaces it, not added
    base = summarize(loaded()).cells.set_index(["model", "dataset"]).loc[("base-char", "text")]
    assert base["n"] == 2 and base["mean"] == pytest.approx((1.05 + 1.2) / 2)
    everything = summarize(loaded(), ComparisonSpec(status=("all",))).cells.set_index(
        ["model", "dataset"]
    )
    assert everything.loc[("base-char", "text"), "n"] == 3
    record("odd-char", "text", 0, {"train_loss": 1.0})  # finished, but without val_bpc
    comparison = summarize(loaded())
    assert "odd-char" not in set(comparison.cells["model"])
    assert "1 of 10 matching runs recorded no primary metric and are left out" in comparison.notes


def test_runs_with_different_settings_are_separate_rows():
    record("base-char", "text", 0, {"val_bpc": 1.0}, steps=100)
    record("base-char", "text", 0, {"val_bpc": 0.5}, steps=2000)
    cells = summarize(loaded()).cells
    assert sorted(cells["setting"]) == ["steps=100", "steps=2000"] and set(cells["n"]) == {1}
    text = render(summarize(loaded()), "table")
    assert "base-char (steps=2000)" in text
    pooled = summarize(loaded(), ComparisonSpec(pool=True)).cells
    assert len(pooled) == 1 and pooled["n"].iloc[0] == 2 and pooled["configs"].iloc[0] == 2
    # two runs at one seed: n counts runs, and the legend says so (not "distinct seeds")
    legend = render(summarize(loaded(), ComparisonSpec(pool=True)), "table").split("\n\n")[1]
    assert "(n runs: each configuration at each seed once)" in legend
    assert "distinct seeds" not in legend


def test_a_models_tasks_are_columns_not_settings():
    # each task's pipeline has its own training config: that is no difference of settings
    record("dec-char", "text", 0, {"val_bpc": 1.0})
    record(
        "dec-char",
        "digits",
        0,
        {"test_accuracy": 0.5},
        row={"task": "next-item"},
        configs={"train": {"eval_windows": 4000}},
    )
    comparison = summarize(loaded())
    assert list(comparison.cells["setting"]) == ["", ""]
    lines = render(comparison, "table").splitlines()
    assert lines[0].split() == ["model", "digits", "[test_accuracy]", "text", "[val_bpc]"]
    assert (
        lines[2].startswith("dec-char ")
        and "0.5000 (n=1)" in lines[2]
        and "1.000 (n=1)" in lines[2]
    )


def test_a_datasets_own_options_do_not_split_rows_where_datasets_are_columns():
    # digits has options of its own, text none: the column tells them apart already
    record("dec-char", "text", 0, {"val_bpc": 1.0})
    record("dec-char", "digits", 0, {"val_bpc": 0.5}, configs={"dataset": {"max_len": 8}})
    comparison = summarize(loaded())
    assert list(comparison.cells["setting"]) == ["", ""]
    assert render(comparison, "table").splitlines()[2].split()[0] == "dec-char"
    # two settings of digits in one column still split its row, and only by what differs
    record("dec-char", "digits", 1, {"val_bpc": 0.7}, configs={"dataset": {"max_len": 12}})
    cells = summarize(loaded()).cells.set_index("dataset")
    assert sorted(cells.loc["digits", "setting"]) == ["max_len=12", "max_len=8"]
    assert cells.loc["text", "setting"] == ""


def test_models_and_datasets_that_are_no_key_are_rows_of_their_own():
    # two datasets in one task column, two models of one architecture: four configurations
    for seed in (0, 1):
        record("dec-char", "a.txt", seed, {"val_bpc": 1.0 + seed / 10})
        record("dec-char", "b.txt", seed, {"val_bpc": 2.0 + seed / 10})
        record("dec-bpe", "a.txt", seed, {"val_bpc": 3.0 + seed / 10})
    cells = summarize(loaded(), ComparisonSpec(columns=["task"])).cells
    assert sorted(cells["setting"]) == ["", "dataset=a.txt", "dataset=b.txt"]  # dec-bpe: one
    assert set(cells["n"]) == {2} and sorted(cells["mean"]) == pytest.approx([1.05, 2.05, 3.05])
    by_architecture = summarize(loaded(), ComparisonSpec(by=["architecture"])).cells
    assert sorted(by_architecture["setting"]) == ["model=dec-bpe"] + ["model=dec-char"] * 2
    assert set(by_architecture["n"]) == {2}
    pooled = summarize(loaded(), ComparisonSpec(columns=["task"], pool=True))
    dec_char = pooled.cells.set_index("model").loc["dec-char"]
    assert dec_char["n"] == 4 and dec_char["configs"] == 2
    assert "some cells pool runs with different settings (--pool)" in pooled.notes


def test_two_configurations_of_a_column_never_share_a_row():
    # each pair prints alike: a setting unset and set to None; 1 and 1.0
    pairs = [({}, {"time": None}), ({"lr": 1}, {"lr": 1.0})]
    for index, (first, second) in enumerate(pairs):
        for seed in (0, 1):
            record(
                "dec-char",
                "text",
                seed,
                {"val_bpc": 2.0},
                run_id=f"a{index}{seed}",
                configs={"train": first},
            )
            record(
                "dec-char",
                "text",
                seed,
                {"val_bpc": 1.0},
                run_id=f"b{index}{seed}",
                configs={"train": second},
            )
        comparison = summarize(loaded())
        labels = list(comparison.cells["setting"])
        assert len(labels) == 2 and len(set(labels)) == 2, labels
        if index == 1:  # both print lr=1: each ends with its configuration's id
            assert all(label.startswith("lr=1, config ") for label in labels), labels
        shown = render(comparison, "table")
        assert "2.000 ± 0.000 (n=2)" in shown and "1.000 ± 0.000 (n=2)" in shown
        with Store() as store:
            for run_id in [r["id"] for r in store.rows()]:
                store.delete([run_id])


def test_a_time_budgeted_rows_trained_steps_are_each_columns():
    for dataset, trained in (("text", 500), ("other", 800)):
        for seed in (0, 1):
            record(
                "dec-char",
                dataset,
                seed,
                {"val_bpc": 1.0, "steps": trained},
                steps=100000,
                configs={"train": {"time": 10}},
            )
            record(
                "dec-char",
                dataset,
                seed,
                {"val_bpc": 1.1, "steps": 2 * trained},
                steps=100000,
                run_id=f"{dataset}{seed}long",
                configs={"train": {"time": 20}},
            )
    labels = sorted(set(summarize(loaded()).cells["setting"]))
    assert labels == ["steps=1000-1600, time=20", "steps=500-800, time=10"]


def test_labels_name_an_ensemble_member_and_a_setting_named_like_a_run_column():
    record("dig-char", "digits", 0, {"val_bpc": 1.0}, run_id="d0", configs={"dataset": {"seed": 0}})
    record("dig-char", "digits", 0, {"val_bpc": 1.2}, run_id="d1", configs={"dataset": {"seed": 1}})
    assert sorted(summarize(loaded()).cells["setting"]) == ["dataset.seed=0", "dataset.seed=1"]
    from zoo.comparison.labels import label_names

    names = label_names(["enc-bpe.steps", "train.lr", "model.seed"])
    assert names == {"enc-bpe.steps": "enc-bpe.steps", "train.lr": "lr", "model.seed": "model.seed"}


def test_evaluations_of_different_configurations_are_never_merged():
    # a run alone, one trained stacked and one started from other weights, at two seeds
    kinds = {"alone": {}, "stacked": {"stacked": 2}, "init": {"init": {"run_id": "x"}}}
    for seed in (0, 1):
        for name, extra in kinds.items():
            parent = record(
                "dec-char", "text", seed, {"val_bpc": 1.0}, run_id=f"{name}{seed}", **extra
            )
            record(
                "dec-char",
                "other",
                seed,
                {"test_bpc": 2.0},
                trained_on="text",
                split="test",
                run_id=f"eval-{name}{seed}",
                row={"kind": "eval", "parent_id": parent},
            )
    comparison = summarize(loaded(), ComparisonSpec(evals=True))
    assert len(comparison.cells) == 3 and set(comparison.cells["n"]) == {2}
    assert not any("merged" in note for note in comparison.notes)


def test_a_plain_row_beside_a_stacked_one_names_what_it_lacks():
    for seed in (0, 1):
        record("dec-char", "text", seed, {"val_bpc": 1.0 + seed}, run_id=f"plain{seed}")
        record("dec-char", "text", seed, {"val_bpc": 1.1 + seed}, run_id=f"st{seed}", stacked=2)
    labels = sorted(summarize(loaded()).cells["setting"])
    assert labels == ["stacked=-", "stacked=2"]


def test_every_status_a_run_can_have_can_be_compared():
    record("dec-char", "text", 0, {"val_bpc": 1.0}, row={"status": "pruned"})
    result = run_cli("compare", "--status", "pruned")
    assert result.code == 0 and "1.000 (n=1)" in result.out, result
    assert run_cli("compare", "--status", "gone").code == 2


def test_reproduce_says_what_a_row_that_is_no_trained_run_is():
    record("ens", "text", 0, {"val_bpc": 1.0}, run_id="e1", row={"kind": "ensemble"})
    record(
        "dec-char",
        "text",
        0,
        {"test_bpc": 1.0},
        run_id="v1",
        row={"kind": "eval", "parent_id": "t1"},
    )
    ensemble = run_cli("reproduce", "e1")
    assert ensemble.code == 2 and "is an ensemble, not a trained run" in ensemble.err
    evaluation = run_cli("reproduce", "v1")
    assert evaluation.code == 2 and "reproduce its trained run t1" in evaluation.err


def test_metric_by_and_unknown_names():
    fill_two_models()
    result = run_cli(
        "compare",
        "--metric",
        "tokens_per_s",
        "--by",
        "architecture",
        "--columns",
        "dataset",
        "--pool",
        "--format",
        "json",
    )
    assert result.code == 0, result
    rows = pd.read_json(io.StringIO(result.out), precise_float=True)
    text = rows.set_index("dataset").loc["text"]
    assert text["architecture"] == "decoder" and text["n"] == 6
    assert text["mean"] == pytest.approx((100 + 101 + 50 * 2 + 70 * 2) / 6)
    assert text["better"] == "higher"
    unknown = run_cli("compare", "--metric", "val_bcp")
    assert unknown.code == 2 and "Did you mean: val_bpc" in unknown.err
    assert run_cli("compare", "--by", "modle").code == 2
    assert run_cli("compare", "--baseline", "nobody").code == 2


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_parse_back_to_the_same_numbers(fmt):
    fill_two_models()
    expected = summarize(loaded(), ComparisonSpec(baseline="base-char")).cells
    result = run_cli("compare", "--baseline", "base-char", "--format", fmt)
    assert result.code == 0, result
    text = io.StringIO(result.out)
    # each parser's exact mode: zoo writes every float in its shortest exact form, which the
    # default CSV float parser of pandas before 3.0 may read back one unit in the last place off
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    back = pd.read_csv(text, **exact) if fmt == "csv" else pd.read_json(text, precise_float=True)
    assert list(back.columns) == list(expected.columns)
    for column in ("mean", "std", "n", "diff", "ci_low", "ci_high", "df"):
        assert pd.api.types.is_numeric_dtype(back[column]), column
        pd.testing.assert_series_equal(
            back[column].astype(float),
            expected[column].astype(float),
            check_exact=True,
            check_names=False,
        )
    assert list(back["runs"]) == list(expected["runs"])


def test_markdown_html_latex_and_output_file(isolated):
    fill_two_models()
    clear = ["--where", "model != 'mid-char'"]  # base-char then beats the runner-up clearly
    markdown = run_cli("compare", "--format", "markdown", *clear).out
    assert markdown.startswith("| model | other | text |") and "| --- | ---: | ---: |" in markdown
    assert "**1.100 ± 0.141 (n=2)**" in markdown
    html = run_cli("compare", "--format", "html", *clear).out
    assert (
        html.startswith('<table class="zoo-compare">')
        and "<strong>1.100 ± 0.141 (n=2)</strong>" in html
    )
    latex = run_cli("compare", "--format", "latex", *clear).out
    assert r"\begin{tabular}{lrr}" in latex and r"\textbf{1.100 $\pm$ 0.141 (n=2)}" in latex
    assert r"val\_bpc" in latex
    result = run_cli("compare", "--format", "markdown", "--output", "table.md", *clear)
    assert result.code == 0 and result.out == ""
    assert (isolated / "table.md").read_text(encoding="utf-8") == markdown
    assert run_cli("compare", "--format", "xml").code == 2


def test_compare_plot_writes_a_png(isolated):
    fill_two_models()
    result = run_cli("compare", "--plot", "chart.png", "--format", "csv")
    assert result.code == 0, result
    data = (isolated / "chart.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert run_cli("compare", "--plot", "missing/chart.png").code == 2
    assert run_cli("compare", "--plot", "chart.svg").code == 0
    assert (isolated / "chart.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_python_api_returns_the_cells():
    import zoo

    fill_two_models()
    cells = zoo.compare(where="dataset == 'text'").cells
    assert set(cells["model"]) == {"base-char", "big-char", "mid-char"}
    assert len(zoo.runs()) == 8


def test_plot_overlays_curves_from_metrics_jsonl(isolated):
    from zoo.records.store import home
    from zoo.train.job import RunFolder

    run_id = record("base-char", "text", 0, {"val_bpc": 1.0})
    folder = RunFolder(home() / run_id)
    folder.path.mkdir(parents=True)
    for step in range(1, 41):
        folder.log(
            {
                "step": step,
                "train_loss": 4.0 - step * 0.05,
                "lr": 1e-3,
                "elapsed": step * 0.1,
                **({"val_loss": 4.1 - step * 0.05} if step % 10 == 0 else {}),
            }
        )
    result = run_cli("plot", run_id, "--plot", "curves.png")
    assert result.code == 0, result
    assert (isolated / "curves.png").read_bytes()[:4] == b"\x89PNG"
    # one name for a chart file in every command: --output is the text output's name
    assert run_cli("plot", run_id, "--output", "curves.png").code == 2
    assert run_cli("plot", run_id, "--metric", "accuracy", "--plot", "x.png").code == 2
    empty = record("mid-char", "text", 0, {"val_bpc": 1.0})
    assert run_cli("plot", empty, "--plot", "y.png").code == 2  # no metrics.jsonl


# -- on tiny real runs -----------------------------------------------------------------
def tiny_run(path, *extra, seed=0):
    result = run_cli(
        "run", "decoder-char", path, "--steps", 6, "--seed", seed, "--json", *TINY_DECODER, *extra
    )
    assert result.code == 0, result
    return json.loads(result.out)


@pytest.mark.slow
def test_eval_rows_show_and_compare(tiny_text, mirror):
    from zoo.records.store import home

    summary = tiny_run(tiny_text)
    run_id = summary["run_id"]
    assert (home() / run_id / "curve.png").read_bytes()[:4] == b"\x89PNG"
    result = run_cli("eval", run_id, tiny_text, "--split", "validation", "--json")
    assert result.code == 0, result
    evaluation = json.loads(result.out)
    # scoring the validation split again gives the run's own validation figures
    for key in ("bpc", "loss", "ppl", "bpb"):
        assert evaluation["metrics"][key] == pytest.approx(
            summary["metrics"][f"val_{key}"], rel=1e-9
        ), key
    with Store() as store:
        row = store.get(evaluation["run_id"])
    assert row["kind"] == "eval" and row["parent_id"] == run_id and row["status"] == "finished"
    assert row["config"]["split"] == "validation" and row["config"]["dataset_fingerprint"]
    shakespeare = run_cli("eval", run_id, "shakespeare", "--json")
    assert shakespeare.code == 0, shakespeare
    assert json.loads(shakespeare.out)["metrics"]["unk_rate"] > 0  # characters tiny.txt lacks
    # a missing split is a one-line error, and nothing is recorded
    missing = run_cli("eval", run_id, tiny_text, "--split", "dev")
    assert missing.code == 2 and "Unknown split 'dev'" in missing.err
    with Store() as store:
        assert len(store.evaluations(run_id)) == 2
    table = run_cli("compare", "--evals", "--format", "csv")
    assert table.code == 0, table
    cells = pd.read_csv(io.StringIO(table.out))
    assert set(cells["split"]) == {"validation", "test"} and set(cells["metric"]) == {"bpc"}
    assert set(cells["trained_on"]) == {str(tiny_text)}
    train_only = pd.read_csv(io.StringIO(run_cli("compare", "--format", "csv").out))
    assert len(train_only) == 1 and train_only["n"].iloc[0] == 1  # evals are not training runs
    shown = run_cli("show", run_id)
    assert shown.code == 0, shown
    for needle in (
        "config_hash:",
        "dataset_fingerprint:",
        "seed: 0",
        "version torch:",
        "version plugin:decoder:",
        f"evaluation {evaluation['run_id']}",
        "curve.png",
    ):
        assert needle in shown.out, needle
    assert "git_commit" in row["config"]  # None outside a git checkout, still recorded


@pytest.mark.slow
def test_reproduce_matches_exactly(tiny_text, monkeypatch):
    from zoo.records.store import home
    from zoo.train import curves

    summary = tiny_run(tiny_text, seed=2)

    def broken(*args):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(curves, "save_run_curve", broken)  # the rerun's plot fails: said, not fatal
    result = run_cli("reproduce", summary["run_id"], "--json")
    assert result.code == 0, result
    report = json.loads(result.out)
    assert report["match"] is True and report["rerun_id"] != summary["run_id"]
    assert (
        f"no training-curve plot for run {report['rerun_id']}: RuntimeError: no fonts" in result.err
    )
    assert not (home() / report["rerun_id"] / "curve.png").exists()
    compared = {line["metric"] for line in report["metrics"]}
    assert {"val_bpc", "test_loss", "train_loss"} <= compared
    assert "tokens_per_s" not in compared and "tokens_per_s" in report["excluded"]
    with Store() as store:
        rerun = store.get(report["rerun_id"])
    assert rerun["config"]["reproduces"] == summary["run_id"]
    assert rerun["config_hash"] == summary_hash(summary["run_id"])
    # the rerun repeats the experiment: compare still counts one run
    cells = pd.read_csv(io.StringIO(run_cli("compare", "--format", "csv").out))
    assert cells["n"].tolist() == [1]


def summary_hash(run_id):
    with Store() as store:
        return store.get(run_id)["config_hash"]


def test_reproduce_compares_every_metric_but_timing_exactly():
    from zoo.operations.reproduce import compare_metrics

    lines = {
        line["metric"]: line
        for line in compare_metrics(
            {
                "val_bpc": 1.5,
                "steps": 10,
                "tokens_per_s": 900.0,
                "train_time": 2.0,
                "nan": math.nan,
            },
            {
                "val_bpc": 1.5 + 1e-15,
                "steps": 10,
                "tokens_per_s": 800.0,
                "train_time": 3.0,
                "nan": math.nan,
            },
        )
    }
    assert set(lines) == {"val_bpc", "steps", "nan"}
    assert not lines["val_bpc"]["same"] and lines["steps"]["same"] and lines["nan"]["same"]


def test_eval_metrics_are_found_under_their_split_prefix():
    from zoo.comparison.table import eval_names, eval_value

    assert eval_names("bpc", "validation") == ["val_bpc", "validation_bpc", "bpc"]
    assert (
        eval_value(
            {"heldout_accuracy": 0.5, "heldout_accuracy_periodic": 0.7}, "accuracy", "heldout"
        )
        == 0.5
    )
    assert eval_value({"accuracy": 0.25}, "accuracy", "test") == 0.25  # a pipeline without prefixes
    assert eval_value({"test_accuracy": 0.5}, "accuracy", "validation") is None


def test_evaluations_with_and_without_split_prefixes_line_up():
    # classification prefixes its evaluation metrics by the split, next-item does not
    record(
        "enc-bpe",
        "emotion",
        0,
        {"test_accuracy": 0.7, "test_loss": 0.9},
        split="test",
        trained_on="rotten_tomatoes",
        row={"kind": "eval", "task": "classification", "parent_id": "a"},
    )
    record(
        "enc-bpe",
        "emotion",
        1,
        {"test_accuracy": 0.8},
        split="test",
        trained_on="rotten_tomatoes",
        row={"kind": "eval", "task": "classification", "parent_id": "b"},
    )
    record(
        "dig-char",
        "digits",
        0,
        {"accuracy": 0.4},
        split="heldout",
        trained_on="digits",
        row={"kind": "eval", "task": "next-item", "parent_id": "c"},
    )
    cells = summarize(loaded(), ComparisonSpec(evals=True)).cells.set_index("model")
    assert cells.loc["enc-bpe", "mean"] == pytest.approx(0.75) and cells.loc["enc-bpe", "n"] == 2
    assert cells.loc["dig-char", "mean"] == 0.4 and set(cells["metric"]) == {"accuracy"}
    assert set(cells["split"]) == {"test", "heldout"}
    loss = summarize(loaded(), ComparisonSpec(evals=True, metric="loss")).cells
    assert loss["mean"].tolist() == [0.9]  # "loss" found as test_loss; the others have none
    from zoo.comparison.runs import run_frame

    listed = run_frame().set_index("parent_id")  # zoo runs: each figure named by its split
    assert listed.loc["a", "metric"] == "test_accuracy" and listed.loc["a", "value"] == 0.7
    assert listed.loc["c", "metric"] == "heldout_accuracy" and listed.loc["c", "value"] == 0.4


@pytest.mark.slow
def test_eval_of_a_next_item_run_lines_up_with_its_primary_metric(tiny_text):
    result = run_cli(
        "run",
        "digits-char",
        tiny_text,
        "--json",
        "--steps",
        3,
        "--set",
        "width=16",
        "--set",
        "blocks=1",
        "--set",
        "block_size=16",
        "--set",
        "batch_size=8",
        "--set",
        "eval_windows=50",
        "--set",
        "eval_batches=1",
        "--set",
        "warmup_steps=1",
    )
    assert result.code == 0, result
    run_id = json.loads(result.out)["run_id"]
    evaluation = run_cli("eval", run_id, tiny_text, "--json")
    assert evaluation.code == 0, evaluation
    from zoo.comparison.table import eval_value

    accuracy = eval_value(json.loads(evaluation.out)["metrics"], "accuracy", "test")
    assert 0 <= accuracy <= 1
    cells = pd.read_csv(io.StringIO(run_cli("compare", "--evals", "--format", "csv").out))
    assert cells[["model", "split", "metric", "n"]].values.tolist() == [
        ["digits-char", "test", "accuracy", 1]
    ]
    assert cells["mean"].iloc[0] == accuracy
    assert (
        f"evaluation {json.loads(evaluation.out)['run_id']} [finished] on {tiny_text} split 'test', "
        f"accuracy {accuracy:.4f}" in run_cli("show", run_id).out
    )


def test_runs_of_a_task_no_installed_plugin_declares_still_list_and_compare():
    """A run recorded by a plugin that is gone: its task's metrics have no declared direction,
    but the run is listed and compared by a named metric (no best is marked)."""
    record("reg-char", "bits", 0, {"test_mse": 0.02, "test_r2": 0.9}, row={"task": "gone-task"})
    record("reg-char", "bits", 1, {"test_mse": 0.04, "test_r2": 0.8}, row={"task": "gone-task"})
    record("dec-char", "text", 0, {"val_bpc": 2.0})
    listed = run_cli("runs")
    assert listed.code == 0 and "gone-task" in listed.out
    assert "val_bpc 2.0000" in listed.out  # the declared task's primary metric still shows
    compared = run_cli("compare", "--metric", "test_mse", "--format", "json")
    assert compared.code == 0, compared
    (cell,) = json.loads(compared.out)
    assert cell["mean"] == pytest.approx(0.03) and cell["better"] is None and not cell["best"]
    assert run_cli("compare", "--metric", "test_mse", "--better", "lower").code == 0


def test_an_installed_zoo_records_no_commit_of_the_project_around_it(tmp_path, monkeypatch):
    import shutil
    import subprocess

    from zoo.train import provenance

    if shutil.which("git") is None:
        pytest.skip("no git")
    project = tmp_path / "project"
    (project / ".venv" / "zoo").mkdir(parents=True)
    code = project / ".venv" / "zoo" / "provenance.py"
    code.write_text("# zoo, installed\n")
    (project / "notes.txt").write_text("the user's own work\n")
    for args in (
        ["init", "-q"],
        ["add", "notes.txt"],
        ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=project, check=True)
    monkeypatch.setattr(provenance, "__file__", str(code))
    assert provenance.git_commit() is None and provenance.git_dirty() is None
    subprocess.run(["git", "add", "-f", str(code)], cwd=project, check=True)  # a checkout
    assert provenance.git_commit() is not None and provenance.git_dirty() is True


def test_a_cell_pooling_cpu_kinds_or_precisions_is_noted_not_split():
    """Runs of one configuration trained on an AVX2-only CPU (fp32) and on one with AMX (bf16)
    are one row, n=2, with a note naming what differs; one machine throughout, no note."""
    avx2 = {"cpu": "AMD EPYC", "cpu_flags": ["avx2"], "precision": "fp32"}
    amx = {"cpu": "Xeon", "cpu_flags": ["avx2", "avx512f", "amx_tile"], "precision": "bf16"}
    record("a-char", "text", 0, {"val_bpc": 1.0}, machine=avx2, row={"config_hash": "a"})
    record("a-char", "text", 1, {"val_bpc": 1.1}, machine=amx, row={"config_hash": "a"})
    record("b-char", "text", 0, {"val_bpc": 2.0}, machine=amx, row={"config_hash": "b"})
    record("b-char", "text", 1, {"val_bpc": 2.1}, machine=amx, row={"config_hash": "b"})
    comparison = summarize(loaded())
    cells = comparison.cells.set_index("model")
    assert cells.loc["a-char", "n"] == 2 and len(cells) == 2
    (note,) = [n for n in comparison.notes if "CPU kinds" in n]
    assert note.startswith("1 cell(s)")
    runs = loaded().set_index("id")
    assert set(runs["cpu_kind"]) == {"AVX2", "AMX"}
    assert set(runs["resolved_precision"]) == {"fp32", "bf16"}


def test_row_labels_under_a_pooling_row_key_name_the_model_and_what_its_own_runs_vary():
    # two architectures share the char tokenizer; each config has many fields of its own
    dec = {f"dec_field_{i}": i for i in range(40)}
    enc = {f"enc_field_{i}": i for i in range(40)}
    for seed in (0, 1):
        record("dec-char", "text", seed, {"val_bpc": 1.0 + seed}, configs={"model": dec})
        record("dec-char", "text", seed, {"val_bpc": 0.9}, steps=200, configs={"model": dec})
        record(
            "enc-char",
            "text",
            seed,
            {"val_bpc": 1.1},
            row={"architecture": "encoder"},
            configs={"model": enc},
        )
    for by in ("tokenizer", "seed"):
        labels = set(summarize(loaded(), ComparisonSpec(by=by)).cells["setting"])
        assert max(len(label) for label in labels) < 40, labels
        assert labels >= {"model=dec-char, steps=100", "model=dec-char, steps=200"}, labels
        assert "model=enc-char" in labels, labels


def test_compare_is_the_one_comparison_and_its_earlier_forms_warn(isolated):
    import zoo
    from zoo.errors import ZooDeprecationWarning

    fill_two_models()
    comparison = zoo.compare(where="dataset == 'text'")
    assert isinstance(comparison, zoo.Comparison) and comparison.rows == ["model"]
    with pytest.warns(ZooDeprecationWarning, match="zoo.compare returns"):
        earlier = zoo.comparison_table(where="dataset == 'text'")
    assert earlier.cells.equals(comparison.cells)
    with pytest.warns(ZooDeprecationWarning, match=r"\.cells\['model'\]"):
        assert list(comparison["model"]) == list(comparison.cells["model"])
    written = zoo.plot_comparison(comparison, isolated / "bars.svg")  # zoo compare --plot
    assert written.read_text(encoding="utf-8").lstrip().startswith("<?xml")
