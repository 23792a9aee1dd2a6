"""How often the marks of `zoo compare` are wrong, and how often they find a real difference.

Simulated tables, no training: each row's seeds are draws from a normal distribution, and
the marks are decided as zoo decides them (zoo.comparison.significance), vectorised over
thousands of tables at once with numpy and scipy's Student t. A sample of the tables is
also marked by zoo's own code, and the two must agree on every one.

- Family-wise false-mark rate: every row equal in truth, so any best mark (`*`) and any
  baseline mark (`†`) is a false one. For each variance pattern (equal; a steady baseline
  with a tenth of the others' spread; one noisy row among steady ones; spreads from 0.1 to
  1), 2 to 10 rows and 2 to 5 seeds, with Welch-Satterthwaite's df (zoo's test before) and
  Hsu's conservative df, min(n) - 1 (zoo's test now).
- Power: one row better than the others by delta standard deviations: how often it is
  marked best, for 2 to 10 rows and 2 to 10 seeds.
- The stated detectable difference (80% power): the simulated power of a comparison whose
  true difference is the one zoo states for those seeds.
- Seeds until answered (`zoo sweep --seeds auto`, zoo.sweeps.until_answered): every row
  starts at 2 seeds, the leader and the rows tied with it get one more per look, each look
  tested at its share of 5%. Its false-mark rate with every row equal (the same patterns,
  budgets of 5 and 10 seeds), and with one row better by delta: how often it is marked, the
  seeds spent, and the power of spending the whole budget on every row at once. A sample
  of the tables is run look by look through zoo's own decisions too (written to
  significance_sequential.json).

    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py              # a few minutes
    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py --tables 2000 --power-tables 2000
    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py --part sequential  # that alone
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, table, write_results  # noqa: E402

ALPHA = 0.05
ROWS = (2, 3, 5, 10)
SEEDS = (2, 3, 5)
PATTERNS = {
    "equal": "every row the same spread",
    "steady baseline": "the baseline (first row) a tenth of the others' spread",
    "one noisy row": "one row ten times the others' spread",
    "spread 0.1-1": "spreads from 0.1 to 1, evenly on a log scale",
}
POWER_ROWS = (2, 5, 10)
POWER_SEEDS = (2, 3, 5, 10)
DELTAS = (0.5, 1, 1.5, 2, 3, 4, 6)


def spreads(pattern: str, rows: int):
    import numpy as np

    return {
        "equal": np.ones(rows),
        "steady baseline": np.r_[0.1, np.ones(rows - 1)],
        "one noisy row": np.r_[np.full(rows - 1, 0.1), 1.0],
        "spread 0.1-1": np.geomspace(0.1, 1, rows),
    }[pattern]


def p_values(mean_a, var_a, mean_b, var_b, n: int, df_rule: str):
    """Two-sided p of Welch's statistic, n seeds a side, with `df_rule`'s degrees of freedom."""
    import numpy as np
    from scipy.special import stdtr

    se2 = var_a / n + var_b / n
    t = (mean_a - mean_b) / np.sqrt(se2)
    if df_rule == "welch":
        df = se2**2 / ((var_a / n) ** 2 / (n - 1) + (var_b / n) ** 2 / (n - 1))
    else:  # Hsu: min(n_a, n_b) - 1
        df = np.full_like(t, n - 1.0)
    return 2 * stdtr(df, -np.abs(t))


def draws(rng, tables: int, sds, n: int, means=None):
    import numpy as np

    x = rng.standard_normal((tables, len(sds), n)) * sds[None, :, None]
    if means is not None:
        x += np.asarray(means)[None, :, None]
    return x.mean(2), x.var(2, ddof=1)


def marks(mean, var, n: int, df_rule: str):
    """Per table: whether some row gets † against row 0 (Holm over the k-1 comparisons: one
    does where the smallest p is below alpha / (k-1)), and which row is marked best (the
    leader, higher is better, where all k-1 Holm-adjusted p are below alpha), else -1."""
    import numpy as np

    tables, k = mean.shape
    p = p_values(mean[:, 1:], var[:, 1:], mean[:, :1], var[:, :1], n, df_rule)
    dagger = p.min(1) * (k - 1) < ALPHA
    lead = mean.argmax(1)
    at = np.arange(tables)
    p = p_values(mean[at, lead][:, None], var[at, lead][:, None], mean, var, n, df_rule)
    p[at, lead] = np.inf
    p = np.sort(p, 1)[:, : k - 1]
    adjusted = np.maximum.accumulate(np.minimum(1, p * (k - 1 - np.arange(k - 1))), axis=1)
    best = np.where(adjusted[:, -1] < ALPHA, lead, -1)
    return dagger, best


def zoo_marks(mean, var, n: int):
    """The same tables marked by zoo's own code: (any †, the row marked best or -1)."""
    import math

    import pandas as pd

    from zoo.comparison.significance import best_marks, with_baseline

    out = []
    for means, variances in zip(mean, var):
        cells = pd.DataFrame(
            {
                "model": [f"m{i}" for i in range(len(means))],
                "dataset": "d",
                "task": "t",
                "metric": "m",
                "better": "higher",
                "mean": means,
                "std": [math.sqrt(v) for v in variances],
                "n": n,
                "setting": "",
                "_settings": [{} for _ in means],
            }
        )
        best, _, _ = best_marks(cells, ["model"], ["dataset"], 1 - ALPHA)
        marked = with_baseline(cells, ["model"], ["dataset"], "m0", 1 - ALPHA)
        out.append(
            (bool(marked["significant"].eq(True).any()), best.index(True) if any(best) else -1)
        )
    return out


