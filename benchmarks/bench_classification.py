"""Classification benchmark: every architecture's preset, their fitted ensemble and TF-IDF +
linear SVM, on the same splits, over seeds; figures written as JSON.

    OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_classification.py \\
        [--seeds 3] [--datasets rotten_tomatoes emotion] [--home DIR] [--no-bert] [--jobs N]
        [--one-seed ARCHITECTURE ...] [--rows ARCHITECTURE ...]
        [--output benchmarks/results/classification.json]

1. Every candidate preset of every architecture is trained on every dataset for the
   selection seeds (0..S-1, --select-seeds, default 1) through ``zoo.sweep`` (cells finished
   before in --home are reused, so a second call with more seeds trains only the new ones).
2. Each architecture's preset is chosen on validation alone: the candidate with the highest
   mean validation accuracy over the datasets and selection seeds. The chosen presets are
   then trained for seeds 0..N-1.
3. The runs of `ensemble-classifier`'s members (registry.toml), when they are among the
   chosen presets, are combined per dataset and seed with ``zoo.ensemble`` (weights fitted
   on validation, and equal weights for reference); an ensemble of the same runs recorded
   before is reused.
4. TF-IDF (word uni- and bigrams) + LinearSVC, C chosen on validation
   (bench_baseline.tfidf_svm); deterministic, so once per dataset.

With --rows only the named architectures are trained (steps 1-2), and their rows replace
or join those of the record at --output; the record names each such row's date, load and
commit (rows_measured_apart), and keeps the rest as it was measured.

Test accuracies are read once, after every choice is made. The JSON holds the machine, the
versions, the date, each row's mean and standard deviation over seeds and every run id.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata as md
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from common import REPO, cpu_name, load

CANDIDATES = {  # architecture -> presets chosen between on validation
    "encoder": ["encoder-wordpunct", "encoder-bpe"],
    "lstm": ["lstm-wordpunct"],
    "fasttext": ["fasttext-wordpunct"],
    "nbsvm": ["nbsvm-wordpunct"],
    "bert": ["bert-bpe"],
    "mamba": ["mamba-wordpunct"],
    "encoder-modern": ["encoder-modern"],  # the encoder with Llama's block, a row of its own
    "hf-deberta-v2": ["hf-deberta-v2-bpe"],
    "hf-modernbert": ["hf-modernbert-bpe"],
}
# encoder-wordpunct as the default classifier was before it became a single encoder (an
# encoder, an LSTM and NBSVM inside one run, shares fitted on validation): mean test
# accuracy over seeds 0-2 as a user runs it (README.md at commit edff2a0)
FORMER_DEFAULT = {"rotten_tomatoes": 0.7986, "emotion": 0.9170}
TOLERANCE = 0.005  # the ensemble's acceptance: within half a point of the former default


def train_all(models: list[str], datasets: list[str], seeds: int, jobs: int = 1) -> None:
    import zoo

    zoo.sweep(
        models, on=datasets, seeds=seeds, workers=zoo.Workers(jobs), progress=True, quiet=True
    )


def finished_runs(models: list[str], datasets: list[str], seeds: int) -> dict:
    """(model, dataset, seed) -> the newest finished trained row."""
    from zoo.records.store import Store

    with Store() as store:
        rows = store.rows()
    found = {}
    for row in rows:  # oldest first: the newest wins
        key = (row["model"], row["dataset"], row["seed"])
        if (
            row["kind"] == "train"
            and row["status"] == "finished"
            and row["model"] in models
            and row["dataset"] in datasets
            and row["seed"] in range(seeds)
        ):
            found[key] = row
    return found


def choose(runs: dict, datasets: list[str], seeds: int, architectures: dict) -> dict:
    """architecture -> (chosen preset, {preset: mean validation accuracy}); only presets with
    a finished run for every dataset and seed compete."""
    chosen = {}
    for architecture, presets in architectures.items():
        scores = {}
        for preset in presets:
            rows = [runs.get((preset, d, s)) for d in datasets for s in range(seeds)]
            if all(rows):
                scores[preset] = statistics.mean(r["metrics"]["val_accuracy"] for r in rows)
        if scores:
            chosen[architecture] = (max(scores, key=scores.get), scores)
    return chosen


def ensemble_of(run_ids: list[str], weights: str) -> dict:
    """The ensemble row of exactly these runs with these weights: recorded before, or now."""
    import zoo
    from zoo.records.store import Store

    with Store() as store:
        rows = store.rows()
    wanted = sorted(run_ids)
    for row in reversed(rows):
        config = row["config"]
        if (
            row["kind"] == "ensemble"
            and row["status"] == "finished"
            and config.get("weighting") == weights
            and sorted(p["run_id"] for p in config.get("combines", [])) == wanted
        ):
            return {
                "id": row["id"],
                "model": row["model"],
                "metrics": row["metrics"],
                "duration": row.get("duration") or 0.0,
                "weights": {p["model"]: p["weight"] for p in config["combines"]},
            }
    made = zoo.ensemble(run_ids, weights=weights)
    return {
        "id": made.id,
        "model": made.model,
        "metrics": made.metrics,
        "duration": made.duration,
        "weights": {p.model: p.weight for p in made.runs},
    }


def summary(values: list[float]) -> dict:
    return {
        "mean": statistics.mean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


def row_of(name: str, preset: str, rows: list[dict]) -> dict:
    return {
        "name": name,
        "preset": preset,
        "val_accuracy": summary([r["metrics"]["val_accuracy"] for r in rows]),
        "test_accuracy": summary([r["metrics"]["test_accuracy"] for r in rows]),
        "seconds": summary([r.get("duration") or 0.0 for r in rows]),
        "runs": [r["id"] for r in rows],
    }


def versions() -> dict:
    out = {"python": platform.python_version()}
    for name in (
        "torch",
        "scikit-learn",
        "transformers",
        "tokenizers",
        "datasets",
        "zoo",
    ):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    try:
        out["git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        out["git_commit"] = None
    return out


COMMAND = "OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_classification.py"


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    parser.add_argument(
        "--select-seeds",
        type=int,
        default=1,
        help="seeds 0..S-1 on whose validation splits presets are chosen",
    )
    parser.add_argument("--datasets", nargs="+", default=["rotten_tomatoes", "emotion"])
    parser.add_argument(
        "--home",
        default=str(Path.home() / ".cache" / "zoo-bench-classification"),
        help="ZOO_HOME of the benchmark's runs (kept: a rerun reuses them)",
    )
    parser.add_argument("--no-bert", action="store_true", help="leave out the transformers BERT")
    parser.add_argument(
        "--jobs", type=int, default=1, help="cells trained at once (worker processes)"
    )
    parser.add_argument(
        "--one-seed",
        nargs="*",
        default=[],
        metavar="ARCHITECTURE",
        help="architectures trained and reported at seed 0 only (to save time; n=1 in the JSON)",
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        choices=list(CANDIDATES),
        metavar="ARCHITECTURE",
        help="measure only these architectures' rows and write them into the record at "
        "--output, keeping its other rows (each such row's date, load and commit are recorded)",
    )
    parser.add_argument(
        "--output", default=str(REPO / "benchmarks" / "results" / "classification.json")
    )
    return parser.parse_args(argv)


def dataset_table(dataset: str, chosen: dict, runs: dict, args, others: bool) -> list[dict]:
    """The rows of one dataset: each chosen preset over its seeds, then (with `others`) the
    ensemble of `ensemble-classifier`'s members and TF-IDF + linear SVM."""
    from zoo.core.loading import get_zoo

    table = []
    for architecture, (preset, _) in chosen.items():
        seeds = 1 if architecture in args.one_seed else args.seeds
        rows = [runs[(preset, dataset, s)] for s in range(seeds)]
        table.append(row_of(architecture, preset, rows))
    if not others:
        return table
    members = get_zoo().catalogue.ensembles["ensemble-classifier"].members
    if all(m in {preset for preset, _ in chosen.values()} for m in members):
        for weights in ("fit", "equal"):
            parts = [[runs[(m, dataset, s)] for m in members] for s in range(args.seeds)]
            made = [ensemble_of([r["id"] for r in rows], weights) for rows in parts]
            # seconds: what the ensemble costs, its members' runs and the combining
            entry = row_of(
                f"ensemble ({weights} weights)",
                made[0]["model"],
                [
                    {
                        "id": e["id"],
                        "metrics": e["metrics"],
                        "duration": e["duration"] + sum(r.get("duration") or 0 for r in rows),
                    }
                    for e, rows in zip(made, parts)
                ],
            )
            entry["weights"] = [e["weights"] for e in made]
            table.append(entry)
    from bench_baseline import load_splits, tfidf_svm

    svm = tfidf_svm(load_splits(dataset, None, None))
    table.append(
        {
            "name": "TF-IDF + linear SVM",
            "preset": f"C={svm['C']}",
            "val_accuracy": summary([svm["val_accuracy"]]),
            "test_accuracy": summary([svm["test_accuracy"]]),
            "seconds": summary([svm["seconds"]]),
            "runs": [],
        }
    )
    return table


