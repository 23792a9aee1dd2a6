"""Time to quality: wall time from process start until Tiny Shakespeare validation loss
<= 1.88 nats/char, through a real `zoo run` that anyone can repeat; and, with --seeds, the
model families side by side at an equal wall-clock training budget.

The headline is the whole process (imports, data, tokenizer, training, evaluation on the
whole validation and test splits, samples) from launch to exit, with the final full-split
val_loss; the training curve's first periodic estimate under the target is shown too.

With ``--seeds N`` the models are trained by one `zoo sweep MODELS --on shakespeare --seeds N
--time SECONDS` (every cell the same training time, or its preset's steps if they end sooner,
one after another on this machine) and
compared on validation bits per character: mean and spread over the N seeds, the difference
from the baseline with its 95% confidence interval and Holm-adjusted p (zoo's comparison),
and the steps and tokens per second each reached in that time.

    python benchmarks/bench_time_to_quality.py                       # the default preset
    python benchmarks/bench_time_to_quality.py decoder-char-fast
    python benchmarks/bench_time_to_quality.py decoder-char --set lr=2e-3 --repeat 2
    python benchmarks/bench_time_to_quality.py decoder-char --torchrun 2
    python benchmarks/bench_time_to_quality.py mamba-char decoder-modern decoder-char \
        hf-rwkv-char --seeds 3 --time 60 --jobs 2                    # the families
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


def zoo_json(*args: str, home: Path) -> object:
    """`python -m zoo ARGS` with ZOO_HOME=home; its last line of output, as JSON."""
    env = {**os.environ, "ZOO_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "zoo", *args], capture_output=True, text=True, env=env, cwd=REPO
    )
    if done.returncode not in (0, 1):  # 1: some cell failed; its row says so
        raise SystemExit(f"zoo {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def family_rows(sweep: dict, runs: list[dict], baseline: str) -> list[dict]:
    """One row per model: zoo's comparison of the sweep's runs, with what each run reached."""
    by_id = {run["id"]: run for run in runs}
    rows = []
    for cell in sweep["comparison"]:
        own = [by_id[i] for i in cell["runs"].split() if i in by_id]
        diff = cell.get("diff")
        rows.append(
            {
                "model": cell["model"],
                "params": own[0]["params"] if own else None,
                "n": cell["n"],
                "val_bpc": f"{cell['mean']:.3f} ± {cell['std']:.3f}",
                "vs": "baseline"
                if cell["model"] == baseline
                else f"{diff:+.3f} [{cell['ci_low']:+.3f}, {cell['ci_high']:+.3f}]"
                if diff is not None
                else "n/a",
                "p": cell.get("p_holm"),
                "best": cell["best"],
                "steps": statistics.mean(r["steps"] for r in own) if own else None,
                "tokens_s": statistics.mean(r["tokens_per_s"] for r in own) if own else None,
                "wall_s": statistics.mean(r["duration"] for r in own) if own else None,
            }
        )
    failed = [c for c in sweep["cells"] if c["state"] == "failed"]
    for cell in failed:
        print(f"failed: {cell['name']}: {cell['reason']}", flush=True)
    return sorted(rows, key=lambda row: float(row["val_bpc"].split()[0]))


def cells_at_a_time(jobs: int) -> str:
    return "one cell after another" if jobs == 1 else f"{jobs} cells side by side at a time"


def compare_families(args) -> int:
    """The models side by side: one sweep at an equal training time per cell."""
    baseline = args.baseline or args.model[0]
    header(f"{' '.join(args.model)} on {args.dataset}: {args.seeds} seeds, {args.time} s each")
    sweep_args = ["sweep", *args.model, "--on", args.dataset, "--seeds", str(args.seeds)]
    sweep_args += ["--time", args.time, "--baseline", baseline, "--json"]
    sweep_args += ["--jobs", str(args.jobs)] if args.jobs > 1 else []
    sweep_args += [a for s in args.set for a in ("--set", s)]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="zoo-ttq-") as home:
        sweep = zoo_json(*sweep_args, home=Path(home))
        columns = "steps,tokens_per_s,train_time"
        runs = zoo_json("runs", "--json", "--columns", columns, home=Path(home))
    wall = time.perf_counter() - start
    rows = family_rows(sweep, runs, baseline)
    for row in rows:
        print(row, flush=True)
    threads = os.environ.get("OMP_NUM_THREADS", "torch's default")
    write_results(
        "time_to_quality_families",
        title="Time to quality: the language-model families at equal wall time",
        about=f"`zoo {' '.join(a for a in sweep_args if a != '--json')}`: each preset trained with its own schedule for {args.time} s "
        "of wall time (or to its last step, if that comes first), "
        f"{cells_at_a_time(args.jobs)} on one machine, then scored on the whole validation split in bits per character (lower "
        f"is better). val_bpc: mean ± standard deviation over {args.seeds} seeds; the "
        f"difference from {baseline} with its 95% confidence interval (Welch) and the "
        "Holm-adjusted p; best: told apart from every other row at 95%. Steps and tokens/s: "
        f"what each reached in that time, mean over seeds. Threads: {threads}. "
        f"The sweep took {wall / 60:.0f} minutes.",
        tables=[
            table(
                "",
                [
                    ("model", "model"),
                    ("params", "parameters", ",.0f"),
                    ("n", "seeds"),
                    ("val_bpc", "val_bpc"),
                    ("vs", f"vs {baseline} [95% CI]"),
                    ("p", "p (Holm)", ".3g"),
                    ("best", "best"),
                    ("steps", "steps", ".0f"),
                    ("tokens_s", "tokens/s", ",.0f"),
                ],
                rows,
                readme=False,
            )
        ],
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("model", nargs="*", default=["decoder-char"])
    parser.add_argument("--dataset", default="shakespeare")
    parser.add_argument("--target", type=float, default=1.88, help="val_loss to reach (nats)")
    parser.add_argument("--set", action="append", default=[], help="passed to zoo run")
    parser.add_argument("--time", help="passed to zoo run as --time")
    parser.add_argument("--steps", help="passed to zoo run as --steps")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--torchrun", type=int, default=1, metavar="N", help="processes")
    parser.add_argument(
        "--seeds", type=int, help="compare the models: one zoo sweep over this many seeds"
    )
    parser.add_argument("--baseline", help="with --seeds: the row the others are compared to")
    parser.add_argument(
        "--jobs", type=int, default=1, help="with --seeds: cells trained side by side (zoo sweep)"
    )
    args = parser.parse_args(argv)
    if args.seeds:
        if not args.time:
            parser.error("--seeds compares at an equal wall time: give --time SECONDS")
        return compare_families(args)
    if len(args.model) != 1:
        parser.error("several models are compared with --seeds N --time SECONDS")
    args.model = args.model[0]

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
