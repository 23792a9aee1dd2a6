"""A zoo classifier next to scikit-learn's TF-IDF + linear SVM, on the same splits.

    .venv/bin/python benchmarks/bench_baseline.py DATASET... [--model encoder-wordpunct]
                                                  [--seed 0 [--seed 1 ...]]
                                                  [--run RUN_ID ...] [--no-zoo]
                                                  [--set KEY=VALUE ...]
                                                  [--text-column C] [--label-column C]
                                                  [--mix]

For every DATASET zoo can load (a catalogue alias, a Hub id in a mirror, a local file), the
baseline is a TF-IDF of word unigrams and bigrams (sublinear term frequency) and
``LinearSVC``, fitted on the train split; its ``C`` is picked on the validation split from
a small grid, and it is scored once on the test split. The zoo side is ``zoo run MODEL
DATASET --seed S --json --quiet`` in a fresh process (default model: the default classifier,
`encoder-wordpunct`), or the recorded runs named with ``--run`` (in ZOO_HOME). Needs the `bench`
extra (scikit-learn). Prints one line per dataset with both test accuracies.

``--mix`` asks how much a strong linear model would add to the zoo run: it also fits
TF-IDF + logistic regression and NB-weighted logistic regression (binary word uni- and
bigrams scaled by their log-count ratios, one-vs-rest; Wang and Manning 2012), each with C
picked on validation, and averages the zoo run's class probabilities with each model's at
a weight picked on validation; one line per model with its own and the mix's accuracies.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from statistics import mean

from common import header

C_GRID = (0.03, 0.1, 0.3, 1.0, 3.0)
LR_C_GRID = (1.0, 3.0, 10.0, 30.0)
MIX_WEIGHTS = (0.25, 0.5, 0.75)  # the linear model's share of the averaged probabilities
ROLES = ("validation", "test")


def load_splits(name: str, text_column: str | None, label_column: str | None):
    """Texts and labels of train, validation and test, exactly as zoo's pipeline sees them."""
    from zoo.pipelines.classification import check_dataset, label_names, texts_of

    from zoo.core.loading import get_zoo
    from zoo.data import datasets as data

    zoo = get_zoo()
    loaded = data.load(
        data.resolve(name, zoo), zoo, text_column=text_column, label_column=label_column, quiet=True
    )
    check_dataset(loaded)
    return {
        role: (texts_of(loaded, role), label_names(loaded, role))
        for role in ("train", "validation", "test")
    }


def mcnemar(ours_right, theirs_right) -> tuple[int, int, float]:
    """(b, c, p): rows only ours answers right, rows only theirs does, and the exact two-sided
    McNemar p-value (a binomial test of b against b + c at one half)."""
    from scipy.stats import binomtest

    b = int((ours_right & ~theirs_right).sum())
    c = int((~ours_right & theirs_right).sum())
    return b, c, (binomtest(b, b + c, 0.5).pvalue if b + c else 1.0)


def tfidf_svm(splits) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    start = time.perf_counter()
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    x_train = vectorizer.fit_transform(splits["train"][0])
    x_val, x_test = (vectorizer.transform(splits[r][0]) for r in ("validation", "test"))
    best = None
    for c in C_GRID:
        model = LinearSVC(C=c).fit(x_train, splits["train"][1])
        val = float((model.predict(x_val) == splits["validation"][1]).mean())
        if best is None or val > best[0]:
            best = (val, c, model)
    val, c, model = best
    right = model.predict(x_test) == splits["test"][1]
    return {
        "val_accuracy": val,
        "test_accuracy": float(right.mean()),
        "right": right,
        "C": c,
        "seconds": time.perf_counter() - start,
    }


def accuracy(probabilities, classes, labels) -> float:
    import numpy as np

    return float((np.asarray(classes)[probabilities.argmax(1)] == np.asarray(labels)).mean())


