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

import io
import json
import os
import select
import stat
import sys
import tempfile
import time
from pathlib import Path

from zoo.errors import ZooError
from zoo.home import check_outside_home


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


def write_output(name: str, data: bytes | str, *, in_home: bool = False) -> None:
    """Write ``data`` to the path the user named, as the module docstring says.
    ``in_home``: zoo's own file in a run folder (its curve.png), not a name a user gave."""
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
    if not in_home:
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
        mode = os.stat(path).st_mode
    except OSError:
        mode = stat.S_IFREG  # reading it says what is wrong
    if not stat.S_ISREG(mode):  # a FIFO would wait for a writer forever
        raise ZooError(f"{path} is {kind_word(mode)}; JSON is read from a regular file only")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ZooError(f"{path} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ZooError(f"{path} is not valid JSON ({_first_line(exc)})") from None
    except RecursionError:
        raise ZooError(f"{path} is nested too deeply to be a zoo file") from None


MAX_CONFIG_BYTES = 2**20  # a config file is a page of settings, never a data set
PIPE_SECONDS = 60.0  # the most a pipe may take to deliver what zoo reads from it
STDIN_NAMES = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


def kind_word(mode: int) -> str:
    """What a file that is not a regular one is, in a message's words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def check_regular_file(path, what: str) -> None:
    """A ZooError unless ``path`` is a regular file (a link to one included), checked with
    stat, before anything opens it: opening a FIFO waits for a writer that may never come,
    and a device or a socket never ends."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ZooError(f"{path}: no such {what}") from None
    except OSError as exc:
        raise ZooError(f"{path}: cannot read this {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise ZooError(f"{path} is {kind_word(mode)}; a {what} is a regular file")


class PipeReader(io.RawIOBase):
    """A pipe (standard input, a named FIFO opened non-blocking) read with a deadline: each
    read waits for data at most until ``deadline`` (time.monotonic()), so a writer that never
    comes, or stops half way, is a ZooError naming ``name``, never a hang."""

    def __init__(self, fd: int, name: str, what: str, seconds: float):
        self.fd, self.name, self.what = fd, name, what
        self.seconds, self.deadline = seconds, time.monotonic() + seconds
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN | select.POLLPRI)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0 or not self._poll.poll(left * 1000):
                raise ZooError(
                    f"{self.name}: nothing more came through this pipe in "
                    f"{self.seconds:,.0f} s; a {self.what} is read within that"
                )
            try:
                return os.readv(self.fd, [buffer])
            except BlockingIOError:
                continue  # woken without data: wait again, within the deadline

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def open_pipe(path, what: str, seconds: float | None = None):
    """A buffered reader over standard input (``path`` one of STDIN_NAMES) or a named FIFO,
    opened non-blocking (so an open never waits for a writer) and read with a deadline."""
    if str(path) in STDIN_NAMES:
        fd = os.dup(0)
    else:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):  # standard input redirected from a file
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    os.set_blocking(fd, False)
    return io.BufferedReader(PipeReader(fd, str(path), what, seconds or PIPE_SECONDS))


def read_config_text(path, what: str = "config file", limit: int = MAX_CONFIG_BYTES) -> str:
    """The UTF-8 text of a small file the user names (a config file, a registry): at most
    ``limit`` bytes are ever read, and in bounded time. A regular file is read; standard
    input (``/dev/stdin``) is read up to the limit within PIPE_SECONDS; a named pipe, a
    device, a socket or a folder is refused before anything opens it. Every problem is a
    ZooError naming the file. A UTF-8 byte order mark at the start is dropped."""
    if str(path) not in STDIN_NAMES:
        check_regular_file(path, what)
    try:
        with open_pipe(path, what) if str(path) in STDIN_NAMES else open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise ZooError(f"{path}: cannot read this {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ZooError(f"{path} holds more than {limit // 1024:,} KiB; too much for a {what}")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ZooError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); a {what} is UTF-8"
        ) from None


MAX_CONFIG_DEPTH = 32  # tables within tables in a config file


def check_depth(data, what: str, limit: int = MAX_CONFIG_DEPTH) -> None:
    """A ZooError if ``data`` (parsed JSON, TOML or YAML) nests tables or lists deeper than
    ``limit``: walked without recursion, so no depth can overflow the stack."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > limit:
                raise ZooError(f"{what} nests tables or lists more than {limit} deep")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)


MAX_TOKENIZER_BYTES = 128 * 2**20  # a vocabulary of 2^20 tokens and its merges, with room


def load_tokenizer(cls, path: Path):
    """``cls.load(path)`` for a tokenizer file, with a broken file as a ZooError."""
    path = Path(path)
    if not path.is_file():
        raise ZooError(f"No tokenizer at {path}")
    size = path.stat().st_size
    if size > MAX_TOKENIZER_BYTES:  # checked before parsing: a huge file takes minutes and GBs
        raise ZooError(
            f"{path} is {size / 2**20:,.0f} MiB; a tokenizer file is at most "
            f"{MAX_TOKENIZER_BYTES // 2**20} MiB"
        )
    try:
        return cls.load(path)
    except Exception as exc:
        raise ZooError(f"{path} is not a valid tokenizer file ({_first_line(exc)})") from None
