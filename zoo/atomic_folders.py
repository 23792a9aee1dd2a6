"""Folders written whole (``zoo export``): a temporary folder beside the target, renamed into
place in one step, so the target is absent or complete. Only a folder zoo wrote (it holds
``MARKER``) is ever replaced, and nothing in or around ZOO_HOME is ever a target."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

from zoo.errors import ZooError
from zoo.home import check_outside_home, shown_path
from zoo.io import current_umask, fsync_dir

NAME_MAX = 255  # bytes in one file name on the file systems zoo meets
MARKER = ".zoo-folder"  # in every folder zoo writes whole: only such a folder --force replaces
MARKER_TEXT = "written by zoo; zoo may replace this folder whole when asked to (--force)\n"


@contextlib.contextmanager
def atomic_folder(target, *, force: bool = False, what: str = "write"):
    """Yield a new temporary folder beside ``target`` to fill; when the block ends without
    an error, rename it to ``target`` in one step. So ``target`` is either absent or whole:
    an error or Ctrl-C inside removes the temporary folder, and one left by a killed process
    (its lock no longer held) is removed by the next write beside it. An existing ``target``
    is refused unless it is an empty folder; with ``force`` a folder that zoo wrote (it holds
    the ``MARKER`` file) is replaced whole, and nothing else ever is. A target that is, holds
    or lies in ZOO_HOME is refused. Every problem with the target (a file, a link, a device, a read-only or missing parent,
    a name too long, another process that got there first) is a ZooError in one line. What
    the block wrote gets the modes ``open()`` would give it under the umask."""
    target = Path(target)
    check_new_folder(target, force=force, what=what)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _folder_error(target, what, exc) from None
    _remove_abandoned(parent)
    stem = f".{target.name}" if len(target.name.encode()) <= NAME_MAX - 40 else ".zoo"
    lock = None
    staging = None
    try:
        staging = Path(tempfile.mkdtemp(prefix=f"{stem}.partial-", dir=parent))
        os.chmod(staging, 0o777 & ~current_umask())  # as mkdir would make it
        lock = _hold(Path(f"{staging}.lock"))
        yield staging
        (staging / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
        umask = current_umask()
        for path in staging.rglob("*"):  # as open() and mkdir make them (safetensors: 0600)
            path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)
        _move_into_place(staging, target, force=force, what=what)
    except OSError as exc:
        raise _folder_error(target, what, exc) from None
    except Exception as exc:
        # a writer that is no Python file object (safetensors' Rust one) reports a full
        # disk as its own exception, with the system's words in it
        if "No space left on device" in str(exc) or "os error 28" in str(exc):
            raise _folder_error(target, what, OSError(errno.ENOSPC, "no space")) from None
        raise
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        if lock is not None:
            Path(f"{staging}.lock").unlink(missing_ok=True)
            os.close(lock)
    fsync_dir(parent)


def check_new_folder(target, *, force: bool = False, what: str = "write") -> None:
    """Whether ``target`` can become a new folder (see ``atomic_folder``): a ZooError in one
    line if not. Checked before any work, and again when the folder is moved into place."""
    target = Path(target)
    shown = shown_path(target)
    if not target.name or target.name in (".", ".."):
        raise ZooError(f"cannot {what} {shown}: name a new folder")
    if len(target.name.encode()) > NAME_MAX:
        raise ZooError(f"cannot {what} {shown}: the name is longer than {NAME_MAX} bytes")
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:  # a parent that is a file, a name too long for the system, ...
        raise _folder_error(target, what, exc) from None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise ZooError(f"cannot {what} {shown}: it is a symbolic link; name a new folder")
        if not stat.S_ISDIR(info.st_mode):
            kind = (
                "a file"
                if stat.S_ISREG(info.st_mode)
                else "a device"
                if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                else "not a folder"
            )
            raise ZooError(f"cannot {what} {shown}: it is {kind}; name a new folder")
    check_outside_home(target, what)
    if info is not None:
        if _has_entries(target):
            if not force:
                raise ZooError(
                    f"cannot {what} {shown}: it exists and is not empty; name a new "
                    "folder, or force replacing it (a folder zoo wrote)"
                )
            if not (target / MARKER).is_file():
                raise ZooError(
                    f"cannot {what} {shown}: forcing replaces only a folder zoo wrote, and "
                    "this one was not (it has no .zoo-folder file); name a new folder"
                )
    parent = _existing_ancestor(target.parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ZooError(f"cannot {what} {shown}: {parent} is not writable")


def _move_into_place(staging: Path, target: Path, *, force: bool, what: str) -> None:
    try:
        os.rename(staging, target)  # replaces an empty folder; never a full one
        return
    except OSError as exc:
        if not (force and exc.errno in (errno.ENOTEMPTY, errno.EEXIST)):
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise ZooError(
                    f"cannot {what} {shown_path(target)}: it was written meanwhile "
                    "(by another process?); nothing was changed"
                ) from None
            raise
    if not (target / MARKER).is_file():  # replaced by something else meanwhile: keep it
        raise ZooError(
            f"cannot {what} {shown_path(target)}: it was replaced meanwhile by a folder zoo did "
            "not write; nothing was changed"
        )
    old = Path(tempfile.mkdtemp(prefix=f".{target.name[:200]}.old-", dir=target.parent))
    os.rename(target, old / "replaced")  # the old folder, out of the way in one step
    os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def _remove_abandoned(parent: Path) -> None:
    """Temporary folders in ``parent`` whose writer died (its lock is free), whatever the
    name they were written for."""
    for lock_file in parent.glob(".*.partial-*.lock"):
        fd = _try_hold(lock_file)
        if fd is None:
            continue  # a live write
        try:
            shutil.rmtree(Path(str(lock_file)[: -len(".lock")]), ignore_errors=True)
            lock_file.unlink(missing_ok=True)
        finally:
            os.close(fd)


def _hold(path: Path) -> int:
    """The lock that marks a temporary folder as being written (see _remove_abandoned)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    fd = _try_hold(path)
    if fd is None:
        raise OSError(errno.EAGAIN, "locked by another process")
    return fd


def _try_hold(path: Path) -> int | None:
    """An exclusive flock on ``path`` (created if need be), or None if another holds it."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no abandoned folders can be told from live ones
        return None
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _has_entries(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except OSError:
        return True


def _existing_ancestor(folder: Path) -> Path:
    folder = Path(os.path.abspath(folder))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _folder_error(target: Path, what: str, exc: OSError) -> ZooError:
    reasons = {
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.ENAMETOOLONG: "the name is too long for the file system",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOSPC: "no space left on the device",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return ZooError(f"cannot {what} {shown_path(target)}: {reason}")


def check_output_folder(target, what: str = "write into", allowed=()) -> None:
    """A folder the user names for zoo to put files in (``tune --plot``): a ZooError in one
    line if it is something else (a file, a device) or touches ZOO_HOME. Checked before any
    work, so a long search never ends on a refusal."""
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise _folder_error(Path(target), what, exc) from None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        kind = "a file" if stat.S_ISREG(info.st_mode) else "not a folder"
        raise ZooError(f"cannot {what} {shown_path(Path(target))}: it is {kind}; name a folder")
    check_outside_home(target, what, allowed)
