"""`zoo sweep`: train every model x dataset x seed cell, in this process, one after another.

Every cell is planned before anything trains, so impossible pairs (no head for the
dataset's task, a --set key the model does not have) are skipped with their reason up
front. Cells whose config hash already has a finished run are skipped too, so running
the same sweep again resumes it. A cell that fails is recorded as failed and the sweep
goes on.
"""
from __future__ import annotations

import fnmatch
import sys
import time
from dataclasses import dataclass, field

from zoo import data as zoo_data
from zoo.errors import ZooError

WILDCARDS = "*?["


@dataclass
class Cell:
    model: str
    dataset: str
    seed: int
    plan: object = None  # zoo.plan.Plan, when the cell can run
    config_hash: str | None = None
    skip: str | None = None  # why the cell cannot run
    done: str | None = None  # the finished run that already holds this cell
    run_id: str | None = None
    status: str | None = None
    error: str | None = None
    duration: float | None = None

    @property
    def name(self) -> str:
        return f"{self.model} on {self.dataset}, seed {self.seed}"


@dataclass
class Sweep:
    cells: list[Cell]
    models: list[str]
    datasets: list[str]
    seeds: list[int]
    log: list[str] = field(default_factory=list)

    @property
    def impossible(self) -> list[Cell]:
        return [c for c in self.cells if c.skip]

    @property
    def finished_before(self) -> list[Cell]:
        return [c for c in self.cells if c.done]

    @property
    def todo(self) -> list[Cell]:
        return [c for c in self.cells if not c.skip and not c.done]

    @property
    def failed(self) -> list[Cell]:
        return [c for c in self.cells if c.status not in (None, "finished")]

    @property
    def hashes(self) -> set[str]:
        return {c.config_hash for c in self.cells if c.config_hash}


def expand_models(patterns: list[str], zoo) -> list[str]:
    """Model names, with wildcards matched against every preset and pair in the registry."""
    from zoo.registry import model_names, natural_key, resolve_model

    names = model_names(zoo)
    found = []
    for pattern in patterns:
        if any(ch in pattern for ch in WILDCARDS):
            matched = sorted(fnmatch.filter(names, pattern), key=natural_key)
            if not matched:
                raise ZooError(f"no model matches {pattern!r} (zoo list models shows them)")
            found.extend(matched)
        else:
            resolve_model(pattern, zoo)  # an unknown name fails now, with a did-you-mean
            found.append(pattern)
    return list(dict.fromkeys(found))


def plan_sweep(models: list[str], datasets: list[str], *, seeds: int = 1,
               overrides: dict | None = None, task: str | None = None, zoo=None) -> Sweep:
    from zoo.registry import get_zoo
    from zoo.plan import config_hash, plan_run
    from zoo.store import Store

    zoo = zoo or get_zoo()
    if seeds <= 0:
        raise ZooError(f"--seeds must be positive, got {seeds}")
    names = expand_models(models, zoo)
    datasets = list(dict.fromkeys(datasets))
    for dataset in datasets:
        zoo_data.resolve(dataset, zoo)  # an unknown dataset fails now, with a did-you-mean
    cells = []
    for model in names:
        for dataset in datasets:
            for seed in range(seeds):
                cell = Cell(model, dataset, seed)
                try:
                    cell.plan = plan_run(model, dataset, overrides=dict(overrides or {}),
                                         seed=seed, task=task, zoo=zoo)
                    cell.config_hash = config_hash(cell.plan, zoo)
                except ZooError as exc:
                    cell.skip = str(exc)
                cells.append(cell)
    with Store() as store:
        finished = store.finished_by_hash()
    for cell in cells:
        if cell.config_hash in finished:
            cell.done = finished[cell.config_hash]
    return Sweep(cells, names, datasets, list(range(seeds)))


def describe_plan(sweep: Sweep) -> list[str]:
    lines = [f"sweep: {len(sweep.models)} model(s) x {len(sweep.datasets)} dataset(s) x "
             f"{len(sweep.seeds)} seed(s) = {len(sweep.cells)} cells: {len(sweep.todo)} to run, "
             f"{len(sweep.finished_before)} already finished, {len(sweep.impossible)} impossible"]
    reasons = {}
    for cell in sweep.impossible:  # one line per pair: the reason does not depend on the seed
        reasons.setdefault((cell.model, cell.dataset), cell.skip)
    for (model, dataset), reason in reasons.items():
        lines.append(f"  skip {model} on {dataset}: {reason}")
    return lines


