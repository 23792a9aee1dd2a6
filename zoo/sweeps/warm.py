"""What a sweep's worker keeps from one cell to the next.

A worker runs many cells of one sweep. Its imports and (on a GPU) its CUDA context stay
with the process; besides those it keeps the plugin registry while the cells' settings are
the same, and the datasets it loaded, by their full identity: the dataset reference as
planned (name, source, catalogue entry, a generated dataset's options), the splits held
out, the working folder and the ZOO_* settings, and for a local file or folder its size
and modification time. A cell whose data differs in any of these loads its own. A loaded
dataset is read, never changed, by a run (``LoadedDataset.holding_out`` makes a copy), so
a cell trains on the same rows as in a fresh process, and its metrics are the same bit for
bit. Tokenized splits are memory-mapped from the shared token cache (zoo.data.encoded).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import OrderedDict
from collections.abc import MutableMapping
from pathlib import Path

from zoo.core.phases import PhaseClock, phase

KEPT_DATASETS = 4  # loaded datasets a worker keeps, the least recently used dropped first
STAMPED_FILES = 1000  # files of a dataset folder whose size and time make its identity


class WarmWorker:
    """A worker's state across cells: ``started`` is the seconds its process took to start
    (counted as the first cell's ``start`` phase)."""

    def __init__(self, started: float | None = None):
        self.started = started
        self.cells = 0
        self.imported = False
        self.settings: tuple | None = None  # the registry's ZOO_* settings and folder
        self.datasets: OrderedDict[tuple, object] = OrderedDict()
        self.reused = {"registry": 0, "dataset": 0}  # cells that found one here

    @classmethod
    def here(cls) -> WarmWorker:
        """What a sweep keeps across the cells it trains in its own process."""
        warm = cls()
        zoo_settings = {k: v for k, v in os.environ.items() if k.startswith("ZOO_")}
        warm.settings = (tuple(sorted(zoo_settings.items())), os.getcwd())
        return warm

    def clock(self) -> PhaseClock:
        """A new cell's phase clock; the first cell's holds the process's start."""
        clock = PhaseClock()
        if self.cells == 0 and self.started is not None:
            clock.add("start", self.started)
        self.cells += 1
        return clock

    def import_once(self) -> None:
        """What every cell needs, imported by the first (its ``imports`` phase)."""
        if not self.imported:
            with phase("imports"):
                import torch  # noqa: F401

                import zoo.train.runner  # noqa: F401
            self.imported = True

    def zoo(self, task: dict):
        """The plugin registry for the cell's settings: the one built before when they are
        the same, else a new one."""
        from zoo.core import loading

        settings = (tuple(sorted(task["env"].items())), task.get("cwd"))
        if settings == self.settings:
            self.reused["registry"] += 1
        else:
            loading.reset_zoo()  # built under other settings: build it again
            self.settings = settings
        with phase("imports"):
            return loading.get_zoo()

    def dataset_for(self, plan, zoo):
        """The plan with its dataset loaded: the one kept here when its identity matches."""
        from zoo.data import datasets as zoo_data

        if plan.loaded is not None:  # planning loaded it (to learn its tasks)
            return plan
        key = dataset_identity(plan, self.settings)
        loaded = self.kept(key)
        if loaded is None:
            with phase("data"):
                loaded = zoo_data.load(plan.dataset_ref, zoo, quiet=True, held_out=plan.held_out)
            self.keep(key, loaded)
        return dataclasses.replace(plan, loaded=loaded)

    def planning_cache(self) -> PlanningCache:
        """What planning may take its loaded datasets from (``plan_run``'s ``loaded_cache``:
        a file that must be loaded to learn its tasks is loaded once)."""
        return PlanningCache(self)

    def kept(self, key: tuple):
        loaded = self.datasets.get(key)
        if loaded is not None:
            self.datasets.move_to_end(key)
            self.reused["dataset"] += 1
        return loaded

    def keep(self, key: tuple, loaded) -> None:
        self.datasets[key] = loaded
        while len(self.datasets) > KEPT_DATASETS:
            self.datasets.popitem(last=False)


class PlanningCache(MutableMapping):
    """``plan_run``'s cache of loaded datasets (keyed by name, source, columns and held-out
    roles), kept with the settings and the files' stamp added to each key."""

    def __init__(self, warm: WarmWorker):
        self.warm = warm

    def _key(self, key: tuple) -> tuple:
        return ("planned", key, self.warm.settings, files_stamp(key[1]))

    def __getitem__(self, key: tuple):
        loaded = self.warm.kept(self._key(key))
        if loaded is None:
            raise KeyError(key)
        return loaded

    def __setitem__(self, key: tuple, loaded) -> None:
        self.warm.keep(self._key(key), loaded)

    def __delitem__(self, key: tuple) -> None:
        del self.warm.datasets[self._key(key)]

    def __iter__(self):
        return (key[1] for key in self.warm.datasets if key[0] == "planned")

    def __len__(self) -> int:
        return sum(1 for _ in self)


def dataset_identity(plan, settings) -> tuple:
    """Everything a loaded dataset depends on (see the module's docstring)."""
    ref = plan.dataset_ref
    stamp = files_stamp(ref.source) if ref.kind == "path" else None
    return (repr(ref), tuple(plan.held_out), settings, stamp)


def files_stamp(source: str) -> tuple:
    """A local dataset's files as (path, size, modification time): a file changed between
    cells is a different dataset."""
    path = Path(source)
    if not path.exists():
        return ()  # a Hub id, say
    try:
        if path.is_file():
            return ((str(path), *_stat(path)),)
        found = []
        for folder, _, names in os.walk(path):
            for name in sorted(names):
                found.append((os.path.join(folder, name), *_stat(Path(folder) / name)))
                if len(found) >= STAMPED_FILES:
                    return tuple(found)
        return tuple(found)
    except OSError:
        return (str(path), time.time())  # unreadable now: never equal to another cell's


def _stat(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_size, info.st_mtime_ns
