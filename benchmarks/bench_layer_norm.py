"""torch's fused LayerNorm against zoo.train.layers.ThreadInvariantLayerNorm in the digits network
at digits-char's training shape: whether the gradients are the same on one thread and on
two, and what a training step costs with each (alternating rounds, ratio of medians).

    python benchmarks/bench_layer_norm.py                 # 8 rounds of 40 steps
    python benchmarks/bench_layer_norm.py --rounds 4 --steps 20

The step is the engine's: bf16 autocast (on CPUs with native bf16), cross-entropy, backward
and fused AdamW, on 256 rows padded to 15 tokens (contexts of up to 8 digits). Each variant
is timed in CPU seconds on one thread (what --jobs N workers run on; a loaded machine moves
it little) and in wall seconds on torch's default threads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, load, table, write_results  # noqa: E402

ROWS, TOKENS, VOCAB = 256, 15, 14


def network(fused: bool):
    import torch
    from zoo.plugins.digits import DigitsConfig
    from zoo.plugins.digits.model import build

    from zoo.train.model import TaskSpec

    torch.manual_seed(0)
    model = build(
        DigitsConfig(width=64, blocks=2, heads=1, ff_ratio=4, block_size=32, positions="end"),
        TaskSpec("next-item", VOCAB),
    )
    if fused:
        for block in model.blocks:
            for name in ("norm1", "norm2"):
                norm = torch.nn.LayerNorm(64)
                norm.load_state_dict(getattr(block, name).state_dict())
                setattr(block, name, norm)
    return model


def batch():
    import torch

    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, VOCAB, (ROWS, TOKENS), generator=generator)
    lengths = torch.randint(5, TOKENS + 1, (ROWS, 1), generator=generator)
    mask = (torch.arange(TOKENS)[None] < lengths).long()
    return ids * mask, mask, torch.randint(0, VOCAB, (ROWS,), generator=generator)


def loss_of(model, ids, mask, targets):
    import torch
    import torch.nn.functional as F

    from zoo.train.precision import cpu_has_native_bf16

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_has_native_bf16()):
        logits = model(ids, mask)
    return F.cross_entropy(logits.float(), targets)


def gradients(model, threads: int, data) -> dict:
    import torch

    torch.set_num_threads(threads)
    model.zero_grad(set_to_none=True)
    loss_of(model, *data).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}


def step_time(model, optimizer, data, steps: int, clock) -> float:
    began = clock()
    for _ in range(steps):
        loss = loss_of(model, *data)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return (clock() - began) / steps * 1000


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    import torch

    from zoo.train import layers

    header("digits network: fused LayerNorm against ThreadInvariantLayerNorm")
    default_threads = torch.get_num_threads()
    data = batch()
    models = {"fused": network(True), "invariant": network(False)}
    assert isinstance(models["invariant"].blocks[0].norm1, layers.ThreadInvariantLayerNorm)
    rows = {
        "fused": {"norm": "torch's fused nn.LayerNorm"},
        "invariant": {"norm": "ThreadInvariantLayerNorm"},
    }
    for name, model in models.items():
        one, two = gradients(model, 1, data), gradients(model, 2, data)
        differ = [n for n in one if not torch.equal(one[n], two[n])]
        rows[name]["gradients"] = "differ" if differ else "identical"
        print(
            f"{name:9s} gradients on 1 and 2 threads: "
            + ("identical" if not differ else f"differ in {', '.join(differ)}")
        )
    optimizers = {
        name: torch.optim.AdamW(m.parameters(), lr=1e-3, fused=True) for name, m in models.items()
    }
    for threads, clock, unit in (
        (1, time.process_time, "CPU"),
        (default_threads, time.perf_counter, "wall"),
    ):
        torch.set_num_threads(threads)
        times = {name: [] for name in models}
        for name in models:  # warm-up
            step_time(models[name], optimizers[name], data, 5, clock)
        for round_ in range(args.rounds):
            for name in list(models) if round_ % 2 == 0 else list(reversed(models)):
                times[name].append(
                    step_time(models[name], optimizers[name], data, args.steps, clock)
                )
        fused, invariant = median(times["fused"]), median(times["invariant"])
        print(
            f"{threads} thread(s), {unit} ms per step, median of {args.rounds}: fused "
            f"{fused:.2f}, invariant {invariant:.2f} ({invariant / fused:.3f}x)  ({load()})"
        )
        key = "cpu_ms" if unit == "CPU" else "wall_ms"
        rows["fused"][key], rows["invariant"][key] = fused, invariant
    write_results(
        "layer_norm",
        title="Thread-invariant LayerNorm: what it costs",
        about="The digits network with torch's fused `nn.LayerNorm` against "
        "`ThreadInvariantLayerNorm` (gradients identical on any number of threads), "
        f"{args.rounds} alternating rounds of {args.steps} steps.",
        tables=[
            table(
                "",
                [
                    ("norm", "LayerNorm"),
                    ("gradients", "gradients on 1 and 2 threads"),
                    ("cpu_ms", "CPU ms per step, 1 thread", ".2f"),
                    ("wall_ms", f"wall ms per step, {default_threads} thread(s)", ".2f"),
                ],
                list(rows.values()),
            )
        ],
    )


if __name__ == "__main__":
    main()
