"""Where zoo keeps its files: the runs folder, ZOO_HOME (default ./runs), which holds the
store, the run folders and the caches. Every layer may ask; storage (zoo.records) decides
what goes inside it."""

from __future__ import annotations

import os
from pathlib import Path


def zoo_home() -> Path:
    """The runs folder: ZOO_HOME, or ./runs."""
    return Path(os.environ.get("ZOO_HOME", "runs")).expanduser()
