"""Training progress wherever the output goes: a bar on a terminal, and lines in a log.

On a terminal (standard error) the tqdm bar shows. When the output is kept instead
(standard output redirected to a file, a pipe, ``nohup``, CI), the loop reports one line at
a time on this module's logger, which the command line shows on standard output, before the
run's result (in a script, where ``logging`` is set up to show zoo's progress)::

    step 40/200  loss 2.871  lr 9.6e-04  tokens/s 12,345  elapsed 5s  eta 20s

A line comes every ``log_every`` steps (``--log-every 50``) or seconds (``--log-every 30s``);
by default about ten times a run (every tenth of the step budget), at least every 30 seconds,
and at every validation, with its figures. A ``label`` (an ensemble's member, a sweep's cell)
starts each line, so a log says which one is training.
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import sys
import time

log = logging.getLogger(__name__)

DEFAULT_SECONDS = 30.0  # the longest a log goes without a line, by default
DEFAULT_LINES = 10  # lines a run writes by default, besides validations and the 30 s ones


def parse_log_every(text) -> int | float | None:
    """``--log-every``: ``N`` steps (an int) or ``Ns`` seconds (a float); None for the default."""
    if text is None or isinstance(text, (int, float)) and not isinstance(text, bool):
        value = text
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(s?)\s*", str(text))
        if not match:
            raise ValueError(f"log_every must be steps (50) or seconds (30s), not {text!r}")
        value = float(match[1]) if match[2] else int(float(match[1]))
        if not match[2] and float(match[1]) != int(float(match[1])):
            raise ValueError(f"log_every in steps must be a whole number, not {text!r}")
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"log_every must be positive, not {text!r}")
    return value


def log_every_argument(text: str) -> int | float | None:
    """argparse type for --log-every."""
    try:
        return parse_log_every(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def clock(seconds: float) -> str:
    """A duration as a person reads it: 42s, 3m05s, 2h10m."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """What the training loop reports to after each step: a bar, lines, both or neither."""

    def __init__(
        self,
        total: int,
        *,
        desc: str = "train",
        quiet: bool = False,
        label: str | None = None,
        log_every: int | float | None = None,
        time_budget: float | None = None,
        stdout=None,
        stderr=None,
    ):
        from tqdm.auto import tqdm

        stdout = stdout or sys.stdout
        stderr = stderr or sys.stderr
        self.total, self.label, self.time_budget = total, label, time_budget
        self.bar = tqdm(
            total=total,
            desc=desc if label is None else f"{label} {desc}",
            disable=quiet or not _isatty(stderr),
            file=stderr,
            dynamic_ncols=True,
            leave=False,
        )
        # Lines when the output is kept: standard output is not a terminal, or standard
        # error is not one either (no bar can show there).
        self.lines = not quiet and not (_isatty(stdout) and _isatty(stderr))
        self.every_steps: int | None
        self.every_seconds: float | None
        if isinstance(log_every, float):
            self.every_steps, self.every_seconds = None, log_every
        elif isinstance(log_every, int):
            self.every_steps, self.every_seconds = log_every, None
        else:
            self.every_steps = max(1, math.ceil(total / DEFAULT_LINES))
            self.every_seconds = DEFAULT_SECONDS
        self.last_line = time.perf_counter()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()

    def skip(self, steps: int) -> None:
        """Steps done before this process started (a resumed run)."""
        self.bar.update(steps)

    def step(
        self,
        step: int,
        loss: float,
        lr: float,
        tokens_per_s: float,
        elapsed: float,
        validation: dict | None = None,
    ) -> None:
        """After optimizer step ``step``: training throughput so far, ``elapsed`` seconds
        since the start, and the validation figures if this step validated."""
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{tokens_per_s:,.0f}")
        if not self.lines or not self._due(step, validation):
            return
        self.last_line = time.perf_counter()
        parts = [
            f"step {step}/{self.total}",
            f"loss {loss:.4g}",
            f"lr {lr:.2e}",
            f"tokens/s {tokens_per_s:,.0f}",
            f"elapsed {clock(elapsed)}",
        ]
        parts.append(f"eta {clock(self._eta(step, elapsed))}")
        for key, value in (validation or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                parts.append(f"{key} {value:.4g}")
        line = "  ".join(parts)
        if self.label:
            line = f"[{self.label}] {line}"
        log.info(line)

    def _due(self, step: int, validation) -> bool:
        if validation is not None or step == self.total:
            return True
        if self.every_steps is not None and step % self.every_steps == 0:
            return True
        since = time.perf_counter() - self.last_line
        return self.every_seconds is not None and since >= self.every_seconds

    def _eta(self, step: int, elapsed: float) -> float:
        """Time left: the steps left at the pace so far (a resumed run's elapsed time
        counts its earlier steps), or the time budget's rest if that ends first."""
        left = elapsed / step * (self.total - step)
        if self.time_budget is not None:
            left = min(left, max(0.0, self.time_budget - elapsed))
        return left


def _isatty(stream) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False
