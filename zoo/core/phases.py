"""Where a run's time goes: named phases, each second counted once.

The runner opens a clock around a run (``measuring``); the code that loads and tokenizes
data, builds the model, compiles, trains, evaluates and records marks its part with
``phase(name)``. A phase inside another is taken out of the outer one, so the phases add up
to the time measured and never more. Outside a clock ``phase`` costs one lookup. The run
records the seconds by phase with its provenance (``timing``), and a sweep's worker adds
what came before the run: starting its process and importing torch and zoo. Seeds trained
together (zoo.train.turns) take turns in one process: each run's clock counts its own turns
and its share of the steps they share, so a stack's runs together count each second once.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

# The phases, in the order a run meets them.
PHASES = (
    "start",  # a worker process starting, until it can take a cell
    "imports",  # importing torch and zoo, and building the plugin registry
    "plan",  # planning the run from its names (a worker plans each cell again)
    "data",  # loading the dataset, training or loading the tokenizer, tokenizing
    "build",  # building the model
    "compile",  # torch.compile's first step, capturing a CUDA graph
    "train",  # the training loop's steps
    "evaluate",  # validation during training, the final evaluation and samples
    "record",  # the run folder, the store's row, config.json, the curve
)


@dataclass
class _Open:
    """A phase open now: when it began, and the seconds of the phases inside it so far."""

    name: str
    began: float
    inner: float = 0.0


class PhaseClock:
    """Seconds by phase for one run."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.began = time.perf_counter()
        self.away = 0.0  # seconds other runs had while this one waited (set_aside)
        self._open: list[_Open] = []  # the phases open now, outermost first

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def set_aside(self, waited: float, share: float = 0.0) -> None:
        """``waited`` seconds passed while other runs had their turns and a step they shared
        ran, of which ``share`` is this run's part: the phase open now counts the share, and
        neither it nor the clock's whole time counts the rest."""
        away = max(waited - share, 0.0)
        self.away += away
        if self._open:
            self._open[-1].inner += away

    def open_phases(self) -> list[str]:
        """The phases open now, outermost first (another thread may ask)."""
        return [frame.name for frame in list(self._open)]

    def record(self) -> dict:
        """The seconds by phase so far, the open phases' included (rounded to microseconds),
        and the clock's whole time."""
        now = time.perf_counter()
        seconds = dict(self.seconds)
        opened_inside = 0.0  # the time of the open phase inside this one
        for frame in reversed(self._open):
            elapsed = now - frame.began
            seconds[frame.name] = (
                seconds.get(frame.name, 0.0) + elapsed - frame.inner - opened_inside
            )
            opened_inside = elapsed
        named = {name: round(seconds[name], 6) for name in PHASES if name in seconds}
        named.update({k: round(v, 6) for k, v in seconds.items() if k not in named})
        return {"phases": named, "measured": round(now - self.began - self.away, 6)}


_clock: ContextVar[PhaseClock | None] = ContextVar("zoo_phase_clock", default=None)


def current() -> PhaseClock | None:
    """The clock of the run being measured here, if any."""
    return _clock.get()


@contextmanager
def measuring(clock: PhaseClock | None = None) -> Iterator[PhaseClock]:
    """A clock for the code inside: the one already running (a sweep's worker opens one
    before the run), else ``clock`` or a new one."""
    running = _clock.get()
    if running is not None:
        yield running
        return
    clock = clock or PhaseClock()
    token = _clock.set(clock)
    try:
        yield clock
    finally:
        _clock.reset(token)


def measured(function):
    """``function`` run inside ``measuring()``."""

    @functools.wraps(function)
    def with_a_clock(*args, **kwargs):
        with measuring():
            return function(*args, **kwargs)

    return with_a_clock


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the time inside as ``name``'s, less that of the phases inside it."""
    clock = _clock.get()
    if clock is None:
        yield
        return
    frame = _Open(name, time.perf_counter())
    clock._open.append(frame)
    try:
        yield
    finally:
        clock._open.pop()
        elapsed = time.perf_counter() - frame.began
        clock.add(name, elapsed - frame.inner)
        if clock._open:
            clock._open[-1].inner += elapsed
