"""Option types and option groups that several commands share."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import stat
import sys

from zoo.errors import ZooError

RELOAD_DEVICE_HELP = (
    "where the reloaded run computes: auto (CUDA when present, as zoo run "
    "picks; the default), cpu or cuda"
)


def add_output_options(
    p,
    *,
    quiet_to=None,
    quiet_help: str = "no progress output",
    json_help: str = "print one JSON object on stdout",
) -> None:
    """--quiet and --json, alike on every command that trains (run, resume, sweep, reproduce)."""
    (quiet_to or p).add_argument("--quiet", action="store_true", help=quiet_help)
    p.add_argument("--json", action="store_true", help=json_help)


def add_ray_options(p, *, unit: str, executor_help: str, gpus_help: str) -> None:
    """--executor, --address and --UNIT-cpus/--UNIT-gpus: where a sweep's cells or a
    tuning's trials run (the local worker pool, or tasks on a Ray cluster)."""
    p.add_argument("--executor", choices=("local", "ray"), default="local", help=executor_help)
    p.add_argument("--address", help="the Ray cluster to use (default: a local one)")
    p.add_argument(
        f"--{unit}-cpus",
        type=positive_int,
        metavar="N",
        help=f"CPUs (threads) each Ray {unit} asks for (default 1)",
    )
    p.add_argument(f"--{unit}-gpus", type=positive_float, metavar="N", help=gpus_help)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def count_or_auto(text: str) -> int | str:
    """--jobs, and zoo sweep's --seeds: a positive integer, or auto."""
    if text == "auto":
        return text
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer or auto, got {text!r}"
        ) from None


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def temperature(text: str) -> float:
    """--temperature: zero (greedy) or a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected 0 (greedy) or a positive number, got {text!r}")
    return value


def read_texts(path: str) -> list[str]:
    """predict --file (``-``: standard input): one text per line; blank lines skipped. Read
    line by line, each at most MAX_PREDICT_TEXT_BYTES, and the bytes actually read counted
    against MAX_PREDICT_BYTES, so a pipe or a device (whose size the system reports as 0) is
    bounded as a file is: the first byte too many is exit 2, whatever comes after it."""
    from zoo.core.limits import (
        MAX_PREDICT_BYTES,
        MAX_PREDICT_LINES,
        MAX_PREDICT_TEXT_BYTES,
        check_file_size,
    )

    if path != "-":
        check_file_size(path, MAX_PREDICT_BYTES, "--file")  # a regular file: before reading
    texts, total = [], 0
    if path == "-" and getattr(sys.stdin, "buffer", None) is None:  # started with `<&-`
        raise ZooError("--file -: standard input is closed; pipe the texts in, or name a file")
    try:
        handle = sys.stdin.buffer if path == "-" else _open_texts(path)
    except OSError as exc:
        raise ZooError(f"cannot read --file {path}: {exc.strerror or exc}") from None
    try:
        for number in itertools.count(1):
            line = handle.readline(MAX_PREDICT_TEXT_BYTES + 1)
            if not line:
                break
            total += len(line)
            if total > MAX_PREDICT_BYTES:
                raise ZooError(
                    f"--file {path} holds more than {MAX_PREDICT_BYTES / 2**20:,.0f} "
                    "MiB; at most that many: split it"
                )
            if len(line) > MAX_PREDICT_TEXT_BYTES:
                raise ZooError(
                    f"--file {path}: line {number:,} is longer than "
                    f"{MAX_PREDICT_TEXT_BYTES / 2**20:,.0f} MiB; at most that per text"
                )
            try:
                text = line.decode("utf-8").rstrip("\n")
            except UnicodeDecodeError as exc:
                raise ZooError(
                    f"cannot read --file {path}: line {number:,} is not UTF-8 text ({exc.reason})"
                ) from None
            if text.strip():
                texts.append(text)
                if len(texts) > MAX_PREDICT_LINES:
                    raise ZooError(
                        f"--file {path} has more than {MAX_PREDICT_LINES:,} texts; "
                        f"at most {MAX_PREDICT_LINES:,}"
                    )
    except OSError as exc:
        raise ZooError(f"cannot read --file {path}: {exc.strerror or exc}") from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()
    if not texts:
        raise ZooError(f"--file {path} has no texts (every line is blank); put one text per line")
    return texts


def _open_texts(path: str):
    """A regular file, or a pipe (a named FIFO, /dev/stdin) read with a deadline: a FIFO is
    never opened in a way that waits for a writer. A device, a socket or a folder is
    refused before it is opened."""
    from zoo.io import STDIN_NAMES, kind_word, open_pipe

    mode = os.stat(path).st_mode
    if path in STDIN_NAMES or stat.S_ISFIFO(mode):
        return open_pipe(path, "--file")
    if not stat.S_ISREG(mode):
        raise ZooError(
            f"cannot read --file {path}: it is {kind_word(mode)}; name a text file, "
            "a named pipe or - (standard input)"
        )
    return open(path, "rb")


def batches_of_texts(texts: list[str], max_bytes: int = 2**20, max_texts: int = 1024):
    """Texts in groups of at most ``max_bytes`` and ``max_texts``: predictions are made a
    group at a time, so memory follows the group, not the whole input."""
    group: list[str] = []
    size = 0
    for text in texts:
        length = len(text.encode("utf-8", errors="replace"))
        if group and (size + length > max_bytes or len(group) >= max_texts):
            yield group
            group, size = [], 0
        group.append(text)
        size += length
    if group:
        yield group


def json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


# --json: the one JSON document goes to the real standard output; whatever else is printed
# meanwhile (a plugin's print, a library's banner) goes to standard error, so the output
# stays valid JSON whatever a plugin does.
_json_stdout = None


@contextlib.contextmanager
def others_print_to_stderr(active: bool):
    global _json_stdout
    if not active or sys.stdout is None:
        yield
        return
    _json_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        yield
    finally:
        sys.stdout, _json_stdout = _json_stdout, None


def json_stdout():
    """Where the JSON document goes (the real standard output during --json)."""
    return _json_stdout or sys.stdout


def print_json(value, **options) -> None:
    """One JSON document on standard output: strict JSON (NaN and infinities are null)."""
    text = json.dumps(finite(value), allow_nan=False, default=json_default, **options)
    print(text, file=_json_stdout or sys.stdout, flush=True)


def finite(value):
    """``value`` with every NaN or infinity (at any depth) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    item = getattr(value, "item", None)  # NumPy scalars
    if callable(item) and getattr(value, "shape", None) == ():
        return finite(item())
    return value


def check_output_options(args) -> None:
    """The files a zoo command's --output and --plot name, checked before it does any work
    (a long sweep never ends on a refused target). A command whose --plot is a folder
    (tune) checks it itself."""
    from zoo.io import check_output_file

    for option in ("output", "plot"):
        value = getattr(args, option, None)
        if option == "plot" and getattr(args, "plot_folder", False):
            continue
        if isinstance(value, str) and value:
            check_output_file(value)


def emit_text(text: str, output: str | None) -> None:
    """Print `text`, or write it to the file --output names ('-': stdout)."""
    if output and output != "-":
        from zoo.io import write_output

        write_output(output, text)
        print(f"wrote {output}", file=sys.stderr)
    else:
        json_stdout().write(text)


def add_column_options(p) -> None:
    """--text-column and --label-column (--source-column, --target-column for a translation)."""
    p.add_argument(
        "--text-column",
        "--source-column",
        dest="text_column",
        help="text column, the source of a translation (detected by default)",
    )
    p.add_argument(
        "--label-column",
        "--target-column",
        dest="label_column",
        help="label column, the target of a translation (detected by default)",
    )
