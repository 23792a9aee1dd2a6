"""Which cell is best, and by how much, with marks that mean what they say.

Best: the leading row of a column is marked only when Welch's test (with Hsu's conservative
df, zoo.comparison.stats.welch_interval) tells it apart from every other row of the column,
the k-1 tests Holm-adjusted; otherwise a note names the rows that cannot be told apart.
Baseline: each row's difference to the baseline row of its column with its interval; its
mark is Holm-adjusted over the column's comparisons. Power: what difference each column's
seeds (and examples, where counted) could find, and how many seeds would tell the
runner-up from the leader.

A comparison that cannot be tested (a side with one seed, or no seed variance on either
side: a zero-width interval tests nothing) never gets a mark and says why."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from zoo.comparison.labels import key_text, row_text, short_value, unique_keys
from zoo.comparison.stats import percent
from zoo.errors import UnknownNameError, ZooError


def untestable(interval) -> str | None:
    """Why a Welch comparison has no test, or None when it has one."""
    return interval.untestable


BOTH = "Welch and bootstrap"  # the test name where the examples are counted too


def _compare(a, b, level: float, replicates=None):
    """Welch's interval (Hsu's df) of a - b; where both cells have bootstrap replicates
    (zoo.comparison.bootstrap: seeds and examples resampled), the difference must pass
    both tests (p the larger of the two, the interval spanning both), so counting the
    evaluation set's noise only ever removes marks. With no seed variance the examples'
    bootstrap alone tests; with one seed nothing does (the seed variance is unknown)."""
    from zoo.comparison.bootstrap import difference
    from zoo.comparison.stats import NO_VARIANCE, Interval, welch_interval

    interval = welch_interval(a["mean"], a["std"], a["n"], b["mean"], b["std"], b["n"], level)
    drawn = replicates or {}
    if a.name not in drawn or b.name not in drawn or interval.untestable not in (None, NO_VARIANCE):
        return interval
    boot = difference(interval.diff, drawn[a.name], drawn[b.name], level)
    if interval.untestable == NO_VARIANCE:
        return Interval(interval.diff, boot.low, boot.high, math.nan, boot.p, tested=BOTH)
    return Interval(
        interval.diff,
        min(boot.low, interval.low),
        max(boot.high, interval.high),
        interval.df,
        max(boot.p, interval.p),
        tested=BOTH,
    )


def columns_of(table, column_keys):
    """The table's columns: its cells grouped by column keys, task and metric."""
    return table.groupby(unique_keys(column_keys + ["task", "metric"]), sort=False)


@dataclass
class Tie:
    """A column whose leader is not told apart from every other row: the cells (by their
    runs, as the table lists them) that more seeds would have to tell apart, and why."""

    where: str  # the column: 'tiny-digits'
    leader: str  # the leader's runs
    leader_text: str  # its row label
    tied: list[tuple[str, str, str]]  # (runs, row label, why) of each row not told apart


