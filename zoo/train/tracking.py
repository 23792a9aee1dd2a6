"""Experiment trackers (the ``register_loggers`` hook): a run's config at its start, each
record of metrics.jsonl, and its final metrics and folder at the end, sent to every logger
the user chose (``--log-to``, ``log_to`` in a config file, or ``ZOO_LOG_TO``).

The calls run on one thread of their own, in order, so a slow tracker (a database write per
step) never slows training. What a tracker's ``start`` returns says where it writes (a log
folder; a tracking URI and run id): the run records it, and the command prints it. A logger that raises is its plugin's failure: one warning naming
it, and no more calls to it; the run goes on and is recorded as it would be without it.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
from pathlib import Path
from typing import Any

from zoo.errors import MissingModule, ZooError

log = logging.getLogger(__name__)

FINISH_TIMEOUT = 600.0  # seconds to wait for trackers to take the last records and artifacts


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


class Trackers:
    """The chosen loggers of one run, fed from a queue by a thread of their own."""

    def __init__(self, names: list[str], zoo):
        self.loggers: dict[str, Any] = {}
        self.plugins: dict[str, str] = {}
        for name in names:
            entry = zoo.loggers.get(name)
            try:
                self.loggers[name] = entry.load()()
            except (ImportError, MissingModule) as exc:  # an extra not installed: the user's
                extra = f"pip install 'zoo[{name}]'" if entry.plugin == "trackers" else "install it"
                raise ZooError(f"--log-to {name}: {exc}; {extra}") from None
            except Exception as exc:  # noqa: BLE001 - any failure of plugin code is its own
                self._warn(name, entry.plugin, "could not start", exc)
                continue
            self.plugins[name] = entry.plugin
        self.locations: dict[str, dict] = {}  # name -> where it writes, from start()
        self._started = threading.Event()
        self._queue: queue.Queue = queue.Queue()
        self._thread = None
        if self.loggers:
            self._thread = threading.Thread(target=self._work, name="zoo-trackers", daemon=True)
            self._thread.start()

    def __bool__(self) -> bool:
        return bool(self.loggers)

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

    def where(self, timeout: float = FINISH_TIMEOUT) -> dict[str, dict]:
        """Where each tracker writes, once every start() has run (waited for, at most
        ``timeout``): {"mlflow": {"tracking_uri": ..., "run_id": ...}, ...}."""
        if self._thread is not None:
            self._started.wait(timeout)
        return {name: dict(place) for name, place in self.locations.items()}

    def finish(self, metrics: dict, folder: Path, status: str) -> None:
        """Send the end of the run and wait (at most FINISH_TIMEOUT) for every call to be
        made: the run is recorded already, so waiting delays only the command's exit."""
        self._put("finish", dict(metrics), Path(folder), status)
        self.close()

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(FINISH_TIMEOUT)
            self._thread = None

    def _put(self, method: str, *args) -> None:
        if self._thread is not None:
            self._queue.put((method, args))

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            method, args = item
            for name, logger in list(self.loggers.items()):
                try:
                    answer = getattr(logger, method)(*args)
                except Exception as exc:  # noqa: BLE001 - a tracker never fails the run
                    self._warn(name, self.plugins[name], f"failed in {method}()", exc)
                    del self.loggers[name]  # one warning, then no more calls
                    continue
                if method == "start" and isinstance(answer, dict):
                    self.locations[name] = {str(k): str(v) for k, v in answer.items()}
            if method == "start":
                self._started.set()

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
        self.loggers, self.plugins, self._thread, self.locations = {}, {}, None, {}


def open_trackers(log_to, zoo) -> Trackers:
    names = chosen(log_to)
    if not names:
        return NoTrackers()
    check(names, zoo)
    return Trackers(names, zoo)
