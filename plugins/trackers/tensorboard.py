"""TensorBoard: a run's curves, its settings and its final metrics as event files in a
folder of its own, ``$ZOO_HOME/tensorboard/RUN_ID`` (or ``ZOO_TENSORBOARD_DIR/RUN_ID``); a
sweep's or a search's runs in a sub-folder named after it, so that
``tensorboard --logdir $ZOO_HOME/tensorboard`` shows every run, grouped. The settings and
the final metrics go to the HParams dashboard too, where runs compare by setting."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter
from torch.utils.tensorboard.summary import hparams


def log_root(home: Path) -> Path:
    return Path(os.environ.get("ZOO_TENSORBOARD_DIR") or home / "tensorboard").resolve()


class TensorBoardLogger:
    def __init__(self):
        self.writer: SummaryWriter | None = None
        self.step = 0
        self.settings: dict = {}

    def _started(self) -> SummaryWriter:
        """The writer that ``start`` opened."""
        if self.writer is None:
            raise RuntimeError("the TensorBoard tracker logs only after start()")
        return self.writer

    def start(self, run: dict) -> dict:
        folder = log_root(Path(run["folder"]).parent)
        if run.get("group"):
            folder = folder / run["group"]
        folder = folder / run["id"]
        writer = self.writer = SummaryWriter(log_dir=str(folder))
        self.settings = {
            "model": run["model"],
            "dataset": run["dataset"],
            "seed": run["seed"],
            **run["settings"],
        }
        settings = json.dumps(run["settings"], indent=1, sort_keys=True, default=str)
        writer.add_text(
            "config",
            f"{run['model']} on {run['dataset']} (seed "
            f"{run['seed']})\n\n    " + settings.replace("\n", "\n    "),
        )
        return {"log_dir": str(folder)}

    def log(self, record: dict) -> None:
        writer = self._started()
        self.step = int(record.get("step", self.step))
        for key, value in _numbers(record):
            if key != "step":
                writer.add_scalar(key, value, self.step)

    def finish(self, metrics: dict, folder: Path, status: str) -> None:
        writer = self._started()
        final = {f"final/{key}": value for key, value in _numbers(metrics)}
        for key, value in final.items():  # at the last step, under final/
            writer.add_scalar(key, value, self.step)
        # The HParams dashboard: one session per run, its settings and its final metrics
        # (the scalars above), so runs can be compared by setting.
        events = writer.file_writer  # None only once the writer is closed
        if events is None:
            raise RuntimeError("the TensorBoard writer was closed before the run finished")
        for summary in hparams(_hparam_values(self.settings), final):
            events.add_summary(summary)
        writer.add_text("status", status, self.step)
        writer.close()


def _hparam_values(settings: dict) -> dict:
    """Settings as HParams takes them: numbers, text and booleans; anything else as text."""
    return {
        key: value if isinstance(value, (bool, int, float, str)) else json.dumps(value, default=str)
        for key, value in settings.items()
    }


def _numbers(record: dict):
    for key, value in record.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            yield key, float(value)
