"""`zoo tune` as a user runs it: the equal-budget search of the issue, then pruning on
against pruning off on the same search, both arms in this one run.

    python benchmarks/bench_tune.py                     # the issue's search (long)
    python benchmarks/bench_tune.py --trials 4 --seeds 1 --models fasttext-wordpunct

1. search: `zoo tune MODELS --on DATASET --trials N --space SPACE --jobs J --seeds S` in a
   fresh ZOO_HOME, with median pruning; its wall time, and per model the best validation figure, the best
   trial's test figure, the tuned and untuned test figures over the seeds.
2. pruning: the same search twice in another fresh ZOO_HOME, `--pruner median` then
   `--pruner none`, with the random sampler and one sampler seed (`--pruning-sampler`), so
   both arms train the same settings in the same order and differ only in pruning (TPE
   would draw differently after the first pruned trial); the training time summed over the
   trials (the loop's train_time of every trial run) and the best validation figure of
   each arm.
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
from common import REPO, header, load, table, write_results

MODELS = ["encoder-bpe", "lstm-wordpunct", "fasttext-wordpunct"]
SPACE = "lr=log(3e-4,3e-2) dropout=float(0,0.5) batch_size=choice(16,32,64)"


def tune(
    args,
    home: Path,
    models: list[str],
    *,
    pruner: str,
    study: str,
    sampler: str = "tpe",
    seeds: int | None = None,
    read_back: bool = False,
) -> dict:
    """One `zoo tune` in `home`: its wall time, studies and trial runs. With `read_back`
    the search in `home` has run to the end before (this command trains nothing and reads
    its results back), and its wall time is its store's: from the first row's creation to
    the last row's end (the program's start-up before the first trial is not in it)."""
    env = {**os.environ, "ZOO_HOME": str(home)}
    env.pop("OMP_NUM_THREADS", None)  # --jobs gives each worker cores / jobs threads
    command = [
        str(REPO / ".venv/bin/zoo"),
        "tune",
        *models,
        "--on",
        args.dataset,
        "--space",
        args.space,
        "--trials",
        str(args.trials),
        "--seeds",
        str(seeds or args.seeds),
        "--jobs",
        str(args.jobs),
        "--pruner",
        pruner,
        "--study",
        study,
        "--sampler",
        sampler,
        "--sampler-seed",
        str(args.sampler_seed),
        "--device",
        "cpu",
        "--json",
        *[option for item in args.set or [] for option in ("--set", item)],
    ]
    print("$", " ".join(command[1:]), f"({load()})", flush=True)
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"zoo tune failed ({done.returncode}): {done.stderr[-3000:]}")
    studies = json.loads(done.stdout)["studies"]
    db = sqlite3.connect(home / "zoo.db")
    if read_back:
        first, last = db.execute("SELECT MIN(created), MAX(finished) FROM runs").fetchone()
        wall = last - first
    trials = []
    for status, metrics, config in db.execute("SELECT status, metrics, config FROM runs"):
        config = json.loads(config or "{}")
        if (config.get("tune") or {}).get("study", "").startswith(study + "-"):
            metrics = json.loads(metrics or "{}")
            trials.append(
                {
                    "model": config["model"],
                    "status": status,
                    "train_time": metrics.get("train_time") or 0.0,
                    "steps": metrics.get("steps") or 0,
                }
            )
    db.close()
    print(f"  {wall:.0f}s wall, {len(trials)} trial runs", flush=True)
    return {"wall": wall, "studies": studies, "trials": trials}


def fresh_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="zoo-bench-tune-")) / "runs"


def figure(values: list[float]) -> str:
    import statistics

    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.4f} (n=1)"
    return f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f} (n={len(values)})"


def paired(study: dict) -> str:
    """tuned - preset over their shared seeds with its 95% t interval, as zoo tune prints it."""
    interval = study.get("paired")
    if study.get("same_as_preset"):
        return "0 (the preset's settings)"
    if not interval or interval.get("diff") is None:
        return "-"
    text = f"{interval['diff']:+.4f}"
    if interval.get("ci_low") is None:
        return text + " (cannot test: n<2)"
    if interval["ci_low"] == interval["ci_high"]:
        return text + " (no seed variance)"
    mark = " †" if interval.get("significant") else ""
    return text + f" [{interval['ci_low']:.4f}, {interval['ci_high']:.4f}]{mark}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--dataset", default="rotten_tomatoes")
    parser.add_argument("--space", default=SPACE)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sampler-seed", type=int, default=0)
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="fixed settings of every trial and re-run, e.g. time=60 (seconds of training per run)",
    )
    parser.add_argument(
        "--home",
        help="the ZOO_HOME of a search that ran to the end before: "
        "read its results back instead of searching again",
    )
    parser.add_argument(
        "--pruning-sampler",
        default="random",
        choices=["random", "tpe"],
        help="the sampler of both pruning arms (random: the same settings in both)",
    )
    parser.add_argument(
        "--prune-models",
        nargs="+",
        help="compare pruning on against off "
        "on these models only (default: the search itself against the same "
        "search without pruning)",
    )
    args = parser.parse_args()
    header("zoo tune")
    tables, notes = [], []

    home = Path(args.home) if args.home else fresh_home()
    search = tune(
        args, home, args.models, pruner="median", study="pruned", read_back=bool(args.home)
    )
    pruning_models = args.prune_models or args.models
    # both arms one after the other in a fresh ZOO_HOME: the seed re-runs the second shares
    # with the first are reused, not retrained
    pruning_home = fresh_home()
    arms = {
        pruner: tune(
            args,
            pruning_home,
            pruning_models,
            pruner=pruner,
            study=study,
            sampler=args.pruning_sampler,
            seeds=1,  # the arms are compared on their trials; re-runs only cost time
        )
        for pruner, study in (("median", "pruned"), ("none", "unpruned"))
    }
    rows = []
    for study in search["studies"]:
        best = study["best"] or {}
        counts = study["trials"]
        rows.append(
            {
                "model": study["model"],
                "trials": f"{counts.get('COMPLETE', 0)}/{counts.get('PRUNED', 0)}/"
                f"{counts.get('FAIL', 0)}",
                "best_val": best.get("value"),
                "best_test": study["best_test"],
                "tuned": figure(study["tuned"]),
                "preset": figure(study["preset"]),
                "paired": paired(study),
                "settings": ", ".join(
                    f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in study["settings"].items()
                ),
            }
        )
    tables.append(
        table(
            f"`zoo tune {' '.join(args.models)} --on {args.dataset} --trials {args.trials} "
            f"--jobs {args.jobs} --seeds {args.seeds}"
            + "".join(f" --set {item}" for item in args.set or [])
            + "` (median pruning): "
            f"{search['wall'] / 60:.1f} minutes wall time. Trials finished/pruned/failed; "
            "test accuracy over the re-run seeds, which are never a trial's seed (mean ± sd), "
            "and tuned - preset paired by seed with its 95% t interval († excludes 0):",
            [
                ("model", "model"),
                ("trials", "trials"),
                ("best_val", "best val acc", ".4f"),
                ("best_test", "its test acc", ".4f"),
                ("tuned", "tuned, test"),
                ("preset", "preset, test"),
                ("paired", "tuned - preset (paired)"),
                ("settings", "best settings"),
            ],
            rows,
        )
    )
    rows = []
    for pruner, arm in arms.items():
        best = {s["model"]: (s["best"] or {}).get("value") for s in arm["studies"]}
        rows.append(
            {
                "pruner": pruner,
                "train_s": sum(t["train_time"] for t in arm["trials"]),
                "steps": sum(t["steps"] for t in arm["trials"]),
                "pruned": sum(t["status"] == "pruned" for t in arm["trials"]),
                "best": ", ".join(f"{m} {v:.4f}" for m, v in best.items() if v is not None),
                "wall_s": arm["wall"],
            }
        )
    saved = 1 - rows[0]["train_s"] / rows[1]["train_s"] if rows[1]["train_s"] else 0.0
    tables.append(
        table(
            f"Pruning on (median) against off on {', '.join(pruning_models)}, the same search "
            f"({args.trials} trials per model, {args.pruning_sampler} sampler with seed "
            f"{args.sampler_seed}, one after the other): training time summed over "
            "the trials, and the best validation accuracy of each arm:",
            [
                ("pruner", "pruner"),
                ("train_s", "trial training s", ".0f"),
                ("steps", "trial steps", ",d"),
                ("pruned", "pruned trials"),
                ("best", "best val acc per model"),
                ("wall_s", "wall s (with re-runs)", ".0f"),
            ],
            rows,
        )
    )
    notes.append(
        f"The search took {search['wall'] / 60:.1f} minutes of wall time, seed re-runs "
        f"included ({'measured from its store: first run created to last run ended' if args.home else 'the whole program'})."
    )
    notes.append(
        f"Median pruning spent {abs(saved):.0%} {'less' if saved >= 0 else 'more'} "
        "training time on trials than no pruning."
    )
    for note in notes:
        print(note)
    write_results(
        "tune",
        title="Search: `zoo tune` under an equal budget, and pruning",
        about=f"`zoo tune` on {args.dataset}, space `{args.space}`, run as a user "
        "runs it (the `zoo` program): the search in a fresh ZOO_HOME; the two pruning "
        "arms one after the other in another, under their own study names.",
        tables=tables,
        notes=notes,
    )


if __name__ == "__main__":
    main()
