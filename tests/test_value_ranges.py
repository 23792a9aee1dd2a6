"""Every integer setting has a range checked when the config is built, so nothing a run is
allowed to record can break the store; and the store's readers survive any row, an extreme
or damaged one included (a row written by hand, or before these bounds)."""

from __future__ import annotations

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.records.store import Store


def one_line(result, says: str) -> str:
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result
    return lines[0]


@pytest.mark.parametrize(
    "setting, says",
    [
        ("steps=1000000000000000000000000000000", "out of range"),
        ("warmup_steps=1000000000000000000000000", "out of range"),
        ("eval_interval=-5", "eval_interval"),
        ("n_layer=-1", "n_layer"),
        ("batch_size=-5", "batch_size"),
    ],
)
def test_an_integer_setting_out_of_range_is_exit_2_before_a_run(tiny_text, setting, says):
    result = run_cli("run", "decoder-char", tiny_text, *TINY_DECODER, "--set", setting)
    one_line(result, says)
    with Store() as store:
        assert store.rows() == []


def test_a_dataset_seed_past_32_bits_is_exit_2():
    result = run_cli("run", "digits-char", "digits", "--set", f"dataset.seed={2**70}")
    line = one_line(result, "seed = 1180591620717")
    assert "out of range: a whole number from 0 to 4,294,967,295" in line
    with Store() as store:
        assert store.rows() == []


def extreme_rows():
    with Store() as store:
        common = dict(model="decoder-char", architecture="decoder", dataset="text")
        common.update(task="language-modeling", status="finished", duration=1.0)
        store.insert(
            "huge-steps",
            seed=0,
            metrics={"val_bpc": 2.0},
            config={"configs": {"train": {"steps": 10**30, "lr": 1e-3}}},
            **common,
        )
        store.insert(
            "huge-seed",
            seed=1,
            metrics={"val_bpc": 10**30},
            config={"configs": {"train": {"steps": 5, "lr": 10**400}, "dataset": {"seed": 2**70}}},
            **common,
        )
        store.insert(
            "plain",
            seed=2,
            metrics={"val_bpc": 2.5},
            config={"configs": {"train": {"steps": 5, "lr": 1e-3}}},
            **common,
        )


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["runs", "--format", "csv"],
        ["runs", "--sort", "steps"],
        ["runs", "--where", "steps > 3"],
        ["compare"],
        ["compare", "--by", "model,steps"],
        ["rm", "--where", "seed == 2", "--dry-run"],
    ],
)
def test_the_store_readers_survive_extreme_rows(command):
    extreme_rows()
    result = run_cli(*command)
    assert result.code == 0, result
    assert "unexpected error" not in result.err


def test_an_extreme_row_is_shown_as_it_is():
    extreme_rows()
    result = run_cli("runs", "--format", "csv", "--columns", "steps,lr")
    assert result.code == 0, result
    assert str(10**30) in result.out and "huge-steps" in result.out and "plain" in result.out


@pytest.mark.parametrize(
    "space, says",
    [
        ("batch_size=int(-5,4)", "batch_size must be positive, got -5"),
        ("batch_size=int(0,4)", "batch_size must be positive"),
        ("n_layer=int(1,100000)", "n_layer = 100,000 is more than zoo can allocate"),
    ],
)
def test_space_ranges_are_checked_against_the_same_bounds_before_the_first_trial(
    tiny_text, space, says
):
    small = ["--set", "n_embd=16", "--set", "n_head=2", "--set", "block_size=16"]
    result = run_cli(
        "tune", "decoder-char", "--on", tiny_text, "--trials", 1, "--space", space, *small
    )
    line = one_line(result, says)
    assert line.startswith(f"zoo: error: --space {space}")
    assert "study" not in result.err  # refused before any study or trial
