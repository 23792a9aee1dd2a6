"""Wall time of a whole `zoo sweep` with --jobs 1 against --jobs N, alternating, each in a
fresh ZOO_HOME, and whether every cell's metrics are identical (timing figures aside).

    python benchmarks/bench_sweep_jobs.py                      # the issue's sweep, 3 rounds
    python benchmarks/bench_sweep_jobs.py --rounds 2 --steps 50

Variants, timed in alternation in every round:
  jobs1        --jobs 1 with torch's default threads (one per core: one cell uses the machine)
  jobs1-1t     --jobs 1 with OMP_NUM_THREADS=1 (what a loaded machine favours; for context)
  jobsN        --jobs N (cores / N threads per worker)
Prints each variant's median and the ratios of medians.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, header, load  # noqa: E402

TIMING = {"tokens_per_s", "train_time"}


def run_sweep(args, jobs: int, threads: str | None) -> tuple[float, dict]:
    home = tempfile.mkdtemp(prefix="zoo-bench-jobs-")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["ZOO_HOME"] = str(Path(home) / "runs")
    if threads:
        env["OMP_NUM_THREADS"] = threads
    command = [str(REPO / ".venv/bin/zoo"), "sweep", args.model, "--on", args.dataset,
               "--seeds", str(args.seeds), "--steps", str(args.steps), "--jobs", str(jobs),
               "--format", "csv"]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({done.returncode}): {done.stderr[-2000:]}")
    db = sqlite3.connect(Path(env["ZOO_HOME"]) / "zoo.db")
    cells = {}
    for seed, metrics, status in db.execute("SELECT seed, metrics, status FROM runs"):
        values = {k: v for k, v in json.loads(metrics).items() if k not in TIMING}
        cells[seed] = (status, values)
    db.close()
    return seconds, cells


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="digits-char")
    parser.add_argument("--dataset", default="digits")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-single-thread", action="store_true",
                        help="leave out the jobs1-1t variant")
    args = parser.parse_args()
    header(f"zoo sweep {args.model} --on {args.dataset} --seeds {args.seeds} "
           f"--steps {args.steps}: --jobs 1 against --jobs {args.jobs}")
    variants = {"jobs1": (1, None), f"jobs{args.jobs}": (args.jobs, None)}
    if not args.no_single_thread:
        variants["jobs1-1t"] = (1, "1")
    times = {name: [] for name in variants}
    metrics = {}  # variant -> the cells' metrics of its first sweep
    for round_ in range(1, args.rounds + 1):
        order = list(variants) if round_ % 2 else list(reversed(variants))
        for name in order:
            seconds, cells = run_sweep(args, *variants[name])
            times[name].append(seconds)
            if any(status != "finished" for status, _ in cells.values()):
                raise SystemExit(f"{name}: not every cell finished: {cells}")
            if metrics.setdefault(name, cells) != cells:
                print(f"# round {round_} {name}: metrics differ from its own first sweep's")
            print(f"round {round_} {name:9s} {seconds:7.1f} s   ({load()})", flush=True)
    print()
    for name, values in times.items():
        print(f"{name:9s} median {median(values):7.1f} s  over {len(values)} runs: "
              + ", ".join(f"{v:.1f}" for v in values))
    parallel = f"jobs{args.jobs}"
    print(f"speed-up of --jobs {args.jobs} over --jobs 1: "
          f"{median(times['jobs1']) / median(times[parallel]):.2f}x (ratio of medians)")
    if "jobs1-1t" in times:
        print(f"speed-up of --jobs {args.jobs} over --jobs 1 with one thread: "
              f"{median(times['jobs1-1t']) / median(times[parallel]):.2f}x")
    names = list(metrics)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            same = metrics[first] == metrics[second]
            print(f"metrics of every cell identical, {first} and {second}: {same}"
                  + ("" if same else f" (largest relative difference "
                     f"{largest_difference(metrics[first], metrics[second]):.2e})"))


def largest_difference(a: dict, b: dict) -> float:
    worst = 0.0
    for seed, (_, values) in a.items():
        for key, value in values.items():
            other = b[seed][1].get(key)
            if isinstance(value, float) and isinstance(other, float) and value != other:
                worst = max(worst, abs(value - other) / max(abs(value), abs(other), 1e-12))
    return worst


if __name__ == "__main__":
    main()
