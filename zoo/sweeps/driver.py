"""`zoo sweep`: train every model x dataset x setting x seed cell.

Every cell is planned before anything trains, so impossible pairs (no head for the
dataset's task, a --set key the model does not have) are skipped with their reason up
front. `--grid key=v1,v2` adds settings: each combination of grid values is its own cell
(and its own row in the comparison). Cells whose config hash already has a finished run
are skipped too, so running the same sweep again resumes it. A cell that fails is recorded
as failed and the sweep goes on.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import sys
import time
from collections import deque
from dataclasses import dataclass, field

from zoo.core.containment import own_interrupts_fail
from zoo.data import datasets as zoo_data
from zoo.errors import ZooError
from zoo.sweeps.grid import check_grid, grid_settings, short_value

WILDCARDS = "*?["
MAX_CELLS = 2_000  # cells one sweep plans (model x dataset x setting x seed): seconds


@dataclass
class Cell:
    model: str
    dataset: str
    seed: int
    setting: dict = field(default_factory=dict)  # this cell's --grid values, of their types
    plan: object = None  # zoo.core.plan.Plan, when the cell can run
    config_hash: str | None = None
    skip: str | None = None  # why the cell cannot run
    done: str | None = None  # the finished run that already holds this cell
    run_id: str | None = None
    status: str | None = None
    error: str | None = None
    duration: float | None = None

    @property
    def label(self) -> str:
        """The model, with its grid setting: 'decoder-char (lr=0.003)'."""
        if not self.setting:
            return self.model
        return (
            f"{self.model} ({', '.join(f'{k}={short_value(v)}' for k, v in self.setting.items())})"
        )

    @property
    def name(self) -> str:
        return f"{self.label} on {self.dataset}, seed {self.seed}"


@dataclass
class Sweep:
    cells: list[Cell]
    models: list[str]
    datasets: list[str]
    seeds: list[int]
    log: list[str] = field(default_factory=list)
    grid: dict = field(default_factory=dict)  # key -> the values swept
    overrides: dict = field(default_factory=dict)  # --set (and --steps, --time) for every cell
    task: str | None = None  # the task asked for, if any

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
    from zoo.core.entries import natural_key
    from zoo.core.names import model_names, resolve_model

    # ensemble presets combine other runs (zoo run NAME); a sweep trains single models
    names = [name for name in model_names(zoo) if name not in zoo.catalogue.ensembles]
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


def plan_sweep(
    models: list[str],
    datasets: list[str],
    *,
    seeds: int = 1,
    overrides: dict | None = None,
    task: str | None = None,
    zoo=None,
    grid: dict[str, list[str]] | None = None,
) -> Sweep:
    from zoo.core.plan import config_hash, plan_run
    from zoo.core.registry import get_zoo
    from zoo.records.store import Store

    zoo = zoo or get_zoo()
    if seeds <= 0:
        raise ZooError(f"--seeds must be positive, got {seeds}")
    grid, overrides = dict(grid or {}), dict(overrides or {})
    names = expand_models(models, zoo)
    datasets = list(dict.fromkeys(datasets))
    for dataset in datasets:
        zoo_data.resolve(dataset, zoo)  # an unknown dataset fails now, with a did-you-mean
    if grid:
        grid = check_grid(grid, overrides, _pair_sections(names, datasets, overrides, task, zoo))
    settings = grid_settings(grid)
    count = len(names) * len(datasets) * len(settings) * seeds
    if count > MAX_CELLS:  # before any is planned: planning is linear, but not free
        raise ZooError(
            f"the sweep has {count:,} cells ({len(names)} model(s) x "
            f"{len(datasets)} dataset(s) x {len(settings):,} setting(s) x "
            f"{seeds:,} seed(s)); at most {MAX_CELLS:,}: split it"
        )
    cells, loaded = [], {}
    for model in names:
        for dataset in datasets:
            for setting in settings:
                first = None  # the setting's plan: the same for every seed but the seed
                for seed in range(seeds):
                    cell = Cell(model, dataset, seed, setting)
                    try:
                        if first is None:
                            first = plan_run(
                                model,
                                dataset,
                                overrides={**overrides, **setting},
                                seed=seed,
                                task=task,
                                zoo=zoo,
                                loaded_cache=loaded,
                            )
                        cell.plan = dataclasses.replace(first, seed=seed)
                        cell.config_hash = config_hash(cell.plan, zoo)
                    except ZooError as exc:
                        cell.skip = str(exc)
                    cells.append(cell)
    with Store() as store:
        finished = store.finished_by_hash()
    first: dict[str, Cell] = {}
    for cell in cells:
        if cell.config_hash in finished:
            cell.done = finished[cell.config_hash]
        elif cell.config_hash in first:  # differs only in settings that change no result
            cell.skip = (
                f"the same experiment as {first[cell.config_hash].label} (its "
                "settings differ only in ones that change no result)"
            )
        elif cell.config_hash:
            first[cell.config_hash] = cell
    return Sweep(
        cells, names, datasets, list(range(seeds)), grid=grid, overrides=overrides, task=task
    )


def _pair_sections(names, datasets, overrides, task, zoo) -> list[dict]:
    """The config classes (model, tokenizer, train) of every model x dataset pair that can
    run without the grid: what the grid's keys and values are checked against."""
    from zoo.core.plan import plan_run

    found = []
    for model in names:
        for dataset in datasets:
            try:
                plan = plan_run(model, dataset, overrides=overrides, task=task, zoo=zoo)
            except ZooError:
                continue  # the cells of this pair are skipped, with their reason
            found.append(
                {
                    name: type(config) if config is not None else None
                    for name, config in plan.configs.items()
                }
            )
    return found