def machine(load_before: str) -> dict:
    import torch

    from zoo.core.machine import cpu, kind
    from zoo.train.precision import resolve_precision

    return {
        "cpu": cpu_name(),
        "cpu_kind": kind(cpu()["flags"]),  # what tells two CPUs' figures apart
        "auto_precision": resolve_precision("auto", torch.device("cpu")),  # the presets'
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "load_before": load_before,
        "load_after": load(),
        "note": "shared machine: durations include waiting for other processes",
    }


def full_report(results: dict, chosen: dict, args, load_before: str) -> dict:
    fitted = {
        dataset: row["test_accuracy"]["mean"]
        for dataset, table in results.items()
        for row in table
        if row["name"] == "ensemble (fit weights)"
    }
    return {
        "benchmark": "classification",
        "command": COMMAND,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(load_before),
        "versions": versions(),
        "seeds": list(range(args.seeds)),
        "selection_seeds": list(range(min(args.select_seeds, args.seeds))),
        "one_seed": list(args.one_seed),
        "selection": {a: {"chosen": p, "mean_val_accuracy": s} for a, (p, s) in chosen.items()},
        "datasets": results,
        "former_default": FORMER_DEFAULT,
        "notes": [
            (
                "Each architecture's preset was chosen on validation accuracy (selection seeds), "
                "the test split read once for this report."
            ),
            (
                "The fitted ensemble's validation accuracy is measured where its weights were "
                "fitted, so it is optimistic; its test accuracy is not."
            ),
            ("TF-IDF + linear SVM is deterministic: one fit per dataset, C chosen on validation."),
        ],
        "ensemble_within_half_a_point": {
            d: fitted[d] >= FORMER_DEFAULT[d] - TOLERANCE for d in fitted if d in FORMER_DEFAULT
        },
    }