def zoo_probabilities(run_id: str, splits) -> tuple[list, dict]:
    """The run's classes (sorted by name) and its class probabilities on validation and test."""
    import numpy as np

    import zoo

    trained = zoo.load(run_id)
    found = {role: trained.predict(splits[role][0]) for role in ROLES}
    classes = sorted(found["test"][0].probabilities)
    return classes, {
        role: np.array([[p.probabilities[c] for c in classes] for p in found[role]])
        for role in ROLES
    }


def linear_models(splits, classes):
    """(name, probabilities on validation and test) of TF-IDF + LR and NB-weighted LR, each at
    the C with the best validation accuracy."""
    import numpy as np
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts, labels = splits["train"][0], np.asarray(splits["train"][1])
    tfidf = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(texts)
    words = CountVectorizer(ngram_range=(1, 2), binary=True).fit(texts)
    weighted = {role: tfidf.transform(splits[role][0]) for role in ("train", *ROLES)}
    present = {role: words.transform(splits[role][0]) for role in ("train", *ROLES)}
    ratios = {}  # one-vs-rest: each class's log-count ratios scale the features
    for name in classes:
        ours = 1 + np.asarray(present["train"][labels == name].sum(0)).ravel()
        rest = 1 + np.asarray(present["train"][labels != name].sum(0)).ravel()
        ratios[name] = sparse.diags(np.log(ours / ours.sum()) - np.log(rest / rest.sum()))

    def tfidf_lr(c):
        model = LogisticRegression(C=c, max_iter=3000).fit(weighted["train"], labels)
        assert list(model.classes_) == classes, (model.classes_, classes)
        return {role: model.predict_proba(weighted[role]) for role in ROLES}

    def nb_lr(c):
        scores = {role: [] for role in ROLES}
        for name in classes:
            scale = ratios[name]
            model = LogisticRegression(C=c, max_iter=3000).fit(
                present["train"] @ scale, labels == name
            )
            for role in ROLES:
                scores[role].append(model.predict_proba(present[role] @ scale)[:, 1])
        return {
            role: np.array(v).T / np.array(v).T.sum(1, keepdims=True) for role, v in scores.items()
        }

    for name, fit in (("TF-IDF+LR", tfidf_lr), ("NB-LR", nb_lr)):
        fits = [fit(c) for c in LR_C_GRID]
        yield (
            name,
            max(fits, key=lambda p: accuracy(p["validation"], classes, splits["validation"][1])),
        )


def mixes(run_id: str, splits) -> list[str]:
    """One line per linear model: its accuracies, and those of its mix with the zoo run."""
    classes, ours = zoo_probabilities(run_id, splits)
    lines = []
    for name, theirs in linear_models(splits, classes):

        def scores(w, theirs=theirs):
            return {
                role: accuracy((1 - w) * ours[role] + w * theirs[role], classes, splits[role][1])
                for role in ROLES
            }

        alone = scores(1.0)
        w = max(MIX_WEIGHTS, key=lambda w: scores(w)["validation"])
        mixed = scores(w)
        lines.append(
            f"    {name:<10} val {alone['validation']:.4f} test {alone['test']:.4f}; "
            f"mixed with the zoo run at {w}: val {mixed['validation']:.4f} "
            f"test {mixed['test']:.4f}"
        )
    return lines


def zoo_right(run_id: str, splits):
    """Which test rows the run answers right."""
    import numpy as np

    import zoo

    predicted = [p.label for p in zoo.load(run_id).predict(splits["test"][0])]
    return np.asarray(predicted) == np.asarray(splits["test"][1])


def zoo_run(model: str, dataset: str, seed: int, extra: list[str]) -> dict:
    command = [
        sys.executable,
        "-m",
        "zoo",
        "run",
        model,
        dataset,
        "--seed",
        str(seed),
        "--json",
        "--quiet",
        *extra,
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result["metrics"], "run_id": result["run_id"], "wall": time.perf_counter() - start}


