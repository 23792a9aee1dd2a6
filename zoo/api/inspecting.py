"""The API's commands that read what the zoo holds and what it recorded: the catalogue of
plugins, datasets and models (`zoo list`), one entry or run (`zoo show`), the recorded runs
(`zoo runs`), their comparison (`zoo compare`), training curves (`zoo plot`), and removing
runs (`zoo rm`). Nothing here trains."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.errors import UnknownNameError, ZooDeprecationWarning, ZooError
from zoo.results import Listing, Removal, Shown

if TYPE_CHECKING:
    from zoo.comparison.table import Comparison

KINDS = ("architectures", "tokenizers", "datasets", "models", "pipelines", "loggers", "plugins")


def catalog(
    kind: str | None = None, pattern: str = "*", *, all_pairs: bool = False, matrix: bool = False
) -> Listing:
    """What the zoo holds (`zoo list`): the entries of one kind (all but plugins when none
    is named) whose names match ``pattern`` (a part of the name, or a wildcard pattern);
    models are the presets, and every ARCHITECTURE-TOKENIZER pair too with ``all_pairs``.
    ``matrix``: which task each dataset serves with which model, instead."""
    from zoo.api import entry_rows
    from zoo.core.loading import get_zoo

    zoo = get_zoo()
    if matrix:
        return Listing({}, entry_rows.matrix(zoo))
    if kind is not None and kind not in KINDS:
        raise UnknownNameError("kind", kind, KINDS)
    kinds = [kind] if kind else [k for k in KINDS if k != "plugins"]
    sections = {k: entry_rows.rows(zoo, k, pattern, all_pairs=all_pairs) for k in kinds}
    presets_only = "models" in sections and not all_pairs and pattern == "*"
    return Listing(sections, presets_only=presets_only)


def models(pattern: str = "*", *, all_pairs: bool = False) -> list[dict]:
    """The models `zoo run` takes, as `zoo list models` lists them: the presets (every
    ARCHITECTURE-TOKENIZER pair too with ``all_pairs``) whose names match ``pattern``."""
    return catalog("models", pattern, all_pairs=all_pairs).sections["models"]


def show(name: str) -> Shown:
    """Everything a name names (`zoo show NAME`): a model (a preset or a pair: its
    architecture, tokenizer and settings), architectures, tokenizers, pipelines and datasets
    of that name (their fields, tasks and sources), or else a run (its store row,
    evaluations and folder). A ``zoo.Shown``: ``details`` holds each as a typed record,
    ``record`` what `zoo show --json` prints. An unknown name is a ZooError with a
    did-you-mean."""
    from zoo.api.details import shown
    from zoo.core.loading import get_zoo

    return shown(get_zoo(), name)


def runs(*, where: str | None = None, sort: str | None = None, n: int | None = None):
    """Recorded runs as a pandas DataFrame (`zoo runs`): the store's columns, one column per
    metric and one per setting, typed (``n_layer`` integers, ``lr`` floats; a setting whose
    name a metric has is ``train.steps``), and `metric`/`value`, the task's primary metric.
    `where`, `sort` and `n` mean what `zoo runs --where/--sort/-n` mean."""
    from zoo.comparison.runs import check_limit, run_frame, select

    return select(run_frame(), where=where, sort=sort, limit=None if n is None else check_limit(n))


def compare(  # noqa: PLR0913 -- `zoo compare`'s options, keyword-only
    *,
    metric: str | None = None,
    where: str | None = None,
    by: str | list[str] | None = None,
    columns: str | list[str] | None = None,
    baseline: str | None = None,
    evals: bool = False,
    status: str | Iterable[str] = ("finished",),
    better: str | None = None,
    pool: bool = False,
    examples: bool = True,
) -> Comparison:
    """The comparison of recorded runs (`zoo compare`): a ``zoo.Comparison``, whose
    ``.cells`` is a pandas DataFrame with one row per table cell (mean, std, n over seeds,
    the runs behind each; with ``baseline`` the difference, its confidence interval and
    test), ``.notes`` what the command prints under the table (``zoo.plot_comparison``
    draws it). Options mean what `zoo compare`'s options mean; ``examples=False`` is
    ``--seeds-only``; ``status`` is one status, several, or ``"all"``."""
    from zoo.comparison.table import ComparisonSpec, load_runs, summarize
    from zoo.records.database import STATUSES

    status = (status,) if isinstance(status, str) else tuple(status)
    for wanted in status:
        if wanted != "all" and wanted not in STATUSES:
            raise ZooError(
                f"status {wanted!r}: expected any of {', '.join(STATUSES)} or all",
                option="status",
            )
    spec = ComparisonSpec(
        metric=metric,
        where=where,
        by=by,
        columns=columns,
        baseline=baseline,
        evals=evals,
        status=status,
        better=better,
        pool=pool,
        examples=examples,
    )
    return summarize(load_runs(), spec)


def comparison_table(**options) -> Comparison:
    """Deprecated: ``zoo.compare``, which returns the same ``zoo.Comparison`` now."""
    warnings.warn(
        "zoo.comparison_table is deprecated: zoo.compare returns the same zoo.Comparison "
        "(the name goes in zoo 0.2)",
        ZooDeprecationWarning,
        stacklevel=2,
    )
    return compare(**options)


def rm(
    run_ids: str | Iterable[str] = (), *, where: str | None = None, dry_run: bool = False
) -> Removal:
    """Remove runs (ids or unique prefixes, and every run ``where`` selects, as `zoo runs
    --where`): their store rows, with the evaluation rows that score them, then their run
    folders (`zoo rm`). A run still training is refused. ``dry_run``: only say which."""
    import shutil

    from zoo.comparison.runs import run_frame, select
    from zoo.records.paths import run_folder
    from zoo.records.store import Store

    run_ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    if not run_ids and not where:
        raise ZooError("name the runs to remove (RUN_ID...) or select them with a where condition")
    with Store() as store:
        chosen = {store.get(run_id)["id"]: None for run_id in run_ids}
        if where:
            chosen.update(dict.fromkeys(select(run_frame(), where=where)["id"]))
        rows = [store.get(run_id) for run_id in chosen]
        busy = [r["id"] for r in rows if store.is_running(r)]
        if busy:
            raise ZooError(f"run {busy[0]} is still running; stop it before removing it")
        removed = [{k: r[k] for k in ("id", "model", "dataset", "status")} for r in rows]
        if dry_run or not rows:
            return Removal(removed, dry_run)
        store.delete([r["id"] for r in rows])
    for row in rows:  # the rows first: a folder left by a crash here is only disk space
        shutil.rmtree(run_folder(row["id"]), ignore_errors=True)
    return Removal(removed)


def plot(
    run_ids: str | Iterable[str], output: str | Path, *, metric: str = "loss", x: str = "step"
) -> Path:
    """Draw the training (and validation) curves of runs of one task in one figure and write
    it to ``output`` (.png, .svg or .pdf; ``-`` is standard output) (`zoo plot`)."""
    from zoo.comparison.plots import run_labels, save, training_curves
    from zoo.records.paths import run_folder
    from zoo.records.store import Store
    from zoo.train.job import RunFolder

    run_ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    with Store() as store:
        rows = [store.get(run_id) for run_id in run_ids]
    tasks = {row["task"] for row in rows}
    if len(tasks) > 1:  # one axis, one unit: a loss in bits per character is no accuracy
        raise ZooError(
            f"the runs are of different tasks ({', '.join(sorted(map(str, tasks)))}); "
            "their curves do not share an axis: plot each task's runs on their own"
        )
    curves = []
    for row, label in zip(rows, run_labels(rows)):
        records = RunFolder(run_folder(row["id"])).curve()
        if not records:
            raise ZooError(
                f"run {row['id']} has no training curve (no metrics.jsonl in "
                f"{run_folder(row['id'])})"
            )
        curves.append({"label": label, "records": records})
    task = tasks.pop() if len(tasks) == 1 else None  # units and validation metric: the task's
    return save(training_curves(curves, metric, x, task=task), output)


def plot_comparison(comparison: Comparison, output: str | Path) -> Path:
    """Draw a comparison (``zoo.compare``'s, or a sweep's ``table``) as grouped bars with
    error bars (the std over seeds), one group per column of the table, and write it to
    ``output`` (.png, .svg or .pdf; ``-`` is standard output) (`zoo compare --plot`)."""
    from zoo.comparison.plots import comparison_bars, save

    return save(comparison_bars(comparison), output)


def ui(*, host: str = "127.0.0.1", port: int = 8765):
    """The store in a web browser (`zoo ui`): a read-only web application over ZOO_HOME's
    store, listening on ``host``:``port`` (0: any free port). Returns the server, bound but
    not yet serving: ``.url``, ``.run()`` (until interrupted), ``.start()`` (in a thread)
    and ``.stop()``. Needs the optional extra ``ui``."""
    from zoo.errors import require_extra
    from zoo.home import zoo_home

    require_extra(UI_MODULES, "ui", "zoo ui")
    from zoo.web.app import Server

    try:
        return Server(zoo_home(), host=host, port=port)
    except OSError as exc:
        raise ZooError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def report(
    *,
    where: str | None = None,
    metric: str | None = None,
    by: str | None = None,
    columns: str | None = None,
    baseline: str | None = None,
    title: str = "zoo report",
) -> str:
    """The views of `zoo ui` for the runs ``where`` selects as one self-contained HTML
    page (`zoo report`): its scripts, styles and data inside it, so it opens offline. The
    comparison's options mean what `zoo compare`'s mean. Needs the optional extra ``ui``."""
    from zoo.errors import require_extra
    from zoo.home import zoo_home

    require_extra(UI_MODULES, "ui", "zoo report")
    from zoo.web.report import report_html

    return report_html(
        zoo_home(),
        where=where,
        metric=metric,
        by=by,
        columns=columns,
        baseline=baseline,
        title=title,
    )


UI_MODULES = ("starlette", "uvicorn", "jinja2", "plotly")  # what the extra `ui` installs
