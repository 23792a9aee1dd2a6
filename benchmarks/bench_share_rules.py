"""Two rules for fitting an ensemble's shares on validation (`fit_shares` in the encoder),
judged on validation alone: on the saved weights of finished runs, each member group's class
probabilities on the validation and test splits are computed once; then the validation split
is halved at random many times, the shares are fitted by each rule on one half and scored on
the other.

    .venv/bin/python benchmarks/bench_share_rules.py RUN_ID... [--halvings 200] [--steps 10]

Rules:
  right answers first   the one `fit_shares` uses: the split of the average (multiples of
                        1/steps) with the most right answers, the lowest log loss breaking ties
  log loss first        the split with the lowest mean log loss
Each run gets one line: the mean accuracy on the other half for each rule, and, for
information only, the test accuracy each rule's fit on the whole validation split gives (the
first rule's is the run's own, a check that the reload computes as the run did). The RUN_IDs
must be runs of an encoder ensemble with `fit_shares` (ZOO_HOME as for `zoo`).
"""
from __future__ import annotations

import argparse

from common import header

RULES = ("right answers first", "log loss first")


def group_probabilities(run_id: str) -> tuple:
    """The run's member groups' probabilities [N, G, K] and labels [N]: (validation, test)."""
    import numpy as np
    import torch

    from zoo.data import datasets
    from zoo.pipelines.classification import (class_ids, encode_split, label_names,
                                              trained_classes)
    from zoo.core.registry import get_zoo
    from zoo.records.reload import load_trained

    zoo = get_zoo()
    trained = load_trained(run_id, zoo, device="cpu")
    config = trained.config
    dataset = datasets.load(datasets.resolve(config["dataset"], zoo), zoo, quiet=True,
                        text_column=config.get("text_column"),
                        label_column=config.get("label_column"))
    classes = trained_classes(trained)
    module = trained.model.module.eval()
    if not hasattr(module, "group_probabilities"):
        raise SystemExit(f"run {run_id} is not an encoder ensemble")
    out = []
    for split in ("validation", "test"):
        encoded = encode_split(trained.tokenizer, dataset, split, trained.block_size)
        inputs, mask = encoded.batch(np.arange(len(encoded)))
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16,
                                             enabled=trained.model.precision == "bf16"):
            groups = module.group_probabilities(torch.as_tensor(inputs), torch.as_tensor(mask))
        labels = class_ids(label_names(dataset, split), classes, split)
        out.append((groups, torch.as_tensor(labels)))
    return tuple(out)


def fit_by_log_loss(groups, targets, steps: int):
    """The split of the shares with the lowest mean log loss."""
    from zoo.plugins.encoder.shares import score_splits, share_grid

    grid = share_grid(groups.shape[1], steps)
    return grid[score_splits(groups, targets, grid)[1].argmin()]


def accuracy(groups, targets, shares) -> float:
    from zoo.plugins.encoder.shares import score_splits

    return float(score_splits(groups, targets, shares[None])[0][0]) / len(targets)


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_ID")
    parser.add_argument("--halvings", type=positive, default=200)
    parser.add_argument("--steps", type=positive, default=10,
                        help="shares in multiples of 1/steps")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random halvings")
    args = parser.parse_args(argv)

    import torch

    from zoo.errors import ZooError
    from zoo.plugins.encoder.shares import fit_shares

    rules = {RULES[0]: fit_shares, RULES[1]: fit_by_log_loss}
    header("share-fitting rules on validation halves")
    print(f"{'run':<22} " + "  ".join(f"{rule + ': other half / test':>34}" for rule in RULES))
    totals = dict.fromkeys(RULES, 0.0)
    for run_id in args.runs:
        try:
            (val, val_y), (test, test_y) = group_probabilities(run_id)
        except ZooError as exc:  # an unknown run id, a run without saved weights
            parser.error(str(exc))
        generator = torch.Generator().manual_seed(args.seed)
        halves = [torch.randperm(len(val_y), generator=generator)
                  for _ in range(args.halvings)]
        cells = []
        for rule, fit in rules.items():
            other = []
            for order in halves:
                fitted, scored = order[:len(order) // 2], order[len(order) // 2:]
                shares = fit(val[fitted], val_y[fitted], args.steps)
                other.append(accuracy(val[scored], val_y[scored], shares))
            tested = accuracy(test, test_y, fit(val, val_y, args.steps))
            held_out = 100 * sum(other) / len(other)
            totals[rule] += held_out
            cells.append(f"{held_out:>26.2f} / {100 * tested:5.2f}")
        print(f"{run_id:<22} " + "  ".join(cells))
    print("# sum over runs, other half: " + ", ".join(f"{rule} {total:.2f}"
                                                      for rule, total in totals.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
