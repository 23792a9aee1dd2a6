"""Small statistics for comparison tables: Student t quantiles and Welch intervals.

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


@dataclass
class Interval:
    diff: float  # mean(a) - mean(b)
    low: float  # NaN when either side has fewer than 2 runs
    high: float
    df: float

    @property
    def significant(self) -> bool | None:
        """Whether the interval excludes 0; None when there is no interval."""
        if math.isnan(self.low) or math.isnan(self.high):
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
    if se == 0:  # both sides constant: the difference is exact
        return Interval(diff, diff, diff, math.inf)
    df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    margin = t_quantile(0.5 + level / 2, df) * se
    return Interval(diff, diff - margin, diff + margin, df)