def describe_plan(sweep: Sweep) -> list[str]:
    settings = len({tuple(sorted(c.setting.items())) for c in sweep.cells})  # after dedupe
    grid = f"{settings} setting(s) x " if sweep.grid else ""
    lines = [
        f"sweep: {len(sweep.models)} model(s) x {len(sweep.datasets)} dataset(s) x {grid}"
        f"{len(sweep.seeds)} seed(s) = {len(sweep.cells)} cells: {len(sweep.todo)} to run, "
        f"{len(sweep.finished_before)} already finished, {len(sweep.impossible)} impossible"
    ]
    reasons = {}
    for cell in sweep.impossible:  # one line per pair: the reason does not depend on the seed
        reasons.setdefault((cell.label, cell.dataset), cell.skip)
    for (label, dataset), reason in reasons.items():
        lines.append(f"  skip {label} on {dataset}: {reason}")
    return lines


def run_sweep(
    sweep: Sweep, *, device: str = "auto", quiet: bool = True, out=None, zoo=None, executor=None
) -> Sweep:
    """Train the cells still to do; a failure is recorded and the next cell starts. With an
    `executor` (zoo.sweeps.executors.make_executor), cells run in its workers and this process
    records them."""
    out = out or sys.stderr
    if executor is not None:
        return executor.run_cells(sweep, device=device, out=out)
    from zoo.sweeps.claims import CellClaims

    claims = CellClaims()  # each cell locked while it trains here: another sweep skips it
    try:
        return _run_in_process(sweep, claims, device=device, quiet=quiet, out=out, zoo=zoo)
    finally:
        claims.release_all()


def _run_in_process(sweep: Sweep, claims, *, device: str, quiet: bool, out, zoo) -> Sweep:
    from zoo.train.runner import RunDiverged

    waiting = deque(sweep.todo)
    total = len(waiting)
    started = time.time()
    index = 0
    while waiting:
        cell = claims.next_cell(waiting, lambda text: print(text, file=out, flush=True))
        if cell is None:  # every cell left is another sweep's for now
            time.sleep(0.5)
            continue
        index += 1
        try:
            _run_cell_here(
                cell,
                index,
                total,
                started,
                device=device,
                quiet=quiet,
                out=out,
                zoo=zoo,
                diverged=RunDiverged,
            )
        finally:
            claims.release(cell)
    return sweep


