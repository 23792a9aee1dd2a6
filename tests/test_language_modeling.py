"""decoder-char end to end on tiny configs: train, evaluate, generate, reload."""

import json
import math

import pytest
from conftest import TINY_DECODER, run_cli


def tiny_run(dataset, *extra, seed=0):
    result = run_cli(
        "run",
        "decoder-char",
        dataset,
        "--steps",
        10,
        "--seed",
        seed,
        "--json",
        *TINY_DECODER,
        *extra,
    )
    assert result.code == 0, result
    return json.loads(result.out)


@pytest.mark.slow
def test_train_evaluate_generate_round_trip(tiny_text):
    summary = tiny_run(tiny_text)
    metrics = summary["metrics"]
    for key in (
        "val_loss",
        "val_bpc",
        "val_ppl",
        "test_loss",
        "test_bpc",
        "test_ppl",
        "tokens_per_s",
    ):
        assert math.isfinite(metrics[key]), key
    assert metrics["steps"] == 10
    assert summary["status"] == "finished" and summary["task"] == "language-modeling"
    # char tokens are characters: bits per character is the loss in bits
    assert metrics["val_bpc"] == pytest.approx(metrics["val_loss"] / math.log(2), rel=1e-3)
    generated = run_cli("generate", summary["run_id"], "--prompt", "line", "--tokens", 15)
    assert generated.code == 0, generated
    assert generated.out.startswith("line") and len(generated.out.strip()) >= len("line") + 5


@pytest.mark.slow
def test_same_seed_same_metrics(tiny_text):
    first = tiny_run(tiny_text, seed=3)["metrics"]
    second = tiny_run(tiny_text, seed=3)["metrics"]
    different = tiny_run(tiny_text, seed=4)["metrics"]
    for key in ("train_loss", "val_loss", "test_loss"):
        assert first[key] == second[key]
    assert first["val_loss"] != different["val_loss"]


@pytest.mark.slow
def test_reloaded_weights_give_the_same_validation_loss(tiny_text):
    from zoo.pipelines.language_modeling import SplitTokens, split_metrics, split_text, total_nll

    from zoo.core.loading import get_zoo
    from zoo.data import datasets
    from zoo.operations.reload import load_trained

    summary = tiny_run(tiny_text)
    trained = load_trained(summary["run_id"])
    dataset = datasets.load(datasets.resolve(str(tiny_text), get_zoo()), get_zoo())
    tokens = SplitTokens.from_text(trained.tokenizer, split_text(dataset, "validation"))
    nll, count = total_nll(trained.model, tokens.ids, trained.context_length, 64)
    assert split_metrics("val", nll, count, tokens)["val_loss"] == pytest.approx(
        summary["metrics"]["val_loss"], rel=1e-6
    )


def test_unknown_characters_map_to_unk_and_never_crash():
    from zoo.plugins.char import CharTokenizer

    tokenizer = CharTokenizer.train(["abc\nab"], None)
    ids = tokenizer.encode("abz\n€")
    assert ids[2] == tokenizer.unk_id and ids[4] == tokenizer.unk_id
    assert tokenizer.decode(ids) == "ab\n"


def test_bad_config_fails_with_exit_2_before_training(tiny_text):
    result = run_cli("run", "decoder-char", tiny_text, "--set", "n_head=5", "--set", "n_embd=16")
    assert result.code == 2
    assert "divisible" in result.err and len(result.err.strip().splitlines()) == 1
    assert run_cli("runs", "--json").out.strip() in ("", "[]")  # nothing was recorded


