"""schedule=time: the learning rate decays over the wall-clock budget, not the step budget."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import loop_job, run_cli

from zoo.train import loop as trainer
from zoo.train.job import TrainConfig


class SecondPerStep:
    """A stand-in model whose every optimizer step takes one second of a fake clock; it keeps
    the learning rate each step was given."""

    def __init__(self, clock: list[float]):
        self.clock, self.rates = clock, []

    def configure_optimizer(self, lr, weight_decay, betas):
        pass

    def train_step(self, inputs, targets, lr, mask=None, grad_clip=None):
        self.rates.append(lr)
        self.clock[0] += 1.0
        return 1.0


def rates_over_ten_seconds(tmp_path, monkeypatch, schedule: str) -> list[float]:
    clock = [0.0]
    monkeypatch.setattr(trainer.time, "perf_counter", lambda: clock[0])
    cfg = TrainConfig(
        steps=1_000_000,  # a cap the clock reaches long before
        time=10.0,
        schedule=schedule,
        lr=1.0,
        min_lr=0.0,
        warmup_steps=2,
        checkpoint_every=0,
        checkpoint_seconds=0,
    )
    job = loop_job(tmp_path / schedule, cfg)
    model = SecondPerStep(clock)
    trainer.train(job, model, lambda rng: trainer.Batch(np.zeros((1, 1)), np.zeros(1), tokens=1))
    return model.rates


def test_a_time_schedule_anneals_by_the_end_of_the_budget(tmp_path, monkeypatch):
    rates = rates_over_ten_seconds(tmp_path, monkeypatch, "time")
    assert len(rates) == 10  # one step per second of the budget
    assert rates[:3] == pytest.approx([0.5, 1.0, 1.0])  # the warm-up, then the decay's start
    assert rates[6] == pytest.approx(0.5)  # half the decay's 8 seconds spent
    assert all(a > b for a, b in zip(rates[2:], rates[3:]))
    assert rates[-1] < 0.05


def test_a_step_schedule_barely_decays_when_time_runs_out_first(tmp_path, monkeypatch):
    rates = rates_over_ten_seconds(tmp_path, monkeypatch, "steps")
    assert len(rates) == 10 and rates[-1] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"schedule": "time"}, "none is set"),
        ({"schedule": "time", "time": 60.0, "warmup_fraction": 0.1}, "warmup_steps instead"),
    ],
)
def test_a_time_schedule_needs_a_time_budget_and_counts_its_warm_up_in_steps(settings, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**settings)


def test_the_command_line_refuses_a_time_schedule_without_a_budget():
    result = run_cli("run", "digits-char", "digits", "--set", "schedule=time")
    assert result.code == 2, result
    assert "schedule=time" in result.err and "Traceback" not in result.err
