"""Files, written and read safely.

Writes are atomic: temporary file, fsync, rename. A crash leaves the old file or the new one,
never half of either. A write that fails (read-only folder, full disk) raises ``SaveError``,
a ZooError naming the file, so nothing reports "saved" when it was not.

Files the user names (``--output``, ``--plot``) are written without surprises: a regular file
(or a new one) is replaced atomically; a symbolic link is followed and its target written
atomically, so the link stays a link; a terminal, device or FIFO (``/dev/stdout``, a named
pipe) is streamed to, and ``-`` means standard output. A folder, a socket or a block device
is refused with exit 2, as is a write that fails (``/dev/full``: no space left). Nothing a
user names is ever written into ZOO_HOME (zoo's own store and run folders): a target that is
ZOO_HOME, lies inside it or contains it is refused with exit 2.

Files that may come from strangers are read safely: weights only from safetensors, configs
only from JSON, tokenizers only from tokenizer.json. Nothing here unpickles or runs code, and
every way a file can be broken (missing, truncated, not what it claims) is a ZooError naming
the file: one line, exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from zoo.errors import ZooError


class SaveError(ZooError):
    """A file could not be written: the folder is read-only, the disk is full, ..."""

    reason = ""  # the system's words, e.g. "No space left on device"


def save_error(path: Path, exc: OSError) -> SaveError:
    reason = exc.strerror or str(exc) or type(exc).__name__
    error = SaveError(
        f"cannot save {path}: {reason}; check that the runs folder is writable "
        "and the disk has space (ZOO_HOME moves it)"
    )
    error.reason = reason
    return error


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """``mode``: the file's permissions; by default 0666 less the umask, as ``open()`` would
    make it (mkstemp's 0600 would lock a shared ZOO_HOME's group out of its own runs)."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.fchmod(fd, new_file_mode() if mode is None else mode)
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


# ZOO_HOME: zoo's own folder, which no user-named write may touch


def zoo_home() -> Path:
    """The runs folder: ZOO_HOME, or ./runs. An empty ZOO_HOME is a mistake (it would
    silently mean the current folder), not a choice."""
    value = os.environ.get("ZOO_HOME", "runs")
    if not value.strip():
        raise ZooError("ZOO_HOME is set but empty; unset it (runs go to ./runs) or name a folder")
    return Path(value).expanduser()


def check_outside_home(target, what: str = "write", allowed=()) -> None:
    """A ZooError unless ``target`` is clear of ZOO_HOME: not ZOO_HOME itself, not inside it
    (a run folder, the store) and not a folder that holds it. Paths are compared resolved,
    so a link or ``..`` cannot get round it. ``allowed``: folders under ZOO_HOME that zoo
    itself fills with such files (tune's plots)."""
    home = os.path.realpath(zoo_home())
    path = os.path.realpath(target)
    if any(path == os.path.realpath(folder) for folder in allowed):
        return
    relation = (
        "is ZOO_HOME"
        if path == home
        else "is inside ZOO_HOME"
        if _within(path, home)
        else "holds ZOO_HOME"
        if _within(home, path)
        else None
    )
    if relation is not None:
        raise ZooError(
            f"cannot {what} {_shown(Path(target))}: it {relation} ({home}), where zoo keeps "
            "its runs and store; name a folder outside it"
        )


def _within(path: str, folder: str) -> bool:
    return path != folder and os.path.commonpath([path, folder]) == folder


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_name_part(name, what: str) -> str:
    """``name`` if it can be part of a file name as it is (letters, digits, '.', '_', '-',
    starting with a letter or digit, at most 128); a ZooError naming ``what`` otherwise."""
    if isinstance(name, str) and SAFE_NAME.fullmatch(name):
        return name
    shown = repr(name if not isinstance(name, str) or len(name) <= 60 else name[:60] + "...")
    raise ZooError(
        f"{what} {shown} cannot be part of a file name: use letters, digits, '.', '_' and "
        "'-' (at most 128, starting with a letter or digit)"
    )


