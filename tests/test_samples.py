"""A comparison row is one exact configuration and n counts distinct (configuration, seed)
samples: ensembles of differently trained members are different rows; a tune trial and its
re-run at the same seed are one sample, in zoo compare, zoo.compare, plots and tests."""

import itertools

import pytest
from conftest import run_cli

from zoo.records.store import Store

CLS = "classification"
_ids = itertools.count()


def record(model, seed, value, *, steps=100, held_out=None, kind="train", created=None, **extra):
    """A finished run row as execute leaves it; `held_out` as a tune trial records it."""
    run_id = f"r{next(_ids)}"
    config = {
        "configs": {"model": {"dim": 8}, "tokenizer": None, "train": {"steps": steps}},
        **({"held_out": held_out} if held_out else {}),
        **extra,
    }
    with Store() as store:
        store.insert(
            run_id,
            model=model,
            architecture=model.partition("-")[0],
            tokenizer=model.rpartition("-")[2],
            dataset="reviews",
            task=CLS,
            seed=seed,
            kind=kind,
            status="finished",
            config_hash=f"hash-{run_id}",  # every row its own hash: only settings + seed match
            config=config,
            metrics={"test_accuracy": value},
        )
        if created is not None:
            store.update(run_id, created=created)
    return run_id


def ensemble_row(members: list[str], seed, value) -> str:
    """An ensemble row as zoo.operations.ensemble records it."""
    with Store() as store:
        rows = {r["id"]: r for r in store.rows()}
        run_id = f"e{next(_ids)}"
        combines = [
            {
                "run_id": m,
                "model": rows[m]["model"],
                "weight": 0.5,
                "config_hash": rows[m]["config_hash"],
                "seed": rows[m]["seed"],
            }
            for m in members
        ]
        config = {"weighting": "fit", "combines": combines, "seed": seed}
        store.insert(
            run_id,
            model="ensemble-fit(a-word+b-word)",
            architecture="ensemble",
            tokenizer="word",
            dataset="reviews",
            task=CLS,
            seed=seed,
            kind="ensemble",
            status="finished",
            config_hash=f"hash-{run_id}",
            config=config,
            metrics={"test_accuracy": value},
        )
    return run_id


def cells(**options):
    import zoo

    return zoo.compare(**options).cells


def test_ensembles_whose_members_differ_only_in_steps_are_two_rows():
    short = [record("a-word", 0, 0.80, steps=270), record("b-word", 0, 0.79, steps=270)]
    full = [record("a-word", 0, 0.81, steps=9000), record("b-word", 0, 0.78, steps=9000)]
    ensemble_row(short, 0, 0.8021)
    ensemble_row(full, 0, 0.7927)
    table = cells()
    ensembles = table[table["model"] == "ensemble-fit(a-word+b-word)"]
    assert len(ensembles) == 2 and set(ensembles["n"]) == {1}
    assert sorted(ensembles["mean"]) == [0.7927, 0.8021]
    labels = sorted(ensembles["setting"])
    assert labels == ["a-word.steps=270, b-word.steps=270", "a-word.steps=9000, b-word.steps=9000"]
    text = run_cli("compare").out
    assert "ensemble-fit(a-word+b-word) (a-word.steps=270, b-word.steps=270)" in text


def test_ensembles_of_the_same_members_at_two_seeds_are_one_row_with_n_2():
    for seed, value in ((0, 0.80), (1, 0.82)):
        members = [record("a-word", seed, 0.8), record("b-word", seed, 0.7)]
        ensemble_row(members, seed, value)
    table = cells()
    (row,) = table[table["model"] == "ensemble-fit(a-word+b-word)"].itertuples()
    assert row.n == 2 and row.mean == pytest.approx(0.81)


def test_one_ensemble_given_its_members_in_another_order_is_one_sample():
    short, full = record("a-word", 0, 0.8, steps=270), record("a-word", 0, 0.7, steps=9000)
    ensemble_row([short, full], 0, 0.66)
    ensemble_row([full, short], 0, 0.66)
    table = cells()
    ensembles = table[table["model"] == "ensemble-fit(a-word+b-word)"]
    assert list(ensembles["n"]) == [1], ensembles[["setting", "n"]]
    assert any("1 duplicate run" in note for note in table.attrs["notes"])


def test_ensembles_of_members_at_different_seeds_are_left_out_of_the_counts():
    # seed 0's model with seed 1's and the other way round: they share members
    zeros = [record("a-word", 0, 0.8), record("b-word", 0, 0.7)]
    ones = [record("a-word", 1, 0.8), record("b-word", 1, 0.7)]
    ensemble_row(zeros, 0, 0.81)
    ensemble_row(ones, 1, 0.83)
    ensemble_row([zeros[0], ones[1]], None, 0.9)
    ensemble_row([ones[0], zeros[1]], None, 0.9)
    table = cells()
    (row,) = table[table["model"] == "ensemble-fit(a-word+b-word)"].itertuples()
    assert row.n == 2 and row.mean == pytest.approx(0.82)
    assert any(
        "2 ensemble(s) of members trained at different seeds left out" in note
        for note in table.attrs["notes"]
    )


