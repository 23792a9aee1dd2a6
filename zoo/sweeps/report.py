"""What a finished sweep tells its user: the one-line summary, the failures and impossible
cells, and its runs as records and as a comparison table."""

from __future__ import annotations

from zoo.sweeps.cells import Sweep


def summary(sweep: Sweep) -> str:
    ran = [c for c in sweep.cells if c.status == "finished"]
    parts = [
        f"{len(ran)} trained",
        f"{len(sweep.finished_before)} already finished",
        f"{len(sweep.impossible)} impossible",
        f"{len(sweep.failed)} failed",
    ]
    lines = ["sweep done: " + ", ".join(parts)]
    for cell in sweep.failed[:SHOWN]:
        lines.append(
            f"  {cell.status} {cell.name}: {_short_text(cell.error or cell.status or '')} "
            f"(run {cell.run_id})"
        )
    if len(sweep.failed) > SHOWN:
        lines.append(
            f"  and {len(sweep.failed) - SHOWN} more; zoo runs --where "
            "\"status != 'finished'\" lists them all"
        )
    return "\n".join(lines)


SHOWN = 5  # failures and reasons listed one by one; the rest are counted


def _short_text(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unrunnable(sweep: Sweep) -> str:
    """Why no cell of a sweep can run, in one line: each distinct reason once, the first few
    of them, and how many pairs each covers."""
    reasons: dict[str, list[str]] = {}
    for cell in sweep.impossible:
        reasons.setdefault(cell.skip or "", []).append(f"{cell.label} on {cell.dataset}")
    parts = []
    for reason, pairs in list(reasons.items())[:3]:
        pairs = list(dict.fromkeys(pairs))
        which = pairs[0] + (f" and {len(pairs) - 1} more" if len(pairs) > 1 else "")
        parts.append(f"{which}: {_short_text(reason)}")
    if len(reasons) > 3:
        parts.append(f"and {len(reasons) - 3} more reasons (zoo sweep --dry-run lists them)")
    return "; ".join(parts)


def records(sweep: Sweep) -> list[dict]:
    """Every cell as plain data (`zoo sweep --json`): its state (skipped, reused: finished
    before this sweep, to run with --dry-run, or the status it ended with), run and reason."""
    out = []
    for cell in sweep.cells:
        state = "skipped" if cell.skip else "reused" if cell.done else cell.status or "to run"
        out.append(
            {
                "name": cell.name,
                "model": cell.model,
                "dataset": cell.dataset,
                "seed": cell.seed,
                "setting": cell.setting,
                "state": state,
                "run_id": cell.done or cell.run_id,
                "config_hash": cell.config_hash,
                "reason": cell.skip or cell.error or cell.new_because,
                "duration": cell.duration,
            }
        )
    return out


def check_comparison(sweep: Sweep, metric: str | None, better: str | None) -> None:
    """The comparison's --metric and --better, checked when the sweep is planned, as the
    table after training would check them: a dry run refuses what the real sweep refuses,
    and a sweep never trains for an hour to refuse its table. A metric is known when a task
    of the sweep declares it (on any split), zoo records it for every run, a run already
    recorded has it, or it is a setting of the sweep."""
    from zoo.core.names import get_task
    from zoo.errors import UnknownNameError, ZooError
    from zoo.tasks import RUN_METRICS

    if better not in (None, "lower", "higher"):
        raise ZooError(f"better must be 'lower' or 'higher', not {better!r}")
    if metric is None:
        return
    tasks = [get_task(c.plan.task) for c in sweep.cells if c.plan is not None]
    declared = [task for task in tasks if task is not None]
    if any(task.metric(metric) is not None for task in declared):
        return
    run_metrics = {m.name for m in RUN_METRICS} | {"train_time", "steps", "best_step"}
    if metric in run_metrics or metric in sweep.grid or metric in sweep.overrides:
        return
    columns, recorded = _recorded()
    if metric in columns:
        return
    names = {
        prefix + m.name
        for task in declared
        for m in task.metrics
        if "*" not in m.name
        for prefix in ("val_", "test_")
    }
    raise UnknownNameError("metric", metric, sorted(names | run_metrics | recorded))


def _recorded() -> tuple[set[str], set[str]]:
    """The columns of the runs already recorded, and those of them that are figures (a
    figure a plugin records without declaring it is known once a run has it)."""
    from zoo.comparison.table import load_runs, metric_names

    try:
        frame = load_runs()
    except Exception:  # noqa: BLE001 - no store yet, or one being written: nothing known
        return set(), set()
    if frame is None or frame.empty:
        return set(), set()
    return {str(c) for c in frame.columns}, set(metric_names(frame))


def table(sweep: Sweep, spec):
    """The comparison (a zoo.comparison.table.ComparisonSpec) of this sweep's cells only
    (not other runs of the same models)."""
    from zoo.comparison.table import load_runs, summarize

    frame = load_runs()
    frame = frame[frame["config_hash"].isin(sweep.hashes)]
    return summarize(frame, spec)


def comparison_frame(sweep: Sweep, cells):
    """The comparison's rows (``SweepResult.frame``) with one typed column per --grid
    key, as ``zoo.runs()`` has them (``lr`` 0.003, not the text 'lr=0.003'), in the order
    the grid gave the keys, right after the columns that name the row."""
    if cells is None or not sweep.grid or "runs" not in cells.columns:
        return cells
    setting_of = {c.done or c.run_id: c.setting for c in sweep.cells if c.done or c.run_id}
    bare = {key: key.rpartition(".")[2] for key in sweep.grid}
    names = {
        key: key if list(bare.values()).count(name) > 1 or name in cells.columns else name
        for key, name in bare.items()
    }
    frame = cells.copy()
    first_runs = frame["runs"].map(lambda runs: str(runs).split()[0] if runs else None)
    at = list(frame.columns).index("metric") if "metric" in frame.columns else 0
    for offset, (key, name) in enumerate(names.items()):
        values = [setting_of.get(run, {}).get(key) for run in first_runs]
        frame.insert(at + offset, name, pd_series(values, frame.index))
    return frame


def pd_series(values: list, index):
    """A column of the values' own type (ints stay ints, floats floats, text text)."""
    import pandas as pd

    return pd.Series(values, index=index, dtype=object).infer_objects()
