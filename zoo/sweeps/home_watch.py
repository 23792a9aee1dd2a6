"""A sweep notices when ZOO_HOME is removed under it: its runs and results store are gone,
and a cell would only recreate an empty store beside them, so the sweep stops in one line."""

from __future__ import annotations

import os
from pathlib import Path

from zoo.errors import ZooError
from zoo.records.store import home


class HomeWatch:
    """The results store as the sweep found it (device and inode), checked between cells."""

    def __init__(self, store_path: Path | None = None):
        self.path = Path(store_path) if store_path is not None else home() / "zoo.db"
        self.identity = _identity(self.path)

    def check(self) -> None:
        if _identity(self.path) != self.identity:
            raise ZooError(
                f"ZOO_HOME ({self.path.parent}) or its results store was removed while the "
                "sweep ran; the sweep stops (run it again to train its cells anew)"
            )


def _identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode: another file (or none) once it was removed."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
