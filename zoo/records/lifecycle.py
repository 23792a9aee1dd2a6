"""A run's store row from start to end, written one way for every kind of run (a training
run, an evaluation, an ensemble, a sweep's cell): inserted as running, then ended once, as
finished, failed or interrupted (or a status the caller names, as diverged), with its error
text, when it ended and how long it took.

    with recording(store, run_id, row=fields) as record:
        metrics = work()
        record.end("finished", metrics=metrics)

A KeyboardInterrupt leaving the block ends the run ``interrupted``, any other exception
``failed`` with the exception as its error text; the exception goes on. A block that ends
without ``end()`` ends the run ``finished``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

INTERRUPTED = "interrupted (Ctrl-C)"  # the error text of a run the user stopped
MAX_ERROR = 2000  # characters of an error kept in the row


def error_text(exc: BaseException) -> str:
    """What a failed run's row says went wrong."""
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR]


class RunRecord:
    """One run's row while it runs: ``end`` records how it ended, once."""

    def __init__(self, store, run_id: str, began: float | None = None):
        self.store, self.id = store, run_id
        self.began = time.time() if began is None else began
        self.ended = False

    def end(self, status: str, **fields) -> float:
        """Record the run's end (its status, when, how long, and ``fields``: metrics,
        params, error); the duration in seconds."""
        self.ended = True  # a write that fails here is not followed by another
        now = time.time()
        duration = now - self.began
        self.store.update(self.id, status=status, finished=now, duration=duration, **fields)
        return duration

    def discard(self) -> None:
        """Remove the row: nothing ran (a run refused once it had started)."""
        self.ended = True
        self.store.delete([self.id])


@contextmanager
def recording(
    store, run_id: str, *, row: dict | None = None, began: float | None = None
) -> Iterator[RunRecord]:
    """The run's row inserted (with ``row``'s fields, when given; else it exists already),
    and ended however the block ends (see the module's docstring). ``began`` is when the
    run's clock started, by default now."""
    if row is not None:
        store.insert(run_id, **row)
    record = RunRecord(store, run_id, began)
    try:
        yield record
    except KeyboardInterrupt:  # the user's Ctrl-C
        if not record.ended:
            record.end("interrupted", error=INTERRUPTED)
        raise
    except BaseException as exc:
        if not record.ended:
            record.end("failed", error=error_text(exc))
        raise
    if not record.ended:
        record.end("finished")


def record_ended(
    store, run_id: str, status: str, error: str | None, began: float, *, row: dict | None = None
) -> None:
    """A run that ended without recording its end itself (its worker died, it failed before
    its row was written): its row set to ``status`` with ``error``, or, given ``row``'s
    fields, inserted so."""
    now = time.time()
    ended = {"status": status, "error": error, "finished": now, "duration": now - began}
    if row is None:
        store.update(run_id, **ended)
    else:
        store.insert(run_id, **row, **ended)
