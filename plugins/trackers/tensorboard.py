"""TensorBoard: the run's curves as event files in its own folder, so that
``tensorboard --logdir $ZOO_HOME`` shows every run under its id."""

from __future__ import annotations

import json
import math
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter


class TensorBoardLogger:
    def __init__(self):
        self.writer = None
        self.step = 0

    def start(self, run: dict) -> None:
        self.writer = SummaryWriter(log_dir=str(run["folder"]))
        settings = json.dumps(run["settings"], indent=1, sort_keys=True, default=str)
        self.writer.add_text(
            "config",
            f"{run['model']} on {run['dataset']} (seed "
            f"{run['seed']})\n\n    " + settings.replace("\n", "\n    "),
        )

    def log(self, record: dict) -> None:
        self.step = int(record.get("step", self.step))
        for key, value in _numbers(record):
            if key != "step":
                self.writer.add_scalar(key, value, self.step)

    def finish(self, metrics: dict, folder: Path, status: str) -> None:
        for key, value in _numbers(metrics):  # at the last step, under final/
            self.writer.add_scalar(f"final/{key}", value, self.step)
        self.writer.add_text("status", status, self.step)
        self.writer.close()


def _numbers(record: dict):
    for key, value in record.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            yield key, float(value)
