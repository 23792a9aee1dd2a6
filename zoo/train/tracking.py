"""Experiment trackers (the ``register_loggers`` hook): a run's config at its start, each
record of metrics.jsonl, and its final metrics and folder at the end, sent to every logger
the user chose (``--log-to``, ``log_to`` in a config file, or ``ZOO_LOG_TO``).

Each tracker's calls run in order on a thread of its own, so a slow tracker (a database
write per step) never slows training, and each call may take at most ZOO_TRACKER_TIMEOUT
seconds (default 10): a tracker that takes longer is dropped with one warning. What a tracker's ``start`` returns says where it writes (a log
folder; a tracking URI and run id): the run records it, and the command prints it. A logger that raises is its plugin's failure: one warning naming
it, and no more calls to it; the run goes on and is recorded as it would be without it.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import re
import threading
import time
from pathlib import Path

from zoo.errors import MissingModule, ZooError

log = logging.getLogger(__name__)

TIMEOUT = 10.0  # seconds a tracker's call (start, log, finish) may take: ZOO_TRACKER_TIMEOUT
FINISH_TIMEOUT = 600.0  # the most a command waits for its trackers' calls, all together


def chosen(log_to) -> list[str]:
    """Logger names from --log-to ('a,b'), a config file's list, or ZOO_LOG_TO."""
    if log_to is None:
        log_to = os.environ.get("ZOO_LOG_TO", "")
    if isinstance(log_to, str):
        log_to = log_to.split(",")
    if not isinstance(log_to, (list, tuple)) or not all(isinstance(n, str) for n in log_to):
        raise ZooError(f"log_to must be logger names, such as 'tensorboard,mlflow', not {log_to!r}")
    return list(dict.fromkeys(n.strip() for n in log_to if n.strip()))


def check(names: list[str], zoo) -> None:
    """Every name is a registered logger (with a did-you-mean), before anything trains."""
    for name in names:
        zoo.loggers.get(name)


def tracker_group(provenance: dict) -> str | None:
    """What trackers group a run under: its sweep, its search's study or its ensemble preset
    (letters, digits, '.', '_' and '-' only, as a folder name and a query take it)."""
    group = provenance.get("group") or (
        f"tune-{provenance['tune']['study']}" if isinstance(provenance.get("tune"), dict) else None
    )
    if not group:
        return None
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(group))[:100].strip(".-") or None


def tracker_lines(trackers: dict | None) -> list[str]:
    """One line per tracker, saying where it wrote: 'mlflow: tracking_uri ..., run_id ...'."""
    return [
        f"{name}: " + ", ".join(f"{key} {value}" for key, value in place.items())
        for name, place in (trackers or {}).items()
        if isinstance(place, dict)  # a record edited by hand: what can be read of it
    ]


def call_timeout() -> float:
    """The seconds a tracker's call may take (ZOO_TRACKER_TIMEOUT, default TIMEOUT)."""
    text = os.environ.get("ZOO_TRACKER_TIMEOUT", "").strip()
    if not text:
        return TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds <= 3600):  # NaN included
        raise ZooError(f"ZOO_TRACKER_TIMEOUT must be seconds from 0 to 3600, not {text[:40]!r}")
    return seconds


class _Tracker:
    """One logger, fed from a queue by a daemon thread of its own, so a logger stuck in a
    call holds up neither training nor the other loggers, nor the process's exit."""

    def __init__(self, name: str, plugin: str, logger, timeout: float):
        self.name, self.plugin, self.logger, self.timeout = name, plugin, logger, timeout
        self.location: dict[str, str] | None = None
        self.dropped = False
        self.busy: tuple[str, float] | None = None  # (method, when it began) of the call now
        self.started = threading.Event()  # start() answered (or failed, or was given up)
        self.done = threading.Event()  # every call made
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        threading.Thread(target=self._work, name=f"zoo-tracker-{name}", daemon=True).start()

    def put(self, method: str, args: tuple) -> None:
        if self.overdue():
            self.drop(f"did not answer {self.busy[0] if self.busy else ''}() within")
        if not self.dropped:
            self._queue.put((method, args))

    def put_end(self) -> None:
        self._queue.put(None)  # even when dropped: a thread waiting for work ends

    def overdue(self) -> bool:
        busy = self.busy
        return busy is not None and time.monotonic() - busy[1] > self.timeout

    def drop(self, what: str, exc: BaseException | None = None) -> None:
        """No more calls to this logger, and one warning saying why."""
        with self._lock:
            if self.dropped:
                return
            self.dropped = True
        if exc is None:
            log.warning(
                f"logger {self.name!r} from plugin {self.plugin!r} {what} "
                f"{self.timeout:g} s (ZOO_TRACKER_TIMEOUT); the run goes on without it"
            )
        else:
            Trackers._warn(self.name, self.plugin, what, exc)
        self.started.set()
        self.done.set()

    def wait(self, event: threading.Event, deadline: float) -> None:
        """Wait for ``event`` while the logger keeps within its timeout per call."""
        while not event.wait(0.05):
            if self.overdue():
                self.drop(f"did not answer {self.busy[0] if self.busy else ''}() within")
            if self.dropped or time.monotonic() > deadline:
                return

    def _work(self) -> None:
        while not self.dropped:
            item = self._queue.get()
            if item is None:
                break
            method, args = item
            self.busy = (method, time.monotonic())
            try:
                answer = getattr(self.logger, method)(*args)
            except Exception as exc:  # noqa: BLE001 - a tracker never fails the run
                self.drop(f"failed in {method}()", exc)
                break
            finally:
                self.busy = None
            if method == "start":
                if isinstance(answer, dict) and not self.dropped:
                    self.location = {str(k): str(v) for k, v in answer.items()}
                self.started.set()
        self.done.set()