def safe_name_part(text: str, limit: int = 120) -> str:
    """``text`` made safe to be part of one file name: every character but letters, digits,
    '.', '_' and '-' becomes '_', and it starts with a letter or digit (so never '..' or a
    hidden file). Names from elsewhere (a dataset's file name, a stored study) go through it."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", str(text))[:limit]
    return safe if safe[:1].isalnum() else f"x{safe}"[:limit]


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
        raise ZooError(f"cannot {what} {_shown(Path(target))}: it is {kind}; name a folder")
    check_outside_home(target, what, allowed)


# Files the user names

STDOUT = "-"


def kind_of(name: str) -> str:
    """'stdout', 'stream' (device or FIFO) or 'file' (regular, or not there yet)."""
    if name == STDOUT:
        return "stdout"
    try:
        info = os.stat(name)  # follows symbolic links
    except FileNotFoundError:
        return "file"
    except OSError as exc:
        raise _error(name, exc) from None
    if stat.S_ISREG(info.st_mode):
        return "file"
    if stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode):
        return "stream"
    what = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
    raise ZooError(f"cannot write {name}: it is {what}; name a file")


def check_output_file(name: str, what: str = "write") -> None:
    """Whether ``write_output`` can write ``name``, checked before any work: a ZooError in
    one line for a folder, a socket, a missing parent folder, or a file in ZOO_HOME."""
    if kind_of(name) != "file":
        return
    target = Path(os.path.realpath(name))
    check_outside_home(target, what)
    if not target.parent.is_dir():
        raise ZooError(f"cannot {what} {name}: folder {target.parent} does not exist")


def write_output(name: str, data: bytes | str) -> None:
    """Write ``data`` to the path the user named, as the module docstring says."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    kind = kind_of(name)
    if kind == "stdout":
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:  # a text stream without bytes underneath (tests capture stdout so)
            sys.stdout.write(data.decode("utf-8", errors="replace"))
        return
    if kind == "stream":
        _stream(name, data)
        return
    target = Path(os.path.realpath(name))  # a symlink's target; the path itself otherwise
    check_outside_home(target)
    if not target.parent.is_dir():
        raise ZooError(f"cannot write {name}: folder {target.parent} does not exist")
    try:
        atomic_write_bytes(target, data, mode=_mode(target))
    except SaveError as exc:
        raise ZooError(f"cannot write {name}: {exc.reason}") from None


def _stream(name: str, data: bytes) -> None:
    try:
        fd = os.open(name, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
    except OSError as exc:
        raise _error(name, exc) from None


def _mode(target: Path) -> int:
    """Keep an existing file's permissions; a new one gets the usual 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return new_file_mode()


def current_umask() -> int:
    """The process's umask, read without changing it where Linux shows it (/proc), so no
    other thread ever creates a file under a umask of 0."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def new_file_mode() -> int:
    """The permissions ``open()`` gives a new file: 0666 less the umask."""
    return 0o666 & ~current_umask()


def _error(name: str, exc: OSError) -> ZooError:
    return ZooError(f"cannot write {name}: {exc.strerror or type(exc).__name__}")


# Files from strangers


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def load_safetensors(path: Path) -> dict:
    """The tensors of a safetensors file as NumPy arrays; a missing, truncated or corrupt
    file (or one whose header lies) is a ``ZooError`` naming it. Never unpickles."""
    from safetensors.numpy import load

    path = Path(path)
    if not path.is_file():
        raise ZooError(f"No weights at {path}")
    try:
        # Read the bytes rather than mmap the file: a file that changes under us cannot
        # crash the process, and the parser sees exactly what was checked.
        return load(path.read_bytes())
    except Exception as exc:
        raise ZooError(
            f"{path} is not a valid safetensors file ({_first_line(exc)}); "
            "weights are only ever read from safetensors"
        ) from None


def load_json(path: Path):
    """The JSON in a file; a missing, unreadable or malformed one is a ``ZooError`` naming
    it."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ZooError(f"{path} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ZooError(f"{path} is not valid JSON ({_first_line(exc)})") from None
    except RecursionError:
        raise ZooError(f"{path} is nested too deeply to be a zoo file") from None


def load_tokenizer(cls, path: Path):
    """``cls.load(path)`` for a tokenizer file, with a broken file as a ZooError."""
    path = Path(path)
    if not path.is_file():
        raise ZooError(f"No tokenizer at {path}")
    try:
        return cls.load(path)
    except Exception as exc:
        raise ZooError(f"{path} is not a valid tokenizer file ({_first_line(exc)})") from None


# Folders written whole

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
    shown = _shown(target)
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
                    "folder, or pass --force to replace a folder zoo wrote"
                )
            if not (target / MARKER).is_file():
                raise ZooError(
                    f"cannot {what} {shown}: --force replaces only a folder zoo wrote, and "
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
                    f"cannot {what} {_shown(target)}: it was written meanwhile "
                    "(by another process?); nothing was changed"
                ) from None
            raise
    if not (target / MARKER).is_file():  # replaced by something else meanwhile: keep it
        raise ZooError(
            f"cannot {what} {_shown(target)}: it was replaced meanwhile by a folder zoo did "
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


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


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


def _shown(path: Path, limit: int = 120) -> str:
    text = str(path)
    return text if len(text) <= limit else text[: limit // 2] + "..." + text[-limit // 2 :]


def _folder_error(target: Path, what: str, exc: OSError) -> ZooError:
    reasons = {
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.ENAMETOOLONG: "the name is too long for the file system",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOSPC: "no space left on the device",
    }
    reason = reasons.get(exc.errno, exc.strerror or type(exc).__name__)
    return ZooError(f"cannot {what} {_shown(target)}: {reason}")
