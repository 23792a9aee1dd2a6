"""Checkpoints: everything the training loop needs to continue a run exactly where it stopped.

A checkpoint is a folder ``runs/<id>/checkpoints/step-00000123/`` holding

  model.safetensors      the weights (``model.state_dict()``)
  optimizer.safetensors  optimizer tensors: moments, step counts (``model.optimizer_state()``)
  best.safetensors       the best weights so far, when the loop keeps them
  runner_upN.safetensors the next best, with average_best > 1 (scores and steps in state.json)
  rng.safetensors        torch RNG state(s) as uint8 tensors, NumPy's legacy global state
  state.json             step, counters, the curve, Python and NumPy generator states,
                         optimizer scalars, and the run's identity (config, dataset, versions)
  COMMIT                 the sha256 of every file above, written last

The files are written into a hidden temporary folder and fsynced, the folder is renamed into
place, and only then is COMMIT written (atomically). ``latest()`` takes the newest folder whose
COMMIT verifies, so a checkpoint interrupted mid-write is never loaded and the previous one
stays loadable. Nothing is pickled: tensors are safetensors, everything else is JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.errors import ZooError
from zoo.io import atomic_write_json, fsync_dir, save_error
from zoo.train.generators import capture_rng, restore_rng
from zoo.train.job import runner_state

FOLDER = "checkpoints"
KEEP = 2  # committed checkpoints kept: the newest, and the one before in case it is damaged
COMMIT = "COMMIT"
FORMAT = 1
_NAME = re.compile(r"^step-(\d+)$")
# For tests only: set to a folder, it makes each process that commits a checkpoint wait
# there (see hold_for_a_test). ZOO_ variables reach sweep workers and Ray tasks.
HOLD_VARIABLE = "ZOO_TEST_HOLD_AT_CHECKPOINT"


def folder(run_dir: Path) -> Path:
    return Path(run_dir) / FOLDER


@dataclass
class Checkpoint:
    """A committed, verified checkpoint on disk."""

    path: Path
    step: int
    meta: dict  # state.json

    def arrays(self, name: str) -> dict[str, np.ndarray]:
        """The tensors of one of the checkpoint's safetensors files (empty if absent)."""
        from zoo.io import load_safetensors

        path = self.path / f"{name}.safetensors"
        return load_safetensors(path) if path.is_file() else {}


# -- writing -------------------------------------------------------------------------
def save(
    run_dir: Path, step: int, arrays: dict[str, dict[str, np.ndarray]], meta: dict, keep: int = KEEP
) -> Path:
    """Write a checkpoint for ``step``: ``arrays`` maps a file stem to its tensors, ``meta``
    goes to state.json. Older checkpoints beyond ``keep`` are removed after the commit."""
    from safetensors.numpy import save as to_bytes

    root = folder(run_dir)
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}-{os.getpid()}"
    try:
        root.mkdir(exist_ok=True)
        for stale in (tmp, final):  # an uncommitted leftover of an earlier attempt at this step
            if stale.exists():
                shutil.rmtree(stale)
        tmp.mkdir()
    except OSError as exc:
        raise save_error(final, exc) from None
    digests = {}
    try:
        for stem, tensors in arrays.items():
            data = to_bytes({k: np.ascontiguousarray(v) for k, v in tensors.items()})
            digests[f"{stem}.safetensors"] = _write(tmp / f"{stem}.safetensors", data)
        state = json.dumps(
            {"format": FORMAT, "step": step, **meta}, allow_nan=True, sort_keys=True, default=_plain
        ).encode("utf-8")
        digests["state.json"] = _write(tmp / "state.json", state)
        fsync_dir(tmp)
        os.replace(tmp, final)
        fsync_dir(root)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise save_error(final, exc) from None
        raise
    # The commit marker makes the checkpoint loadable; until it lands, latest() skips it.
    atomic_write_json(final / COMMIT, {"step": step, "files": digests})
    prune(run_dir, keep)
    return final