def false_marks(rng, tables: int, checked: int) -> tuple[list[dict], int]:
    rows, disagreements = [], 0
    for pattern in PATTERNS:
        for k in ROWS:
            for n in SEEDS:
                mean, var = draws(rng, tables, spreads(pattern, k), n)
                row = {"pattern": pattern, "rows": k, "seeds": n}
                for rule in ("welch", "hsu"):
                    dagger, best = marks(mean, var, n, rule)
                    row[f"{rule}_dagger"] = float(dagger.mean())
                    row[f"{rule}_best"] = float((best >= 0).mean())
                dagger, best = marks(mean[:checked], var[:checked], n, "hsu")
                ours = zoo_marks(mean[:checked], var[:checked], n)
                disagreements += sum(
                    (d, b) != pair for d, b, pair in zip(dagger.tolist(), best.tolist(), ours)
                )
                rows.append(row)
    return rows, disagreements


def power_curves(rng, tables: int) -> list[dict]:
    import numpy as np

    rows = []
    for k in POWER_ROWS:
        for n in POWER_SEEDS:
            row = {"rows": k, "seeds": n}
            for delta in DELTAS:
                means = np.r_[np.zeros(k - 1), delta]
                mean, var = draws(rng, tables, np.ones(k), n, means)
                _, best = marks(mean, var, n, "hsu")
                row[f"d{delta:g}"] = float((best == k - 1).mean())
            rows.append(row)
    return rows


def stated_power(rng, tables: int) -> list[dict]:
    """Two rows, equal spreads: the power at the difference zoo states as detectable."""
    import math

    import numpy as np

    from zoo.comparison.stats import detectable

    rows = []
    for n in POWER_SEEDS:
        for k in POWER_ROWS:
            delta = detectable(math.sqrt(2), n, ALPHA / (k - 1))
            means = np.r_[np.zeros(k - 1), delta]
            mean, var = draws(rng, tables, np.ones(k), n, means)
            p = p_values(mean[:, -1], var[:, -1], mean[:, 0], var[:, 0], n, "hsu")
            rows.append(
                {
                    "seeds": n,
                    "rows": k,
                    "detectable": delta,
                    "power": float((p < ALPHA / (k - 1)).mean()),
                }
            )
    return rows


BUDGETS = (5, 10)  # --max-seeds of the sequential procedure
SEQUENTIAL_DELTAS = (1, 2, 3, 4)


