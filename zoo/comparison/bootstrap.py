"""The two-level bootstrap: rows of a comparison scored on the same examples of one split,
resampled by seed and by example, so an interval counts both the seed-to-seed variance
and the sampling noise of the evaluation set.

Each replicate draws, for every row, its seeds with replacement (n of its n), and one draw
of the split's examples with replacement that every row shares (the rows are paired by
example: a hard example is hard for all of them). A seed's replicate figure is its scores'
mean over the drawn examples, weighted where the scores have weights (a language model's
windows, each its loss per token weighted by its tokens: the ratio of the drawn windows'
nats to their tokens; a corpus score such as BLEU, the task's score of the drawn examples'
summed sufficient statistics, as sacreBLEU's paired bootstrap rescores them); a row's is
the mean of its drawn seeds' figures. Drawing with
replacement is a multinomial count per seed and per example, so a replicate is a few
weighted sums, and all replicates of a row are matrix products.
"""

from __future__ import annotations

from dataclasses import dataclass

DRAWS = 2000


def replicate_means(scores: list, draws: int = DRAWS, seed: int = 0, weights=None):
    """(draws, rows): each row's mean score in each replicate. `scores[r]` is an (n_r,
    examples) array, the per-example scores of row r's n_r seeds; every row has the same
    examples, in the same order. `weights[r]`, where given (None, or None for a row: every
    score weighs 1), has the shape of `scores[r]`: each seed's figure is the weighted mean."""
    return replicates(scores, draws, seed, weights)[0]


def replicates(scores: list, draws: int = DRAWS, seed: int = 0, weights=None, scorers=None):
    """replicate_means, and beside it (draws, rows) of the same example draws with each
    row's seeds held fixed (every seed once): the examples' share of the variance, which
    more seeds do not remove (the power note's floor). `scorers[r]`, where given, makes
    row r a corpus score: `scores[r]` is (n_r, examples, k), each example's sufficient
    statistics, and a seed's replicate figure is the scorer of its drawn sums."""
    import numpy as np

    examples = {np.shape(s)[1] for s in scores}
    if len(examples) != 1:
        raise ValueError(f"rows scored on different numbers of examples: {sorted(examples)}")
    (count,) = examples
    weights = weights or [None] * len(scores)
    scorers = scorers or [None] * len(scores)
    rng = np.random.default_rng(seed)
    # how often each example is drawn, the same draw for every row: (draws, examples)
    example_weights = drawn_counts(rng, draws, count)
    both, fixed = np.empty((draws, len(scores))), np.empty((draws, len(scores)))
    for r, (matrix, weight, scorer) in enumerate(zip(scores, weights, scorers)):
        matrix = np.asarray(matrix, dtype=np.float64)
        n = matrix.shape[0]
        seed_weights = drawn_counts(rng, draws, n)  # (draws, n)
        if scorer is not None:  # each seed's drawn statistics summed, then scored
            figures = np.stack([scorer(example_weights @ table) for table in matrix], axis=1)
        elif weight is None:  # every draw holds `count` examples
            figures = example_weights @ matrix.T / count  # (draws, n): each seed's mean
        else:
            weight = np.asarray(weight, dtype=np.float64)
            figures = (example_weights @ (weight * matrix).T) / (example_weights @ weight.T)
        both[:, r] = np.einsum("dn,dn->d", seed_weights, figures) / n
        fixed[:, r] = figures.mean(axis=1)
    return both, fixed


def drawn_counts(rng, draws: int, size: int):
    """(draws, size): how often each of `size` items is drawn in `size` draws with
    replacement, for each replicate (one bincount over all replicates at once)."""
    import numpy as np

    picks = rng.integers(0, size, size=(draws, size)) + size * np.arange(draws)[:, None]
    counts = np.bincount(picks.ravel(), minlength=draws * size)
    return counts.reshape(draws, size).astype(np.float64)


@dataclass
class Difference:
    """Row a minus row b over the replicates: the observed difference, its percentile
    interval and the two-sided bootstrap p-value of 'no difference'."""

    diff: float
    low: float
    high: float
    p: float