def test_a_tune_trial_and_its_rerun_at_the_same_seed_are_one_sample_everywhere():
    # the trial (test held out, another config hash) and the seed-0 re-run: one sample
    record("a-word", 0, 0.70, held_out=["test"], tune={"study": "s", "trial": 3}, created=1.0)
    record("a-word", 0, 0.70, created=2.0)
    record("a-word", 1, 0.60, created=3.0)
    record("b-word", 0, 0.50)
    record("b-word", 1, 0.52)
    table = cells(baseline="b-word").set_index("model")
    assert table.loc["a-word", "n"] == 2 and table.loc["a-word", "mean"] == pytest.approx(0.65)
    assert table.attrs["notes"], "zoo.compare() carries the notes"
    assert any("1 duplicate run" in note for note in table.attrs["notes"])
    result = run_cli("compare", "--baseline", "b-word")
    assert result.code == 0, result
    line = next(x for x in result.out.splitlines() if x.startswith("a-word"))
    assert "(n=2)" in line and "(n=3)" not in line
    assert "1 duplicate run(s) of the same configuration and seed merged" in result.out
    # the interval uses n=2 on each side: Welch with df 1.9..., not 3 samples
    from zoo.comparison.stats import welch_interval

    a, b = table.loc["a-word"], table.loc["b-word"]
    expected = welch_interval(0.65, a["std"], 2, 0.51, b["std"], 2)
    assert a["ci_low"] == pytest.approx(expected.low)
    assert a["std"] == pytest.approx(0.0707107, abs=1e-6)


def test_the_bar_plot_shows_the_same_n_as_the_table():
    from zoo.comparison.plots import comparison_bars
    from zoo.comparison.table import load_runs, summarize

    record("a-word", 0, 0.70, held_out=["test"])
    record("a-word", 0, 0.70)
    record("b-word", 0, 0.50)
    figure = comparison_bars(summarize(load_runs()))
    texts = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert any("n=1" in t for t in texts) and not any("n=2" in t for t in texts)


def test_a_tune_winners_selected_trial_never_pools_with_its_reruns():
    # the search chose the trial at seed 0 for its figure; the re-runs are at seeds 1 and 2
    record("a-word", 0, 0.80, held_out=["test"], tune={"study": "s", "trial": 3})
    record("a-word", 1, 0.60)
    record("a-word", 2, 0.62)
    # a trial whose settings were not re-run stays: its own configuration, one seed
    record("a-word", 0, 0.55, steps=50, held_out=["test"], tune={"study": "s", "trial": 4})
    table = cells().set_index("setting")
    assert table.loc["steps=100", "n"] == 2
    assert table.loc["steps=100", "mean"] == pytest.approx(0.61)
    assert table.loc["steps=50", "n"] == 1
    assert any(
        "1 tune trial(s) left out where their settings were re-run" in note
        for note in table.attrs["notes"]
    )


def test_the_tables_read_of_each_config_only_what_they_use_and_show_the_same():
    import pandas as pd

    from zoo.comparison.table import load_runs

    machine = {"cpu": "x", "cpu_flags": ["avx2"], "precision": "fp32"}
    first = record("a-word", 0, 0.8, machine=machine, incidental={"train": ["steps"]})
    second = record("a-word", 1, 0.7, machine=machine, incidental={"train": ["steps"]})
    record("a-word", 2, 0.6, init={"run_id": first}, tune={"study": "s", "trial": 1})
    record("b-word", 0, 0.5, stacked=2**70)  # a number SQLite's JSON would round
    record("b-word", 1, float("nan"), configs={"train": {"lr": float("inf")}})  # JSON's NaN
    members = ensemble_row([first, second], None, 0.9)
    with Store() as store:
        store.insert(  # an ensemble recorded with no weighting: its members alone
            "e-bare",
            model="ensemble",
            kind="ensemble",
            status="finished",
            task=CLS,
            config={"combines": store.get(members)["config"]["combines"], "weighting": None},
            metrics={"test_accuracy": 0.9},
        )
        store.insert(
            "v0",
            kind="eval",
            parent_id=first,
            model="a-word",
            dataset="other",
            status="finished",
            task=CLS,
            config={"trained_on": "reviews", "split": "test"},
            metrics={"test_accuracy": 0.4},
        )
        whole = load_runs(store, store.rows())
        picked = load_runs(store)
        rows = {r["id"]: r for r in store.rows(config_keys=["configs", "machine"])}
    pd.testing.assert_frame_equal(picked, whole)
    assert rows[first]["config"] is rows[second]["config"]  # the same settings, read once
    assert set(rows[first]["config"]) == {"configs", "machine"}
