"""Wall time of a whole `zoo sweep` with --jobs 1 against --jobs N, alternating, each in a
fresh ZOO_HOME; where each sweep's time goes; the best --jobs N could do; and whether every
cell's metrics are identical across the variants (timing figures aside).

    python benchmarks/bench_sweep_jobs.py                      # the issue's sweep, 3 rounds
    python benchmarks/bench_sweep_jobs.py --rounds 2 --steps 50
    python benchmarks/bench_sweep_jobs.py --device cuda --model decoder-char \
        --dataset shakespeare --seeds 8 --jobs 8 --steps 300 --no-single-thread
                                            # cells packed onto one GPU (sweep_jobs_cuda)

Variants, timed in alternation in every round (each is the `zoo` program in a subprocess):
  jobs1        --jobs 1 with torch's default threads (one per core: one cell uses the machine)
  jobs1-1t     --jobs 1 with OMP_NUM_THREADS=1 (the work of one cell on one core)
  jobsN        --jobs N (cores / N threads per worker)

Where the time goes, from the store's rows (the medians over rounds):
  set-up   from the program's start to the first cell's run row: interpreter and imports,
           planning, starting the workers, loading and tokenizing the data
  cells    the cells' own durations (building the model, training, evaluating), summed over
           cells; `training` is the training loops' part. With N workers they overlap.
  tail     from the last cell's end to the program's exit: its curve, stopping the workers,
           the comparison table, the interpreter's exit
The bound for --jobs N: the one-thread sweep's set-up and tail once, and its remaining time
split evenly over N workers that slow each other down not at all. --jobs N cannot beat it,
so its ratio to --jobs 1 is the most any way of starting workers could give on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, header, load, table, write_results  # noqa: E402

TIMING = {"tokens_per_s", "train_time"}
PARTS = ("wall", "setup", "cells", "training", "tail")


def run_sweep(args, jobs: int, threads: str | None) -> tuple[dict, dict]:
    """One sweep in a fresh ZOO_HOME: its time split into PARTS, and every cell's status and
    metrics by seed."""
    home = tempfile.mkdtemp(prefix="zoo-bench-jobs-")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["ZOO_HOME"] = str(Path(home) / "runs")
    if threads:
        env["OMP_NUM_THREADS"] = threads
    command = [
        str(REPO / ".venv/bin/zoo"),
        "sweep",
        args.model,
        "--on",
        args.dataset,
        "--seeds",
        str(args.seeds),
        "--steps",
        str(args.steps),
        "--jobs",
        str(jobs),
        "--format",
        "csv",
        *(["--device", args.device] if args.device else []),
    ]
    started, began = time.time(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({done.returncode}): {done.stderr[-2000:]}")
    db = sqlite3.connect(Path(env["ZOO_HOME"]) / "zoo.db")
    cells, created, finished, durations, training = {}, [], [], [], []
    for seed, metrics, status, made, ended, duration in db.execute(
        "SELECT seed, metrics, status, created, finished, duration FROM runs"
    ):
        metrics = json.loads(metrics)
        cells[seed] = (status, {k: v for k, v in metrics.items() if k not in TIMING})
        created.append(made)
        finished.append(ended)
        durations.append(duration or 0.0)
        training.append(metrics.get("train_time") or 0.0)
    db.close()
    parts = {
        "wall": seconds,
        "setup": min(created) - started,
        "cells": sum(durations),
        "training": sum(training),
        "tail": started + seconds - max(finished),
    }
    return parts, cells


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", default="digits-char")
    parser.add_argument("--dataset", default="digits")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        help="the sweep's --device; with cuda, --jobs N packs N cells onto the one GPU",
    )
    parser.add_argument(
        "--no-single-thread",
        action="store_true",
        help="leave out the jobs1-1t variant (and the bound it gives)",
    )
    args = parser.parse_args()
    header(
        f"zoo sweep {args.model} --on {args.dataset} --seeds {args.seeds} "
        f"--steps {args.steps}: --jobs 1 against --jobs {args.jobs}"
    )
    parallel = f"jobs{args.jobs}"
    variants = {"jobs1": (1, None), parallel: (args.jobs, None)}
    if not args.no_single_thread:
        variants["jobs1-1t"] = (1, "1")
    parts = {name: {part: [] for part in PARTS} for name in variants}
    metrics = {}  # variant -> the cells' metrics of its first sweep
    for round_ in range(1, args.rounds + 1):
        order = list(variants) if round_ % 2 else list(reversed(variants))
        for name in order:
            measured, cells = run_sweep(args, *variants[name])
            for part, seconds in measured.items():
                parts[name][part].append(seconds)
            if any(status != "finished" for status, _ in cells.values()):
                raise SystemExit(f"{name}: not every cell finished: {cells}")
            if metrics.setdefault(name, cells) != cells:
                print(f"# round {round_} {name}: metrics differ from its own first sweep's")
            print(f"round {round_} {name:9s} {measured['wall']:7.1f} s   ({load()})", flush=True)
    print()
    for name, values in parts.items():
        print(
            f"{name:9s} median {median(values['wall']):7.1f} s  over {len(values['wall'])} "
            "runs: " + ", ".join(f"{v:.1f}" for v in values["wall"])
        )
    print(f"\nwhere the time goes (s, medians): {'  '.join(f'{p:>8s}' for p in PARTS)}")
    for name, values in parts.items():
        print(f"  {name:31s}" + "  ".join(f"{median(values[p]):8.1f}" for p in PARTS))
    wall = {name: median(values["wall"]) for name, values in parts.items()}
    print(
        f"\nspeed-up of --jobs {args.jobs} over --jobs 1: "
        f"{wall['jobs1'] / wall[parallel]:.2f}x (ratio of medians)"
    )
    if "jobs1-1t" in wall:
        print(
            f"speed-up of --jobs {args.jobs} over --jobs 1 with one thread: "
            f"{wall['jobs1-1t'] / wall[parallel]:.2f}x"
        )
        alone = {part: median(parts["jobs1-1t"][part]) for part in PARTS}
        fixed = alone["setup"] + alone["tail"]
        bound = fixed + (alone["wall"] - fixed) / args.jobs
        print(
            f"bound for --jobs {args.jobs}: {bound:.1f} s (the one-thread sweep's set-up and "
            f"tail, {fixed:.1f} s, once, and the rest split over {args.jobs} workers), at most "
            f"{wall['jobs1'] / bound:.2f}x over --jobs 1; --jobs {args.jobs} reaches "
            f"{bound / wall[parallel]:.0%} of it"
        )
        one, all_ = median(parts["jobs1-1t"]["cells"]), median(parts["jobs1"]["cells"])
        print(
            f"the cells' durations, summed: {one:.1f} s on one thread, {all_:.1f} s on "
            f"torch's default threads ({one / all_:.2f}x); --jobs {args.jobs} can gain at "
            f"most {args.jobs}x over a one-thread cell, so at most about "
            f"{args.jobs * all_ / one:.2f}x over --jobs 1 before any set-up"
        )
    names = list(metrics)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            same = metrics[first] == metrics[second]
            print(
                f"metrics of every cell identical, {first} and {second}: {same}"
                + (
                    ""
                    if same
                    else f" (largest relative difference "
                    f"{largest_difference(metrics[first], metrics[second]):.2e})"
                )
            )
    labels = {
        "jobs1": "--jobs 1 (torch's default threads)",
        parallel: f"--jobs {args.jobs} (cores / {args.jobs} threads each)",
        "jobs1-1t": "--jobs 1, 1 thread",
    }
    notes = [
        f"`--jobs {args.jobs}` is {wall['jobs1'] / wall[parallel]:.2f}x as fast as `--jobs 1` here."
    ]
    if "jobs1-1t" in wall:
        notes.append(
            f"Bound for `--jobs {args.jobs}` from the one-thread sweep: "
            f"{wall['jobs1'] / bound:.2f}x over `--jobs 1`; reached "
            f"{bound / wall[parallel]:.0%} of it. A second worker can only win what one "
            "process leaves idle; on a loaded machine one-thread workers gain much more."
        )
    notes.append(
        "Cells per hour: "
        + ", ".join(
            f"{labels[name]} {3600 * args.seeds / seconds:,.0f}" for name, seconds in wall.items()
        )
        + "."
    )
    write_results(
        "sweep_jobs" + (f"_{args.device}" if args.device not in (None, "cpu") else ""),
        title="Parallel sweeps: `--jobs` against one process",
        about=f"`zoo sweep {args.model} --on {args.dataset} --seeds {args.seeds} --steps "
        f"{args.steps}{' --device ' + args.device if args.device else ''}` in a fresh ZOO_HOME per variant, the variants alternating over "
        f"{args.rounds} rounds.",
        tables=[
            table(
                "",
                [
                    ("variant", "variant"),
                    ("wall_s", "wall s (median)", ".1f"),
                    ("per_hour", "cells per hour", ",.0f"),
                ],
                [
                    {
                        "variant": labels[name],
                        "wall_s": seconds,
                        "per_hour": 3600 * args.seeds / seconds,
                    }
                    for name, seconds in wall.items()
                ],
            )
        ],
        notes=notes,
    )


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
