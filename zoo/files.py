"""Atomic file writes: temporary file, fsync, rename. A crash leaves the old file or the
new one, never half of either. A write that fails (read-only folder, full disk) raises
``SaveError``, a ZooError naming the file, so nothing reports "saved" when it was not."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from zoo.errors import ZooError


class SaveError(ZooError):
    """A file could not be written: the folder is read-only, the disk is full, ..."""

    reason = ""  # the system's words, e.g. "No space left on device"


def save_error(path: Path, exc: OSError) -> SaveError:
    reason = exc.strerror or str(exc) or type(exc).__name__
    error = SaveError(f"cannot save {path}: {reason}; check that the runs folder is writable "
                      "and the disk has space (ZOO_HOME moves it)")
    error.reason = reason
    return error


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """``mode``: the file's permissions (the temporary file's 0600 otherwise)."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise save_error(path, exc) from None
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    """Write UTF-8 text to a temporary file beside ``path``, fsync it and rename it into
    place, so a crash leaves the old file or the new one, never half of one. A full or
    read-only disk is a ``ZooError`` naming the file."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where directories cannot be fsynced)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
