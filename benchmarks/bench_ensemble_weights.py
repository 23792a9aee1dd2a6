"""Ensemble weights, rule against rule on the same members: zoo's fitted weights (validation
log loss, shrunk toward equal by cross-fitting), equal weights, the former rule (the 0.1-grid
split with the most right validation answers) and each member alone.

    OMP_NUM_THREADS=1 python benchmarks/bench_ensemble_weights.py [--seeds 3] [--jobs 2]
        [--datasets rotten_tomatoes emotion] [--home DIR]
        [--preset ensemble-classifier] [--set KEY=VALUE ...] [--also PRESET ...]

The members of --preset (`ensemble-classifier`'s: encoder-bpe, lstm-wordpunct,
nbsvm-wordpunct), and any --also presets, are trained with `zoo.sweep` for seeds 0..N-1
(finished cells in --home are reused), each with the --set values it has, as `zoo run
PRESET` gives them. For each dataset and seed, every rule sees the members' validation
probabilities only; test accuracy is read once per rule. Paired differences over seeds
(same members, same seed) come with a Student-t 95% interval.

Which members: every set of two or more of the preset's members and the --also presets is
scored by the fitted rule's cross-fitted validation accuracy (weights fitted on four fifths
of the validation split, the other fifth predicted, for each fifth), mean over datasets and
seeds. The highest is the validation's choice of members; no test row is read for it.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, parse_sets, table, write_results  # noqa: E402

FOLDS = 5  # the validation split's folds for the choice of members


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


def cross_fitted_accuracy(probabilities, targets) -> float:
    """The fitted rule's accuracy on validation rows it did not fit: each fold predicted with
    weights fitted on the others."""
    import numpy as np

    from zoo.operations.weights import FOLD_SEED, fit_weights

    order = np.random.default_rng(FOLD_SEED + 1).permutation(len(targets))
    right = 0
    for fold in np.array_split(order, FOLDS):
        rest = np.setdiff1d(order, fold)
        weights = fit_weights([p[rest] for p in probabilities], targets[rest])
        right += accuracy([p[fold] for p in probabilities], weights, targets[fold]) * len(fold)
    return right / len(targets)


def member_rows(members, dataset: str, seed: int) -> list[dict]:
    from zoo.records.store import Store

    with Store() as store:
        rows = [r for r in store.rows() if r["status"] == "finished" and r["kind"] == "train"]
    found = []
    for model in members:
        mine = [r for r in rows if (r["model"], r["dataset"], r["seed"]) == (model, dataset, seed)]
        if not mine:
            raise SystemExit(f"no finished {model} run on {dataset} at seed {seed}")
        found.append(max(mine, key=lambda r: r["id"]))
    return found


def probabilities_of(pool, dataset: str, seed: int) -> dict:
    """Each pool member's validation and test probabilities, and the targets."""
    from zoo.core.loading import get_zoo
    from zoo.operations.ensemble import run_probabilities

    zoo = get_zoo()
    rows = member_rows(pool, dataset, seed)
    pipeline = zoo.pipelines.get(rows[0]["task"]).load()
    predicted = run_probabilities(rows, pipeline, "cpu", True, zoo)
    return {
        "val": {m: p["validation"].probabilities for m, p in zip(pool, predicted)},
        "test": {m: p["test"].probabilities for m, p in zip(pool, predicted)},
        "val_y": predicted[0]["validation"].targets,
        "test_y": predicted[0]["test"].targets,
        "finished": [row["finished"] for row in rows],
    }


def member_sets(pool) -> list[tuple]:
    return [c for size in range(2, len(pool) + 1) for c in itertools.combinations(pool, size)]


