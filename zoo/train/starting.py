"""What every run starts with: a fresh run id, seeded random number generators, its own
new run folder, and the Job its pipeline receives."""

from __future__ import annotations

import random
import secrets
import time
from pathlib import Path

from zoo.io import save_error
from zoo.train.job import Job, RunFolder, runner_state
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
    device: str,
    run: RunFolder,
    quiet: bool,
    *,
    resuming: bool = False,
    resume_from=None,
    identity: dict | None = None,
    on_validate=None,
    label: str | None = None,
    log_every: int | float | None = None,
    stack=None,
) -> Job:
    """The Job a pipeline receives for ``plan`` on ``dataset`` in ``run``: a new run's, or
    with ``resuming=True`` a resumed one's, continuing the checkpoint ``resume_from``."""
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
        device=device,
        run=run,
        quiet=quiet,
        resuming=resuming,
        init=plan.init,
        declared_task=plan.pipeline.task,
    )
    state = runner_state(job)
    state.resume_from, state.identity, state.on_validate = resume_from, identity or {}, on_validate
    state.label, state.log_every, state.stack = label, log_every, stack
    return job