def difference(observed: float, replicates_a, replicates_b, level: float = 0.95) -> Difference:
    """The bootstrap's answer for mean(a) - mean(b): twice the smaller share of replicates
    on either side of 0 (each share counted with the observed one, (k + 1) / (draws + 1)),
    and the percentile interval."""
    import numpy as np

    d = np.asarray(replicates_a) - np.asarray(replicates_b)
    draws = len(d)
    below, above = int((d <= 0).sum()), int((d >= 0).sum())
    p = min(1.0, 2 * (min(below, above) + 1) / (draws + 1))
    low, high = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
    return Difference(float(observed), float(low), float(high), p)


def column_replicates(table, columns, draws: int = DRAWS) -> tuple[dict, dict]:
    """cell index -> its replicate means, for every column (`columns`: groups of the table's
    cells) whose cells' runs all kept per-example scores of the column's metric on the
    same examples (RunResult.per_example); other columns are left out. One draw of
    examples per column, so its rows stay paired by example. Beside them, cell index ->
    the replicates of the examples alone (each cell's seeds held fixed: `replicates`)."""
    found: dict = {}
    fixed: dict = {}
    for _, group in columns:
        metric, task = group["metric"].iloc[0], group["task"].iloc[0]
        kept = [_scores(str(runs).split(), metric, task) for runs in group["runs"]]
        if len(group) < 2 or any(k is None for k in kept):
            continue
        scores, weights, digests, scorers = zip(*kept)
        if len({s.shape[1:] for s in scores}) != 1 or len(set(digests)) != 1:
            continue  # rows that scored other examples are not paired
        means, alone = replicates(list(scores), draws, weights=list(weights), scorers=scorers)
        found.update({index: means[:, i] for i, index in enumerate(group.index)})
        fixed.update({index: alone[:, i] for i, index in enumerate(group.index)})
    return found, fixed


def _scores(run_ids: list[str], metric: str, task: str):
    """(runs, examples) scores, their weights (None where they weigh alike), the digest of
    the examples scored and None; or, for a corpus score (BLEU) whose runs kept each
    example's sufficient statistics, (runs, examples, k) statistics, None, the digest and
    the task pipeline's score_statistics for `metric`. None where a run kept neither, or
    their examples differ (lengths, or the digest of what each run scored:
    zoo.train.job.RunFolder.save_per_example)."""
    import numpy as np

    kept = [_kept(run_id) for run_id in run_ids]
    digests = {bytes(found.get(_digest_key(metric), b"")) for found in kept}
    if len(digests) != 1 or digests == {b""}:  # other examples, or none named
        return None
    if all(f"statistics:{metric}" in found for found in kept):
        tables = [found[f"statistics:{metric}"] for found in kept]
        scorer = _scorer(task, metric)
        if scorer is None or len({t.shape for t in tables}) != 1 or tables[0].ndim != 2:
            return None
        return np.stack(tables).astype(np.float64), None, digests.pop(), scorer
    rows = [found[metric] for found in kept if metric in found]
    if len(rows) < len(kept) or len({len(row) for row in rows}) != 1:
        return None
    weighed = [found[f"weights:{metric}"] for found in kept if f"weights:{metric}" in found]
    weights = None
    if weighed:
        if len(weighed) < len(kept) or any(w.shape != rows[0].shape for w in weighed):
            return None  # weights for some runs only: not the same scores
        weights = np.stack(weighed).astype(np.float64)
    return np.stack(rows).astype(np.float64), weights, digests.pop(), None


def _scorer(task: str, metric: str):
    """The task pipeline's score_statistics for `metric` (draws' summed statistics ->
    figures), or None where no installed pipeline of the task has one."""
    import functools

    from zoo.core.loading import get_zoo
    from zoo.pipeline import optional_method

    pipelines = get_zoo().pipelines
    if task not in pipelines:  # a task no installed plugin declares any more
        return None
    score = optional_method(pipelines.get(task).load(), "score_statistics")
    return functools.partial(score, metric) if score is not None else None


def _digest_key(metric: str) -> str:
    return f"examples:{metric.partition('_')[0]}"


def _kept(run_id: str) -> dict:
    from zoo.errors import ZooError
    from zoo.io import load_safetensors
    from zoo.records.paths import run_folder
    from zoo.train.job import PER_EXAMPLE

    path = run_folder(run_id) / PER_EXAMPLE
    if not path.is_file():
        return {}
    try:
        return load_safetensors(path)
    except ZooError:  # a damaged file counts as none: the seeds-only view stands
        return {}
