"""keep_best, best_step and patience in the shared training loop, for every task."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import TINY_DECODER, loop_job, run_cli

from zoo.records.store import home
from zoo.train import checkpoints
from zoo.train import loop as trainer
from zoo.train.job import Job, RunFolder, TrainConfig, runner_state


class Counter:
    """A stand-in model whose one weight counts its optimizer steps; the validation score
    is a function of that weight, so the test decides when validation peaks."""

    def __init__(self):
        self.w = np.zeros(1)

    def configure_optimizer(self, lr, weight_decay, betas):
        pass

    def train_step(self, inputs, targets, lr, mask=None, grad_clip=None):
        self.w = self.w + 1
        return 1.0

    def state_dict(self):
        return {"w": self.w.copy()}

    def load_state_dict(self, state):
        self.w = np.asarray(state["w"]).copy()

    def optimizer_state(self):
        return {"moment": self.w.copy()}, {"calls": int(self.w[0])}

    def load_optimizer_state(self, arrays, meta):
        pass


# validation accuracy by weight (= step): peaks at step 4, then falls away
PEAK = {2: 0.5, 4: 0.9, 6: 0.8, 8: 0.7, 10: 0.6, 12: 0.95}


def make_job(tmp_path, **train) -> Job:
    cfg = TrainConfig(
        **{
            "steps": 12,
            "eval_interval": 2,
            "warmup_steps": 1,
            "checkpoint_every": 0,
            "checkpoint_seconds": 0,
            **train,
        }
    )
    return loop_job(tmp_path / "run", cfg)


def fit(job, model):
    def batch(rng):
        return trainer.Batch(np.zeros((1, 1)), np.zeros(1), tokens=1)

    def validate():
        return {"val_accuracy": PEAK.get(int(model.w[0]), 0.0)}

    return trainer.train(job, model, batch, validate=validate, score_key="val_accuracy")


def stopped_after_checkpoint(job, monkeypatch, step: int):
    """Train ``job`` until Ctrl-C stops it right after its checkpoint at ``step``; that
    checkpoints."""
    original = checkpoints.Checkpointer.save

    def save_then_stop(self, elapsed):
        original(self, elapsed)
        if self.result.steps == step:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(checkpoints.Checkpointer, "save", save_then_stop)
        with pytest.raises(KeyboardInterrupt):
            fit(job, Counter())
    return checkpoints.latest(job.run.path)


def test_keep_best_restores_the_best_weights_and_the_curve_shows_everything(tmp_path):
    model = Counter()
    result = fit(make_job(tmp_path, steps=10), model)
    assert result.steps == 10 and result.best_step == 4 and result.best_score == 0.9
    assert model.w[0] == 4  # the final evaluation sees the best weights
    assert [p["step"] for p in result.curve] == [2, 4, 6, 8, 10]


def test_without_keep_best_the_last_weights_stay_but_best_step_is_reported(tmp_path):
    model = Counter()
    result = fit(make_job(tmp_path, steps=10, keep_best=False), model)
    assert result.best_step == 4 and result.best_state is None and model.w[0] == 10


def test_patience_stops_after_that_many_validations_without_improvement(tmp_path):
    model = Counter()
    result = fit(make_job(tmp_path, patience=2), model)
    assert result.stopped_early and result.steps == 8  # validations at 6 and 8 did not beat 4
    assert model.w[0] == 4
    logged = RunFolder(tmp_path / "run").curve()
    assert [r["step"] for r in logged] == list(range(1, 9))


@pytest.mark.parametrize("warmup", [{"warmup_steps": 9}, {"warmup_fraction": 0.75}])
def test_patience_never_stops_a_run_inside_its_warm_up(tmp_path, warmup):
    """The curve above stops at 8 with patience 2; with a warm-up of 9 steps the validations
    at 6 and 8 fall inside it and do not count, so the run reaches its peak at 12."""
    result = fit(make_job(tmp_path, patience=2, **warmup), Counter())
    assert not result.stopped_early and result.steps == 12 and result.best_step == 12


def test_a_warm_up_fraction_scales_with_the_budget():
    cfg = TrainConfig(lr=1.0, min_lr=0.0, warmup_fraction=0.1)
    assert trainer.warmup_of(cfg, 1000) == 100 and trainer.warmup_of(cfg, 180) == 18
    assert trainer.lr_at(17, cfg, 180) == pytest.approx(1.0)  # the peak at the warm-up's end
    assert trainer.lr_at(8, cfg, 180) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="warmup_fraction"):
        TrainConfig(warmup_fraction=1.0)


def test_a_run_resumed_after_patience_ran_out_stops_at_once(tmp_path, monkeypatch):
    """Killed right after the checkpoint of the validation that spent the patience: the
    resumed loop must not train on, and must report the best weights from the checkpoints."""
    job = make_job(tmp_path, patience=2, checkpoint_every=1)
    runner_state(job).resume_from = stopped_after_checkpoint(job, monkeypatch, 8)
    assert runner_state(job).resume_from.step == 8
    model = Counter()
    result = fit(job, model)
    assert result.steps == 8 and result.stopped_early and result.best_step == 4
    assert model.w[0] == 4


@pytest.mark.slow
def test_a_language_model_reports_val_and_test_from_the_same_best_weights(tiny_text, monkeypatch):
    """The validation estimate is scripted to be best at step 5 of 15; the run must report
    (and save) the step-5 weights: `zoo eval` of its weights gives its val and test losses,
    which differ from the same run's with keep_best=false."""
    from zoo.pipelines import language_modeling

    calls = []

    def scripted_estimate(*args, **kwargs):
        calls.append(1)
        return 1.0 if len(calls) % 15 == 5 else 2.0 + len(calls) % 15

    monkeypatch.setattr(language_modeling, "sampled_loss", scripted_estimate)
    args = [
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        15,
        "--json",
        *TINY_DECODER,
        "--set",
        "eval_interval=1",
    ]
    result, last = run_cli(*args), run_cli(*args, "--set", "keep_best=false")
    assert result.code == 0 and last.code == 0, (result, last)
    summary = json.loads(result.out)
    metrics, last_metrics = summary["metrics"], json.loads(last.out)["metrics"]
    assert metrics["best_step"] == last_metrics["best_step"] == 5 and metrics["steps"] == 15
    for prefix in ("val", "test"):  # the best weights, not the last ones, are reported
        assert metrics[f"{prefix}_loss"] != last_metrics[f"{prefix}_loss"]
    curve = [
        r
        for r in map(
            json.loads, (home() / summary["run_id"] / "metrics.jsonl").read_text().splitlines()
        )
        if "val_loss" in r
    ]
    assert len(curve) == 15  # the curve still shows every validation
    for split, prefix in (("validation", "val"), ("test", "test")):
        scored = run_cli("eval", summary["run_id"], tiny_text, "--split", split, "--json")
        assert scored.code == 0, scored
        assert json.loads(scored.out)["metrics"]["loss"] == pytest.approx(metrics[f"{prefix}_loss"])


