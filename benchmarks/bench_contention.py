"""A `zoo run` on a busy machine: zoo's own thread choice against fixed thread settings,
on a quiet machine and beside one and two busy neighbours (a Python busy loop each).

    python benchmarks/bench_contention.py                 # digits-char, 300 steps, 4 rounds
    python benchmarks/bench_contention.py --rounds 1 --steps 100

Variants (the `zoo` program in a subprocess, timed from start to exit):
  auto           no thread settings: zoo chooses from the idle CPUs (zoo.core.threads)
  all-active     OMP_NUM_THREADS=<cores>: torch's default (a thread per core, active waiting)
  all-passive    OMP_NUM_THREADS=<cores> OMP_WAIT_POLICY=PASSIVE
  one            OMP_NUM_THREADS=1
Every round runs every (neighbours, variant) pair once, after one untimed run beside the
freshly started neighbours, in an order that rotates from round to round, so slow drifts of
the machine and the place in the order fall on all variants alike. The figures are medians over rounds; the
ratio column divides by the best fixed variant of the same row.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, header, table, write_results  # noqa: E402

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY")


def busy_loop() -> None:  # a neighbour: one CPU kept busy until killed
    while True:
        pass


def variants(cores: int) -> dict[str, dict]:
    return {
        "auto": {},
        "all-active": {"OMP_NUM_THREADS": str(cores)},
        "all-passive": {"OMP_NUM_THREADS": str(cores), "OMP_WAIT_POLICY": "PASSIVE"},
        "one": {"OMP_NUM_THREADS": "1"},
    }


def timed_run(args, extra_env: dict) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV}
    env.update(extra_env)
    env["ZOO_HOME"] = str(Path(tempfile.mkdtemp(prefix="zoo-bench-busy-")) / "runs")
    command = [str(REPO / ".venv/bin/zoo"), "run", args.model, args.dataset]
    command += ["--steps", str(args.steps), "--quiet", "--verbose"]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    chose = next((line for line in done.stderr.splitlines() if "threads:" in line), "")
    return seconds, chose.partition("threads: ")[2].split(" (")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", default="digits-char")
    parser.add_argument("--dataset", default="digits")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--neighbours", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    header("zoo run beside busy neighbours")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    named = variants(cores)
    times = {(n, v): [] for n in args.neighbours for v in named}
    chosen: dict[int, set] = {n: set() for n in args.neighbours}
    for round_ in range(args.rounds):
        for neighbours in args.neighbours:
            busy = [
                multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(neighbours)
            ]
            for process in busy:
                process.start()
            time.sleep(1.0)  # let the neighbours show in the scheduler's view
            try:
                # The first run after the neighbours start ran slower whatever its variant
                # (caches, the scheduler settling): one untimed run takes that place, and the
                # order rotates so each variant takes each place once every len(named) rounds.
                timed_run(args, named["one"])
                order = list(named)[round_ % len(named) :] + list(named)[: round_ % len(named)]
                for name in order:
                    seconds, threads = timed_run(args, named[name])
                    times[neighbours, name].append(seconds)
                    if name == "auto":
                        chosen[neighbours].add(threads)
                    print(f"round {round_ + 1} neighbours {neighbours} {name:<12} {seconds:6.1f} s")
            finally:
                for process in busy:
                    process.kill()
    rows = []
    for neighbours in args.neighbours:
        medians = {v: statistics.median(times[neighbours, v]) for v in named}
        best_fixed = min(medians[v] for v in named if v != "auto")
        rows.append(
            {
                "neighbours": neighbours,
                **{v: round(medians[v], 1) for v in named},
                "auto_threads": "/".join(sorted(chosen[neighbours])),
                "auto_vs_best_fixed": round(medians["auto"] / best_fixed, 2),
                "auto_vs_default": round(medians["auto"] / medians["all-active"], 2),
            }
        )
    columns = [
        ("neighbours", "busy neighbours"),
        ("auto", "zoo's choice (s)"),
        ("auto_threads", "threads chosen"),
        ("all-active", f"{cores} threads, active (s)"),
        ("all-passive", f"{cores} threads, passive (s)"),
        ("one", "1 thread (s)"),
        ("auto_vs_best_fixed", "choice / best fixed"),
        ("auto_vs_default", "choice / torch default"),
    ]
    write_results(
        "contention",
        title="A zoo run beside busy neighbours",
        about=(
            f"`zoo run {args.model} {args.dataset} --steps {args.steps}`, whole-program wall "
            f"time, median of {args.rounds} round(s) with the variants' order rotated; a neighbour "
            "is a Python busy loop. torch's default is a thread per core with OpenMP's active "
            "waiting; zoo's choice gives torch the CPUs found idle in a 0.2 s sample (the most idle of four "
            "windows)."
        ),
        tables=[table("Wall seconds by busy neighbours", columns, rows)],
        notes=[
            "Lower is better. A ratio under 1.15 against the best fixed variant means zoo's "
            "choice lost less than 15% to the best setting one could have picked by hand.",
        ],
    )


if __name__ == "__main__":
    main()