@pytest.mark.slow
def test_ctrl_c_marks_the_run_interrupted_and_keeps_the_store_readable(tiny_text, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from zoo.records.store import Store

    home = tmp_path / "runs"
    env = {**os.environ, "ZOO_HOME": str(home)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zoo",
            "run",
            "decoder-char",
            str(tiny_text),
            "--steps",
            "100000",
            "--quiet",
            *TINY_DECODER,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 300  # generous: a loaded machine starts slowly
    while time.time() < deadline:  # wait until training has logged a few steps
        curves = list(home.glob("*/metrics.jsonl"))
        if curves and len(curves[0].read_text().splitlines()) >= 3:
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    with Store(home / "zoo.db") as store:
        rows = store.rows()
    assert len(rows) == 1 and rows[0]["status"] == "interrupted"
    assert (home / rows[0]["id"] / "config.json").is_file()
    assert f"continue it with: zoo resume {rows[0]['id']}" in err  # what to type next


@pytest.mark.slow
def test_a_time_budget_ends_training_within_it_validation_included(tiny_text, monkeypatch):
    """On a fake clock (the machine's load cannot move it): each step costs 10 ms, each
    validation estimate 500 ms, and the budget is 3 s."""
    from zoo.pipelines import language_modeling

    from zoo.train import loop

    class FakeClock:
        now = 0.0

        def perf_counter(self):
            self.now += 0.005  # read twice per step: 10 ms a step
            return self.now

    clock = FakeClock()
    monkeypatch.setattr(loop, "time", clock)
    real_estimate = language_modeling.sampled_loss

    def estimate(*args):  # a validation estimate that takes a noticeable share of the budget
        clock.now += 0.5
        return real_estimate(*args)

    monkeypatch.setattr(language_modeling, "sampled_loss", estimate)
    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--time",
        3,
        "--json",
        *TINY_DECODER,
        "--set",
        "steps=1000000",
        "--set",
        "eval_interval=20",
    )
    assert result.code == 0, result
    metrics = json.loads(result.out)["metrics"]
    assert 0 < metrics["steps"] < 1000000
    # The final estimate fits in the budget: without the reserve it would start after 3 s.
    assert 2.5 < metrics["train_time"] <= 3.0, metrics


# -- one score per evaluation window, for comparisons that count the test set's noise --
def kept_scores(run) -> dict:
    from safetensors.numpy import load_file

    return load_file(str(run.folder / "per_example.safetensors"))


def tiny_lm(text, seed=0, **settings):
    import zoo

    tiny = {**dict(pair.split("=") for pair in TINY_DECODER[1::2]), "samples": 0, **settings}
    return zoo.run("decoder-char", str(text), steps=2, seed=seed, quiet=True, **tiny)


def test_each_evaluation_window_is_kept_and_they_add_up_to_the_figures(tiny_text):
    import numpy as np

    run = tiny_lm(tiny_text)
    kept = kept_scores(run)
    tokens = kept["weights:test_loss"]
    assert (tokens[:-1] == 16).all() and 0 < tokens[-1] <= 16  # block_size windows, a tail
    for name in ("val_loss", "val_bpc", "val_bpb", "test_loss", "test_bpc", "test_bpb"):
        scores, weights = kept[name], kept[f"weights:{name}"]
        split = name.partition("_")[0]
        assert len(scores) == len(weights) and (weights == kept[f"weights:{split}_loss"]).all()
        # the ratio of the windows' summed nats to their summed tokens (or characters)
        assert np.average(scores, weights=weights) == pytest.approx(run.metrics[name], rel=1e-5)
    # the test figure is the windows' nats over their tokens
    nats = (kept["test_loss"].astype(np.float64) * tokens).sum()
    assert nats / tokens.sum() == pytest.approx(run.metrics["test_loss"], rel=1e-5)
    # windows of another length are other examples: they never pair
    other = kept_scores(tiny_lm(tiny_text, block_size=8))
    assert bytes(other["examples:test"]) != bytes(kept["examples:test"])


def test_a_model_without_per_row_losses_is_scored_as_before_with_no_windows_kept():
    import numpy as np
    from zoo.pipelines.language_modeling import scored_windows

    class Summing:  # a model with loss_sum alone: 0.5 nat per target whose id is even
        def loss_sum(self, inputs, targets, mask=None):
            return float((targets % 2 == 0).sum() * 0.5), int(targets.size)

    class PerRow(Summing):
        def loss_per_row(self, inputs, targets, mask=None):
            return (targets % 2 == 0).sum(axis=1) * 0.5, np.full(len(targets), targets.shape[1])

    ids = np.arange(100)
    alone, by_row = scored_windows(Summing(), ids, 8, 4), scored_windows(PerRow(), ids, 8, 4)
    assert (alone.nats, alone.count) == (by_row.nats, by_row.count) == (24.5, 99)
    assert alone.per_window is None and alone.digest is None
    nats, counts = by_row.per_window
    assert counts.tolist() == [8] * 12 + [3] and nats.sum() == 24.5
    assert by_row.digest != scored_windows(PerRow(), ids + 1, 8, 4).digest  # other ids