@pytest.mark.parametrize("value", ["-1", "x"])
def test_bad_patience_is_refused_before_training(tiny_text, value):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 3, "--set", f"patience={value}")
    assert result.code == 2 and "patience" in result.err


def test_average_best_reports_the_mean_of_the_best_validations_weights(tmp_path):
    model = Counter()  # validations at steps 2..12 score 0.5 0.9 0.8 0.7 0.6 0.95
    result = fit(make_job(tmp_path, average_best=3), model)
    assert result.best_step == 12 and [step for _, step, _ in result.runners_up] == [4, 6]
    assert model.w[0] == pytest.approx((12 + 4 + 6) / 3)


def test_average_best_ranks_ties_by_the_earlier_validation(tmp_path, monkeypatch):
    monkeypatch.setitem(PEAK, 8, 0.8)  # ties step 6
    model = Counter()
    result = fit(make_job(tmp_path, steps=10, average_best=3), model)
    assert [step for _, step, _ in result.runners_up] == [6, 8]
    assert model.w[0] == pytest.approx((4 + 6 + 8) / 3)


def test_a_resumed_run_averages_the_same_weights(tmp_path, monkeypatch):
    """Killed after the checkpoint at step 8: the runners-up so far come back from it."""
    job = make_job(tmp_path, average_best=3, checkpoint_every=4)
    runner_state(job).resume_from = stopped_after_checkpoint(job, monkeypatch, 8)
    model = Counter()
    result = fit(job, model)
    assert [step for _, step, _ in result.runners_up] == [4, 6]
    assert model.w[0] == pytest.approx((12 + 4 + 6) / 3)


def test_bad_average_best_is_refused_before_training(tiny_text):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 3, "--set", "average_best=0")
    assert result.code == 2 and "average_best" in result.err
