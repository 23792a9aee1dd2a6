"""Files the user names (``--output``, ``--plot``): written without surprises.

A regular file (or a new one) is replaced atomically, as every zoo file is. A symbolic link
is followed and its target is written atomically, so the link stays a link. A terminal,
device or FIFO (``/dev/stdout``, a named pipe) is streamed to, never replaced by a
regular file, and ``-`` means standard output. A folder, a socket or a block device is
refused with exit 2, as is a write that fails (``/dev/full``: no space left).
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from zoo.errors import ZooError
from zoo.files import SaveError, atomic_write_bytes

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
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _error(name: str, exc: OSError) -> ZooError:
    return ZooError(f"cannot write {name}: {exc.strerror or type(exc).__name__}")
