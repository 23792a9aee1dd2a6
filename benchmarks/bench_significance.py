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

    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py              # a few minutes
    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py --tables 2000 --power-tables 2000
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
    args = parser.parse_args()
    header("significance: false-mark rates and power of zoo compare's marks")
    rng = np.random.default_rng(args.seed)
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
