"""Wall time of a whole `zoo sweep` with --jobs 1 against --jobs N, alternating, each in a
fresh ZOO_HOME, for one or more sweep sizes; where each cell's time goes, phase by phase;
the best --jobs N could do; and whether every cell's metrics are identical across the
variants (timing figures aside).

    python benchmarks/bench_sweep_jobs.py --seeds 8 32 --rounds 2   # digits-char, 150 steps
    python benchmarks/bench_sweep_jobs.py --seeds 4 --rounds 1 --steps 5    # a smoke run
    python benchmarks/bench_sweep_jobs.py --device cuda --model decoder-char \\
        --dataset shakespeare --seeds 8 32 --jobs auto --steps 300 --no-single-thread
                                            # cells packed onto one GPU (sweep_jobs_cuda)

Variants, timed in alternation in every round (each is the `zoo` program in a subprocess;
``--variants`` picks some of them, VARIANTS lists them all):
  jobs1        --jobs 1 with torch's default threads (one per core: one cell uses the machine)
  jobs1-1t     --jobs 1 with OMP_NUM_THREADS=1 (the work of one cell on one core)
  jobsN        --jobs N (cores / N threads per worker); N is --jobs, a number or auto
  stacked      --jobs N --stack-seeds K: each worker trains K seeds as one batched model,
               K = cells / N (all cells in one stack with --jobs auto); its metrics differ
               from the others' by the stacked training's rounding, reported as the largest
               |difference| of each seed's validation and test figures
  baseline     --jobs N run by another interpreter, ``--baseline PYTHON``, whose zoo is
               another installation (an earlier commit's, say): a change's gain measured
               side by side with the code it replaces; its metrics are not compared

Where a sweep's time goes, from the store's rows (medians over rounds):
  set-up   from the program's start to the first cell's run row: interpreter and imports,
           planning, starting the workers, loading the data
  cells    the cells' own durations (training and evaluating), summed over cells; with N
           workers they overlap
  tail     from the last cell's end to the program's exit: stopping the workers, the
           comparison table, the interpreter's exit
Where a cell's time goes: the phases every run records with its provenance (`timing`, see
zoo.core.phases): its worker's start and imports (first cell of a worker only), planning,
data (loading, tokenizer, tokenizing), model build, compile or graph capture, training,
evaluation and recording; `other` is the rest of the run's measured time.
The bound for --jobs N: the one-thread sweep's set-up and tail once, and its remaining time
split evenly over N workers that slow each other down not at all.
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
from common import header, load, table, write_results  # noqa: E402

TIMING = {"tokens_per_s", "train_time"}
PARTS = ("wall", "setup", "cells", "training", "tail")
PHASES = ("start", "imports", "plan", "data", "build", "compile", "train", "evaluate", "record")

# name -> (label, the sweep's extra options, OMP_NUM_THREADS or None); "N" is --jobs
VARIANTS = {
    "jobs1": ("--jobs 1 (torch's default threads)", ["--jobs", "1"], None),
    "jobs1-1t": ("--jobs 1, 1 thread", ["--jobs", "1"], "1"),
    "jobsN": ("--jobs N (cores / N threads each)", ["--jobs", "N"], None),
    "stacked": ("--jobs N, seeds stacked", ["--jobs", "N", "--stack-seeds", "K"], None),
    "baseline": ("--jobs N, the baseline's zoo", ["--jobs", "N"], None),
}


def run_sweep(
    args, seeds: int, options: list[str], threads: str | None, python: str = sys.executable
) -> tuple[dict, dict]:
    """One sweep in a fresh ZOO_HOME, by ``python``'s zoo: its time split into PARTS, each
    cell's phases summed (``phase:NAME``), and every cell's status and metrics by seed."""
    home = tempfile.mkdtemp(prefix="zoo-bench-jobs-")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["ZOO_HOME"] = str(Path(home) / "runs")
    if threads:
        env["OMP_NUM_THREADS"] = threads
    command = [
        python,  # this script's interpreter and its zoo, or the baseline's
        "-m",
        "zoo",
        "sweep",
        args.model,
        "--on",
        args.dataset,
        "--seeds",
        str(seeds),
        "--steps",
        str(args.steps),
        "--format",
        "csv",
        *[
            str(args.jobs)
            if option == "N"
            else stack_size(seeds, args.jobs)
            if option == "K"
            else option
            for option in options
        ],
        *(["--device", args.device] if args.device else []),
    ]
    started, began = time.time(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({done.returncode}): {done.stderr[-2000:]}")
    db = sqlite3.connect(Path(env["ZOO_HOME"]) / "zoo.db")
    cells, created, finished, durations, training = {}, [], [], [], []
    phases = dict.fromkeys([*PHASES, "other"], 0.0)
    for seed, metrics, config, status, made, ended, duration in db.execute(
        "SELECT seed, metrics, config, status, created, finished, duration FROM runs"
    ):
        metrics, config = json.loads(metrics), json.loads(config)
        cells[seed] = (status, {k: v for k, v in metrics.items() if k not in TIMING})
        created.append(made)
        finished.append(ended)
        durations.append(duration or 0.0)
        training.append(metrics.get("train_time") or 0.0)
        timing = config.get("timing") or {"phases": {}, "measured": 0.0}
        for name, value in timing["phases"].items():
            phases[name] = phases.get(name, 0.0) + value
        # the run's own clock began after its worker's start; all else it measured is here
        named = sum(v for k, v in timing["phases"].items() if k != "start")
        phases["other"] += max(0.0, timing["measured"] - named)
    db.close()
    parts = {
        "wall": seconds,
        "setup": min(created) - started,
        "cells": sum(durations),
        "training": sum(training),
        "tail": started + seconds - max(finished),
        **{f"phase:{name}": value for name, value in phases.items()},
    }
    return parts, cells


def stack_size(seeds: int, jobs: str) -> str:
    """The stacked variant's K: the cells split evenly over the --jobs N workers (every
    cell in one stack with --jobs auto)."""
    if jobs == "auto":
        return str(seeds)
    return str(max(2, -(-seeds // int(jobs))))


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def jobs_option(text: str) -> str:
    if text != "auto" and not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"a positive number or auto, not {text!r}")
    return text


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", default="digits-char")
    parser.add_argument("--dataset", default="digits")
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[8, 32], help="cells per sweep (one or more)"
    )
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--jobs", type=jobs_option, default="2", help="N: a number or auto")
    parser.add_argument("--rounds", type=int, default=2)
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
    parser.add_argument(
        "--variants",
        help=f"comma-separated, of {', '.join(VARIANTS)} (default: all but those left out)",
    )
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="an interpreter whose zoo is the baseline (variant baseline: its --jobs N)",
    )
    parser.add_argument(
        "--baseline-name",
        default="the baseline",
        help="what the baseline is, for the table (e.g. 'commit 8a88a49')",
    )
    parser.add_argument("--name", help="the results file's name (default sweep_jobs[_cuda])")
    args = parser.parse_args(argv)
    chosen = args.variants.split(",") if args.variants else list(VARIANTS)
    if not args.baseline and "baseline" in chosen:
        if args.variants:
            parser.error("the baseline variant needs --baseline PYTHON")
        chosen.remove("baseline")
    if args.no_single_thread and "jobs1-1t" in chosen:
        chosen.remove("jobs1-1t")
    unknown = [name for name in chosen if name not in VARIANTS]
    if unknown or "jobs1" not in chosen:
        parser.error(f"--variants: jobs1 and any of {', '.join(VARIANTS)}, not {unknown}")
    args.variants = chosen
    return args


def main(argv=None):
    args = parse(argv)
    header(
        f"zoo sweep {args.model} --on {args.dataset} --seeds {'/'.join(map(str, args.seeds))}"
        f" --steps {args.steps}: {', '.join(args.variants)} (N = {args.jobs})"
    )
    measured = {}  # (variant, seeds) -> part -> [seconds per round]
    metrics = {}  # (variant, seeds) -> the cells' metrics of its first sweep
    for round_ in range(1, args.rounds + 1):
        for seeds in args.seeds:
            order = args.variants if round_ % 2 else list(reversed(args.variants))
            for name in order:
                _, options, threads = VARIANTS[name]
                python = args.baseline if name == "baseline" else sys.executable
                parts, cells = run_sweep(args, seeds, options, threads, python)
                for part, seconds in parts.items():
                    measured.setdefault((name, seeds), {}).setdefault(part, []).append(seconds)
                if any(status != "finished" for status, _ in cells.values()):
                    raise SystemExit(f"{name}: not every cell finished: {cells}")
                if metrics.setdefault((name, seeds), cells) != cells:
                    print(f"# round {round_} {name}: metrics differ from its own first sweep's")
                print(
                    f"round {round_} {seeds:3d} cells {name:9s} {parts['wall']:7.1f} s   "
                    f"({load()})",
                    flush=True,
                )
    report(args, measured, metrics)


def label(name: str, args) -> str:
    if name == "baseline":
        return f"--jobs {args.jobs}, {args.baseline_name}"
    if name == "stacked":
        return f"--jobs {args.jobs} --stack-seeds (cells / {args.jobs} seeds per stack)"
    if name != "jobsN":
        return VARIANTS[name][0]
    if args.jobs == "auto":
        return "--jobs auto (zoo chooses the workers)"
    return f"--jobs {args.jobs} (cores / {args.jobs} threads each)"


def _time_rows(args, mid: dict) -> tuple[list, list]:
    """Each variant's wall time, speed-up and setup (rows), and its time per cell in each
    phase (phase rows), printed as they are made."""
    rows, phase_rows = [], []
    print(f"\nwhere the time goes (s, medians): {'  '.join(f'{p:>8s}' for p in PARTS)}")
    for (name, seeds), parts in mid.items():
        print(f"  {seeds:3d} cells {name:9s}" + "  ".join(f"{parts[p]:8.1f}" for p in PARTS))
        base = mid[("jobs1", seeds)]["wall"]
        rows.append(
            {
                "variant": label(name, args),
                "cells": seeds,
                "wall_s": parts["wall"],
                "per_hour": 3600 * seeds / parts["wall"],
                "speedup": base / parts["wall"],
                **(
                    {"over_baseline": mid[("baseline", seeds)]["wall"] / parts["wall"]}
                    if ("baseline", seeds) in mid
                    else {}
                ),
                "setup_s": parts["setup"],
                "tail_s": parts["tail"],
            }
        )
        per_cell = {p: parts[f"phase:{p}"] / seeds for p in (*PHASES, "other")}
        phase_rows.append(
            {
                "variant": label(name, args),
                "cells": seeds,
                **per_cell,
                "total": sum(per_cell.values()),
            }
        )
    print(f"\nper cell (s, medians): {'  '.join(f'{p[:7]:>7s}' for p in (*PHASES, 'other'))}")
    for row in phase_rows:
        print(
            f"  {row['cells']:3d} cells {row['variant'][:24]:24s}"
            + "  ".join(f"{row[p]:7.3f}" for p in (*PHASES, "other"))
        )
    return rows, phase_rows


def _speed_notes(args, mid: dict) -> list[str]:
    """How much faster each variant is than --jobs 1 (and the baseline), and the bound the
    one-thread sweep sets for --jobs N."""
    notes = []
    for seeds in args.seeds:
        for name in args.variants:
            if name != "jobs1":
                ratio = mid[("jobs1", seeds)]["wall"] / mid[(name, seeds)]["wall"]
                notes.append(
                    f"{seeds} cells: {label(name, args)} is {ratio:.2f}x as fast as --jobs 1."
                )
        if "baseline" in args.variants:
            then = mid[("baseline", seeds)]["wall"]
            for name in args.variants:
                if name not in ("jobs1", "baseline"):
                    notes.append(
                        f"{seeds} cells: {label(name, args)} is "
                        f"{then / mid[(name, seeds)]['wall']:.2f}x as fast as "
                        f"{label('baseline', args)}, side by side."
                    )
        if "jobs1-1t" in args.variants and "jobsN" in args.variants and args.jobs != "auto":
            alone = mid[("jobs1-1t", seeds)]
            fixed = alone["setup"] + alone["tail"]
            bound = fixed + (alone["wall"] - fixed) / int(args.jobs)
            notes.append(
                f"{seeds} cells: the bound for --jobs {args.jobs} from the one-thread sweep is "
                f"{mid[('jobs1', seeds)]['wall'] / bound:.2f}x over --jobs 1; --jobs "
                f"{args.jobs} reached {bound / mid[('jobsN', seeds)]['wall']:.0%} of it."
            )
    if "stacked" in args.variants:
        notes.append(
            "Stacked seeds' runs take turns in one process: each run's phases count its own "
            "turns and an equal share of each batched step, so a stack's runs count each "
            "second once."
        )
    return notes


def _agreement_notes(metrics: dict) -> list[str]:
    """Whether the variants' cells recorded the same metrics, printed and as notes."""
    notes = []
    keys = [key for key in metrics if key[0] != "baseline"]  # other code: other rounding
    for i, first in enumerate(keys):
        for second in keys[i + 1 :]:
            if first[1] == second[1]:
                same = metrics[first] == metrics[second]
                text = f"{first[1]} cells: every cell's metrics identical, {first[0]} and {second[0]}: {same}"
                if not same:
                    text += f" (largest relative difference {largest_difference(metrics[first], metrics[second]):.2e})"
                if "stacked" in (first[0], second[0]):
                    text += stacked_differences(metrics[first], metrics[second])
                print(text)
                notes.append(text.replace(": True", ": yes").replace(": False", ": no") + ".")
    return notes