def rules_for(members, seen: dict) -> dict[str, dict]:
    import numpy as np

    from zoo.operations.weights import fit_weights

    val = [seen["val"][m] for m in members]
    test = [seen["test"][m] for m in members]
    val_y, test_y = seen["val_y"], seen["test_y"]
    count = len(members)
    weights = {
        "fitted (zoo)": fit_weights(val, val_y),
        "equal": np.full(count, 1.0 / count),
        "former rule (0.1 grid, most right)": former_rule(val, val_y),
        **{f"{m} alone": np.eye(count)[i] for i, m in enumerate(members)},
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
    from zoo.comparison.stats import NO_VARIANCE, paired_interval

    found = paired_interval([100 * x for x in a], [100 * y for y in b])
    if found.untestable == NO_VARIANCE:  # a zero-width interval tests nothing: none shown
        return f"{found.diff:+.2f} (the same at every seed: no interval)"
    if found.untestable:  # a single pair: no interval
        return f"{found.diff:+.2f} (n={len(a)})"
    return f"{found.diff:+.2f} [{found.low:+.2f}, {found.high:+.2f}]"


def choice_table(pool, members, seen: dict, datasets) -> dict:
    """Every set of candidate members by the fitted rule's cross-fitted validation accuracy."""
    scores = {
        chosen: {
            key: cross_fitted_accuracy([seen[key]["val"][m] for m in chosen], seen[key]["val_y"])
            for key in seen
        }
        for chosen in member_sets(pool)
    }
    overall = {c: statistics.mean(s.values()) for c, s in scores.items()}
    best = max(overall, key=overall.get)
    rows = [
        {
            "members": " + ".join(c) + (" (chosen)" if c == best else ""),
            **{
                d: mean_std([v for (name, _), v in scores[c].items() if name == d])
                for d in datasets
            },
            "mean": f"{100 * overall[c]:.2f}",
            "preset": "yes" if set(c) == set(members) else "",
        }
        for c in sorted(overall, key=overall.get, reverse=True)
    ]
    columns = [("members", "members"), *[(d, f"{d} %") for d in datasets]]
    columns += [("mean", "mean %"), ("preset", "the preset's")]
    return table(
        "Members chosen on validation: the fitted rule's cross-fitted validation accuracy "
        "(mean ± std over seeds)",
        columns,
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--datasets", nargs="+", default=["rotten_tomatoes", "emotion"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--home", default=str(Path.home() / ".cache" / "zoo-bench-ensemble"))
    parser.add_argument("--preset", default="ensemble-classifier", help="an ensemble preset")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="as zoo run's")
    parser.add_argument("--also", nargs="+", default=[], help="more candidate members")
    parser.add_argument(
        "--no-train",
        action="store_true",
        help="combine the newest finished member runs in --home as they are (no sweep)",
    )
    args = parser.parse_args()
    os.environ["ZOO_HOME"] = args.home
    header("ensemble weights: rule against rule on the same members")
    import zoo
    from zoo.core.loading import get_zoo
    from zoo.operations.ensemble_preset import member_plans

    members = list(get_zoo().catalogue.ensembles[args.preset].members)
    pool = members + [m for m in args.also if m not in members]
    if not args.no_train:  # each member with the settings it has, as `zoo run PRESET` does
        planned = member_plans(pool, args.datasets[0], parse_sets(args.set), get_zoo())
        for member, (_, settings) in zip(pool, planned):
            zoo.sweep(
                [member],
                on=args.datasets,
                seeds=args.seeds,
                workers=zoo.Workers(jobs=args.jobs),
                quiet=True,
                settings=settings,
            )
    seen = {(d, s): probabilities_of(pool, d, s) for d in args.datasets for s in range(args.seeds)}
    tables, notes = [choice_table(pool, members, seen, args.datasets)], []
    if args.no_train:
        finished = sorted(
            datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%d %H:%M")
            for v in seen.values()
            for t in v["finished"]
        )
        notes.append(
            f"The member runs were trained before this call (--no-train): they finished "
            f"between {finished[0]} and {finished[-1]} UTC."
        )
    for dataset in args.datasets:
        by_seed = [rules_for(members, seen[dataset, seed]) for seed in range(args.seeds)]
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
    default = args.preset == "ensemble-classifier"
    write_results(
        "ensemble_weights" if default else "ensemble_weights_" + args.preset.replace("-", "_"),
        title="Ensemble weights: rule against rule on the same members"
        + ("" if default else f" ({args.preset})"),
        about=(
            f"`{args.preset}`'s members (" + ", ".join(members) + ") trained once per "
            "seed; every rule combines the same runs' probabilities, chosen on validation, "
            "scored on test once. Paired differences over seeds with a Student-t 95% interval. "
            "The first table chooses the members: each set's fitted weights scored on the "
            f"validation rows they were not fitted on ({FOLDS} folds), mean over seeds."
        ),
        tables=tables,
        notes=notes,
    )


if __name__ == "__main__":
    main()