def best_marks(
    table, rows_keys, column_keys, level: float, reported=frozenset(), replicates=None
) -> tuple[list[bool], list[str], list[Tie]]:
    """True for a column's leading row where it beats every other row of the column
    (Welch, Holm-adjusted over the k-1 tests, at `level`); otherwise a note names the rows
    that cannot be told apart from it, and which comparisons cannot be tested at all, and a
    Tie lists them. Columns of a `reported` metric (a test figure beside the validation one
    ranked on) get no mark."""
    from zoo.comparison.stats import holm

    best, ties = [False] * len(table), []
    for _, group in columns_of(table, column_keys):
        better = group["better"].iloc[0]
        if better not in ("lower", "higher") or len(group) < 2:
            continue
        if group["metric"].iloc[0] in reported:
            continue
        ranked = group.sort_values("mean", ascending=better == "lower", kind="stable")
        leader, others = ranked.iloc[0], [row for _, row in ranked.iloc[1:].iterrows()]
        tests = [_compare(leader, other, level, replicates) for other in others]
        adjusted = holm([t.p for t in tests])
        apart = [not math.isnan(p) and p < 1 - level for p in adjusted]
        if all(apart):
            best[table.index.get_loc(ranked.index[0])] = True
            continue
        tied = [
            (
                str(o.get("runs")),
                row_text(o, rows_keys),
                untestable(t) or f"Holm-adjusted p={p:.2g}",
            )
            for o, a, t, p in zip(others, apart, tests, adjusted)
            if not a
        ]
        where = " / ".join(key_text(leader[k]) for k in column_keys)
        ties.append(Tie(where, str(leader.get("runs")), row_text(leader, rows_keys), tied))
    notes = []
    if ties:
        unclear = [
            f"on {tie.where}, {tie.leader_text} leads but is not told apart from "
            + ", ".join(f"{text} ({why})" for _, text, why in tie.tied)
            for tie in ties
        ]
        notes.append(
            f"no best marked (the leader must differ from every other row: Welch tests at "
            f"{percent(level)} with Hsu's df, Holm-adjusted): "
            + "; ".join(unclear[:5])
            + (f"; and {len(unclear) - 5} more" if len(unclear) > 5 else "")
        )
    return best, notes, ties


def with_baseline(table, rows_keys, column_keys, baseline: str, level: float, replicates=None):
    """Each cell against the baseline row of its column: `baseline` is a full row label
    ('decoder-char (steps=100)'), or a first key with settings that pick one row
    ('encoder-bpe (steps=270)'), or a first key alone, paired by setting where it names
    several rows. Marks are Holm-adjusted over each column's comparisons."""
    import pandas as pd

    from zoo.comparison.stats import holm

    is_baseline = _matching(table, rows_keys, baseline)
    empty = dict(diff=math.nan, ci_low=math.nan, ci_high=math.nan, df=math.nan, p=math.nan)
    results: dict[Any, dict[str, Any]] = {
        index: {**empty, "p_holm": math.nan, "significant": None, "test": None}
        for index in table.index
    }
    ambiguous: set[str] = set()
    for _, group in columns_of(table, column_keys):
        candidates = group[is_baseline[group.index]]
        tested = []
        for index, row in group.iterrows():
            if bool(is_baseline[index]):
                continue
            reference = candidates
            if len(reference) > 1:
                reference = reference[reference["setting"] == row["setting"]]
            if len(reference) != 1:
                if len(candidates) > 1:
                    ambiguous.update(row_text(c, rows_keys) for _, c in candidates.iterrows())
                continue
            interval = _compare(row, reference.iloc[0], level, replicates)
            reason = untestable(interval)
            results[index].update(
                diff=interval.diff,
                ci_low=interval.low,
                ci_high=interval.high,
                df=interval.df,
                p=interval.p,
                test=reason or interval.tested,
            )
            if reason is None:
                tested.append(index)
        for index, p in zip(tested, holm([results[i]["p"] for i in tested])):
            results[index].update(p_holm=p, significant=bool(p < 1 - level))
    if ambiguous:
        raise ZooError(
            f"baseline {baseline!r} names several rows of a column; name one: "
            + "; ".join(sorted(ambiguous)),
            option="baseline",
        )
    if all(math.isnan(r["diff"]) for r in results.values()):
        labels = sorted({row_text(c, rows_keys) for _, c in table.iterrows()})
        raise ZooError(
            f"baseline {baseline!r}: no row of the table has a baseline to compare with "
            "(it matches every row, or none shares a column with it); rows: " + "; ".join(labels),
            option="baseline",
        )
    added = pd.DataFrame([results[i] for i in table.index])
    added.insert(0, "baseline", baseline)
    return pd.concat([table.reset_index(drop=True), added], axis=1)


_LABEL = re.compile(r"^(?P<name>.*?) \((?P<settings>[^()]*)\)$")


