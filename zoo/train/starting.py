"""What every run starts with: a fresh run id, seeded random number generators and its own
new run folder."""

from __future__ import annotations

import random
import secrets
import time
from pathlib import Path

from zoo.io import save_error
from zoo.train.job import RunFolder


def new_run_id() -> str:
    """A new run's id: the time it starts, and four hex digits against a clash."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def seed_everything(seed: int) -> None:
    """Python's, NumPy's and torch's generators seeded with ``seed``."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


def create_run_folder(parent: Path, run_id: str) -> RunFolder:
    """RUN_ID's own new folder under ``parent``; a folder that cannot be made is a ZooError."""
    path = parent / run_id
    try:
        return RunFolder(path).create()
    except OSError as exc:
        raise save_error(path, exc) from None
