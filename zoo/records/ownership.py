"""Who writes a run folder: an OS lock, not a guess from a process id.

The process that trains a run holds an exclusive ``flock`` on ``RUN/.writer.lock`` for the
run's whole life; the kernel drops it the moment that process ends, however it ends
(SIGKILL, out of memory, a lost terminal). So "is anyone still writing this run?" has an
exact answer: try the lock. A rerun waits a little for a writer that is ending and refuses
one that is alive, rather than resuming a folder another process still writes.

A sweep also locks each cell it trains (``ZOO_HOME/.locks/cell-HASH.lock``, by config
hash), so two identical sweeps started together train each cell once: the second finds the
cell taken, does other cells, and finds it finished when the first lets it go.

Where ``fcntl`` does not exist (Windows) every lock is granted at once: the pid checks of
the results store are then all there is.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import time
from pathlib import Path

from zoo.errors import ZooError

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".writer.lock"
WAIT_VARIABLE = "ZOO_WRITER_WAIT"  # seconds a rerun waits for a writer that is ending
DEFAULT_WAIT = 15.0


class RunBusy(ZooError):
    """Another live process writes this run (or trains this cell)."""


def writer_wait() -> float:
    try:
        return max(0.0, float(os.environ.get(WAIT_VARIABLE, DEFAULT_WAIT)))
    except ValueError:
        return DEFAULT_WAIT


class FileLock:
    """An exclusive flock on ``path``, held while this object keeps the file open. The file
    names its holder (pid and host) for the message another process shows."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.fd: int | None = None

    @property
    def held(self) -> bool:
        return self.fd is not None

    def try_acquire(self) -> bool:
        if self.fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            raise ZooError(
                f"cannot lock {self.path}: {exc.strerror or exc}; check that the "
                "runs folder is writable (ZOO_HOME moves it)"
            ) from None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
        self.fd = fd
        try:  # who holds it, for the other process's message; the lock is what counts
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        except OSError:
            pass
        return True

    def acquire(self, wait: float, busy: str) -> FileLock:
        """Take the lock, waiting up to ``wait`` seconds; then RunBusy(``busy`` + holder)."""
        deadline = time.monotonic() + wait
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                raise RunBusy(f"{busy} ({holder(self.path)})")
            time.sleep(0.1)
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def holder(path: Path) -> str:
    try:
        pid, _, host = Path(path).read_text().strip().partition(" ")
    except OSError:
        return "another process"
    return f"process {pid} on {host}" if pid.isdigit() else "another process"


def is_locked(path: Path) -> bool:
    """Whether some process holds the lock on ``path`` (never creates the file)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False  # no lock file: nobody took it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # also drops the lock just taken
    return False


# -- run folders ---------------------------------------------------------------------
def own_run(folder: Path, wait: float | None = None) -> FileLock:
    """Become the one writer of a run folder, waiting up to ``wait`` seconds (ZOO_WRITER_WAIT,
    15 by default) for a writer that is ending; RunBusy when one is alive."""
    lock = FileLock(Path(folder) / LOCK_NAME)
    return lock.acquire(
        writer_wait() if wait is None else wait,
        f"run {Path(folder).name} is being written by another process",
    )


def writer_alive(folder: Path) -> bool:
    """Whether a live process owns the run folder (holds its writer lock)."""
    return is_locked(Path(folder) / LOCK_NAME)


def wait_for_writer(folder: Path, wait: float | None = None) -> bool:
    """Wait up to ``wait`` seconds for the run's writer to end; whether it has."""
    deadline = time.monotonic() + (writer_wait() if wait is None else wait)
    while writer_alive(folder):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


# -- sweep cells ---------------------------------------------------------------------
def cell_lock(home: Path, config_hash: str) -> FileLock:
    folder = Path(home) / ".locks"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ZooError(
            f"cannot create {folder}: {exc.strerror or exc}; check that the runs "
            "folder is writable (ZOO_HOME moves it)"
        ) from None
    name = (
        config_hash
        if re.fullmatch(r"[0-9A-Za-z_-]{1,128}", config_hash or "")
        else (hashlib.sha256(str(config_hash).encode()).hexdigest())
    )
    return FileLock(folder / f"cell-{name}.lock")