APART_NOTE = (
    "The rows named in rows_measured_apart were measured after the others, in a run of their "
    "own (its machine, precision, load and commit there), and their seconds are not comparable "
    "with the others'; the command reruns the whole table at once, on one machine."
)


def merged_report(old: dict, results: dict, chosen: dict, args, load_before: str) -> dict:
    """`old` with the rows of `results` put in (architecture rows in CANDIDATES' order, the
    ensemble and SVM rows after), each measured row's provenance in rows_measured_apart."""
    report = dict(old)
    order = {name: i for i, name in enumerate(CANDIDATES)}
    for dataset, new_rows in results.items():
        rows = {row["name"]: row for row in old.get("datasets", {}).get(dataset, [])}
        rows.update({row["name"]: row for row in new_rows})
        rows_in = [r for n, r in rows.items() if n in order]
        report.setdefault("datasets", {})[dataset] = sorted(
            rows_in, key=lambda r: order[r["name"]]
        ) + [r for n, r in rows.items() if n not in order]
    report["selection"] = {
        **old.get("selection", {}),
        **{a: {"chosen": p, "mean_val_accuracy": s} for a, (p, s) in chosen.items()},
    }
    apart = dict(old.get("rows_measured_apart") or {})
    measured = machine(load_before)
    for architecture, dataset in itertools.product(chosen, results):
        apart[f"{architecture} on {dataset}"] = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "cpu": f"{measured['cpu']} ({measured['cpu_kind']})",
            "precision": measured["auto_precision"],
            "seeds": 1 if architecture in args.one_seed else args.seeds,
            "load_before": measured["load_before"],
            "load_after": measured["load_after"],
            "git_commit": versions()["git_commit"],
        }
    report["rows_measured_apart"] = apart
    report["command"] = COMMAND
    report["notes"] = [n for n in old.get("notes", []) if n != APART_NOTE] + [APART_NOTE]
    return report


def main(argv=None) -> int:
    args = parse(argv)
    os.environ["ZOO_HOME"] = args.home
    architectures = {
        a: p
        for a, p in CANDIDATES.items()
        if not (args.no_bert and a == "bert") and (not args.rows or a in args.rows)
    }
    models = [preset for presets in architectures.values() for preset in presets]
    load_before = load()
    print(
        f"# {cpu_name()}, {os.cpu_count()} cores, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; {load_before}",
        file=sys.stderr,
    )

    selecting = min(args.select_seeds, args.seeds)
    train_all(models, args.datasets, selecting, args.jobs)
    chosen = choose(
        finished_runs(models, args.datasets, selecting),
        args.datasets,
        selecting,
        architectures,
    )
    every_seed = [p for a, (p, _) in chosen.items() if a not in args.one_seed]
    if every_seed:
        train_all(every_seed, args.datasets, args.seeds, args.jobs)
    runs = finished_runs(models, args.datasets, args.seeds)

    sys.path.insert(0, str(Path(__file__).parent))
    results = {
        dataset: dataset_table(dataset, chosen, runs, args, others=not args.rows)
        for dataset in args.datasets
    }
    output = Path(args.output)
    if args.rows:
        old = json.loads(output.read_text(encoding="utf-8"))
        report = merged_report(old, results, chosen, args, load_before)
    else:
        report = full_report(results, chosen, args, load_before)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    for dataset, table in report["datasets"].items():
        print(f"\n{dataset} (test accuracy, mean ± std over seeds)")
        for row in table:
            test = row["test_accuracy"]
            print(
                f"  {row['name']:<26} {row['preset']:<58} {100 * test['mean']:6.2f} ± "
                f"{100 * test['std']:.2f}   val {100 * row['val_accuracy']['mean']:6.2f}"
            )
    print(f"\nwritten to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