def recorded_run(run_id: str) -> dict:
    from zoo.records.store import Store

    with Store() as store:
        row = store.get(run_id)
    return {
        **row["metrics"],
        "run_id": row["id"],
        "seed": row.get("seed"),
        "wall": row.get("duration") or float("nan"),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--model", default="encoder-wordpunct")
    parser.add_argument(
        "--seed",
        type=int,
        action="append",
        dest="seeds",
        metavar="SEED",
        help="a seed of the zoo run (repeatable; default 0)",
    )
    parser.add_argument(
        "--run",
        nargs="+",
        default=None,
        metavar="RUN_ID",
        help="recorded zoo runs to compare, one per dataset, instead of training",
    )
    parser.add_argument("--no-zoo", action="store_true", help="only the TF-IDF + SVM baseline")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the zoo run (repeatable), as zoo run --set takes it",
    )
    parser.add_argument("--text-column")
    parser.add_argument("--label-column")
    parser.add_argument(
        "--mix",
        action="store_true",
        help="also TF-IDF + LR and NB-weighted LR, each mixed with the zoo run",
    )
    args = parser.parse_args(argv)
    if args.mix and args.no_zoo:
        parser.error("--mix needs the zoo run")
    if args.run and len(args.run) != len(args.datasets):
        parser.error("--run needs one run id per dataset")
    if args.run and args.seeds:
        parser.error("--run scores recorded runs: it takes no --seed")
    seeds = [None] if args.run or args.no_zoo else (args.seeds or [0])
    header("zoo classifier vs TF-IDF + LinearSVC, test accuracy on the same splits")
    columns = [
        c
        for c in (("--text-column", args.text_column), ("--label-column", args.label_column))
        if c[1]
    ]
    extra = [part for pair in columns for part in pair]
    extra += [part for setting in args.set for part in ("--set", setting)]
    print(
        f"{'dataset':<20}{'train':>7}{'test':>6}  {'TF-IDF+SVM':>10} {'(C)':>6}  "
        f"{'zoo':>7}  model / run"
    )
    gaps = {}  # dataset -> zoo's test accuracy minus the baseline's, one per seed
    for i, name in enumerate(args.datasets):
        splits = load_splits(name, args.text_column, args.label_column)
        baseline = tfidf_svm(splits)
        for seed in seeds:
            line = (
                f"{name:<20}{len(splits['train'][0]):>7}{len(splits['test'][0]):>6}  "
                f"{baseline['test_accuracy']:>10.4f} {baseline['C']:>6}"
            )
            if not args.no_zoo:
                ours = (
                    recorded_run(args.run[i])
                    if args.run
                    else zoo_run(args.model, name, seed, extra)
                )
                gap = ours["test_accuracy"] - baseline["test_accuracy"]
                gaps.setdefault(name, []).append(gap)
                b, c, p = mcnemar(zoo_right(ours["run_id"], splits), baseline["right"])
                line += (
                    f"  {ours['test_accuracy']:>7.4f}  {args.model if not args.run else ''} "
                    f"{ours['run_id']} (seed {ours.get('seed', seed)}, {gap:+.4f}, "
                    f"b/c {b}/{c}, p {p:.2f}, best_step {ours.get('best_step')}, "
                    f"{ours['wall']:.0f} s)"
                )
            print(line, flush=True)
            if args.mix:
                print("\n".join(mixes(ours["run_id"], splits)), flush=True)
        if len(gaps.get(name, ())) > 1:
            print(
                f"{'':<20}mean over {len(gaps[name])} seeds: zoo "
                f"{baseline['test_accuracy'] + mean(gaps[name]):.4f}, gap "
                f"{mean(gaps[name]):+.4f}, ahead on {sum(g > 0 for g in gaps[name])} of "
                f"{len(gaps[name])}",
                flush=True,
            )
    if len(gaps) > 1:
        per_set = [mean(v) for v in gaps.values()]
        print(
            f"# mean gap over {len(gaps)} datasets: {mean(per_set):+.4f}; zoo ahead on "
            f"{sum(g > 0 for g in per_set)}, behind on {sum(g < 0 for g in per_set)}"
        )
    print(f"# {os.getloadavg()[0]:.1f} load at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