class Trackers:
    """The chosen loggers of one run, each fed from a queue by a thread of its own. Every
    call (start, log, finish) may take at most ``call_timeout()`` seconds: a logger that
    takes longer is dropped with one warning, and nothing waits for it again."""

    def __init__(self, names: list[str], zoo):
        self.timeout = call_timeout()
        self.trackers: dict[str, _Tracker] = {}
        for name in names:
            entry = zoo.loggers.get(name)
            try:
                logger = entry.load()()
            except (ImportError, MissingModule) as exc:  # an extra not installed: the user's
                extra = f"pip install 'zoo[{name}]'" if entry.plugin == "trackers" else "install it"
                raise ZooError(
                    f"log_to {name}: logger from plugin {entry.plugin!r}: {exc}; {extra}",
                    option="log_to",
                ) from None
            except Exception as exc:  # noqa: BLE001 - any failure of plugin code is its own
                self._warn(name, entry.plugin, "could not start", exc)
                continue
            self.trackers[name] = _Tracker(name, entry.plugin, logger, self.timeout)

    def __bool__(self) -> bool:
        return bool(self.trackers)

    def start(self, run: dict) -> None:
        self._put("start", run)

    def begin(self, folder, summary: dict, provenance: dict) -> None:
        """Start every tracker on a recorded run (its RunFolder, the summary and provenance
        of its record), and send them each record of its curve from then on."""
        from zoo.records.columns import flat_settings

        self.start(
            {
                **summary,
                "id": folder.id,
                "folder": folder.path,
                "settings": flat_settings(provenance),
                "config_hash": provenance["config_hash"],
                "group": tracker_group(provenance),
            }
        )
        folder.observer = self.log

    def log(self, record: dict) -> None:
        self._put("log", dict(record))

    def where(self) -> dict[str, dict]:
        """Where each tracker writes, once its start() has answered (waited for within the
        timeout): {"mlflow": {"tracking_uri": ..., "run_id": ...}, ...}."""
        deadline = time.monotonic() + FINISH_TIMEOUT
        for tracker in self.trackers.values():
            tracker.wait(tracker.started, deadline)
        return {
            name: dict(tracker.location)
            for name, tracker in self.trackers.items()
            if tracker.location is not None
        }

    def finish(self, metrics: dict, folder: Path, status: str) -> None:
        """Send the end of the run and wait for every call to be made, each within the
        timeout: the run is recorded already, so waiting delays only the command's exit."""
        self._put("finish", dict(metrics), Path(folder), status)
        self.close()

    def close(self) -> None:
        for tracker in self.trackers.values():
            tracker.put_end()
        deadline = time.monotonic() + FINISH_TIMEOUT
        for tracker in self.trackers.values():
            tracker.wait(tracker.done, deadline)
        self.trackers = {}

    def _put(self, method: str, *args) -> None:
        for tracker in self.trackers.values():
            tracker.put(method, args)

    @staticmethod
    def _warn(name: str, plugin: str, what: str, exc: BaseException) -> None:
        text = str(exc).strip().splitlines()
        log.warning(
            f"logger {name!r} from plugin {plugin!r} {what}: "
            f"{type(exc).__name__}: {text[0] if text else ''}"[:500]
            + "; the run goes on without it"
        )


class NoTrackers(Trackers):
    def __init__(self):
        self.timeout, self.trackers = TIMEOUT, {}


def open_trackers(log_to, zoo) -> Trackers:
    names = chosen(log_to)
    if not names:
        return NoTrackers()
    check(names, zoo)
    return Trackers(names, zoo)