def _run_cell_here(
    cell: Cell,
    index: int,
    total: int,
    started: float,
    *,
    device: str,
    quiet: bool,
    out,
    zoo,
    diverged,
) -> None:
    elapsed = time.time() - started
    eta = ""
    if index > 1:
        eta = f", about {clock(elapsed / (index - 1) * (total - index + 1))} left"
    print(
        f"[{index}/{total}] {cell.name} (sweep {clock(elapsed)} so far{eta})", file=out, flush=True
    )
    began = time.time()
    try:
        # As in a worker, a KeyboardInterrupt that the cell's code raised with no Ctrl-C
        # from the user fails only this cell.
        with own_interrupts_fail("the cell's code"):
            result = _resume_or_execute(cell, device=device, quiet=quiet, zoo=zoo, out=out)
    except KeyboardInterrupt:  # the user's Ctrl-C
        raise  # the run is marked interrupted; the next sweep resumes from it
    except Exception as exc:  # one bad cell must not stop the others
        # A diverged run's row already says 'diverged' and keeps its last checkpoints.
        cell.status = "diverged" if isinstance(exc, diverged) else "failed"
        cell.error = _one_line(exc)
        cell.duration = time.time() - began
        cell.run_id = _record_failure(cell, began)
        print(
            f"    {cell.status} after {clock(cell.duration)}: {cell.error} (run {cell.run_id})",
            file=out,
            flush=True,
        )
        return
    cell.run_id, cell.status = result["run_id"], result["status"]
    cell.duration = time.time() - began
    print(
        f"    {cell.status} in {clock(cell.duration)}: {headline(result)} (run {cell.run_id})",
        file=out,
        flush=True,
    )


def settled_latest(store, config_hash: str) -> dict | None:
    """The cell's latest run, once no live process writes it: a run still 'running' whose
    writer is ending (a worker of a killed driver) is waited for, then found interrupted."""
    from zoo.records.ownership import wait_for_writer
    from zoo.records.paths import run_folder

    latest = store.latest(config_hash=config_hash)
    if latest is None or latest["status"] != "running":
        return latest
    try:
        wait_for_writer(run_folder(latest["id"]))
    except ZooError:
        return latest
    store.recover_stale_rows()
    return store.latest(config_hash=config_hash)


def should_resume(latest: dict | None) -> bool:
    """A cell continues its latest run when that was interrupted, or failed with a
    checkpoint kept (its worker process died, say); any other cell starts a new run."""
    from zoo.records.paths import run_folder
    from zoo.train import checkpoints

    if latest is None or latest.get("kind", "train") != "train":
        return False
    if latest["status"] == "interrupted":
        return True
    return latest["status"] == "failed" and checkpoints.latest(run_folder(latest["id"])) is not None


def _resume_or_execute(cell: Cell, *, device: str, quiet: bool, zoo, out) -> dict:
    """A cell whose latest run can go on (should_resume) continues it from its last
    checkpoint (`zoo resume`); any other cell, or one that cannot be resumed, starts anew."""
    from zoo.records.store import Store
    from zoo.train.resume import ResumeRefused, resume
    from zoo.train.runner import execute

    with Store() as store:
        latest = settled_latest(store, cell.config_hash)
    if should_resume(latest):
        print(f"    resuming {latest['status']} run {latest['id']}", file=out, flush=True)
        try:
            return resume(latest["id"], quiet=quiet, zoo=zoo)
        except ResumeRefused as exc:
            print(f"    {exc}; starting the cell over", file=out, flush=True)
    return execute(cell.plan, device=device, quiet=quiet, zoo=zoo)


def headline(result: dict) -> str:
    from zoo.comparison.table import primary_metric

    metric = primary_metric(result["task"])
    value = result["metrics"].get(metric)
    return f"{metric} {value:.4f}" if isinstance(value, float) else f"{metric} {value}"


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