def _plain(value):
    """NumPy scalars (a loss kept as np.float32) as Python numbers; anything else is a bug."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot checkpoint a {type(value).__name__} in state.json")


def _write(path: Path, data: bytes) -> str:
    try:
        with open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise save_error(path, exc) from None
    return hashlib.sha256(data).hexdigest()


def prune(run_dir: Path, keep: int = KEEP) -> None:
    """Keep the newest ``keep`` committed checkpoints; drop older ones and leftovers."""
    committed = [p for _, p in _candidates(run_dir) if (p / COMMIT).is_file()]
    newest = committed[0] if committed else None
    for path in committed[keep:]:
        shutil.rmtree(path, ignore_errors=True)
    for path in folder(run_dir).glob(".tmp-step-*"):
        if str(os.getpid()) != path.name.rsplit("-", 1)[-1]:
            shutil.rmtree(path, ignore_errors=True)
    for _, path in _candidates(run_dir):  # uncommitted folders older than the newest commit
        if newest is not None and not (path / COMMIT).is_file() and path.name < newest.name:
            shutil.rmtree(path, ignore_errors=True)


def remove_all(run_dir: Path) -> None:
    shutil.rmtree(folder(run_dir), ignore_errors=True)


# -- reading -------------------------------------------------------------------------
def _candidates(run_dir: Path) -> list[tuple[int, Path]]:
    root = folder(run_dir)
    if not root.is_dir():
        return []
    found = [
        (int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := _NAME.match(p.name))
    ]
    return sorted(found, reverse=True)


def latest(run_dir: Path, *, warn=None) -> Checkpoint | None:
    """The newest checkpoint whose commit marker verifies, or None.

    A folder without a commit marker (a write that was interrupted) or whose files do not
    match their recorded sha256 (damaged since) is skipped, with a note to ``warn``."""
    for step, path in _candidates(run_dir):
        problem = verify(path)
        if problem is None:
            meta = json.loads((path / "state.json").read_text(encoding="utf-8"))
            return Checkpoint(path, step, meta)
        if warn is not None:
            warn(f"skipping checkpoint {path.name}: {problem}")
    return None


def verify(path: Path) -> str | None:
    """None if the checkpoint folder is complete and intact, else what is wrong."""
    marker = path / COMMIT
    if not marker.is_file():
        return "no commit marker (the write was interrupted)"
    try:
        commit = json.loads(marker.read_text(encoding="utf-8"))
        files = dict(commit["files"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return "unreadable commit marker"
    if "state.json" not in files:
        return "commit marker lists no state.json"
    for name, digest in files.items():
        target = path / name
        if Path(name).name != name or not target.is_file():
            return f"{name} is missing"
        if _sha256(target) != digest:
            return f"{name} does not match its recorded checksum"
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: Path) -> str | None:
    path = Path(path)
    return _sha256(path) if path.is_file() else None


# -- the training loop's side ----------------------------------------------------------
class Checkpointer:
    """Saves the training loop's state every ``checkpoint_every`` steps or
    ``checkpoint_seconds`` seconds, and restores it when the job resumes a run."""

    def __init__(
        self,
        job,
        model,
        result,
        generators: dict[str, np.random.Generator],
        state: dict | None = None,
    ):
        import time

        cfg = job.train_config
        self.job, self.model, self.result, self.generators = job, model, result, generators
        self.state = state or {}  # name -> Any with state_dict() / load_state_dict()
        self.every = getattr(cfg, "checkpoint_every", 0) or 0
        self.seconds = getattr(cfg, "checkpoint_seconds", 0) or 0
        self.supported = callable(getattr(model, "optimizer_state", None))
        from zoo.train import distributed

        if not distributed.current().is_main:  # under torchrun rank 0 keeps the checkpoints
            self.every = self.seconds = 0
        if (self.every or self.seconds) and not self.supported:
            job.say(
                f"note: {type(model).__name__} has no optimizer_state(); this run will not "
                "be checkpointed, and `zoo resume` would start it over"
            )
        self.last_step: int | None = None
        self._clock = time.perf_counter
        self._last_save = self._clock()

    def restore(self) -> float:
        """Load the checkpoint the job resumes (``runner_state(job).resume_from``) into the model, optimizer, RNGs and loop counters;
        returns the training time already spent (0 when not resuming)."""
        ckpt = runner_state(self.job).resume_from
        if ckpt is None:
            return 0.0
        if not callable(getattr(self.model, "load_optimizer_state", None)):
            raise ZooError(
                f"{type(self.model).__name__} cannot restore optimizer state, so "
                "this run cannot be resumed from its checkpoint"
            )
        meta = ckpt.meta
        self.model.load_state_dict(ckpt.arrays("model"))
        self.model.load_optimizer_state(ckpt.arrays("optimizer"), meta["optimizer"])
        restore_rng(meta["rng"], ckpt.arrays("rng"), self.generators)
        saved = meta.get("state", {})
        for name, obj in self.state.items():
            if name not in saved:
                raise ZooError(f"checkpoint {ckpt.path} has no state for {name!r}")
            obj.load_state_dict(saved[name])
        loop, result = meta["loop"], self.result
        result.steps, result.tokens, result.train_loss = (
            loop["steps"],
            loop["tokens"],
            loop["train_loss"],
        )
        result.best_score, result.best_step = loop["best_score"], loop["best_step"]
        result.curve = list(loop["curve"])
        result.validate_time = float(loop.get("validate_time", 0.0))
        result.decay_start = loop.get("decay_start")
        result.best_state = ckpt.arrays("best") or None
        result.runners_up = [
            (score, step, ckpt.arrays(f"runner_up{i}"))
            for i, (score, step) in enumerate(loop.get("runners_up", []))
        ]
        self.last_step = ckpt.step
        return float(loop["elapsed"])

    def maybe_save(self, elapsed: float) -> None:
        if not self.supported or not (self.every or self.seconds):
            return
        steps = self.result.steps
        due = (self.every and steps % self.every == 0) or (
            self.seconds and self._clock() - self._last_save >= self.seconds
        )
        if due:
            self.save(elapsed)

    def save(self, elapsed: float) -> None:
        result, run = self.result, self.job.run
        opt_arrays, opt_meta = self.model.optimizer_state()
        rng_meta, rng_arrays = capture_rng(self.generators)
        metrics = run.file("metrics.jsonl")
        meta = {
            "identity": {
                **runner_state(self.job).identity,
                "tokenizer_sha256": file_sha256(run.file("tokenizer.json")),
            },
            "loop": {
                "steps": result.steps,
                "tokens": result.tokens,
                "train_loss": result.train_loss,
                "best_score": result.best_score,
                "best_step": result.best_step,
                "curve": result.curve,
                "elapsed": elapsed,
                "validate_time": result.validate_time,
                "decay_start": result.decay_start,
                "runners_up": [[score, step] for score, step, _ in result.runners_up],
            },
            "optimizer": opt_meta,
            "rng": rng_meta,
            "state": {name: obj.state_dict() for name, obj in self.state.items()},
            "metrics_bytes": metrics.stat().st_size if metrics.is_file() else 0,
        }
        arrays = {"model": self.model.state_dict(), "optimizer": opt_arrays, "rng": rng_arrays}
        if result.best_state is not None:
            arrays["best"] = result.best_state
        for i, (_, _, state) in enumerate(result.runners_up):
            arrays[f"runner_up{i}"] = state
        save(run.path, result.steps, arrays, meta)
        self.last_step = result.steps
        self._last_save = self._clock()
        hold_for_a_test()


def hold_for_a_test(limit: float = 600.0) -> None:
    """With ZOO_TEST_HOLD_AT_CHECKPOINT=DIR (an existing folder) and no DIR/release yet:
    mark DIR/held-PID and wait until DIR/release appears (at most ``limit`` seconds). A test
    then knows that a sweep worker is mid-cell with a checkpoint committed, and kills it
    there rather than racing its cell to the end (tests/conftest.py). Does nothing unset."""
    hold = os.environ.get(HOLD_VARIABLE)
    if not hold or not os.path.isdir(hold):
        return
    release = Path(hold) / "release"
    if release.exists():
        return
    (Path(hold) / f"held-{os.getpid()}").touch()
    end = time.monotonic() + limit
    while not release.exists() and time.monotonic() < end:
        time.sleep(0.02)
