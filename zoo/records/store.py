"""The results store: one SQLite row per run, read back as pandas tables.

WAL mode and a busy timeout make concurrent runs safe; every write is one transaction,
so a crash leaves the store readable. Rows left 'running' by a process that no longer
exists are marked 'interrupted' when the store is opened.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import time
from collections.abc import Collection
from pathlib import Path

from zoo.core.process import process_alive, process_start_time
from zoo.errors import UnknownNameError, ZooError
from zoo.records.database import (
    COLUMNS,
    MIGRATIONS,
    SCHEMA_VERSION,
    connect_read_only,
    not_writable,
    use_wal,
)
from zoo.records.paths import check_run_id, run_folder, zoo_home

log = logging.getLogger(__name__)


def home() -> Path:
    return zoo_home()


class Store:
    """The store at ``path`` (ZOO_HOME/zoo.db). Where the database or its folder cannot be
    written (an archived store), it opens read-only: reading works, a write is a ZooError."""

    def __init__(self, path: Path | None = None, *, read_only: bool | None = None):
        self.path = Path(path) if path is not None else home() / "zoo.db"
        self.read_only = not_writable(self.path) if read_only is None else read_only
        self._warned: set[str] = set()
        try:
            if self.read_only:
                self.conn = connect_read_only(self.path)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise ZooError(
                f"cannot open the results store {self.path}: {exc}; check that the "
                "runs folder is writable (ZOO_HOME moves it)"
            ) from None
        try:
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA busy_timeout = 60000")
            if self.read_only:
                self._check_version()
            else:
                use_wal(self.conn)
                self.conn.execute("PRAGMA synchronous = NORMAL")
                self._migrate()
                self.recover_stale_rows()
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise ZooError(
                f"cannot open the results store {self.path}: {exc}; check that the "
                "runs folder is writable and the file is a zoo store"
            ) from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- schema ------------------------------------------------------------------------
    def _check_version(self) -> int:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ZooError(
                f"{self.path} has schema version {version}, newer than this zoo "
                f"understands ({SCHEMA_VERSION}); upgrade zoo"
            )
        return version

    def _migrate(self) -> None:
        version = self._check_version()
        for target in range(version + 1, SCHEMA_VERSION + 1):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                if self.conn.execute("PRAGMA user_version").fetchone()[0] < target:
                    for statement in filter(str.strip, MIGRATIONS[target].split(";")):
                        self.conn.execute(statement)
                    self.conn.execute(f"PRAGMA user_version = {target}")
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def recover_stale_rows(self) -> None:
        host = socket.gethostname()
        rows = self.conn.execute(
            "SELECT id, status, host, pid, proc_start FROM runs "
            "WHERE status = 'running' AND host = ?",
            (host,),
        ).fetchall()
        dead = [row["id"] for row in rows if not self.is_running(dict(row))]
        for run_id in dead:
            self.update(run_id, status="interrupted", error="process ended while running")

    def is_running(self, row: dict) -> bool:
        """Whether a row's run is still being written: it is `running` and its process is
        alive, or some process holds its folder's writer lock. A `running` row recorded on
        another host counts as running: its process cannot be seen from here."""
        if row["status"] != "running":
            return False
        if row.get("host") not in (None, socket.gethostname()):
            return True
        return process_alive(row["pid"], row.get("proc_start")) or self._written(row["id"])

    def _written(self, run_id: str) -> bool:
        """Whether a live process holds the run folder's writer lock (a sweep worker whose
        driver, the pid on the row, has died, say): such a run is not stale."""
        from zoo.records.ownership import writer_alive

        try:
            return writer_alive(run_folder(run_id, self.path.parent))
        except ZooError:  # an id that is no run id: there is no folder to own
            return False

    # -- writes ------------------------------------------------------------------------
    def insert(self, run_id: str, **fields) -> None:
        check_run_id(run_id)
        fields = {
            "id": run_id,
            "created": time.time(),
            "status": "running",
            "pid": os.getpid(),
            "host": socket.gethostname(),
            **fields,
        }
        fields.setdefault("proc_start", process_start_time(fields["pid"]))
        fields = _encode(fields)
        names = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        self._write(f"INSERT INTO runs ({names}) VALUES ({marks})", tuple(fields.values()))

    def update(self, run_id: str, **fields) -> None:
        fields = _encode(fields)
        sets = ", ".join(f"{name} = ?" for name in fields)
        self._write(f"UPDATE runs SET {sets} WHERE id = ?", (*fields.values(), run_id))

    def claim(self, run_id: str, from_statuses: tuple[str, ...], **fields) -> bool:
        """Set the row to 'running' (with ``fields``) only if its status is one of
        ``from_statuses``, atomically: two processes cannot both resume one run."""
        fields = _encode(
            {
                "status": "running",
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "proc_start": process_start_time(os.getpid()),
                **fields,
            }
        )
        sets = ", ".join(f"{name} = ?" for name in fields)
        marks = ", ".join("?" for _ in from_statuses)
        cursor = self._write(
            f"UPDATE runs SET {sets} WHERE id = ? AND status IN ({marks})",
            (*fields.values(), run_id, *from_statuses),
        )
        return cursor.rowcount == 1

    def delete(self, run_ids: list[str]) -> int:
        """Remove these rows, and the evaluation rows that score them, in one transaction."""
        if not run_ids:
            return 0
        marks = ", ".join("?" for _ in run_ids)
        cursor = self._write(
            f"DELETE FROM runs WHERE id IN ({marks}) OR parent_id IN ({marks})",
            (*run_ids, *run_ids),
        )
        return cursor.rowcount

    def _write(self, sql: str, values: tuple):
        """One statement in its own transaction; a store that cannot be written (read-only
        file or folder, a value SQLite cannot hold) is a ZooError naming the file."""
        if self.read_only:
            raise ZooError(
                f"cannot write the results store {self.path}: it is read-only "
                "(browsing works; set ZOO_HOME to a writable folder to run)"
            )
        try:
            with self._transaction():
                return self.conn.execute(sql, values)
        except OverflowError as exc:
            raise ZooError(f"cannot write the results store {self.path}: {exc}") from None
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise ZooError(
                    f"cannot write the results store {self.path}: it is read-only "
                    f"({exc}); make it writable or set ZOO_HOME"
                ) from None
            raise

    def _transaction(self):
        conn = self.conn

        class _Tx:
            def __enter__(self):
                conn.execute("BEGIN IMMEDIATE")

            def __exit__(self, exc_type, *rest):
                conn.execute("ROLLBACK" if exc_type else "COMMIT")
                return False

        return _Tx()

    # -- reads -------------------------------------------------------------------------
    def get(self, run_id: str) -> dict:
        """A run by id or unique id prefix."""
        if not isinstance(run_id, str) or not run_id.strip():
            raise ZooError("a run id cannot be empty; zoo runs lists them")
        rows = self.conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchall()
        if not rows:
            rows = self.conn.execute(
                "SELECT * FROM runs WHERE id LIKE ? ESCAPE '\\'", (_like_prefix(run_id),)
            ).fetchall()
        if len(rows) > 1:
            raise ZooError(
                f"Run id {run_id!r} is ambiguous: " + ", ".join(r["id"] for r in rows[:5])
            )
        if not rows:
            recent = [
                r["id"]
                for r in self.conn.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 200")
            ]
            raise UnknownNameError("run", run_id, recent, hint="zoo runs lists them")
        return _decode(dict(rows[0]))

    def finished_by_hash(self, kind: str = "train") -> dict[str, str]:
        """config_hash -> id of the latest finished run of that kind (for resuming sweeps)."""
        rows = self.conn.execute(
            "SELECT config_hash, id FROM runs WHERE status = 'finished' AND kind = ? "
            "AND config_hash IS NOT NULL ORDER BY created",
            (kind,),
        ).fetchall()
        return {row["config_hash"]: row["id"] for row in rows}

    def latest(self, *, config_hash: str, since: float = 0.0) -> dict | None:
        """The newest run with this config hash created at or after `since`."""
        row = self.conn.execute(
            "SELECT * FROM runs WHERE config_hash = ? AND created >= ? ORDER BY created DESC "
            "LIMIT 1",
            (config_hash, since),
        ).fetchone()
        return _decode(dict(row)) if row else None

    def evaluations(self, parent_id: str) -> list[dict]:
        """The evaluation rows that score a trained run, oldest first."""
        return [
            _decode(dict(r))
            for r in self.conn.execute(
                "SELECT * FROM runs WHERE kind = 'eval' AND parent_id = ? ORDER BY created",
                (parent_id,),
            )
        ]

    def count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]

    def ids_by_creation(self, limit: int, offset: int = 0, newest_first: bool = True) -> list[str]:
        """One page of run ids in order of creation (a run without a time last, ties in
        the order written), read without decoding any row."""
        order = "DESC" if newest_first else "ASC"
        return [
            r[0]
            for r in self.conn.execute(
                f"SELECT id FROM runs ORDER BY created IS NULL, created {order}, rowid "
                "LIMIT ? OFFSET ?",
                (limit, offset),
            )
        ]

    def rows(
        self, ids: list[str] | None = None, *, config_keys: Collection[str] | None = None
    ) -> list[dict]:
        """Every readable row (or those of ``ids``); one whose JSON is damaged is skipped
        with a warning naming it. With ``config_keys``, a row's config holds only those of
        its top-level keys: SQLite's JSON functions pick them out, so the rest of a run's
        provenance is never decoded (a table of many runs needs a few of its keys), and
        rows whose picked keys are equal (the seeds of a configuration) share one config
        object, which callers read and never change."""
        if ids is not None:
            return [row for part in _chunks(ids, 500) for row in self._rows(part, config_keys)]
        return self._rows(None, config_keys)

    def _rows(self, ids: list[str] | None, config_keys: Collection[str] | None) -> list[dict]:
        keys = sorted(config_keys) if config_keys is not None else []
        config = "config" if config_keys is None else f"{_picked_config(len(keys))} AS config"
        where = "" if ids is None else f"WHERE id IN ({', '.join('?' * len(ids))}) "
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples, zipped with the names: faster than Row
        cursor.execute(
            f"SELECT {self._columns(config)} FROM runs {where}ORDER BY created", keys + (ids or [])
        )
        names = [d[0] for d in cursor.description]
        configs: dict | None = {} if config_keys is not None else None
        rows = []
        for values in cursor:
            try:
                rows.append(_decode(dict(zip(names, values)), configs))
            except ZooError as exc:
                if str(exc) not in self._warned:  # once per store, however often it is read
                    self._warned.add(str(exc))
                    log.warning(f"{exc}; skipped")
        return rows

    def _columns(self, config: str) -> str:
        """The runs table's columns (a read-only store of an earlier schema has fewer), the
        config as ``config`` selects it."""
        names = [r[1] for r in self.conn.execute("PRAGMA table_info(runs)")]
        return ", ".join(config if name == "config" else name for name in names)

    def frame(self, rows: list[dict] | None = None):
        """All runs as a pandas DataFrame, one column per metric (of ``rows``, what
        ``rows()`` returned, where the caller has them already)."""
        import pandas as pd

        rows = self.rows() if rows is None else rows
        # pandas picks the listed keys out of each row's dict itself (in C)
        base = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("metrics", "config")])
        metrics = pd.DataFrame([_scalars(r["metrics"]) for r in rows], index=base.index)
        metrics = metrics[[c for c in metrics.columns if c not in base.columns]]
        return pd.concat([base, metrics], axis=1)


def _picked_config(count: int) -> str:
    """SQL for a row's config with only the top-level keys bound to its ``count``
    parameters. SQLite's JSON functions give back objects and lists as written, but a
    number or string as an SQL value (a float to 15 digits): a config with such a key, one
    SQLite's JSON cannot read (NaN, which zoo writes as JSON's NaN extension; a damaged row)
    or one that is not an object comes whole, as written, for _decode to read and judge."""
    marks = ", ".join("?" * count)
    picked = (
        "SELECT CASE WHEN max(type IN ('integer', 'real', 'text')) THEN NULL "
        "ELSE json_group_object(key, value) END "
        f"FROM json_each(runs.config) WHERE key IN ({marks})"
    )
    return (
        "CASE WHEN NOT json_valid(config) THEN config "
        "WHEN json_type(config) != 'object' THEN config "
        f"ELSE coalesce(({picked}), config) END"
    )


def _chunks(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _scalars(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float, str)) or v is None}


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _encode(fields: dict) -> dict:
    out = dict(fields)
    for key in ("metrics", "config"):
        if key in out:
            # NaN and infinities are written as JSON's NaN/Infinity extension, which
            # json.loads reads back unchanged; NumPy scalars become plain numbers.
            out[key] = json.dumps(out[key], default=_json_default, allow_nan=True)
    return out


def _json_default(value):
    item = getattr(value, "item", None)  # NumPy scalars: np.float32(0.5) -> 0.5, not "0.5"
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    return str(value)


def _decode(row: dict, configs: dict | None = None) -> dict:
    """``row`` with its metrics and config read from JSON; ``configs``: config text -> the
    object read from it, shared by the rows with the same text (read-only to the caller)."""
    for key in ("metrics", "config"):
        text = row.get(key) or "{}"
        if key == "config" and configs is not None and text in configs:
            row[key] = configs[text]
            continue
        try:
            row[key] = json.loads(text)
        except (json.JSONDecodeError, RecursionError, TypeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise ZooError(
                f"run {row.get('id')} in the results store has invalid JSON in its "
                f"{key} column ({reason})"
            ) from None
        if not isinstance(row[key], dict):
            raise ZooError(
                f"run {row.get('id')} in the results store has a "
                f"{type(row[key]).__name__} in its {key} column, not an object"
            )
        if key == "config" and configs is not None:
            configs[text] = row[key]
    return row