def _matching(table, rows_keys, baseline: str):
    """Which rows `baseline` names (see with_baseline); an unknown one is exit 2 with a
    did-you-mean over the table's row labels."""
    labels = table.apply(lambda c: row_text(c, rows_keys), axis=1)
    if baseline in set(labels):
        return labels == baseline
    names = table.apply(lambda c: " / ".join(str(c[k]) for k in rows_keys), axis=1)
    match = _LABEL.match(baseline)
    name, wanted = (match["name"], match["settings"]) if match else (baseline, "")
    chosen = names == name
    for part in filter(None, (p.strip() for p in wanted.split(","))):
        key, _, value = part.partition("=")
        chosen &= table["_settings"].map(lambda s, k=key, v=value: _has_setting(s, k, v))
    if not chosen.any():
        raise UnknownNameError(
            f"baseline {rows_keys[0]}",
            baseline,
            sorted(set(names) | set(labels)),
            hint="it must be one of the rows of the table",
        )
    return chosen


def _has_setting(settings: dict, key: str, value: str) -> bool:
    key, value = key.strip(), value.strip()
    found = [v for k, v in settings.items() if k == key or k.rpartition(".")[2] == key]
    if not found:
        return value == "-"
    return any(short_value(v) == value or str(v) == value for v in found)


def power_notes(
    table, rows_keys, column_keys, level: float, reported=frozenset(), examples_alone=None
) -> tuple[list[float], list[str]]:
    """What each column's seeds could have found: per row, the smallest true difference to
    the column's leader that its comparison finds with 80% power (at `level`, the error
    split over the column's k-1 comparisons as Holm's strictest step splits it; Hsu's df),
    NaN where there is no test; a note per column naming the rows that trail the leader by
    less, and how many seeds a side would tell the runner-up from the leader at the
    spread observed, where the leader is not marked. Where both cells have replicates of
    their examples alone (`examples_alone`: zoo.comparison.bootstrap.column_replicates),
    the variance of their difference over those replicates is added to the seeds': the
    evaluation set's noise, which no number of seeds removes. The differences of every
    column are solved together (zoo.comparison.stats.detectable_differences)."""
    from zoo.comparison.stats import detectable_differences

    floors = _floors(examples_alone or {})
    columns = list(_ranked_columns(table, column_keys, level, reported))
    tests = [test for ranked, alpha in columns for test in _tests(ranked, alpha, floors)]
    spreads, seeds, alphas, floor = ([test[k] for _, test in tests] for k in range(4))
    values = detectable_differences(spreads, seeds, alphas, floors=floor) if tests else []
    least = {index: float(value) for (index, _), value in zip(tests, values)}
    found = [math.nan] * len(table)
    for index, value in least.items():
        found[table.index.get_loc(index)] = value
    notes = [
        note
        for ranked, alpha in columns
        if (note := _power_note(table, ranked, alpha, least, rows_keys, column_keys, floors))
    ]
    if notes:
        counted = (
            "; where a column counts its examples, their bootstrap variance is added to the seeds'"
            if any(floor)
            else ""
        )
        notes = [
            f"power (Welch-Hsu tests at {percent(level)}, the error split over each column's "
            f"comparisons{counted}): " + "; ".join(notes)
        ]
    return found, notes


def _floors(examples_alone: dict):
    """(a, b) -> the variance of a - b over the replicates of the examples alone."""
    import numpy as np

    def floor(a, b) -> float:
        if a not in examples_alone or b not in examples_alone:
            return 0.0
        return float(np.var(examples_alone[a] - examples_alone[b], ddof=1))

    return floor


