"""What every run starts with: a fresh run id, seeded random number generators, its own
new run folder, and the Job its pipeline receives."""

from __future__ import annotations

import dataclasses
import random
import secrets
import time
from pathlib import Path

from zoo.io import save_error
from zoo.train.job import Job, RunFolder, RunnerState, RunOptions, keep_runner_state
from zoo.train.plan import Plan


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


def plan_job(
    plan: Plan,
    dataset,
    run: RunFolder,
    options: RunOptions,
    *,
    resuming: bool = False,
    state: RunnerState | None = None,
) -> Job:
    """The Job a pipeline receives for ``plan`` on ``dataset`` in ``run``, on the options'
    device: a new run's, or with ``resuming=True`` a resumed one's. ``state`` is what the
    runner keeps of it for itself (the checkpoint it continues, the per-validation callback,
    its place in a stack); its progress label and spacing are the options'."""
    job = Job(
        model_name=plan.spec.name,
        architecture=plan.spec.architecture,
        tokenizer=plan.spec.tokenizer,
        task=plan.task,
        model_config=plan.configs["model"],
        tokenizer_config=plan.configs["tokenizer"],
        train_config=plan.configs["train"],
        dataset=dataset,
        seed=plan.seed,
        device=options.device,
        run=run,
        quiet=options.quiet,
        resuming=resuming,
        init=plan.init,
        declared_task=plan.pipeline.task,
    )
    state = dataclasses.replace(
        state or RunnerState(), label=options.label, log_every=options.log_every
    )
    keep_runner_state(job, state)
    return job