def run_sweep(sweep: Sweep, *, device: str = "auto", quiet: bool = True, out=None, zoo=None) -> Sweep:
    """Train the cells still to do; a failure is recorded and the next cell starts."""
    from zoo.runner import RunDiverged

    out = out or sys.stderr
    todo = sweep.todo
    started = time.time()
    for index, cell in enumerate(todo, 1):
        elapsed = time.time() - started
        eta = ""
        if index > 1:
            eta = f", about {_clock(elapsed / (index - 1) * (len(todo) - index + 1))} left"
        print(f"[{index}/{len(todo)}] {cell.name} (sweep {_clock(elapsed)} so far{eta})",
              file=out, flush=True)
        began = time.time()
        try:
            result = _resume_or_execute(cell, device=device, quiet=quiet, zoo=zoo, out=out)
        except KeyboardInterrupt:
            raise  # the run is marked interrupted; the next sweep resumes from it
        except Exception as exc:  # one bad cell must not stop the others
            # A diverged run's row already says 'diverged' and keeps its last checkpoint.
            cell.status = "diverged" if isinstance(exc, RunDiverged) else "failed"
            cell.error = _one_line(exc)
            cell.duration = time.time() - began
            cell.run_id = _record_failure(cell, began)
            print(f"    {cell.status} after {_clock(cell.duration)}: {cell.error} "
                  f"(run {cell.run_id})", file=out, flush=True)
            continue
        cell.run_id, cell.status = result["run_id"], result["status"]
        cell.duration = time.time() - began
        print(f"    {cell.status} in {_clock(cell.duration)}: {_headline(result)} "
              f"(run {cell.run_id})", file=out, flush=True)
    return sweep


def _resume_or_execute(cell: Cell, *, device: str, quiet: bool, zoo, out) -> dict:
    """A cell whose latest run was interrupted continues that run from its last checkpoint
    (`zoo resume`); any other cell, or one that cannot be resumed, starts a new run."""
    from zoo.resume import ResumeRefused, resume
    from zoo.runner import execute
    from zoo.store import Store

    with Store() as store:
        latest = store.latest(config_hash=cell.config_hash)
    if latest is not None and latest["status"] == "interrupted":
        print(f"    resuming interrupted run {latest['id']}", file=out, flush=True)
        try:
            return resume(latest["id"], quiet=quiet, zoo=zoo)
        except ResumeRefused as exc:
            print(f"    {exc}; starting the cell over", file=out, flush=True)
    return execute(cell.plan, device=device, quiet=quiet, zoo=zoo)


def _headline(result: dict) -> str:
    from zoo.comparison import primary_metric

    metric = primary_metric(result["task"])
    value = result["metrics"].get(metric)
    return f"{metric} {value:.4f}" if isinstance(value, float) else f"{metric} {value}"


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


def _record_failure(cell: Cell, began: float) -> str:
    """The run id holding the failure: the row execute wrote, or a new failed row when the
    cell failed before execute recorded anything (loading the dataset, say)."""
    from zoo.runner import new_run_id
    from zoo.store import Store

    with Store() as store:
        recorded = store.latest(config_hash=cell.config_hash, since=began)
        if recorded is not None:
            return recorded["id"]
        run_id = new_run_id()
        plan = cell.plan
        config = {"model": cell.model, "dataset": cell.dataset, "seed": cell.seed,
                  "task": plan.task, "config_hash": cell.config_hash,
                  "architecture": plan.spec.architecture.name,
                  "tokenizer": plan.spec.tokenizer.name, "dataset_id": plan.dataset_ref.source,
                  "configs": {k: _asdict(v) for k, v in plan.configs.items()}}
        store.insert(run_id, status="failed", model=cell.model, dataset=plan.dataset_ref.name,
                     architecture=config["architecture"], tokenizer=config["tokenizer"],
                     task=plan.task, seed=cell.seed, config_hash=cell.config_hash, config=config,
                     error=cell.error, finished=time.time(), duration=time.time() - began)
        return run_id


def _asdict(config):
    import dataclasses

    return dataclasses.asdict(config) if config is not None else None


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def summary(sweep: Sweep) -> str:
    ran = [c for c in sweep.cells if c.status == "finished"]
    parts = [f"{len(ran)} trained", f"{len(sweep.finished_before)} already finished",
             f"{len(sweep.impossible)} impossible", f"{len(sweep.failed)} failed"]
    lines = ["sweep done: " + ", ".join(parts)]
    for cell in sweep.failed:
        lines.append(f"  {cell.status} {cell.name}: {cell.error or cell.status} (run {cell.run_id})")
    return "\n".join(lines)


def records(sweep: Sweep) -> list[dict]:
    """Every cell as plain data (`zoo sweep --json`): its state (skipped, reused: finished
    before this sweep, to run with --dry-run, or the status it ended with), run and reason."""
    out = []
    for cell in sweep.cells:
        state = ("skipped" if cell.skip else "reused" if cell.done
                 else cell.status or "to run")
        out.append({"model": cell.model, "dataset": cell.dataset, "seed": cell.seed,
                    "state": state, "run_id": cell.done or cell.run_id,
                    "config_hash": cell.config_hash, "reason": cell.skip or cell.error,
                    "duration": cell.duration})
    return out


def table(sweep: Sweep, **options):
    """The comparison of this sweep's cells only (not other runs of the same models)."""
    from zoo.comparison import load_runs, summarize

    frame = load_runs()
    frame = frame[frame["config_hash"].isin(sweep.hashes)]
    return summarize(frame, **options)