def sequential(rng, tables: int, sds, most: int, means=None):
    """Seeds until answered over `tables` tables at once: (the row marked best or -1, the
    seeds each row had, the draws). Each look marks the leader where every Holm-adjusted
    p is below the look's share of alpha; else the leader and the rows not told apart get
    one more seed, up to `most`; the last look the budget allows stops."""
    import numpy as np

    from zoo.sweeps.until_answered import START, look_levels

    k = len(sds)
    x = rng.standard_normal((tables, k, most)) * np.asarray(sds)[None, :, None]
    if means is not None:
        x += np.asarray(means)[None, :, None]
    sums = np.concatenate([np.zeros((tables, k, 1)), np.cumsum(x, 2)], 2)
    squares = np.concatenate([np.zeros((tables, k, 1)), np.cumsum(x * x, 2)], 2)
    n = np.full((tables, k), START)
    active, marked = np.ones(tables, bool), np.full(tables, -1)
    levels = look_levels(1 - ALPHA, most)
    for look, level in enumerate(levels):
        at = np.nonzero(active)[0]
        seeds = n[at]
        total = np.take_along_axis(sums[at], seeds[:, :, None], 2)[:, :, 0]
        square = np.take_along_axis(squares[at], seeds[:, :, None], 2)[:, :, 0]
        mean = total / seeds
        var = (square - total * total / seeds) / (seeds - 1)
        apart, lead = _apart(mean, var, seeds, 1 - level)
        answered = apart.all(1)
        marked[at[answered]] = lead[answered]
        more = ~apart & (seeds < most)
        more[np.arange(len(at)), lead] = seeds[np.arange(len(at)), lead] < most
        more[answered] = False
        grow = more.any(1) & (look < len(levels) - 1)
        n[at[grow]] += more[grow]
        active[at[~grow]] = False
        if not active.any():
            break
    return marked, n, x


def _apart(mean, var, seeds, alpha: float):
    """Per table and row: told apart from the leader (higher is better) by Welch-Hsu tests
    Holm-adjusted over the k - 1 comparisons at `alpha` (the leader counts as apart)."""
    import numpy as np
    from scipy.special import stdtr

    tables, k = mean.shape
    rows = np.arange(tables)
    lead = mean.argmax(1)
    se = np.sqrt(var[rows, lead][:, None] / seeds[rows, lead][:, None] + var / seeds)
    t = (mean[rows, lead][:, None] - mean) / se
    df = np.minimum(seeds[rows, lead][:, None], seeds) - 1.0
    p = 2 * stdtr(df, -np.abs(t))
    p[rows, lead] = np.inf
    order = np.argsort(p, 1)[:, : k - 1]
    ranked = np.take_along_axis(p, order, 1)
    adjusted = np.maximum.accumulate(np.minimum(1, ranked * (k - 1 - np.arange(k - 1))), axis=1)
    apart = np.ones((tables, k), bool)
    np.put_along_axis(apart, order, adjusted < alpha, 1)
    return apart, lead


def zoo_sequential(x, most: int) -> tuple[int, list[int]]:
    """One table (x: rows x seeds drawn) run look by look through zoo's own decisions (the
    marks of zoo.comparison.significance, the seeds of zoo.sweeps.until_answered)."""
    import pandas as pd

    from zoo.comparison.significance import best_marks
    from zoo.sweeps.until_answered import START, look_levels, next_step

    k = len(x)
    n = [START] * k
    levels = look_levels(1 - ALPHA, most)
    for look, level in enumerate(levels):
        cells = pd.DataFrame(
            {
                "model": [f"m{i}" for i in range(k)],
                "dataset": "d",
                "task": "t",
                "metric": "m",
                "better": "higher",
                "mean": [x[r, : n[r]].mean() for r in range(k)],
                "std": [x[r, : n[r]].std(ddof=1) for r in range(k)],
                "n": n,
                "setting": "",
                "runs": [f"r{r}" for r in range(k)],
            }
        )
        best, _, ties = best_marks(cells, ["model"], ["dataset"], level)
        if any(best):
            return best.index(True), n
        step = next_step(ties, {f"r{r}": n[r] for r in range(k)}, most)
        if not step.more or look == len(levels) - 1:
            break
        for runs in step.more:
            n[int(runs[1:])] += 1
    return -1, n


