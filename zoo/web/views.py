"""What each page of `zoo ui` and `zoo report` shows, as plain data (JSON-able dicts).

Every view reads the store read-only and goes through the functions the commands use: the
run list is `zoo runs` (zoo.comparison.runs: the same --where parser, sort and JSON
records), the comparison is `zoo compare` (zoo.comparison.table.summarize and its
renderer's layout, legend and JSON cells), a run's page is `zoo show` (the store's row,
the config file of `zoo show --config`). A page embeds the data it was built from, so what
it shows can be checked against what the commands print.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

from zoo.errors import ZooError

PER_PAGE = 50  # runs on one page of the run list
DEFAULT_SORT = "-created"  # newest first
MAX_EXTRA_COLUMNS = 40  # settings and metrics shown beside the summary by default
MAX_SAMPLES_CHARS = 20_000  # of a run's samples.txt
MAX_KEPT = 200  # pages, selections and comparisons kept until the store changes
REFRESH_SECONDS = 5.0  # how often the curves of a run still training are read again
# run columns that say how a run was recorded, not what it is: not offered by default
BOOKKEEPING = {
    "parent_id",
    "created",
    "finished",
    "config_hash",
    "error",
    "pid",
    "host",
    "resumed",
    "proc_start",
    "trained_on",
    "split",
    "sample",
    "architecture",
    "tokenizer",
}


class NotFound(ZooError):
    """A page for something the store does not hold (the server answers 404)."""


class StoreView:
    """The store under ``home``, opened read-only for each read (SQLite ``mode=ro``: another
    process may write runs meanwhile). The run tables are rebuilt only when the database
    or its write-ahead log changed, so paging and filtering a large store stay fast."""

    def __init__(self, home: str | Path):
        self.home = Path(home)
        self.path = self.home / "zoo.db"
        self._lock = threading.Lock()
        self._stamp: tuple | None = None
        self._memo: dict = {}  # what was computed from the store, until it changes
        self._computing: dict = {}  # key -> the lock its computation holds

    def _stamp_now(self) -> tuple:
        stamps: list[tuple | None] = []
        for path in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                stat = path.stat()
            except FileNotFoundError:
                stamps.append(None)
                continue
            # an empty log is no log: a reader opening the store may create one
            stamps.append((stat.st_mtime_ns, stat.st_size) if stat.st_size else None)
        return tuple(stamps)

    def open(self):
        from zoo.records.store import Store

        return Store(self.path, read_only=True)

    def tables(self):
        """(runs, frame): what zoo.comparison.table.load_runs returns (the comparison's
        input) and zoo.comparison.runs.run_frame of it (the run list's)."""
        return self.memo("tables", self._read_tables)

    def _read_tables(self):
        from zoo.comparison.runs import run_frame
        from zoo.comparison.table import load_runs

        if not self.path.is_file():
            return _empty(), _empty()
        with self.open() as store:
            runs = load_runs(store)
        return runs, run_frame(runs)

    def memo(self, key, compute):
        """``compute()``, once while the store stays as it is (its database and write-ahead
        log unchanged); a second asker of the same key waits for the first's answer."""
        with self._lock:
            stamp = self._stamp_now()
            if stamp != self._stamp:
                self._stamp, self._memo, self._computing = stamp, {}, {}
            if key in self._memo:
                return self._memo[key]
            gate = self._computing.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                if self._stamp == stamp and key in self._memo:
                    return self._memo[key]
            value = compute()
            with self._lock:
                if self._stamp == stamp:  # not if the store changed meanwhile
                    self._memo[key] = value
                    while len(self._memo) > MAX_KEPT:  # the oldest first, all runs' table last
                        del self._memo[next(k for k in self._memo if k != "tables")]
            return value

    def count(self) -> int:
        if not self.path.is_file():
            return 0
        with self.open() as store:
            return store.count()

    def ids_by_creation(self, limit: int, offset: int, newest_first: bool) -> list[str]:
        if not self.path.is_file():
            return []
        with self.open() as store:
            return store.ids_by_creation(limit, offset, newest_first)

    def page_frame(self, ids: list[str]):
        """The run list's frame (zoo.comparison.runs.run_frame) of these runs alone, in
        this order: their rows, and the rows their settings are read from (an evaluation's
        trained run, an ensemble's members), go through the functions `zoo runs` uses."""
        from zoo.comparison.runs import run_frame
        from zoo.comparison.table import CONFIG_KEYS, load_runs

        if not ids:
            return run_frame(load_runs(rows=[])) if self.path.is_file() else _empty()
        with self.open() as store:
            rows = store.rows(ids, config_keys=CONFIG_KEYS)
            for _ in range(2):  # an evaluation of an ensemble: its members' rows too
                known = {r["id"] for r in rows}
                wanted = sorted({ref for r in rows for ref in _references(r)} - known)
                rows += store.rows(wanted, config_keys=CONFIG_KEYS) if wanted else []
            frame = run_frame(load_runs(store, rows))
        order = {run_id: n for n, run_id in enumerate(ids)}
        frame = frame[frame["id"].isin(order)]
        ranks = [order[run_id] for run_id in frame["id"]]
        return frame.iloc[sorted(range(len(frame)), key=ranks.__getitem__)].reset_index(drop=True)

    def selection(self, where: str | None, sort: str) -> list[str]:
        """The ids of the runs `zoo runs --where WHERE --sort SORT` lists, in its order,
        kept until the store changes (paging through a filter filters once)."""
        from zoo.comparison.runs import select

        def chosen() -> list[str]:
            frame = self.tables()[1]
            return list(select(frame, where=where, sort=sort)["id"]) if len(frame) else []

        return self.memo(("selection", where, sort), chosen)

    def row(self, run_id: str) -> dict:
        """A run's store row, as `zoo show RUN --json` has it (without its "type")."""
        from zoo.records.paths import RUN_ID

        if not RUN_ID.fullmatch(run_id or "") or not self.path.is_file():
            raise NotFound(f"no run {run_id!r} in {self.home}")
        try:
            with self.open() as store:
                return store.get(run_id)
        except ZooError as exc:  # unknown or ambiguous
            raise NotFound(str(exc)) from None

    def evaluations(self, run_id: str) -> list[dict]:
        with self.open() as store:
            return store.evaluations(run_id)

    def folder(self, run_id: str) -> Path:
        from zoo.records.paths import run_folder

        return run_folder(run_id, self.home)


# -- the run list (zoo runs) ------------------------------------------------------------
def split_keys(text: str | None) -> list[str]:
    return [k.strip() for k in (text or "").split(",") if k.strip()]


def default_columns(frame) -> list[str]:
    """The settings and metrics that differ between the runs of ``frame`` (a page),
    beside the summary columns."""
    from zoo.comparison.runs import SUMMARY

    extra = []
    for column in frame.columns:
        if column in SUMMARY or column in BOOKKEEPING or column == "settings":
            continue
        values = frame[column].dropna()
        if len(values) and values.astype(str).nunique() > 1:
            extra.append(str(column))
    return extra[:MAX_EXTRA_COLUMNS]


# sorts the store answers itself: the run list in order of creation needs no table of runs
BY_CREATION = {"-created": True, "created": False}


def runs_page(
    view: StoreView,
    *,
    where: str | None = None,
    sort: str | None = None,
    columns: str | None = None,
    page: int = 1,
    per_page: int = PER_PAGE,
) -> dict:
    """One page of `zoo runs --where WHERE --sort SORT --columns COLUMNS --json`, with the
    count of runs selected (kept until the store changes). A condition or column zoo runs
    refuses is the page's error.

    Only the page's runs are read into a table: unfiltered and in order of creation, the
    store pages them itself (a large store's first page waits for nothing else); a
    condition or another sort selects from the table of all runs, read once per change
    of the store."""
    asked = (where or None, sort or DEFAULT_SORT, columns or None, page, per_page)
    return view.memo(("runs",) + asked, lambda: _runs_page(view, *asked))


def _runs_page(view: StoreView, where, sort: str, columns, page: int, per_page: int) -> dict:
    data: dict[str, Any] = {
        "where": where or "",
        "sort": sort,
        "columns": columns or "",
        "error": None,
    }
    try:
        total, selected, ids, page, pages = _page_ids(view, where, sort, page, per_page)
        frame = view.page_frame(ids)
        extra = _asked_columns(view, columns) if columns else default_columns(frame)
        missing = [c for c in extra if c not in frame.columns]
        if missing and not frame.empty:  # a column no run of the page has: empty here
            frame = frame.assign(**dict.fromkeys(missing))
        records = _records(frame, extra)
    except ZooError as exc:
        data["error"] = exc.command_line()
        total, selected, records, pages, page, extra = view.count(), 0, [], 1, 1, []
        frame = _empty()
    from zoo.comparison.runs import SUMMARY

    shown = list(SUMMARY) + [c for c in extra if c not in SUMMARY]
    data.update(
        total=total,
        selected=selected,
        page=page,
        pages=pages,
        per_page=per_page,
        shown=[c for c in shown if frame.empty or c in frame.columns],
        rows=records,
    )
    return data


def _page_ids(view: StoreView, where, sort: str, page: int, per_page: int) -> tuple:
    """(runs in the store, runs selected, the page's ids, the page, the pages)."""
    if where is None and sort in BY_CREATION:
        total = selected = view.count()
    else:
        chosen = view.selection(where, sort)
        total, selected = len(view.tables()[1]), len(chosen)
    pages = max(1, math.ceil(selected / per_page))
    page = min(max(1, page), pages)
    offset = (page - 1) * per_page
    if where is None and sort in BY_CREATION:
        ids = view.ids_by_creation(per_page, offset, BY_CREATION[sort])
    else:
        ids = chosen[offset : offset + per_page]
    return total, selected, ids, page, pages


def _asked_columns(view: StoreView, columns: str) -> list[str]:
    """The columns asked for, each a column of the table of all runs (else the error `zoo
    runs --columns` gives)."""
    from zoo.errors import UnknownNameError

    asked = split_keys(columns)
    known = view.tables()[1].columns
    for column in asked:
        if len(known) and column not in known:
            raise UnknownNameError("column", column, [str(c) for c in known])
    return asked


def _records(frame, extra: list[str]) -> list[dict]:
    from zoo.comparison.runs import render

    return json.loads(render(frame, "json", extra)) if not frame.empty else []


def _references(row: dict) -> set[str]:
    """The runs a row's settings are read from: an evaluation's trained run, an
    ensemble's members."""
    config = row.get("config") or {}
    refs = {m.get("run_id") for m in config.get("combines") or [] if isinstance(m, dict)}
    if row.get("kind") == "eval" and row.get("parent_id"):
        refs.add(row["parent_id"])
    return {r for r in refs if isinstance(r, str)}


def _empty():
    import pandas as pd

    return pd.DataFrame()


def read_ahead(view: StoreView) -> None:
    """The first page, then the table of all runs, before a page asks: the libraries and
    plugins they need are loaded on the way (a damaged store is then the page's error)."""
    try:
        runs_page(view)
        view.tables()
    except Exception:  # noqa: BLE001
        pass


# -- the comparison (zoo compare) -----------------------------------------------------
COMPARE_OPTIONS = ("metric", "where", "by", "columns", "baseline", "better")


def comparison(view: StoreView, options: dict) -> dict:
    """`zoo compare` with these options (those of COMPARE_OPTIONS, and status, evals and
    pool): its table laid out as the renderers lay it out, its legend and notes, its cells
    as `zoo compare --format json` prints them, and grouped bars with error bars."""
    key = tuple(sorted((k, str(v)) for k, v in options.items()))
    return view.memo(("comparison", key), lambda: _comparison(view.tables()[0], options))


def _comparison(runs, options: dict) -> dict:
    from zoo.comparison.render import layout, legend, render
    from zoo.comparison.table import ComparisonSpec, summarize

    status = tuple(split_keys(options.get("status")) or ["finished"])
    chosen: dict[str, Any] = {k: (options.get(k) or None) for k in COMPARE_OPTIONS}
    data = {"options": {**{k: v or "" for k, v in chosen.items()}, "status": ",".join(status)}}
    data["options"].update(evals=bool(options.get("evals")), pool=bool(options.get("pool")))
    try:
        if chosen["better"] not in (None, "lower", "higher"):
            raise ZooError(f"better must be lower or higher, not {chosen['better']!r}")
        spec = ComparisonSpec(
            metric=chosen["metric"],
            where=chosen["where"],
            by=chosen["by"],
            columns=chosen["columns"],
            baseline=chosen["baseline"],
            better=chosen["better"],
            evals=bool(options.get("evals")),
            status=status,
            pool=bool(options.get("pool")),
        )
        table = summarize(runs if not runs.empty else None, spec)
        header, body = layout(table)
    except ZooError as exc:
        return {
            **data,
            "error": exc.command_line(),
            "header": [],
            "body": [],
            "legend": [],
            "cells": [],
        }
    cells = json.loads(render(table, "json"))
    return {
        **data,
        "error": None,
        "header": header,
        "body": body,
        "legend": legend(table, "bold:"),
        "cells": cells,
        "chart": bars(table),
    }


def bars(table) -> dict:
    """A plotly figure (as data): per metric, one group of bars per column of the table,
    one bar per row, error bars of one standard deviation, the best cells outlined."""
    from zoo.comparison.render import column_label, row_label
    from zoo.comparison.table import describe
    from zoo.core.kinds import natural_key

    cells = [cell for _, cell in table.cells.iterrows()]
    metrics = list(dict.fromkeys(c["metric"] for c in cells))
    traces, layout = [], {"barmode": "group", "height": 340 * len(metrics), "grid": {}}
    layout["grid"] = {"rows": len(metrics), "columns": 1, "pattern": "independent"}
    for index, metric in enumerate(metrics, 1):
        mine = [c for c in cells if c["metric"] == metric]
        groups = sorted({column_label(table, c) for c in mine}, key=natural_key)
        for name in dict.fromkeys(row_label(table, c) for c in mine):
            row = {column_label(table, c): c for c in mine if row_label(table, c) == name}
            present = [g for g in groups if g in row]
            traces.append(
                {
                    "type": "bar",
                    "name": name,
                    "legendgroup": name,
                    "showlegend": index == 1,
                    "x": present,
                    "y": [_finite(row[g]["mean"]) for g in present],
                    "error_y": {
                        "type": "data",
                        "array": [_finite(row[g]["std"]) or 0.0 for g in present],
                    },
                    "text": [
                        f"n={row[g]['n']}" + (" best" if row[g]["best"] else "") for g in present
                    ],
                    "marker": {"line": {"width": [3 if row[g]["best"] else 0 for g in present]}},
                    "xaxis": f"x{index}",
                    "yaxis": f"y{index}",
                }
            )
        axis = "" if index == 1 else str(index)
        layout[f"yaxis{axis}"] = {
            "title": {"text": describe(metric, mine[0]["better"], mine[0]["task"])}
        }
        layout[f"xaxis{axis}"] = {"title": {"text": " / ".join(table.columns)}}
    layout["title"] = {"text": "mean ± std over seeds (outlined: best in its column)"}
    layout["legend"] = {"title": {"text": " / ".join(table.rows)}}
    return {"data": traces, "layout": layout}


def _finite(value):
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


# -- curves (zoo plot) ----------------------------------------------------------------
def curves(view: StoreView, run_ids: list[str], metric: str = "loss", x: str = "step") -> dict:
    """The training and validation curves of runs (metrics.jsonl, as `zoo plot` draws
    them: zoo.train.curves.curve_keys picks the keys), the metrics offered, and whether a
    run is still training (the page then asks again)."""
    from zoo.comparison.plots import run_labels
    from zoo.records.folder import read_curve
    from zoo.train.curves import curve_keys

    if x not in ("step", "elapsed"):
        raise ZooError(f"x must be step or elapsed, not {x!r}")
    rows = [view.row(run_id) for run_id in dict.fromkeys(run_ids)]
    series, offered = [], {"loss"}
    for row, label in zip(rows, run_labels(rows) if rows else []):
        records = read_curve(view.folder(row["id"]) / "metrics.jsonl")
        offered |= {k for r in records for k, v in r.items() if _number(v)} - {"step", "elapsed"}
        for key, kind in zip(curve_keys(records, metric), ("train", "validation")):
            if key is None:
                continue
            points = [(r[x], r[key]) for r in records if _number(r.get(x)) and _number(r.get(key))]
            series.append(
                {
                    "run": row["id"],
                    "label": label,
                    "kind": kind,
                    "key": key,
                    "x": [p[0] for p in points],
                    "y": [p[1] for p in points],
                }
            )
    return {
        "runs": [{"id": r["id"], "status": r["status"], "model": r["model"]} for r in rows],
        "metric": metric,
        "x": x,
        "metrics": sorted(offered),
        "series": series,
        "training": any(r["status"] == "running" for r in rows),
        "refresh_seconds": REFRESH_SECONDS,
    }


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# -- a run's page (zoo show) ------------------------------------------------------------
def run_page(view: StoreView, run_id: str) -> dict:
    """Everything `zoo show RUN` says (its record: `zoo show RUN --json`), with the config
    file that trains it again (`zoo show RUN --config`), its phase timings, samples,
    evaluations, ensemble members, files and the commands that continue, repeat, export it."""
    from zoo.operations.reproduce import config_file
    from zoo.records.paths import MODEL_CARD
    from zoo.train.provenance import SHOWN_KEYS
    from zoo.train.tracking import tracker_lines

    row = view.row(run_id)
    config = row.get("config") or {}
    kind = row.get("kind") or "train"
    metrics = row.get("metrics") or {}
    scalars = {k: v for k, v in metrics.items() if not isinstance(v, (dict, list))}
    structured = {k: v for k, v in metrics.items() if isinstance(v, (dict, list))}
    provenance = [("seed", row.get("seed"))]
    provenance += [(k, config[k]) for k in SHOWN_KEYS if config.get(k) is not None]
    provenance += [(f"version {k}", v) for k, v in (config.get("versions") or {}).items()]
    timing = config.get("timing")
    timing = timing if isinstance(timing, dict) else {}
    folder = view.folder(row["id"])
    return {
        "record": {"type": "run", **row},
        "kind": kind,
        "scalars": scalars,
        "structured": json.dumps(structured, indent=1) if structured else "",
        "provenance": provenance,
        "phases": timing.get("phases") or {},
        "measured": timing.get("measured"),
        "trackers": tracker_lines(config.get("trackers")),
        "settings": config.get("configs") or {},
        "config_file": config_file(row) if kind == "train" else None,
        "members": config.get("combines") or [],
        "weighting": config.get("weighting"),
        "evaluations": view.evaluations(row["id"]) if kind == "train" else [],
        "samples": _text(folder / "samples.txt"),
        "card": _text(folder / MODEL_CARD) or recorded_card(row, view.home),
        "card_exported": (folder / MODEL_CARD).is_file(),
        "files": sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        if folder.is_dir()
        else [],
        "commands": commands(row),
    }


def recorded_card(row: dict, home: Path) -> str | None:
    """The model card `zoo export` would write for a finished trained run, made from its
    record (zoo.operations.card); None for other runs, and for a run whose record the
    card cannot be made from (what it could not read is the page's note)."""
    from zoo.operations.card import model_card, recorded_run

    if (row.get("kind") or "train") != "train" or row.get("status") != "finished":
        return None
    try:
        return model_card(recorded_run(row, home))
    except (ZooError, ValueError, KeyError, TypeError) as exc:  # a row written by hand
        return f"(no model card: {exc})"


def commands(row: dict) -> list[tuple[str, str]]:
    """What a user types to continue, repeat, reuse or share the run."""
    run_id, kind, status = row["id"], row.get("kind") or "train", row["status"]
    if kind != "train":
        return [("show it", f"zoo show {run_id}")]
    out = []
    if status in ("interrupted", "failed"):
        out.append(("resume it", f"zoo resume {run_id}"))
    out += [
        ("train it again and compare every metric", f"zoo reproduce {run_id}"),
        ("write its config file", f"zoo show {run_id} --config --output {run_id}.toml"),
    ]
    if status == "finished":
        out += [
            ("evaluate it", f"zoo eval {run_id} {row['dataset']} --split test"),
            ("export it with a model card", f"zoo export {run_id} exported-{run_id}"),
            ("draw its curves", f"zoo plot {run_id} --plot {run_id}.png"),
        ]
    return out


def _text(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(MAX_SAMPLES_CHARS)
    except OSError:
        return None


# -- tune studies and ensembles ---------------------------------------------------------
def studies(view: StoreView) -> list[dict]:
    """The Optuna studies `zoo tune` keeps in ZOO_HOME/tune/studies.db, read-only: each
    study's trials, its optimisation history, and its parameters' importance as Optuna's
    own analysis (optuna.importance) rates them; kept until the studies change."""
    path = view.home / "tune" / "studies.db"
    if not path.is_file():
        return []
    files = (path, path.with_name(path.name + "-wal"))
    stamp = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.is_file() else None for p in files)
    return view.memo(("studies", stamp), lambda: _read_studies(path))


def _read_studies(path: Path) -> list[dict]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    from urllib.parse import quote

    storage = optuna.storages.RDBStorage(
        f"sqlite:///file:{quote(str(path.resolve()))}?mode=ro&uri=true",
        skip_table_creation=True,  # never create or upgrade: the file is only read
        skip_compatibility_check=True,
    )
    try:
        names = [s.study_name for s in optuna.get_all_study_summaries(storage, False)]
        return [study(optuna.load_study(study_name=n, storage=storage)) for n in names]
    finally:
        storage.remove_session()


def study(loaded) -> dict:
    """One study: its trials, best trial, history chart and parameter importance."""
    import optuna

    trials = [
        {
            "number": t.number,
            "state": t.state.name,
            "value": _finite(t.value) if t.values and len(t.values) == 1 else None,
            "params": t.params,
            "run_id": t.user_attrs.get("run_id"),
        }
        for t in loaded.trials
    ]
    done = [t for t in trials if t["state"] == "COMPLETE" and t["value"] is not None]
    maximize = loaded.direction == optuna.study.StudyDirection.MAXIMIZE
    better = max if maximize else min
    running: list[float] = []  # the best value so far, trial by trial
    for trial in done:
        running.append(better(running[-1], trial["value"]) if running else trial["value"])
    best = better(done, key=lambda t: t["value"]) if done else None
    importance, why = param_importance(loaded)
    history = {
        "data": [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "trial",
                "x": [t["number"] for t in done],
                "y": [t["value"] for t in done],
            },
            {
                "type": "scatter",
                "mode": "lines",
                "name": "best so far",
                "line": {"shape": "hv"},
                "x": [t["number"] for t in done],
                "y": running,
            },
        ],
        "layout": {
            "title": {"text": f"{loaded.study_name}: optimisation history"},
            "xaxis": {"title": {"text": "trial"}},
            "yaxis": {"title": {"text": "value"}},
            "height": 320,
        },
    }
    from zoo.tuning.report import EQUAL_BUDGET

    return {
        "name": loaded.study_name,
        "equal_budget": loaded.user_attrs.get(EQUAL_BUDGET),
        "direction": "maximize" if maximize else "minimize",
        "trials": trials,
        "best": best,
        "history": history,
        "importance": {k: float(v) for k, v in importance.items()},
        "importance_note": why,
    }


