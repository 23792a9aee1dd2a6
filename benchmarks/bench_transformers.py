"""Training throughput of zoo's decoder beside transformers' GPT-2 and Llama at the same
shape (the decoder-char, gpt2-char and llama-char presets: 2 layers of width 192, 6 heads,
64-token windows, batch 32), in one process.

Each model and optimizer is built exactly as `zoo run` builds it (bench_train.Variant);
timed windows of steps alternate between the models, so a change in the machine's load
hits them all alike. Figures: tokens per second of optimizer steps (median and best
window) and the ratio to the first model.

    python benchmarks/bench_transformers.py
    python benchmarks/bench_transformers.py --models decoder-char gpt2-char --set precision=fp32
    python benchmarks/bench_transformers.py --profile 8    # where each model's step goes
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import Variant, alternate, prepare_data  # noqa: E402
from common import header, load, parse_sets, percentile, table, write_results  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--models", nargs="+", default=["decoder-char", "gpt2-char", "llama-char"])
    parser.add_argument("--dataset", default="shakespeare")
    parser.add_argument("--set", action="append", help="override for every model")
    parser.add_argument("--steps", type=int, default=120, help="timed steps per model")
    parser.add_argument("--windows", type=int, default=6, help="timed windows per model")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps per model")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="then profile 5 steps of each model and print its N costliest ops",
    )
    args = parser.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    header("training throughput, zoo's decoder and transformers' models at one shape")
    tokenizer, ids = prepare_data(args.dataset)
    overrides = parse_sets(args.set)
    print(f"# overrides: {overrides or 'none'}; threads {torch.get_num_threads()}")
    variants = []
    for model in args.models:
        start = time.perf_counter()
        variant = Variant(model, model, overrides, tokenizer, ids, args.dataset)
        for _ in range(args.warmup):
            variant.step()
        print(
            f"# {model}: {variant.model.num_parameters():,} parameters, precision "
            f"{variant.model.precision}; set-up and {args.warmup} warm-up steps "
            f"{time.perf_counter() - start:.1f} s",
            flush=True,
        )
        variants.append(variant)
    reference = alternate(variants, args.steps, args.windows)
    print(
        f"{'model':<16} {'params':>9} {'ms/step':>8} {'tokens/s':>9} {'best tok/s':>10} "
        f"{'vs ' + variants[0].name:>16}"
    )
    rows = []
    for v in variants:
        median, best = percentile(v.times, 0.5), min(v.times)
        rate = v.tokens_per_step / median
        print(
            f"{v.name:<16} {v.model.num_parameters():>9,} {median * 1e3:8.1f} {rate:9,.0f} "
            f"{v.tokens_per_step / best:10,.0f} {rate / reference:16.2f}"
        )
        rows.append(
            {
                "model": v.name,
                "params": v.model.num_parameters(),
                "ms_step": median * 1e3,
                "tokens_s": rate,
                "vs": rate / reference,
            }
        )
    write_results(
        "transformers",
        title="transformers architectures: training throughput at one shape",
        about=f"{', '.join(f'`{m}`' for m in args.models)} built as `zoo run` builds them, "
        f"{args.windows} alternating windows of {args.steps // args.windows} steps per "
        f"model, {torch.get_num_threads()} thread(s), precision "
        f"{variants[0].model.precision}.",
        tables=[
            table(
                "",
                [
                    ("model", "model"),
                    ("params", "parameters"),
                    ("ms_step", "ms per step (median)", ".1f"),
                    ("tokens_s", "tokens/s (median window)", ",.0f"),
                    ("vs", f"vs {variants[0].name}", ".2f"),
                ],
                rows,
            )
        ],
    )
    for v in variants[: len(variants) if args.profile else 0]:
        profile(v, args.profile)
    print(f"# after: {load()}")
    return 0


def profile(variant, top: int) -> None:
    """The ops that take a model's training step, by self CPU time over 5 steps."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            variant.step()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    print(f"# {variant.name}: {total / 5e3:.1f} ms of op time per step; costliest ops:")
    for e in events[:top]:
        print(
            f"#   {e.key:<40} {e.self_cpu_time_total / 5e3:7.1f} ms  {e.count // 5:4d} calls "
            f"({100 * e.self_cpu_time_total / total:4.1f}%)"
        )


if __name__ == "__main__":
    sys.exit(main())
