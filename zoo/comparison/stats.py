"""Small statistics for comparison tables: Student t quantiles and tail probabilities,
Welch and paired intervals, and Holm's adjustment for several comparisons.

No scipy: Student's t tail is the regularized incomplete beta function
P(|T| >= t) = I_{df/(df+t^2)}(df/2, 1/2), evaluated by its continued fraction (modified
Lentz); the quantile inverts it by bisection. Accurate to about 1e-12 for any real df >= 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):  # where the fraction converges fast
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df >= 1, any real)."""
    if not df >= 1:
        raise ValueError(f"df must be at least 1, got {df}")
    if math.isinf(t):
        return 0.0
    if df > 1e7:  # indistinguishable from the normal distribution
        return 2 * (1 - NormalDist().cdf(abs(t)))
    return incomplete_beta(df / 2, 0.5, df / (df + t * t))


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (df >= 1, any real)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df >= 1:
        raise ValueError(f"df must be at least 1, got {df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if p == 0.5:
        return 0.0
    if df > 1e7:
        return NormalDist().inv_cdf(p)
    tail = 2 * (1 - p)  # the two-sided tail beyond the quantile
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > tail:
        low, high = high, high * 2
    # Newton's steps on the tail (its slope is twice the density), kept inside the bracket
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    t = (low + high) / 2
    for _ in range(100):
        excess = t_two_sided_p(t, df) - tail
        if excess > 0:
            low = t
        else:
            high = t
        density = math.exp(log_scale - (df + 1) / 2 * math.log1p(t * t / df))
        step = excess / (2 * density)
        if abs(step) <= 1e-14 * t:  # converged (before the bracket test: t is now one end)
            return t + step
        guess = t + step
        t = guess if low < guess < high else (low + high) / 2
        if high - low <= 1e-14 * high:
            break
    return t


def percent(level: float) -> str:
    """A confidence as tables print it: '95%', '99.4%'."""
    return f"{level * 100:.3g}%"


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


ONE_SEED = "cannot test: n<2"
NO_VARIANCE = "no seed variance"


@dataclass
class Interval:
    diff: float  # mean(a) - mean(b)
    low: float  # NaN when there is no interval (see `untestable`)
    high: float
    df: float

    p: float = math.nan  # two-sided p-value of "no difference"; NaN when untestable
    untestable: str | None = None  # why there is no interval: ONE_SEED or NO_VARIANCE
    tested: str = "Welch"  # by what: "Welch", or "Welch and bootstrap" (the examples too)

    @property
    def significant(self) -> bool | None:
        """Whether the interval excludes 0; None when there is no interval (n < 2, or no
        seed variance: a zero-width interval tests nothing, so it has no ends at all)."""
        if self.untestable or math.isnan(self.low) or math.isnan(self.high):
            return None
        return self.low > 0 or self.high < 0


def no_spread(sd: float, scale: float) -> bool:
    """Whether a standard deviation is rounding alone: figures equal at every seed give
    about 1e-17 for a mean of 0.1, not 0."""
    return sd <= 1e-12 * max(1.0, abs(scale))


def welch_interval(
    mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int, level: float = 0.95
) -> Interval:
    """Confidence interval for mean(a) - mean(b) without assuming equal variances: Welch's
    statistic with Hsu's conservative degrees of freedom, min(n_a, n_b) - 1. With a few
    seeds, Welch-Satterthwaite's estimated df runs above the truth when the two variances
    differ (a steady baseline against a noisy row), and its tests reject too often
    (measured by benchmarks/bench_significance.py); Hsu's df holds the level for any ratio
    of the variances, at some cost in power."""
    diff = mean_a - mean_b
    nan = float("nan")
    if n_a < 2 or n_b < 2 or math.isnan(sd_a) or math.isnan(sd_b):
        return Interval(diff, nan, nan, nan, untestable=ONE_SEED)
    # equal figures at every seed, up to the rounding of their mean: no spread at all
    sd_a, sd_b = (
        0.0 if no_spread(sd, mean) else sd for sd, mean in ((sd_a, mean_a), (sd_b, mean_b))
    )
    var_a, var_b = sd_a**2 / n_a, sd_b**2 / n_b
    se = math.sqrt(var_a + var_b)
    if se == 0:  # no seed variance on either side: nothing to test the difference against
        return Interval(diff, nan, nan, nan, untestable=NO_VARIANCE)
    df = hsu_df(n_a, n_b)
    margin = t_quantile(0.5 + level / 2, df) * se
    return Interval(diff, diff - margin, diff + margin, df, t_two_sided_p(diff / se, df))


def hsu_df(n_a: int, n_b: int) -> float:
    """The degrees of freedom of a Welch comparison (see welch_interval)."""
    return float(min(n_a, n_b) - 1)


def t_test_power(shift: float, df: float, alpha: float) -> float:
    """The power of a two-sided t test at `alpha` when the statistic is noncentral t with
    `df` degrees of freedom and noncentrality `shift` (the true difference over its
    standard error): E over s = sqrt(chi2_df / df) of P(|Z + shift| > c * s), by the
    midpoint rule over s (its density is 2 df s f_chi2(df s^2))."""
    c = t_quantile(1 - alpha / 2, df)
    return float(_powers([shift], [df], [c])[0])


_STEPS = 2000  # midpoints of the integral over s


def _powers(shifts, dfs, cs):
    """t_test_power for many tests at once (numpy over tests x midpoints): noncentralities
    `shifts`, degrees of freedom `dfs`, critical values `cs`."""
    import numpy as np

    shift, df, c = (np.asarray(v, dtype=np.float64)[:, None] for v in (shifts, dfs, cs))
    top = np.sqrt(1 + 12 * np.sqrt(2 / df) + 60 / df)  # s beyond this: under 1e-9
    width = top / _STEPS
    s = (np.arange(_STEPS) + 0.5) * width  # (tests, steps)
    v = df * s * s
    log_front = np.log(2 * df) - (df / 2) * math.log(2) - _log_gamma(df / 2)
    density = np.exp(log_front + np.log(s) + (df / 2 - 1) * np.log(v) - v / 2)
    tails = erfc((c * s - shift) / math.sqrt(2)) + erfc((c * s + shift) / math.sqrt(2))
    total = (density * 0.5 * tails * width).sum(axis=1)
    return np.minimum(1.0, total)


_ERFC_FIT = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)


