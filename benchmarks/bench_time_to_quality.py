"""Time to quality: wall time from process start until Tiny Shakespeare validation loss
<= 1.88 nats/char, through a real `zoo run` that anyone can repeat.

The headline is the whole process (imports, data, tokenizer, training, evaluation on the
whole validation and test splits, samples) from launch to exit, with the final full-split
val_loss; the training curve's first periodic estimate under the target is shown too.

    python benchmarks/bench_time_to_quality.py                       # the default preset
    python benchmarks/bench_time_to_quality.py decoder-char-fast
    python benchmarks/bench_time_to_quality.py decoder-char --set lr=2e-3 --repeat 2
    python benchmarks/bench_time_to_quality.py decoder-char --torchrun 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header, load, table, write_results  # noqa: E402


def launch(model: str, dataset: str, extra: list[str], torchrun: int, home: Path):
    if torchrun > 1:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={torchrun}",
            "--master_addr=127.0.0.1",
            "--master_port=29533",
            "-m",
            "zoo",
        ]
    else:
        command = [sys.executable, "-m", "zoo"]
    command += ["run", model, dataset, "--json", *extra]
    env = {**os.environ, "ZOO_HOME": str(home)}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"zoo run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    curve = [
        json.loads(line)
        for line in (home / summary["run_id"] / "metrics.jsonl").read_text().splitlines()
        if line
    ]
    return wall, summary, curve


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("model", nargs="?", default="decoder-char")
    parser.add_argument("--dataset", default="shakespeare")
    parser.add_argument("--target", type=float, default=1.88, help="val_loss to reach (nats)")
    parser.add_argument("--set", action="append", default=[], help="passed to zoo run")
    parser.add_argument("--time", help="passed to zoo run as --time")
    parser.add_argument("--steps", help="passed to zoo run as --steps")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--torchrun", type=int, default=1, metavar="N", help="processes")
    args = parser.parse_args(argv)

    header(f"time to val_loss <= {args.target}, zoo run {args.model} {args.dataset}")
    extra = [a for s in args.set for a in ("--set", s)]
    extra += ["--time", args.time] if args.time else []
    extra += ["--steps", args.steps] if args.steps else []
    print(
        f"{'wall s':>7} {'val_loss':>8} {'test_loss':>9} {'steps':>6} {'train s':>7} "
        f"{'tokens/s':>8} {'curve<=target at':>16} {'verdict':>7}  load"
    )
    rows = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="zoo-ttq-") as home:
            wall, summary, curve = launch(
                args.model, args.dataset, extra, args.torchrun, Path(home)
            )
        m = summary["metrics"]
        crossing = next((r for r in curve if r.get("val_loss", 99) <= args.target), None)
        at = f"{crossing['elapsed']:.1f} s (step {crossing['step']})" if crossing else "never"
        verdict = "PASS" if m["val_loss"] <= args.target else "FAIL"
        print(
            f"{wall:7.1f} {m['val_loss']:8.4f} {m['test_loss']:9.4f} {m['steps']:6d} "
            f"{m['train_time']:7.1f} {m['tokens_per_s']:8,.0f} {at:>16} {verdict:>7}  {load()}",
            flush=True,
        )
        rows.append(
            {
                "model": args.model,
                "wall_s": wall,
                "val_loss": m["val_loss"],
                "test_loss": m["test_loss"],
                "steps": m["steps"],
                "train_s": m["train_time"],
                "tokens_s": m["tokens_per_s"],
                "reached": m["val_loss"] <= args.target,
            }
        )
    threads = os.environ.get("OMP_NUM_THREADS", "torch's default")
    write_results(
        "time_to_quality",
        title="Time to quality: a whole `zoo run`",
        about=f"`zoo run {args.model} {args.dataset}` from launch to exit (imports, data, "
        "tokenizer, training, evaluation of the whole validation and test splits, "
        f"samples), and whether its validation loss reaches {args.target} nats per "
        f"character. Threads: {threads}"
        + (f"; {args.torchrun} processes under torchrun" if args.torchrun > 1 else "")
        + ".",
        tables=[
            table(
                "",
                [
                    ("model", "model"),
                    ("wall_s", "wall s", ".1f"),
                    ("val_loss", "val_loss", ".4f"),
                    ("test_loss", "test_loss", ".4f"),
                    ("steps", "steps"),
                    ("train_s", "training s", ".1f"),
                    ("tokens_s", "tokens/s", ",.0f"),
                    ("reached", f"val_loss <= {args.target}"),
                ],
                rows,
                readme=True,
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