def failure_row(cell: Cell, config: dict | None = None) -> dict:
    """Store fields for a cell that failed before its run recorded itself: from the run's
    config.json when it got that far, else from the plan."""
    plan = cell.plan
    config = config or {
        "model": cell.model,
        "dataset": cell.dataset,
        "seed": cell.seed,
        "task": plan.task,
        "config_hash": cell.config_hash,
        "architecture": plan.spec.architecture.name,
        "tokenizer": plan.spec.tokenizer.name,
        "dataset_id": plan.dataset_ref.source,
        "configs": {k: _asdict(v) for k, v in plan.configs.items()},
    }
    return {
        "model": cell.model,
        "dataset": plan.dataset_ref.name,
        "architecture": plan.spec.architecture.name,
        "tokenizer": plan.spec.tokenizer.name,
        "task": plan.task,
        "seed": cell.seed,
        "config_hash": cell.config_hash,
        "config": config,
    }


def _record_failure(cell: Cell, began: float) -> str:
    """The run id holding the failure: the row execute wrote, or a new failed row when the
    cell failed before execute recorded anything (loading the dataset, say)."""
    from zoo.records.store import Store
    from zoo.train.runner import new_run_id

    with Store() as store:
        recorded = store.latest(config_hash=cell.config_hash, since=began)
        if recorded is not None:
            return recorded["id"]
        run_id = new_run_id()
        store.insert(
            run_id,
            status="failed",
            **failure_row(cell),
            error=cell.error,
            finished=time.time(),
            duration=time.time() - began,
        )
        return run_id


def _asdict(config):
    import dataclasses

    return dataclasses.asdict(config) if config is not None else None


def clock(seconds: float) -> str:
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
    parts = [
        f"{len(ran)} trained",
        f"{len(sweep.finished_before)} already finished",
        f"{len(sweep.impossible)} impossible",
        f"{len(sweep.failed)} failed",
    ]
    lines = ["sweep done: " + ", ".join(parts)]
    for cell in sweep.failed[:SHOWN]:
        lines.append(
            f"  {cell.status} {cell.name}: {_short_text(cell.error or cell.status)} "
            f"(run {cell.run_id})"
        )
    if len(sweep.failed) > SHOWN:
        lines.append(
            f"  and {len(sweep.failed) - SHOWN} more; zoo runs --where "
            "\"status != 'finished'\" lists them all"
        )
    return "\n".join(lines)


SHOWN = 5  # failures and reasons listed one by one; the rest are counted


def _short_text(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unrunnable(sweep: Sweep) -> str:
    """Why no cell of a sweep can run, in one line: each distinct reason once, the first few
    of them, and how many pairs each covers."""
    reasons: dict[str, list[str]] = {}
    for cell in sweep.impossible:
        reasons.setdefault(cell.skip, []).append(f"{cell.label} on {cell.dataset}")
    parts = []
    for reason, pairs in list(reasons.items())[:3]:
        pairs = list(dict.fromkeys(pairs))
        which = pairs[0] + (f" and {len(pairs) - 1} more" if len(pairs) > 1 else "")
        parts.append(f"{which}: {_short_text(reason)}")
    if len(reasons) > 3:
        parts.append(f"and {len(reasons) - 3} more reasons (zoo sweep --dry-run lists them)")
    return "; ".join(parts)


def records(sweep: Sweep) -> list[dict]:
    """Every cell as plain data (`zoo sweep --json`): its state (skipped, reused: finished
    before this sweep, to run with --dry-run, or the status it ended with), run and reason."""
    out = []
    for cell in sweep.cells:
        state = "skipped" if cell.skip else "reused" if cell.done else cell.status or "to run"
        out.append(
            {
                "name": cell.name,
                "model": cell.model,
                "dataset": cell.dataset,
                "seed": cell.seed,
                "setting": cell.setting,
                "state": state,
                "run_id": cell.done or cell.run_id,
                "config_hash": cell.config_hash,
                "reason": cell.skip or cell.error,
                "duration": cell.duration,
            }
        )
    return out


def table(sweep: Sweep, **options):
    """The comparison of this sweep's cells only (not other runs of the same models)."""
    from zoo.comparison.table import load_runs, summarize

    frame = load_runs()
    frame = frame[frame["config_hash"].isin(sweep.hashes)]
    return summarize(frame, **options)