def erfc(x):
    """The complementary error function over a numpy array (numpy has none, and scipy is
    no dependency): the Chebyshev fit of Numerical Recipes (Press et al., 2nd ed., 6.2),
    relative error under 1.2e-7 everywhere, far below what a power of 80% needs."""
    import numpy as np

    z = np.abs(x)
    t = 1 / (1 + 0.5 * z)
    poly = np.zeros_like(t)
    for coefficient in _ERFC_FIT:  # Horner's rule, the highest power first
        poly = poly * t + coefficient
    found = t * np.exp(-z * z + poly)
    return np.where(x >= 0, found, 2 - found)


def _log_gamma(values):
    import numpy as np

    return np.array([[math.lgamma(float(x))] for x in np.ravel(values)])


def detectable(spread: float, n: int, alpha: float, power: float = 0.8) -> float:
    """The smallest true difference that a comparison of n seeds a side finds with
    probability `power` at a two-sided `alpha`, where one seed's figures differ by `spread`
    (sqrt(sd_a^2 + sd_b^2)): the noncentral t power of Hsu's n - 1 degrees of freedom,
    which is the least a Welch test with those df has, solved for the difference."""
    return float(detectable_differences([spread], [n], [alpha], power)[0])


def detectable_differences(spreads, ns, alphas, power: float = 0.8, floors=None):
    """`detectable` for many comparisons at once: the noncentrality that reaches `power` is
    solved once per distinct (n, alpha) of the comparisons, all of them together. `floors`,
    where given, is each comparison's variance of the difference from the evaluation set's
    examples alone (0 where they are not counted): the standard error the noncentrality
    multiplies is then sqrt(spread^2 / n + floor), the two-level variance, at Hsu's df (the
    examples' bootstrap alone would need less: the figure is conservative)."""
    import numpy as np

    spreads = np.asarray(spreads, dtype=np.float64)
    ns = np.asarray(ns, dtype=np.float64)
    floors = np.zeros(len(spreads)) if floors is None else np.asarray(floors, dtype=np.float64)
    found = np.full(len(spreads), np.nan)
    usable = (ns >= 2) & ((spreads > 0) | (floors > 0))
    pairs = sorted({(int(n), float(a)) for n, a in zip(ns[usable], np.asarray(alphas)[usable])})
    shifts = dict(zip(pairs, _shifts_at_power(pairs, power)))
    for i in np.nonzero(usable)[0]:
        shift = shifts[(int(ns[i]), float(alphas[i]))]
        found[i] = shift * math.sqrt(spreads[i] ** 2 / ns[i] + floors[i])
    return found


