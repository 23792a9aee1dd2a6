"""Mamba's two scans on the CPU: the chunked parallel form (``selective_scan``, which forms
[B, T, D, N] tensors and lets autograd keep them) against ``SelectiveScan`` (a position at a
time on one state; its backward pass recomputes a chunk's states). For each shape: one
layer's scan forward and backward, its time (median of alternating rounds, one thread) and
what it keeps for the backward pass (the bytes of the tensors autograd saves), and one
training step of the whole network at that shape.

    python benchmarks/bench_mamba_scan.py              # 5 rounds
    python benchmarks/bench_mamba_scan.py --rounds 3

Shapes: mamba-char's training batch (32 windows of 64 characters, width 128, inner width 256,
8 state numbers) and the Multi30k prefix LM of bench_seq2seq (64 rows of about 64 tokens,
6 layers of width 256, inner width 512, 16 state numbers).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, table, write_results  # noqa: E402

SHAPES = {  # name: (rows, tokens, n_layer, n_embd, d_state, vocabulary)
    "mamba-char (Tiny Shakespeare)": (32, 64, 2, 128, 8, 65),
    "Multi30k prefix LM": (64, 64, 6, 256, 16, 8000),
}
CHUNK = 32  # scan_chunk's default


def scan_inputs(rows, tokens, inner, state):
    import torch

    generator = torch.Generator().manual_seed(0)

    def leaf(*shape, scale=1.0):
        return (torch.randn(*shape, generator=generator) * scale).requires_grad_()

    dt = (torch.rand(rows, tokens, inner, generator=generator) * 0.1).requires_grad_()
    A = (-torch.arange(1, state + 1).float().repeat(inner, 1)).requires_grad_()
    return dt, A, leaf(rows, tokens, inner), leaf(rows, tokens, state), leaf(rows, tokens, state)


def chunked(dt, A, x, B, C):
    import torch
    from zoo.plugins.mamba.model import selective_scan

    dA = torch.exp(dt[..., None] * A)
    return selective_scan(dA, x[..., None] * B[:, :, None, :], C, CHUNK)


def one_state(dt, A, x, B, C):
    from zoo.plugins.mamba.model import SelectiveScan

    return SelectiveScan.apply(dt, A, x, B, C, CHUNK)


def scan_round(scan, inputs) -> tuple[float, int]:
    """Seconds for the forward and backward pass, and the bytes saved for the backward."""
    import torch

    saved = []

    def pack(tensor):
        saved.append(tensor.numel() * tensor.element_size())
        return tensor

    began = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        y, last = scan(*inputs)
    (y.sum() + last.sum()).backward()
    return time.perf_counter() - began, sum(saved)


def step_seconds(rows, tokens, n_layer, n_embd, d_state, vocabulary, rounds: int) -> float:
    """Median seconds of one training step of the whole network (bf16 autocast where the
    CPU has native bf16, as zoo trains): forward, cross-entropy, backward."""
    import torch
    import torch.nn.functional as F
    from zoo.plugins.mamba import MambaConfig
    from zoo.plugins.mamba.model import build

    from zoo.plugin import TaskSpec
    from zoo.train.precision import cpu_has_native_bf16

    torch.manual_seed(0)
    cfg = MambaConfig(n_layer=n_layer, n_embd=n_embd, d_state=d_state, block_size=tokens)
    model = build(cfg, TaskSpec("language-modeling", vocabulary))
    ids = torch.randint(0, vocabulary, (rows, tokens))
    times = []
    for _ in range(rounds + 1):  # the first round warms up
        began = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_has_native_bf16()):
            logits = model(ids)
        F.cross_entropy(logits.float().flatten(0, 1), ids.flatten()).backward()
        times.append(time.perf_counter() - began)
    return statistics.median(times[1:])


def measure(name: str, rounds: int) -> dict:
    rows, tokens, n_layer, n_embd, d_state, vocabulary = SHAPES[name]
    inputs = scan_inputs(rows, tokens, 2 * n_embd, d_state)
    times: dict[str, list[float]] = {"chunked": [], "one_state": []}
    saved = {}
    for _ in range(rounds):  # alternating, so a change in the machine's speed hits both
        for scan in (chunked, one_state):
            seconds, saved[scan.__name__] = scan_round(scan, inputs)
            times[scan.__name__].append(seconds)
    chunked_s, one_state_s = (statistics.median(times[k]) for k in ("chunked", "one_state"))
    return {
        "shape": name,
        "batch": f"{rows} x {tokens}, inner {2 * n_embd}, N {d_state}",
        "chunked_ms": 1000 * chunked_s,
        "one_state_ms": 1000 * one_state_s,
        "speedup": chunked_s / one_state_s,
        "chunked_saved_mb": saved["chunked"] / 2**20,
        "one_state_saved_mb": saved["one_state"] / 2**20,
        "step_s": step_seconds(rows, tokens, n_layer, n_embd, d_state, vocabulary, rounds),
        "layers": n_layer,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per shape")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    header("Mamba's scans on the CPU")
    rows = []
    for name in SHAPES:
        rows.append(measure(name, args.rounds))
        print(rows[-1], flush=True)
    write_results(
        "mamba_scan",
        title="Mamba's scan on the CPU: chunked parallel form against one state at a time",
        about="One layer's scan, forward and backward, on one thread: the chunked parallel "
        "form (`selective_scan`, every position's state formed and kept by autograd) against "
        "`SelectiveScan` (one [B, D, N] state, a position at a time; its backward recomputes "
        f"a chunk of {CHUNK} positions' states at a time), median of alternating rounds. "
        "Saved is what each keeps for the backward pass. A step is one training step of the "
        "whole network at that shape (bf16 autocast where the CPU has native bf16), with the "
        "scan zoo uses on the CPU.",
        tables=[
            table(
                "one layer's scan, forward and backward; a whole training step",
                [
                    ("shape", "shape"),
                    ("batch", "batch"),
                    ("chunked_ms", "chunked ms", ",.0f"),
                    ("one_state_ms", "one state ms", ",.0f"),
                    ("speedup", "speedup", ".1f"),
                    ("chunked_saved_mb", "chunked saved MB", ",.0f"),
                    ("one_state_saved_mb", "one state saved MB", ",.0f"),
                    ("layers", "layers"),
                    ("step_s", "training step s", ".2f"),
                ],
                rows,
            )
        ],
        notes=[
            "Rounds alternate the two scans on the same inputs, so a change in the machine's "
            "speed during the run hits both; the speedup is their ratio of medians.",
            "On an accelerator zoo keeps the chunked form (a few large steps); it was not "
            "measured here.",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
