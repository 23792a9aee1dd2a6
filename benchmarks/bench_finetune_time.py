"""How long the fine-tuning preset takes on this CPU: one whole `zoo run bert-finetune` (the
all-MiniLM-L6-v2 checkpoint on rotten_tomatoes), on this CPU's own kernels and with torch
held at AVX2 (how an AVX2-only CPU computes, bf16 emulated there), precision left to `auto`.

Each run is a fresh process; its wall time and CPU time (the process's user + system
seconds) are the whole command's: loading, tokenizing, training, the evaluations.

    python benchmarks/bench_finetune_time.py               # 2 threads, seed 0, both kernel sets
    python benchmarks/bench_finetune_time.py --threads 1 --kernels "held at AVX2"
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_transfer import extract_minilm  # noqa: E402
from common import header, load, table, write_results  # noqa: E402

from zoo.core.machine import AVX2_HOLD  # noqa: E402

KERNELS = {"this CPU's own": {}, "held at AVX2": AVX2_HOLD}


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fine_tune(kernels: str, checkpoint: Path, home: Path, args) -> dict:
    """One whole run of the preset under ``kernels``; its times, precision and accuracy."""
    threads = str(args.threads)
    env = {**os.environ, **KERNELS[kernels], "ZOO_HOME": str(home)}
    env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    command = [sys.executable, "-m", "zoo", "run", "bert-finetune", args.dataset]
    command += ["--set", f"pretrained={checkpoint}", "--seed", str(args.seed), "--json", "--quiet"]
    cpu_before, start = children_cpu_seconds(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - start, children_cpu_seconds() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"{kernels}: zoo run failed: {done.stderr.strip()[-800:]}")
    result = json.loads(done.stdout)
    metrics = result["metrics"]
    config = json.loads((home / result["run_id"] / "config.json").read_text(encoding="utf-8"))
    return {
        "kernels": kernels,
        "precision": config["machine"]["precision"],
        "steps": metrics["steps"],
        "minutes": wall / 60,
        "cpu_minutes": cpu / 60,
        "test": 100 * metrics["test_accuracy"],
        "load": load().removeprefix("load "),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--dataset", default="rotten_tomatoes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the run")
    parser.add_argument("--kernels", nargs="+", choices=list(KERNELS), default=list(KERNELS))
    args = parser.parse_args(argv)
    header(f"bert-finetune on {args.dataset}: one whole run per kernel set")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint = extract_minilm(Path(scratch))
        for kernels in args.kernels:
            rows.append(fine_tune(kernels, checkpoint, Path(scratch) / "home", args))
            print(rows[-1], flush=True)
    write_results(
        "finetune_time",
        title="The fine-tuning preset's time by CPU kind",
        about=f"One whole `zoo run bert-finetune {args.dataset} --set pretrained=DIR` "
        f"(all-MiniLM-L6-v2, seed {args.seed}, {args.threads} thread(s), precision `auto`), "
        "in a fresh process per kernel set: this CPU's own kernels, and torch held at AVX2 "
        "(what an AVX2-only CPU runs). Wall and CPU time cover the whole command: loading, "
        "tokenizing, training and the evaluations.",
        tables=[
            table(
                "",
                [
                    ("kernels", "torch's kernels"),
                    ("precision", "auto chose"),
                    ("steps", "steps"),
                    ("minutes", "wall minutes", ".1f"),
                    ("cpu_minutes", "CPU minutes", ".1f"),
                    ("test", "test accuracy %", ".2f"),
                    ("load", "load at the end"),
                ],
                rows,
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