def _ranked_columns(table, column_keys, level: float, reported):
    """Each column that ranks its rows: its cells, the leader first, and the error rate of
    each of its k - 1 comparisons."""
    for _, group in columns_of(table, column_keys):
        better = group["better"].iloc[0]
        if better not in ("lower", "higher") or len(group) < 2:
            continue
        if group["metric"].iloc[0] in reported:
            continue
        ranked = group.sort_values("mean", ascending=better == "lower", kind="stable")
        yield ranked, (1 - level) / (len(group) - 1)


def _tests(ranked, alpha: float, floors):
    """(row index, (spread, n, alpha, floor)) of each comparison of a column with its
    leader that can be tested."""
    from zoo.comparison.stats import no_spread

    leader = ranked.iloc[0]
    for index, row in ranked.iloc[1:].iterrows():
        n = min(int(leader["n"]), int(row["n"]))
        sds = [0.0 if no_spread(c["std"], c["mean"]) else c["std"] for c in (leader, row)]
        floor = floors(leader.name, index)
        if n < 2 or math.isnan(sds[0]) or math.isnan(sds[1]) or not (any(sds) or floor > 0):
            continue
        yield index, (math.hypot(*sds), n, alpha, floor)


def _power_note(table, ranked, alpha, least, rows_keys, column_keys, floors) -> str | None:
    leader = ranked.iloc[0]
    smallest = [least[i] for i in ranked.index[1:] if i in least]
    if not smallest:
        return None
    within = []
    for index, row in ranked.iloc[1:].iterrows():
        behind = abs(leader["mean"] - row["mean"])
        if index in least and behind < least[index]:
            within.append(f"{row_text(row, rows_keys)} ({_figure(behind, least[index])} behind)")
    where = " / ".join(key_text(leader[k]) for k in column_keys)
    low, high = min(smallest), max(smallest)
    size = _figure(low, low) + (f" to {_figure(high, low)}" if high > low * 1.005 else "")
    counted = any(floors(leader.name, i) > 0 for i in ranked.index[1:])
    text = (
        f"on {where}, these {'seeds and examples' if counted else 'seeds'} find a row "
        f"{size} or more behind {row_text(leader, rows_keys)} with 80% probability"
    )
    if within:
        text += "; closer, and so easily missed: " + ", ".join(within[:5])
        text += f" and {len(within) - 5} more" if len(within) > 5 else ""
    if not bool(table.loc[leader.name, "best"]):
        runner_up = ranked.iloc[1]
        floor = floors(leader.name, runner_up.name)
        text += _seeds_to_tell(leader, runner_up, rows_keys, alpha, floor)
    return text


def _seeds_to_tell(leader, runner_up, rows_keys, alpha: float, floor: float = 0.0) -> str:
    """'; about 12 seeds a side would tell ... apart', at the spread observed; or that the
    examples' noise alone keeps them apart from any number of seeds."""
    from zoo.comparison.stats import floor_bars, no_spread, seeds_needed

    sds = [0.0 if no_spread(c["std"], c["mean"]) else c["std"] for c in (leader, runner_up)]
    if any(math.isnan(sd) for sd in sds) or not (any(sds) or floor > 0):
        return ""
    diff = leader["mean"] - runner_up["mean"]
    name = row_text(runner_up, rows_keys)
    if floor_bars(diff, floor, alpha):
        return (
            f"; no number of seeds would tell {name} from it: the evaluation set's own noise "
            f"(sd {_figure(math.sqrt(floor), math.sqrt(floor))} on the difference) alone "
            "hides a gap this small; more test examples might"
        )
    needed = seeds_needed(diff, sds[0], sds[1], alpha, floor=floor)
    if needed is None:
        return f"; more than 1000 seeds a side would be needed to tell {name} from it"
    return f"; about {needed} seeds a side would tell {name} from it at the spread observed"


def _figure(value: float, like: float) -> str:
    """A difference with the significant digits of `like`."""
    if not math.isfinite(like) or like == 0:
        return f"{value:.3g}"
    places = max(0, 2 - math.floor(math.log10(abs(like))))
    return f"{value:.{places}f}"
