"""What checkpoints cost: size, write time and load time for a model, against the time of
a training step, and the resulting overhead at the default checkpoint interval.

    .venv/bin/python benchmarks/bench_checkpoint.py [--n-layer 4 --n-embd 128 --block 64]

Defaults are the decoder-char preset (registry.toml). Prints one line per figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=128)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--block", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=68)
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--steps", type=int, default=20, help="training steps to time")
    parser.add_argument("--saves", type=int, default=10, help="checkpoints to time")
    args = parser.parse_args()

    import torch
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.model import build

    from zoo.core.loading import task_loss
    from zoo.core.names import get_task
    from zoo.train import checkpoints as checkpoint
    from zoo.train.job import RunFolder, TrainConfig
    from zoo.train.loop import TrainingOutcome
    from zoo.train.model import TaskSpec
    from zoo.train.torch_model import TorchModel

    torch.manual_seed(0)
    cfg = DecoderConfig(
        n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd, block_size=args.block
    )
    model = TorchModel(
        build(cfg, TaskSpec("language-modeling", args.vocab)),
        loss=task_loss(get_task("language-modeling")),
    )
    model.configure_optimizer(1e-3, 0.1)
    rng = np.random.default_rng(0)
    x = rng.integers(0, args.vocab, size=(args.batch, args.block))
    model.train_step(x, x, 1e-3)  # warm-up, and optimizer state to save
    start = time.perf_counter()
    for _ in range(args.steps):
        model.train_step(x, x, 1e-3)
    step_ms = (time.perf_counter() - start) / args.steps * 1e3

    train = TrainConfig()
    with tempfile.TemporaryDirectory() as tmp:
        run = RunFolder(Path(tmp) / "run").create()
        job = SimpleNamespace(train_config=train, run=run, say=print, identity={}, resume_from=None)
        result = TrainingOutcome(steps=1)
        saver = checkpoint.Checkpointer(job, model, result, {"batches": rng})
        times = []
        for i in range(args.saves):
            result.steps = i + 1
            start = time.perf_counter()
            saver.save(elapsed=0.0)
            times.append(time.perf_counter() - start)
        latest = checkpoint.latest(run.path)
        size = sum(p.stat().st_size for p in latest.path.iterdir())
        start = time.perf_counter()
        for _ in range(args.saves):
            found = checkpoint.latest(run.path)
            job.resume_from = found
            checkpoint.Checkpointer(job, model, TrainingOutcome(), {"batches": rng}).restore()
        load_ms = (time.perf_counter() - start) / args.saves * 1e3

    save_ms = float(np.median(times)) * 1e3
    every = train.checkpoint_every
    print(f"parameters                 {model.num_parameters():,}")
    print(f"checkpoint size            {size / 1e6:.2f} MB")
    print(f"training step              {step_ms:.1f} ms (batch {args.batch} x {args.block})")
    print(f"checkpoint write (median)  {save_ms:.1f} ms over {args.saves} writes")
    print(f"checkpoint verify + load   {load_ms:.1f} ms")
    print(
        f"overhead every {every} steps   {save_ms / (every * step_ms) * 100:.3f} % of training time"
    )

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import table, write_results

    write_results(
        "checkpoint",
        title="What checkpoints cost",
        about=f"Size, write and load time of a checkpoint of a decoder ({args.n_layer} layers of "
        f"{args.n_embd}), against a training step (batch {args.batch} x {args.block}).",
        tables=[
            table(
                "",
                [("figure", "figure"), ("value", "value")],
                [
                    {"figure": "parameters", "value": f"{model.num_parameters():,}"},
                    {"figure": "checkpoint size", "value": f"{size / 1e6:.2f} MB"},
                    {"figure": "training step", "value": f"{step_ms:.1f} ms"},
                    {"figure": "checkpoint write (median)", "value": f"{save_ms:.1f} ms"},
                    {"figure": "checkpoint verify and load", "value": f"{load_ms:.1f} ms"},
                    {
                        "figure": f"overhead at one checkpoint every {every} steps",
                        "value": f"{save_ms / (every * step_ms) * 100:.3f}% of training time",
                    },
                ],
            )
        ],
    )


if __name__ == "__main__":
    main()