def report(args, measured: dict, metrics: dict) -> None:
    mid = {
        key: {part: median(values) for part, values in parts.items()}
        for key, parts in measured.items()
    }
    rows, phase_rows = _time_rows(args, mid)
    notes = _speed_notes(args, mid) + _agreement_notes(metrics)
    for note in notes:
        print(note)
    device = f" --device {args.device}" if args.device else ""
    write_results(
        args.name
        or ("sweep_jobs" + (f"_{args.device}" if args.device not in (None, "cpu") else "")),
        title="Parallel sweeps: `--jobs` against one process, and where a cell's time goes",
        about=f"`zoo sweep {args.model} --on {args.dataset} --seeds N --steps {args.steps}"
        f"{device}` for N = {', '.join(map(str, args.seeds))} cells, in a fresh ZOO_HOME per "
        f"variant, the variants alternating over {args.rounds} round(s); medians.",
        tables=[
            table(
                "",
                [
                    ("variant", "variant"),
                    ("cells", "cells"),
                    ("wall_s", "wall s", ".1f"),
                    ("per_hour", "cells per hour", ",.0f"),
                    ("speedup", "x --jobs 1", ".2f"),
                    *([("over_baseline", "x baseline", ".2f")] if args.baseline else []),
                    ("setup_s", "set-up s", ".1f"),
                    ("tail_s", "tail s", ".1f"),
                ],
                rows,
            ),
            table(
                "Where a cell's time goes: seconds per cell by phase (summed over the sweep's "
                "cells, over the number of cells); start and imports are a worker's first "
                "cell's, so they spread over the cells a worker runs",
                [
                    ("variant", "variant"),
                    ("cells", "cells"),
                    *[(p, p, ".3f") for p in (*PHASES, "other")],
                    ("total", "total", ".3f"),
                ],
                phase_rows,
            ),
        ],
        notes=notes,
    )


STACKED_FIGURES = ("val_loss", "test_loss", "test_accuracy", "val_bpc", "test_bpc")


def stacked_differences(a: dict, b: dict) -> str:
    """The largest |difference| over seeds of each validation and test figure, stacked
    seeds against the same seeds trained alone."""
    parts = []
    for key in STACKED_FIGURES:
        gaps = [
            abs(values[key] - b[seed][1][key])
            for seed, (_, values) in a.items()
            if isinstance(values.get(key), float) and isinstance(b[seed][1].get(key), float)
        ]
        if gaps:
            parts.append(f"{key} {max(gaps):.4f}")
    return f"; largest |difference| over seeds: {', '.join(parts)}" if parts else ""


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
