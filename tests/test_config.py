"""Config values the user does not give: what they become, and that everything that worked
before keeps its value."""

import json
import os
from pathlib import Path

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.train.plan import plan_run


def train_config(model, dataset, **overrides):
    return plan_run(model, str(dataset), overrides=overrides).configs["train"]


def test_lowering_only_lr_lowers_an_inherited_min_lr_to_it(tiny_text):
    # decoder-char's preset sets min_lr 5e-4; digits-bpe is no preset (TrainConfig's 1e-4)
    for model, dataset in (("decoder-char", tiny_text), ("digits-bpe", "digits")):
        for key in ("lr", "train.lr"):
            train = train_config(model, dataset, **{key: "1e-5"})
            assert (train.lr, train.min_lr) == (1e-5, 1e-5), (model, key)


def test_an_inherited_min_lr_that_fits_keeps_its_value(tiny_text):
    assert train_config("decoder-char", tiny_text).min_lr == 5e-4
    assert train_config("decoder-char", tiny_text, lr="1e-3").min_lr == 5e-4
    assert train_config("digits-bpe", "digits").min_lr == 1e-4
    assert train_config("digits-bpe", "digits", lr="2e-4").min_lr == 1e-4
    assert train_config("digits-bpe", "digits", lr="1e-5", min_lr="0").min_lr == 0


@pytest.mark.slow
def test_zoo_run_with_only_a_lower_lr_trains(tiny_text):
    result = run_cli(
        "run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--set", "lr=1e-5", "--json"
    )
    assert result.code == 0, result
    run_id = json.loads(result.out)["run_id"]
    recorded = json.loads((Path(os.environ["ZOO_HOME"]) / run_id / "config.json").read_text())
    assert (recorded["configs"]["train"]["lr"], recorded["configs"]["train"]["min_lr"]) == (
        1e-5,
        1e-5,
    )


def test_a_min_lr_the_user_sets_above_lr_is_still_refused(tiny_text):
    for key in ("min_lr", "train.min_lr"):
        result = run_cli(
            "run",
            "decoder-char",
            tiny_text,
            *TINY_DECODER,
            "--set",
            "lr=1e-5",
            "--set",
            f"{key}=1e-4",
        )
        assert result.code == 2, result
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and "min_lr (0.0001) is above lr (1e-05)" in lines[0], result
