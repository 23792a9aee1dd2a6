"""What the digits network's attention costs on one CPU thread: softmax over rows shorter
than a vector register, padded or not, and the last block computed at every position or at
the one position the network reads (alternating rounds, medians, CPU seconds).

    python benchmarks/bench_attention.py                 # 8 rounds
    python benchmarks/bench_attention.py --rounds 4 --steps 20

Shapes are digits-char's training shape: 256 rows of up to 15 tokens, width 64, one head.
The operations are timed forward and backward in fp32, as the attention of seeds trained
together (zoo.train.layers' matrix-product attention) computes them; the network's steps
are the engine's (bf16 autocast on CPUs with native bf16, cross-entropy, backward, fused
AdamW), as in bench_layer_norm.py. One thread is what a --jobs N worker runs on.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_layer_norm import ROWS, TOKENS, batch, median, network, step_time  # noqa: E402
from common import header, load, table, write_results  # noqa: E402

WIDTH = 64


def timed(function, repeats: int) -> float:
    """CPU milliseconds per call of ``function``, over ``repeats`` calls."""
    began = time.process_time()
    for _ in range(repeats):
        function()
    return (time.process_time() - began) / repeats * 1000


def softmax_at(keys: int):
    """Softmax forward and backward over [ROWS, 1, TOKENS, keys] scores."""
    import torch

    scores = torch.randn(ROWS, 1, TOKENS, keys, requires_grad=True)

    def run():
        scores.softmax(-1).sum().backward()

    return run


def attention_with(lanes: int):
    """Matrix-product attention forward and backward at TOKENS keys, padding rows shorter
    than ``lanes`` keys (0: no padding)."""
    import torch

    from zoo.train import layers

    q, k, v = (torch.randn(ROWS, 1, TOKENS, WIDTH, requires_grad=True) for _ in range(3))
    keep = torch.ones(ROWS, 1, 1, TOKENS, dtype=torch.bool)
    keep[: ROWS // 2, ..., -4:] = False  # padded contexts, as in a batch of digit rows

    def run():
        saved, layers.KEY_LANES = layers.KEY_LANES, lanes
        try:
            layers._attention_in_matrix_products(q, k, v, attn_mask=keep).sum().backward()
        finally:
            layers.KEY_LANES = saved

    return run


def every_position(model):
    """The digits network run the long way: every block at every position, then the read
    row (the output is the same as the network's own forward)."""
    import math

    from zoo.plugin.layers import key_mask, last_real

    def forward(input_ids, attention_mask=None):
        T = input_ids.shape[1]
        x = model.embed(input_ids) * math.sqrt(model.cfg.width)
        x = model.drop(x + model.position_table(attention_mask, T))
        keep = key_mask(attention_mask)
        for block in model.blocks:
            x = block(x, keep)
        return model.head(last_real(x, attention_mask))

    return forward


def compare(variants: dict, rounds: int) -> dict:
    """Median CPU ms of each variant's calls, the variants alternating round by round."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for run in variants.values():  # warm-up
        run()
    for round_ in range(rounds):
        names = list(variants) if round_ % 2 == 0 else list(reversed(variants))
        for name in names:
            times[name].append(variants[name]())
    return {name: median(values) for name, values in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40, help="network steps per round")
    parser.add_argument("--repeats", type=int, default=50, help="operation calls per round")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    header("digits network: attention at short rows, the last block at its read row")
    ops = {
        "softmax, 15 keys": softmax_at(TOKENS),
        "softmax, 16 keys": softmax_at(16),
        "attention, 15 keys as they are": attention_with(0),
        "attention, 15 keys padded to 16": attention_with(16),
    }
    op_ms = compare({n: (lambda f=f: timed(f, args.repeats)) for n, f in ops.items()}, args.rounds)
    op_rows = []
    names = list(ops)
    for plain, padded in (names[:2], names[2:]):  # each pair: as it is, then padded
        op_rows += [
            {"operation": plain, "cpu_ms": op_ms[plain], "ratio": 1.0},
            {"operation": padded, "cpu_ms": op_ms[padded], "ratio": op_ms[plain] / op_ms[padded]},
        ]
    model = network(False)
    data = batch()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    read_row = model.forward
    long_way = every_position(model)
    with torch.no_grad():
        same = torch.allclose(read_row(*data[:2]), long_way(*data[:2]), atol=1e-5)

    def steps_with(forward):
        def run():
            model.forward = forward
            try:
                return step_time(model, optimizer, data, args.steps, time.process_time)
            finally:
                del model.forward

        return run

    step_ms = compare(
        {"every position": steps_with(long_way), "read row": steps_with(read_row)}, args.rounds
    )
    step_rows = [
        {"last_block": "at every position", "cpu_ms": step_ms["every position"], "ratio": 1.0},
        {
            "last_block": "at the read row (zoo's)",
            "cpu_ms": step_ms["read row"],
            "ratio": step_ms["every position"] / step_ms["read row"],
        },
    ]
    for row in op_rows:
        print(f"{row['operation']:34s} {row['cpu_ms']:8.3f} ms  {row['ratio']:.2f}x")
    for row in step_rows:
        print(
            f"step, last block {row['last_block']:25s} {row['cpu_ms']:8.2f} ms  {row['ratio']:.2f}x"
        )
    print(f"same logits both ways: {same}  ({load()})")
    write_results(
        "attention",
        title="Attention at short rows and the last block at its read row",
        about="The digits network at digits-char's training shape (256 rows of up to 15 "
        f"tokens, width 64, one head), on one thread: CPU ms, medians of {args.rounds} "
        f"alternating rounds ({args.repeats} calls of an operation, {args.steps} steps of the "
        "network per round). `x` is the speed over the first row of its pair.",
        tables=[
            table(
                "Forward and backward in fp32 (the attention of seeds trained together)",
                [("operation", "operation"), ("cpu_ms", "CPU ms", ".3f"), ("ratio", "x", ".2f")],
                op_rows,
            ),
            table(
                "A training step of the network",
                [
                    ("last_block", "last block computed"),
                    ("cpu_ms", "CPU ms per step", ".2f"),
                    ("ratio", "x", ".2f"),
                ],
                step_rows,
            ),
        ],
        notes=[f"The logits are the same both ways (within 1e-5): {'yes' if same else 'no'}."],
    )


if __name__ == "__main__":
    main()
