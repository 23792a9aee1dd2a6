"""Ensemble weights, rule against rule on the same members: zoo's fitted weights (validation
log loss, shrunk toward equal by cross-fitting), equal weights, the former rule (the 0.1-grid
split with the most right validation answers) and each member alone.

    OMP_NUM_THREADS=1 python benchmarks/bench_ensemble_weights.py [--seeds 3] [--jobs 2]
        [--datasets rotten_tomatoes emotion] [--home DIR]

The members (`ensemble-classifier`'s: encoder-bpe, lstm-wordpunct, nbsvm-wordpunct) are
trained with `zoo.sweep` for seeds 0..N-1 (finished cells in --home are reused). For each
dataset and seed, every rule sees the members' validation probabilities only; test accuracy
is read once per rule. Paired differences over seeds (same members, same seed) come with a
Student-t 95% interval.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, table, write_results  # noqa: E402

MEMBERS = ("encoder-bpe", "lstm-wordpunct", "nbsvm-wordpunct")
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def former_rule(probabilities, targets, steps: int = 10):
    """The rule zoo used before: every split of 1 into tenths, the most right validation
    answers, ties by the lower log loss (kept here as a reference only)."""
    import numpy as np

    grid = [s for s in itertools.product(range(steps + 1), repeat=len(probabilities))]
    grid = np.asarray([s for s in grid if sum(s) == steps], dtype=float) / steps
    stacked = np.stack(probabilities, axis=1)
    mix = np.einsum("nrk,cr->cnk", stacked, grid)
    right = (mix.argmax(-1) == targets).sum(-1)
    loss = -np.log(np.clip(mix[:, np.arange(len(targets)), targets], 1e-12, None)).mean(-1)
    return grid[np.where(right == right.max(), loss, np.inf).argmin()]


def accuracy(probabilities, weights, targets) -> float:
    import numpy as np

    mixed = np.einsum("rnk,r->nk", np.stack(probabilities), weights)
    return float((mixed.argmax(-1) == targets).mean())


def member_rows(dataset: str, seed: int) -> list[dict]:
    from zoo.records.store import Store

    with Store() as store:
        rows = [r for r in store.rows() if r["status"] == "finished" and r["kind"] == "train"]
    found = []
    for model in MEMBERS:
        mine = [r for r in rows if (r["model"], r["dataset"], r["seed"]) == (model, dataset, seed)]
        if not mine:
            raise SystemExit(f"no finished {model} run on {dataset} at seed {seed}")
        found.append(max(mine, key=lambda r: r["id"]))
    return found


def rules_for(dataset: str, seed: int) -> dict[str, dict]:
    import numpy as np

    from zoo.core.loading import get_zoo
    from zoo.operations.ensemble import run_probabilities
    from zoo.operations.weights import fit_weights

    zoo = get_zoo()
    rows = member_rows(dataset, seed)
    pipeline = zoo.pipelines.get(rows[0]["task"]).load()
    predicted = run_probabilities(rows, pipeline, "cpu", True, zoo)
    val = [p["validation"].probabilities for p in predicted]
    test = [p["test"].probabilities for p in predicted]
    val_y, test_y = predicted[0]["validation"].targets, predicted[0]["test"].targets
    count = len(rows)
    weights = {
        "fitted (zoo)": fit_weights(val, val_y),
        "equal": np.full(count, 1.0 / count),
        "former rule (0.1 grid, most right)": former_rule(val, val_y),
        **{f"{r['model']} alone": np.eye(count)[i] for i, r in enumerate(rows)},
    }
    return {
        name: {
            "val": accuracy(val, w, val_y),
            "test": accuracy(test, w, test_y),
            "weights": [round(float(x), 3) for x in w],
        }
        for name, w in weights.items()
    }


def mean_std(values: list[float]) -> str:
    mean = 100 * statistics.mean(values)
    return (
        f"{mean:.2f}" if len(values) < 2 else f"{mean:.2f} ± {100 * statistics.stdev(values):.2f}"
    )


def paired(a: list[float], b: list[float]) -> str:
    differences = [100 * (x - y) for x, y in zip(a, b)]
    mean = statistics.mean(differences)
    if len(differences) < 2:
        return f"{mean:+.2f} (n=1)"
    half = T95[len(differences) - 1] * statistics.stdev(differences) / math.sqrt(len(differences))
    return f"{mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--datasets", nargs="+", default=["rotten_tomatoes", "emotion"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--home", default=str(Path.home() / ".cache" / "zoo-bench-ensemble"))
    args = parser.parse_args()
    os.environ["ZOO_HOME"] = args.home
    header("ensemble weights: rule against rule on the same members")
    import zoo

    zoo.sweep(list(MEMBERS), on=args.datasets, seeds=args.seeds, jobs=args.jobs, quiet=True)
    tables, notes = [], []
    for dataset in args.datasets:
        by_seed = [rules_for(dataset, seed) for seed in range(args.seeds)]
        names = list(by_seed[0])
        test = {n: [s[n]["test"] for s in by_seed] for n in names}
        best_member = max((n for n in names if n.endswith("alone")), key=lambda n: sum(test[n]))
        rows = [
            {
                "rule": name,
                "val": mean_std([s[name]["val"] for s in by_seed]),
                "test": mean_std(test[name]),
                "weights": " / ".join(str(s[name]["weights"]) for s in by_seed),
                "vs_best_member": "-"
                if name == best_member
                else paired(test[name], test[best_member]),
                "vs_equal": "-" if name == "equal" else paired(test[name], test["equal"]),
            }
            for name in names
        ]
        columns = [
            ("rule", "weights by"),
            ("val", "validation accuracy %"),
            ("test", "test accuracy %"),
            ("vs_best_member", f"test − {best_member.removesuffix(' alone')} (points, 95% CI)"),
            ("vs_equal", "test − equal (points, 95% CI)"),
            ("weights", "weights per seed (members in order)"),
        ]
        tables.append(table(f"{dataset}: mean ± std over {args.seeds} seeds", columns, rows))
        notes.append(
            f"{dataset}: the best member by mean test accuracy is {best_member}; "
            "it is named with hindsight, for the comparison only (no rule sees test)."
        )
    write_results(
        "ensemble_weights",
        title="Ensemble weights: rule against rule on the same members",
        about=(
            "`ensemble-classifier`'s members (" + ", ".join(MEMBERS) + ") trained once per "
            "seed; every rule combines the same runs' probabilities, chosen on validation, "
            "scored on test once. Paired differences over seeds with a Student-t 95% interval."
        ),
        tables=tables,
        notes=notes,
    )


if __name__ == "__main__":
    main()