def sequential_rates(rng, tables: int, checked: int) -> tuple[list[dict], list[dict], int]:
    """The false-mark rates (every row equal), the power and seeds (one row better), and how
    many checked tables zoo's own decisions ran otherwise."""
    import numpy as np

    null, disagreements = [], 0
    for pattern in PATTERNS:
        for k in ROWS:
            for most in BUDGETS:
                marked, n, x = sequential(rng, tables, spreads(pattern, k), most)
                for t in range(checked):
                    ours = zoo_sequential(x[t], most)
                    disagreements += ours != (int(marked[t]), n[t].tolist())
                null.append(
                    {
                        "pattern": pattern,
                        "rows": k,
                        "most": most,
                        "false": float((marked >= 0).mean()),
                        "seeds": float(n.mean()),
                    }
                )
    found = []
    for k in POWER_ROWS:
        for delta in SEQUENTIAL_DELTAS:
            means = np.r_[np.zeros(k - 1), delta]
            marked, n, _ = sequential(rng, tables, np.ones(k), BUDGETS[-1], means)
            mean, var = draws(rng, tables, np.ones(k), BUDGETS[-1], means)
            _, fixed = marks(mean, var, BUDGETS[-1], "hsu")
            found.append(
                {
                    "rows": k,
                    "delta": delta,
                    "power": float((marked == k - 1).mean()),
                    "seeds": float(n.mean()),
                    "fixed": float((fixed == k - 1).mean()),
                }
            )
    return null, found, disagreements


