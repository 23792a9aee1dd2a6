"""How zoo reports while it works: progress lines and warnings go to the standard `logging`
loggers under ``zoo`` (each module's own, ``logging.getLogger(__name__)``); nothing outside
the command line prints.

The command line shows them on standard error, a warning as ``zoo: warning: ...``. In a
script or notebook, warnings appear through Python's last-resort handler and progress lines
where ``logging`` is set up to show them (``logging.basicConfig(level=logging.INFO)``);
``zoo.sweep(log=stream)`` and ``zoo.tune(progress=...)`` send their progress to a stream of
the caller's for the call.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

ROOT = "zoo"


class Lines(logging.Formatter):
    """A progress line as it is; a warning or an error after ``zoo: warning:`` or ``zoo:``."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno >= logging.ERROR:
            return f"zoo: {text}"
        if record.levelno >= logging.WARNING:
            return f"zoo: warning: {text}"
        return text


class _Flushed(logging.StreamHandler):
    """A handler that looks up ``sys.stderr`` when it writes (pytest and --json replace it),
    unless it was given a stream of its own."""

    def __init__(self, stream: TextIO | None):
        super().__init__(stream)
        self._own = stream is not None

    def emit(self, record: logging.LogRecord) -> None:
        if not self._own:
            self.stream = sys.stderr
        super().emit(record)


@contextlib.contextmanager
def reporting_to(stream: TextIO | None, *, progress: bool = True) -> Iterator[None]:
    """The zoo loggers' messages on ``stream`` for the block, in place of any handler they
    had: progress lines too, or with ``progress=False`` only warnings. With no stream, on
    standard error, unless the zoo loggers are set up already (by the command line, or by
    the caller's own logging) and progress is wanted: then they stay as they are."""
    logger = logging.getLogger(ROOT)
    if stream is None and progress and logger.handlers:
        yield
        return
    handler = _Flushed(stream)
    handler.setFormatter(Lines())
    handler.setLevel(logging.INFO if progress else logging.WARNING)
    saved = logger.handlers[:], logger.level, logger.propagate
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.handlers, logger.propagate = saved[0], saved[2]
        logger.setLevel(saved[1])
