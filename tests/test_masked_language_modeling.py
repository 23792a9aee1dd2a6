"""The masked-language-modeling task: BERT's corruption of the chosen tokens, its declaration,
runs of the encoder and of transformers' bert on any text (a labelled set's text too), a
classifier started from such a run, and a SIGKILL and resume that changes nothing."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import TINY_ANY, run_cli

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest

MLM = ["--task", "masked-language-modeling"]


def run_json(*args) -> dict:
    result = run_cli("run", *args, "--json")
    assert result.code == 0, result
    return json.loads(result.out)


@pytest.fixture
def labelled(tmp_path):
    rows = ["text,label"] + [
        f"the {'quick' if i % 2 else 'lazy'} fox {i},{'a' if i % 2 else 'b'}" for i in range(120)
    ]
    path = tmp_path / "labelled.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_bert_corruption_chooses_15_percent_and_masks_80_10_10():
    from zoo.pipelines.masked_language_modeling import Framing

    from zoo.plugin import IGNORE_INDEX

    framing = Framing(before=(2,), after=(3,), mask_id=4, vocab_size=1000, rate=0.15)
    windows = np.random.default_rng(1).integers(10, 1000, size=(400, 100))
    inputs, targets = framing.mask(windows, np.random.default_rng(0))
    assert inputs.shape == targets.shape == (400, 102)
    assert (inputs[:, 0] == 2).all() and (inputs[:, -1] == 3).all()  # the frame, never scored
    assert (targets[:, [0, -1]] == IGNORE_INDEX).all()
    chosen = targets[:, 1:-1] != IGNORE_INDEX
    assert abs(chosen.mean() - 0.15) < 0.005
    assert (targets[:, 1:-1][chosen] == windows[chosen]).all()  # the original tokens
    body = inputs[:, 1:-1]
    masked = (body == 4)[chosen].mean()
    kept = (body == windows)[chosen].mean()
    assert abs(masked - 0.8) < 0.01 and abs(kept - 0.1) < 0.01  # the rest: random tokens
    assert (body[~chosen] == windows[~chosen]).all()  # nothing else changes


def test_declared_with_directions_and_units():
    shown = run_cli("show", "masked-language-modeling")
    assert shown.code == 0, shown
    assert "loss      nats per masked token, lower is better" in shown.out
    assert "accuracy  fraction of masked tokens, higher is better" in shown.out
    assert "mask_rate" in shown.out


@pytest.mark.slow
@pytest.mark.parametrize("model", ["encoder-char", "bert-char"])
def test_pretrains_on_any_text_and_records_masked_accuracy(model, tiny_text, labelled):
    for dataset in (labelled, tiny_text):  # a labelled set's text column, and plain text
        summary = run_json(model, dataset, *MLM, "--steps", 6, *TINY_ANY)
        assert summary["task"] == "masked-language-modeling"
        for key in ("val_accuracy", "test_accuracy", "val_loss", "test_loss"):
            assert key in summary["metrics"], summary["metrics"]
        assert 0 <= summary["metrics"]["test_accuracy"] <= 1
    learned = run_json(model, tiny_text, *MLM, "--steps", 60, *TINY_ANY, "--set", "lr=1e-2")
    assert learned["metrics"]["val_accuracy"] > summary["metrics"]["val_accuracy"] + 0.1


@pytest.mark.slow
def test_a_classifier_starts_from_a_pretrained_encoder(labelled):
    from zoo.records.store import home

    pretrained = run_json("encoder-char", labelled, *MLM, "--steps", 6, *TINY_ANY)
    tuned = run_json(
        "encoder-char", labelled, "--init", pretrained["run_id"], "--steps", 4, *TINY_ANY
    )
    assert tuned["task"] == "classification"
    init = json.loads((home() / tuned["run_id"] / "config.json").read_text())["init"]
    assert init["fresh"] == ["head.bias", "head.weight"]  # only the classifier's head
    assert "tok_emb.weight" in init["copied"] and "blocks.0.attn.qkv.weight" in init["copied"]


@pytest.mark.slow
def test_sigkill_then_resume_is_bit_identical(tiny_text):
    """An MLM run killed with SIGKILL at a random step and resumed: the same run as
    uninterrupted (weights, metrics, curve)."""
    from test_reliability import Trial, assert_same_run, kill_points, reference_run, run_args, watch

    from zoo.records.store import home

    steps = 16
    tiny = TINY_ANY + MLM
    reference = reference_run(tiny_text, steps, model="encoder-char", tiny=tiny)
    args = run_args(tiny_text, steps, model="encoder-char", tiny=tiny)
    trial = Trial(home().parent / "trial", args, kill_points(1).randint(2, steps - 4))
    watch([trial])
    run_id = trial.check_killed()
    os.environ["ZOO_HOME"] = str(trial.home)  # the isolated fixture restores it
    resumed = run_cli("resume", run_id, "--json")
    assert resumed.code == 0, (trial.kill_at, resumed)
    assert_same_run(json.loads(resumed.out), reference)


@pytest.mark.slow
def test_a_run_started_from_another_resumes_bit_identically(labelled, monkeypatch):
    """Interrupted after a checkpoint and resumed, a classifier started from an MLM run
    (--init) ends as the uninterrupted one; resuming follows the source run."""
    from conftest import press_ctrl_c
    from test_reliability import assert_same_run, reference_run, resume_continues, run_args

    from zoo.records.store import home
    from zoo.train import checkpoints as checkpoint

    source = run_json("encoder-char", labelled, *MLM, "--steps", 4, *TINY_ANY)["run_id"]
    tiny = TINY_ANY + ["--init", source]
    reference = reference_run(labelled, 12, model="encoder-char", tiny=tiny)
    original = checkpoint.Checkpointer.save

    def save_then_stop(self, elapsed):
        original(self, elapsed)
        if self.result.steps >= 5:
            press_ctrl_c()

    with monkeypatch.context() as patch:
        patch.setattr(checkpoint.Checkpointer, "save", save_then_stop)
        stopped = run_cli(*run_args(labelled, 12, model="encoder-char", tiny=tiny))
    assert stopped.code == 130, stopped
    (run_id,) = {row["id"] for row in json.loads(run_cli("runs", "--json").out)} - {
        source,
        reference["run_id"],
    }
    resumed = resume_continues(monkeypatch, run_id, 12, "--json")
    assert_same_run(json.loads(resumed.out), reference)
    assert json.loads((home() / run_id / "config.json").read_text())["init"]["run_id"] == source


def test_each_scored_window_is_kept_and_they_add_up_to_the_figures(tiny_text):
    from safetensors.numpy import load_file

    from zoo.records.paths import run_folder

    summary = run_json("encoder-char", tiny_text, *MLM, "--steps", 2, *TINY_ANY)
    kept = load_file(str(run_folder(summary["run_id"]) / "per_example.safetensors"))
    for name in ("val_loss", "val_accuracy", "test_loss", "test_accuracy"):
        masked = kept[f"weights:{name}"]  # each window's masked tokens: at least one
        assert len(kept[name]) == len(masked) > 1 and masked.min() >= 1
        average = np.average(kept[name], weights=masked)
        assert average == pytest.approx(summary["metrics"][name], rel=1e-5)
    assert len(kept["examples:test"]) == 32  # the digest of the windows and masks scored
