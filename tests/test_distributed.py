"""Multi-process training: `torchrun --nproc_per_node=2 -m zoo run ...` on loopback (gloo)."""

import hashlib
import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import TINY_DECODER, run_cli


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def torchrun(*args, nproc=2, env=None, timeout=240):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc_per_node={nproc}",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        "-m",
        "zoo",
        *map(str, args),
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


@pytest.mark.slow
def test_two_processes_train_one_run_with_identical_weights(tiny_text, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # --device cpu: gloo ranks on the CPU, also where auto would put both ranks on one GPU
    done = torchrun(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        6,
        "--json",
        "--device",
        "cpu",
        *TINY_DECODER,
        env={"TMPDIR": str(scratch)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, done.stdout  # rank 0 alone speaks for the run
    summary = json.loads(lines[0])
    assert summary["status"] == "finished" and summary["metrics"]["steps"] == 6

    rows = json.loads(run_cli("runs", "--json").out)
    assert [row["id"] for row in rows] == [summary["run_id"]]  # exactly one store row
    assert rows[0]["status"] == "finished"

    folder = tmp_path / "home" / "runs" / summary["run_id"]
    config = json.loads((folder / "config.json").read_text())
    shared = config["distributed"]
    assert shared["world_size"] == 2 and shared["backend"] == "gloo"
    saved = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    assert shared["weight_sha256"] == [saved, saved]  # every rank ended with these weights
    assert not list(scratch.glob("zoo-rank*"))  # rank 1's scratch run folder is gone

    # Same kind of metrics as a single-process run; rank 1 drew other batches than rank 0
    # (with the same data the first logged loss would equal the single-process one).
    single = json.loads(
        run_cli("run", "decoder-char", tiny_text, "--steps", 6, "--json", *TINY_DECODER).out
    )
    assert set(single["metrics"]) == set(summary["metrics"])
    first = lambda run_id: json.loads(  # noqa: E731
        (tmp_path / "home" / "runs" / run_id / "metrics.jsonl").read_text().splitlines()[0]
    )
    assert (
        abs(first(single["run_id"])["train_loss"] - first(summary["run_id"])["train_loss"]) > 1e-4
    )
    # Tokens per second counts the tokens of both ranks.
    assert summary["metrics"]["tokens_per_s"] > 0


@pytest.mark.slow
def test_single_process_run_sets_up_no_process_group(tiny_text):
    import torch.distributed as dist

    from zoo.train import distributed

    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, "--json", *TINY_DECODER)
    assert result.code == 0, result
    assert not dist.is_initialized() and distributed.current() is distributed.SINGLE
    config = json.loads(
        (distributed_home() / json.loads(result.out)["run_id"] / "config.json").read_text()
    )
    assert "distributed" not in config


def distributed_home():
    from zoo.records.store import home

    return home()


@pytest.mark.cuda
def test_cuda_bf16_and_compile(tiny_text):
    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        4,
        "--device",
        "cuda",
        "--compile",
        "--json",
        *TINY_DECODER,
    )
    assert result.code == 0, result
    assert json.loads(result.out)["status"] == "finished"


# -- The README's two promises, checked in-process with a fake second rank (no torchrun) --


def test_the_logged_train_loss_is_the_mean_over_ranks(monkeypatch):
    import torch
    import torch.distributed as dist

    from zoo.train import distributed
    from zoo.train.torch_model import TorchModel

    def all_reduce_with_another_rank(tensor, *args, **kwargs):
        tensor += 3.0  # rank 1's loss, summed in place as gloo's SUM does

    monkeypatch.setattr(dist, "all_reduce", all_reduce_with_another_rank)
    engine = TorchModel.__new__(TorchModel)  # only the reduction is under test
    engine.distributed = distributed.Context(rank=0, world_size=2, backend="gloo")
    assert engine._mean_over_ranks(torch.tensor(1.0)) == pytest.approx(2.0)  # (1 + 3) / 2


def test_the_token_count_covers_every_rank(tmp_path, monkeypatch):
    import numpy as np
    from test_best_weights import Counter, make_job

    from zoo.train import distributed, loop

    class TwoRankCounter(Counter):
        def configure_engine(self, **kwargs):
            pass  # a torch model would wrap itself in DDP here

    monkeypatch.setattr(
        distributed, "current", lambda: distributed.Context(rank=0, world_size=2, backend="gloo")
    )
    job = make_job(tmp_path, steps=5)

    def batch(rng):
        return loop.Batch(np.zeros((1, 1)), np.zeros(1), tokens=7)

    result = loop.train(job, TwoRankCounter(), batch)
    assert result.steps == 5 and result.tokens == 5 * 7 * 2  # both ranks' batches