def _shifts_at_power(pairs: list[tuple[int, float]], power: float) -> list[float]:
    """For each (n, alpha), the noncentrality at which a t test with n - 1 degrees of
    freedom has `power`: bracketed by doubling, then bisected to 1e-4 of its size, every
    pair in one numpy step (cached: a table repeats its pairs, and tables repeat tables)."""
    import numpy as np

    todo = [pair for pair in pairs if (pair, power) not in _SHIFTS]
    if todo:
        df = np.array([n - 1.0 for n, _ in todo])
        c = np.array([t_quantile(1 - alpha / 2, n - 1) for n, alpha in todo])
        low, high = np.zeros(len(todo)), np.ones(len(todo))
        short = _powers(high, df, c) < power
        while short.any():  # only the pairs still short of the power are computed again
            low[short], high[short] = high[short], high[short] * 2
            short[short] = _powers(high[short], df[short], c[short]) < power
        wide = high - low > 1e-4 * high
        while wide.any():
            middle = (low[wide] + high[wide]) / 2
            below = _powers(middle, df[wide], c[wide]) < power
            low[wide], high[wide] = (
                np.where(below, middle, low[wide]),
                np.where(below, high[wide], middle),
            )
            wide = high - low > 1e-4 * high
        _SHIFTS.update({(pair, power): float(h) for pair, h in zip(todo, high)})
    return [_SHIFTS[(pair, power)] for pair in pairs]


_SHIFTS: dict = {}  # ((n, alpha), power) -> the noncentrality that reaches the power


def seeds_needed(
    diff: float,
    sd_a: float,
    sd_b: float,
    alpha: float,
    power: float = 0.8,
    most: int = 1000,
    floor: float = 0.0,
) -> int | None:
    """How many seeds a side would tell a true difference `diff` apart at `alpha` with
    `power`, for these per-seed standard deviations and `floor`, the variance of the
    difference from the evaluation set's examples (which more seeds do not remove); None
    beyond `most` (or no difference: floor_bars tells whether the examples alone do)."""
    spread = math.hypot(sd_a, sd_b)
    if not (spread > 0 or floor > 0) or not abs(diff) > 0:
        return None

    def enough(n: int) -> bool:
        se = math.sqrt(spread**2 / n + floor)
        return t_test_power(abs(diff) / se, n - 1, alpha) >= power

    if not enough(most):
        return None
    low, high = 1, most  # the power grows with n: the first n that has enough
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def floor_bars(
    diff: float, floor: float, alpha: float, power: float = 0.8, most: int = 1000
) -> bool:
    """Whether the examples' variance alone (`floor`) keeps `diff` from being found with
    `power` at `most` seeds a side, whatever the seeds' spread: no number of seeds
    settles it, a larger evaluation set might."""
    if not floor > 0:
        return False
    return t_test_power(abs(diff) / math.sqrt(floor), most - 1, alpha) < power


def paired_interval(a: list[float], b: list[float], level: float = 0.95) -> Interval:
    """Confidence interval for the mean of a[i] - b[i] (the same seeds on both sides): a
    t interval over the differences, df = n - 1."""
    diffs = [x - y for x, y in zip(a, b)]
    nan = float("nan")
    if not diffs:
        return Interval(nan, nan, nan, nan, untestable=ONE_SEED)
    mean = sum(diffs) / len(diffs)
    if len(diffs) < 2:
        return Interval(mean, nan, nan, nan, untestable=ONE_SEED)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    df = len(diffs) - 1
    # the same difference at every seed, up to the rounding of the subtractions: no test
    if no_spread(sd, max([0.0] + [abs(x) for x in (*a, *b)])):
        return Interval(mean, nan, nan, df, untestable=NO_VARIANCE)
    se = sd / math.sqrt(len(diffs))
    margin = t_quantile(0.5 + level / 2, df) * se
    return Interval(mean, mean - margin, mean + margin, df, t_two_sided_p(mean / se, df))
