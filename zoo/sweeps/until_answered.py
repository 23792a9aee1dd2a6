"""Seeds until answered (`zoo sweep --seeds auto --max-seeds N`): every row of the sweep
starts with START seeds; after each look (the comparison of what has trained so far), the
rows still tied with their column's leader, and the leader, get one more seed each, until
every column's leader is told apart from every other row or the rows tied with it have N
seeds. Rows already told apart from the leader get no more.

The error of the whole procedure: a leader is marked best at whichever look first tells it
apart, so every look is one more chance of a false mark. Each look therefore tests at its
own share of the table's error rate: look j (j = 0, 1, ...) at alpha_j = alpha * (n_j - 1)
/ sum(n_m - 1), where n_j = START + j and the sum runs over the most looks the budget
allows (n_m = START ... N). The shares sum to alpha, so by the union bound (Bonferroni) the
chance of any false best mark over all the looks is at most alpha, however the looks
depend on each other and whichever rows get seeds. The shares grow with the degrees of
freedom of the look's Hsu tests: a look at 2 seeds (one degree of freedom) finds little and
spends little. benchmarks/bench_significance.py simulates the procedure (its false-mark
rate, its power and the seeds it spends) and checks its decisions against this module's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zoo.comparison.stats import percent

if TYPE_CHECKING:
    from zoo.comparison.table import Comparison

START = 2  # seeds every row starts with: the fewest a test needs
DEFAULT_MOST = 10  # --max-seeds when not given


def look_levels(level: float, most: int, start: int = START) -> list[float]:
    """The confidence each look tests at, in order (see the module's docstring): the
    error rate 1 - `level` split over the looks at start, start + 1, ..., `most` seeds in
    proportion to their degrees of freedom."""
    weights = [n - 1 for n in range(start, most + 1)]
    return [1 - (1 - level) * w / sum(weights) for w in weights]


@dataclass
class Step:
    """What one look decided: the table's cells (by their runs) that get one more seed,
    what to say about each column, and the columns whose budget ran out unanswered."""

    more: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    spent: list[str] = field(default_factory=list)


def next_step(ties, seeds: dict[str, int], most: int) -> Step:
    """For each column whose leader is not told apart (`ties`: zoo.comparison.significance
    .Tie), one more seed for the leader and the rows tied with it that have fewer than
    `most` (`seeds`: a cell's runs -> the seeds its row has had); a column none of whose
    rows may have more is spent."""
    step = Step()
    for tie in ties:
        wanted = [(tie.leader, tie.leader_text)] + [(runs, text) for runs, text, _ in tie.tied]
        more = [(runs, text) for runs, text in wanted if seeds.get(runs, most) < most]
        why = ", ".join(f"{text} ({reason})" for _, text, reason in tie.tied)
        if not more:
            step.spent.append(
                f"on {tie.where}, {tie.leader_text} is still not told apart from {why} "
                f"with {most} seeds (--max-seeds)"
            )
            continue
        step.more += [runs for runs, _ in more]
        step.lines.append(
            f"  on {tie.where}, {tie.leader_text} leads but is not told apart from {why}: "
            "one more seed for "
            + ", ".join(f"{text} (to {seeds[runs] + 1})" for runs, text in more)
        )
    return step


def run_until_answered(
    sweep,
    *,
    most: int,
    level: float,
    train: Callable[[], None],
    compare: Callable[[float], Comparison | None],
    say: Callable[[str], None],
) -> Comparison | None:
    """Train the sweep's cells, compare, and add seeds to the rows still tied (next_step)
    until every column is answered, its rows have `most` seeds, or the looks the budget
    allows are spent. `train()` trains the sweep's cells still to do; `compare(level)` is
    the comparison of the sweep's runs with tests at that confidence (None when nothing
    finished). Returns the last comparison, with a note that states the procedure."""
    from zoo.sweeps.cells import add_seed

    levels = look_levels(level, most)
    table, looks = None, 0
    for look, at in enumerate(levels, start=1):
        train()
        table, looks = compare(at), look
        if table is None:
            break
        groups = _row_groups(sweep)
        step = next_step(table.ties, _seeds_of_cells(table, groups), most)
        if not step.more:
            break
        if look == len(levels):
            step.spent.append(f"the {len(levels)} looks the budget allows are spent")
            break
        say(f"seeds until answered: look {look} of at most {len(levels)} (tests at {percent(at)}):")
        for line in step.lines:
            say(line)
        for key in dict.fromkeys(k for runs in step.more for k in _keys_of(runs, groups)):
            add_seed(sweep, groups[key][-1])
    if table is not None:
        table.notes.append(_statement(level, levels, looks, step.spent if table.ties else []))
    return table


def _statement(level: float, levels: list[float], looks: int, spent: list[str]) -> str:
    text = (
        f"seeds until answered: {looks} look(s), the last tested at "
        f"{percent(levels[looks - 1])}; the {1 - level:.0%} error rate is split over at "
        f"most {len(levels)} looks in proportion to their degrees of freedom (Bonferroni: "
        f"any false best mark over all the looks has at most {1 - level:.0%} chance)"
    )
    return text + ("; " + "; ".join(spent) if spent else "")


def _row_key(cell) -> tuple:
    return cell.model, cell.dataset, json.dumps(cell.setting, sort_keys=True, default=str)


def _row_groups(sweep) -> dict[tuple, list]:
    """The sweep's cells by row (model, dataset, setting), each row's cells by seed."""
    groups: dict[tuple, list] = {}
    for cell in sorted(sweep.cells, key=lambda c: c.seed):
        if not cell.skip:
            groups.setdefault(_row_key(cell), []).append(cell)
    return groups


def _keys_of(runs: str, groups: dict[tuple, list]) -> list[tuple]:
    """The rows of the sweep whose runs a table cell holds (several under --pool)."""
    ids = set(str(runs).split())
    return [key for key, cells in groups.items() if any((c.done or c.run_id) in ids for c in cells)]


def _seeds_of_cells(table, groups: dict[tuple, list]) -> dict[str, int]:
    """A table cell's runs -> the fewest seeds any of its rows has had (failed ones too)."""
    found = {}
    for runs in table.cells["runs"]:
        counts = [len(groups[key]) for key in _keys_of(runs, groups)]
        if counts:
            found[str(runs)] = min(counts)
    return found
