"""Small statistics for comparison tables: Student t quantiles and tail probabilities,
Welch and paired intervals, and Holm's adjustment for several comparisons.

No scipy: the t quantile comes from the distribution function written as an integral over
a bounded angle (t = sqrt(df) tan(theta)), whose integrand cos(theta)^(df-1) is smooth for
df >= 1, integrated on a fine grid. Accurate to about 1e-8 for the df a comparison meets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

_GRID = 200_001


def t_cdf_half(theta, df: float):
    """P(0 < T < sqrt(df) tan(theta)) for each angle on a grid from 0 to pi/2."""
    import numpy as np

    scale = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(math.pi)
    density = np.cos(theta) ** (df - 1)
    steps = (density[1:] + density[:-1]) / 2 * np.diff(theta)  # trapezoids
    return scale * np.concatenate([[0.0], np.cumsum(steps)])


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (df >= 1, any real)."""
    import numpy as np

    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df >= 1:
        raise ValueError(f"df must be at least 1, got {df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if p == 0.5:
        return 0.0
    if df > 1e7:  # indistinguishable from the normal distribution
        return NormalDist().inv_cdf(p)
    theta = np.linspace(0.0, math.pi / 2, _GRID)
    half = t_cdf_half(theta, df)
    angle = float(np.interp(p - 0.5, half, theta))
    return math.sqrt(df) * math.tan(angle)


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df >= 1)."""
    import numpy as np

    if not df >= 1:
        raise ValueError(f"df must be at least 1, got {df}")
    if math.isinf(t):
        return 0.0
    if df > 1e7:
        return 2 * (1 - NormalDist().cdf(abs(t)))
    angle = math.atan(abs(t) / math.sqrt(df))
    theta = np.linspace(0.0, angle, _GRID)
    return max(0.0, 1.0 - 2.0 * float(t_cdf_half(theta, df)[-1]))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error held at the level for any
    dependence between the tests); NaN (no test possible) stays NaN and is not counted."""
    order = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p))
        adjusted[i] = running
    return adjusted


@dataclass
class Interval:
    diff: float  # mean(a) - mean(b)
    low: float  # NaN when either side has fewer than 2 runs
    high: float
    df: float

    p: float = math.nan  # two-sided p-value of "no difference"; NaN when untestable

    @property
    def significant(self) -> bool | None:
        """Whether the interval excludes 0; None when there is no interval (n < 2, or no
        seed variance: a zero-width interval tests nothing)."""
        if math.isnan(self.low) or math.isnan(self.high) or self.low == self.high:
            return None
        return self.low > 0 or self.high < 0


def welch_interval(
    mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int, level: float = 0.95
) -> Interval:
    """Confidence interval for mean(a) - mean(b) without assuming equal variances."""
    diff = mean_a - mean_b
    nan = float("nan")
    if n_a < 2 or n_b < 2 or math.isnan(sd_a) or math.isnan(sd_b):
        return Interval(diff, nan, nan, nan)
    var_a, var_b = sd_a**2 / n_a, sd_b**2 / n_b
    se = math.sqrt(var_a + var_b)
    if se == 0:  # no seed variance on either side: nothing to test the difference against
        return Interval(diff, diff, diff, math.inf)
    df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    margin = t_quantile(0.5 + level / 2, df) * se
    return Interval(diff, diff - margin, diff + margin, df, t_two_sided_p(diff / se, df))


def paired_interval(a: list[float], b: list[float], level: float = 0.95) -> Interval:
    """Confidence interval for the mean of a[i] - b[i] (the same seeds on both sides): a
    t interval over the differences, df = n - 1."""
    diffs = [x - y for x, y in zip(a, b)]
    nan = float("nan")
    if not diffs:
        return Interval(nan, nan, nan, nan)
    mean = sum(diffs) / len(diffs)
    if len(diffs) < 2:
        return Interval(mean, nan, nan, nan)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    df = len(diffs) - 1
    if sd == 0:
        return Interval(mean, mean, mean, df)
    se = sd / math.sqrt(len(diffs))
    margin = t_quantile(0.5 + level / 2, df) * se
    return Interval(mean, mean - margin, mean + margin, df, t_two_sided_p(mean / se, df))
