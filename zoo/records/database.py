"""The store's database: its schema, one migration per version, and how a connection opens
(WAL mode, which several processes can share; read-only for an archived store)."""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from pathlib import Path

SCHEMA_VERSION = 2
STATUSES = ("running", "finished", "failed", "interrupted", "diverged", "pruned")
COLUMNS = (
    "id",
    "kind",
    "parent_id",
    "status",
    "created",
    "finished",
    "duration",
    "model",
    "architecture",
    "tokenizer",
    "dataset",
    "task",
    "params",
    "seed",
    "config_hash",
    "metrics",
    "config",
    "error",
    "pid",
    "host",
    "resumed",
    "proc_start",
)

# One entry per schema version: the SQL that brings version N-1 up to N.
MIGRATIONS = {
    1: """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL DEFAULT 'train',   -- 'train' or 'eval'
        parent_id TEXT,                       -- the trained run an eval row scores
        status TEXT NOT NULL,
        created REAL NOT NULL,
        finished REAL,
        duration REAL,
        model TEXT, architecture TEXT, tokenizer TEXT, dataset TEXT, task TEXT,
        params INTEGER, seed INTEGER, config_hash TEXT,
        metrics TEXT NOT NULL DEFAULT '{}',   -- JSON object
        config TEXT NOT NULL DEFAULT '{}',    -- JSON object: the resolved config and provenance
        error TEXT,
        pid INTEGER, host TEXT
    );
    CREATE INDEX runs_by_model ON runs (model, dataset);
    """,
    2: """
    ALTER TABLE runs ADD COLUMN resumed INTEGER NOT NULL DEFAULT 0;  -- times `zoo resume` continued it
    ALTER TABLE runs ADD COLUMN proc_start TEXT;  -- start time of pid: a reused pid is not the run
    CREATE INDEX runs_by_status ON runs (status);  -- the stale-row check on every open
    """,
}


def use_wal(conn: sqlite3.Connection, patience: float = 60.0) -> None:
    """Switch a connection to WAL. When several processes open a new store at once,
    SQLite answers the switch 'database is locked' at once, without waiting on the busy
    timeout (waiting could deadlock), so wait and retry here."""
    deadline = time.monotonic() + patience
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def not_writable(path: Path) -> bool:
    """An existing database whose file or folder cannot be written (an archived store)."""
    return path.is_file() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open read-only. A WAL database needs its -shm file, which a read-only folder cannot
    get; then the file is opened as immutable (nothing else can be writing it there)."""
    uri = "file:" + urllib.parse.quote(str(path.resolve()))
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=60, isolation_level=None)