def write_sequential(args, rng) -> None:
    start = time.perf_counter()
    checked = args.sequential_checked
    null, found, disagreements = sequential_rates(rng, args.sequential_tables, checked)
    seconds = time.perf_counter() - start
    worst = max(r["false"] for r in null)
    print(f"# sequential: worst false-mark rate {worst:.4f}; {disagreements} disagreements")
    write_results(
        "significance_sequential",
        title="Statistics: seeds until answered (zoo sweep --seeds auto)",
        command="python benchmarks/bench_significance.py --part sequential",
        about=(
            f"Simulated sweeps (no training), {args.sequential_tables:,} tables per "
            "configuration, each row's seeds drawn from a normal distribution: every row "
            "starts with 2 seeds; at each look the leader (higher is better) is marked best "
            "where Welch-Hsu tests, Holm-adjusted, tell it apart from every other row at the "
            "look's share of 5% (shares in proportion to the look's degrees of freedom, "
            "summing to 5% over the most looks the budget allows); otherwise the leader and "
            "the rows not told apart get one more seed, up to the budget (--max-seeds). "
            f"zoo's own code ran {checked} tables of each configuration of equal rows "
            "look by look too and decided "
            + ("alike on every one" if not disagreements else f"otherwise on {disagreements}")
            + ". Variance patterns as in the fixed-seed benchmark. Seeds only: where runs "
            "keep per-example scores, each look's mark also needs the bootstrap's test, "
            "which only removes marks."
        ),
        tables=[
            table(
                "False-mark rate with every row equal in truth (tables with a best mark at "
                "any look), and the seeds a row had when the procedure stopped",
                [
                    ("pattern", "variances"),
                    ("rows", "rows"),
                    ("most", "--max-seeds"),
                    ("false", "false best mark", ".2%"),
                    ("seeds", "seeds a row", ".1f"),
                ],
                null,
            ),
            table(
                f"One row better by delta standard deviations (equal spreads), budget "
                f"{BUDGETS[-1]} seeds: how often it is marked best, the seeds a row had on "
                f"average, and the power of training all {BUDGETS[-1]} seeds of every row "
                "at once (one test at 5%)",
                [
                    ("rows", "rows"),
                    ("delta", "delta"),
                    ("power", "marked, until answered", ".0%"),
                    ("seeds", "seeds a row", ".1f"),
                    ("fixed", f"marked, {BUDGETS[-1]} seeds fixed", ".0%"),
                ],
                found,
            ),
        ],
        notes=[
            f"Worst false-mark rate over every configuration: {worst:.2%} (5% allowed). "
            f"Monte Carlo error of a rate near 5%: about "
            f"{(0.05 * 0.95 / args.sequential_tables) ** 0.5:.2%} (one standard error). "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; {seconds:.0f} s."
        ],
    )


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--tables", type=int, default=100_000, help="tables per configuration of equal rows"
    )
    parser.add_argument(
        "--power-tables", type=int, default=20_000, help="tables per point of the power curves"
    )
    parser.add_argument("--checked", type=int, default=50, help="of them, marked by zoo too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sequential-tables", type=int, default=20_000, help="tables per sequential configuration"
    )
    parser.add_argument(
        "--sequential-checked",
        type=int,
        default=10,
        help="sequential tables per configuration also run through zoo's own decisions",
    )
    parser.add_argument(
        "--part", choices=("all", "fixed", "sequential"), default="all", help="what to run"
    )
    args = parser.parse_args()
    header("significance: false-mark rates and power of zoo compare's marks")
    rng = np.random.default_rng(args.seed)
    if args.part in ("all", "sequential"):
        write_sequential(args, np.random.default_rng(args.seed + 1))
    if args.part == "sequential":
        return
    start = time.perf_counter()
    rates, disagreements = false_marks(rng, args.tables, args.checked)
    curves = power_curves(rng, args.power_tables)
    stated = stated_power(rng, args.power_tables)
    seconds = time.perf_counter() - start
    worst = max(max(r["hsu_dagger"], r["hsu_best"]) for r in rates)
    worst_welch = max(max(r["welch_dagger"], r["welch_best"]) for r in rates)
    print(f"# worst family-wise rate: Hsu {worst:.4f}, Welch {worst_welch:.4f}")
    print(f"# zoo's own marks disagree with the vectorised ones on {disagreements} tables")
    print(f"# {seconds:.0f} s")
    pct = ".1%"
    write_results(
        "significance",
        title="Statistics: false marks and power of the comparison tables",
        about=(
            f"Simulated tables (no training), {args.tables:,} per configuration of equal rows "
            f"and {args.power_tables:,} per point of the power curves: each row's "
            "seeds drawn from a normal distribution, marked as `zoo compare` marks them "
            f"(best: the leader against every other row; †: each row against the first; "
            f"Welch statistics, Holm-adjusted at {ALPHA:.0%}). zoo's own code marked "
            f"{args.checked} tables of each configuration too and agreed on "
            f"{'every one' if not disagreements else f'all but {disagreements}'}. "
            "Variance patterns: "
            + "; ".join(f"{name}: {what}" for name, what in PATTERNS.items())
            + "."
        ),
        tables=[
            table(
                "Family-wise false-mark rate, every row equal in truth (the rate of tables "
                "with any false mark): Welch's df (the test before) against Hsu's df "
                "min(n) - 1 (the test zoo uses)",
                [
                    ("pattern", "variances"),
                    ("rows", "rows"),
                    ("seeds", "seeds"),
                    ("welch_dagger", "† Welch df", pct),
                    ("hsu_dagger", "† Hsu df", pct),
                    ("welch_best", "best Welch df", pct),
                    ("hsu_best", "best Hsu df", pct),
                ],
                rates,
            ),
            table(
                "Power: how often one row better by delta standard deviations (equal "
                "spreads) is marked best",
                [("rows", "rows"), ("seeds", "seeds")]
                + [(f"d{d:g}", f"delta {d:g}", ".0%") for d in DELTAS],
                curves,
            ),
            table(
                "The detectable difference zoo states (80% power, alpha split over the "
                "k - 1 comparisons), in standard deviations of one seed, and the power a "
                "comparison has at it",
                [
                    ("seeds", "seeds"),
                    ("rows", "rows"),
                    ("detectable", "detectable difference", ".2f"),
                    ("power", "simulated power", pct),
                ],
                stated,
            ),
        ],
        notes=[
            f"Worst family-wise rate over every configuration: {worst:.2%} with Hsu's df, "
            f"{worst_welch:.2%} with Welch's. Monte Carlo error of a rate near 5%: about "
            f"{(0.05 * 0.95 / args.tables) ** 0.5:.2%} (one standard error). "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; {seconds:.0f} s."
        ],
    )


if __name__ == "__main__":
    main()