def budget_tables(studies: list[dict]) -> list[dict]:
    """The equal-budget tables `zoo tune` printed, as it printed them (zoo.tuning.report's
    table of the rows each study kept), newest search first."""
    from zoo.tuning.report import kept_tables

    kept = [s["equal_budget"] for s in studies if isinstance(s.get("equal_budget"), dict)]
    try:
        return kept_tables(kept)
    except (TypeError, KeyError, ValueError, AttributeError) as exc:  # a study edited by hand
        return [{"search": "", "budget": "", "table": f"the kept tables cannot be read: {exc}"}]


def param_importance(loaded) -> tuple[dict, str | None]:
    """The parameters' importance as optuna.importance rates it (fANOVA), or why not."""
    import optuna.importance

    try:
        return optuna.importance.get_param_importances(loaded), None
    except (ValueError, RuntimeError) as exc:  # too few finished trials, no parameters
        return {}, str(exc)


def ensembles(view: StoreView) -> list[dict]:
    """The ensembles recorded (zoo ensemble): their members with weights, and figures."""
    if not view.path.is_file():
        return []
    with view.open() as store:
        rows = [r for r in store.rows() if r.get("kind") == "ensemble"]
    return [
        {
            "id": r["id"],
            "model": r["model"],
            "dataset": r["dataset"],
            "status": r["status"],
            "weighting": (r.get("config") or {}).get("weighting"),
            "members": (r.get("config") or {}).get("combines") or [],
            "metrics": {k: v for k, v in (r.get("metrics") or {}).items() if _number(v)},
        }
        for r in rows
    ]
