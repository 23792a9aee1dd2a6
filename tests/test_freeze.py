"""The ``freeze`` setting: weights named by globs keep the values a run starts with (a head
trained on a frozen body, then everything from there with ``--init``); a pattern that
matches no weight, or a model zoo cannot freeze, is refused before training."""

from __future__ import annotations

import json

import pytest
from conftest import TINY_ENCODER, run_cli
from safetensors.numpy import load_file

from zoo.records.paths import run_folder

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest
STEPS = ["--steps", "6", "--set", "keep_best=false"]


def weights(result) -> dict:
    assert result.code == 0, result
    return load_file(run_folder(json.loads(result.out)["run_id"]) / "model.safetensors")


def test_frozen_weights_keep_their_start_and_the_rest_trains(negated_reviews):
    first = run_cli("run", "encoder-char", negated_reviews, *STEPS, *TINY_ENCODER, "--json")
    source = json.loads(first.out)["run_id"]
    start = weights(first)
    probed = run_cli(
        "run", "encoder-char", negated_reviews, *STEPS, *TINY_ENCODER, "--json",
        "--init", source, "--set", "freeze=blocks.*, tok_emb.*",
    )  # fmt: skip
    after = weights(probed)
    frozen = [n for n in start if n.startswith(("blocks.", "tok_emb."))]
    assert frozen and all((after[n] == start[n]).all() for n in frozen)
    assert not (after["head.weight"] == start["head.weight"]).all()  # the head trained
    assert not (after["pos_emb.weight"] == start["pos_emb.weight"]).all()
    config = json.loads((run_folder(json.loads(probed.out)["run_id"]) / "config.json").read_text())
    assert "blocks.*, tok_emb.*" in json.dumps(config)  # a setting of the run's record


def test_a_pattern_that_matches_nothing_is_refused_with_the_names(negated_reviews):
    result = run_cli(
        "run", "encoder-char", negated_reviews, *STEPS, *TINY_ENCODER, "--set", "freeze=block.*"
    )
    assert result.code == 2, result
    assert "Unknown weight pattern 'block.*'" in result.err
    assert "blocks.0" in result.err  # the names it could have meant


def test_a_model_zoo_cannot_freeze_is_refused(negated_reviews):
    result = run_cli("run", "numpy-char", negated_reviews, "--steps", "2", "--set", "freeze=*")
    assert result.code == 2, result
    assert "cannot keep weights out of training" in result.err


def test_seeds_trained_together_refuse_to_freeze():
    """The batched step trains stacked copies of every weight: a frozen flag on one seed's
    module would be ignored, so the sweep is refused before anything trains (and the stack
    refuses too, for a stacked run that gets that far)."""
    result = run_cli(
        "sweep", "digits-char", "--on", "digits", "--seeds", "2", "--stack-seeds",
        "--steps", "2", "--set", "freeze=blocks.*",
    )  # fmt: skip
    assert result.code == 2 and "--stack-seeds trains every weight" in result.err, result
    from zoo.records.store import Store

    with Store() as store:
        assert store.rows() == []
