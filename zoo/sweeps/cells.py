"""A sweep's cells: every model x dataset x setting x seed cell planned, a cell's settled run
and what its store row holds, and a cell trained anew (train_cell).

Every cell is planned before anything trains, so impossible pairs (no head for the
dataset's task, a --set key the model does not have) are skipped with their reason up
front. `--grid key=v1,v2` adds settings: each combination of grid values is its own cell
(and its own row in the comparison)."""

from __future__ import annotations

import dataclasses
import fnmatch
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

from zoo.data import datasets as zoo_data
from zoo.errors import ZooError
from zoo.sweeps.cell_stacks import stack_size
from zoo.sweeps.grid import check_grid, grid_settings, short_value

if TYPE_CHECKING:
    from zoo.train.job import RunOptions

WILDCARDS = "*?["


MAX_CELLS = 2_000  # cells one sweep plans (model x dataset x setting x seed): seconds


@dataclass
class Cell:
    model: str
    dataset: str
    seed: int
    setting: dict = field(default_factory=dict)  # this cell's --grid values, of their types
    plan: Any = None  # zoo.train.plan.Plan, when the cell can run
    config_hash: str | None = None
    skip: str | None = None  # why the cell cannot run
    done: str | None = None  # the finished run that already holds this cell
    new_because: str | None = None  # why a cell that ran before runs again
    stale: str | None = None  # a finished run of its config hash on data that changed since
    run_id: str | None = None
    resumed: str | None = None  # the earlier run this cell goes on with, while it does
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
    stacked: int | None = None  # --stack-seeds: the most seeds trained together
    # What trackers group this sweep's runs under (an MLflow parent run, a TensorBoard folder)
    id: str = field(default_factory=lambda: "sweep-" + time.strftime("%Y%m%d-%H%M%S"))

    @property
    def impossible(self) -> list[Cell]:
        return [c for c in self.cells if c.skip]

    @property
    def finished_before(self) -> list[Cell]:
        return [c for c in self.cells if c.done]

    @property
    def todo(self) -> list[Cell]:
        """The cells to train: not impossible, not finished before, not trained yet."""
        return [c for c in self.cells if not c.skip and not c.done and c.status is None]

    @property
    def failed(self) -> list[Cell]:
        return [c for c in self.cells if c.status not in (None, "finished")]

    @property
    def hashes(self) -> set[str]:
        return {c.config_hash for c in self.cells if c.config_hash}


def expand_models(patterns: list[str], zoo) -> list[str]:
    """Model names, with wildcards matched against every preset and pair in the registry."""
    from zoo.core.kinds import natural_key
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
    stack_seeds: int | bool | None = None,
) -> Sweep:
    """Every cell planned; ``stack_seeds`` (zoo.sweeps.cell_stacks) trains up to that many
    seeds of a cell together (True: all of them), a configuration of its own."""
    from zoo.core.loading import get_zoo
    from zoo.train.plan import PlanChoices

    zoo = zoo or get_zoo()
    if seeds <= 0:
        raise ZooError(f"seeds must be positive, got {seeds}", option="seeds")
    stacked = stack_size(stack_seeds, seeds)
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
    # one dataset loaded once for every cell that plans on it
    planning = {"choices": PlanChoices(task=task), "zoo": zoo, "loaded_cache": {}}
    cells = [
        cell
        for model in names
        for dataset in datasets
        for setting in settings
        for cell in _setting_cells(
            model, dataset, {**overrides, **setting}, setting, seeds, stacked, planning
        )
    ]
    _settle(cells, zoo)
    return Sweep(
        cells,
        names,
        datasets,
        list(range(seeds)),
        grid=grid,
        overrides=overrides,
        task=task,
        stacked=stacked,
    )


def _setting_cells(
    model: str, dataset: str, overrides: dict, setting: dict, seeds: int, stacked, planning: dict
) -> list[Cell]:
    """One setting's cells, a seed each: planned once (the plans differ only in the seed,
    ``planning`` has plan_run's choices, zoo and loaded_cache); a setting zoo refuses skips
    each cell with the reason."""
    from zoo.train.plan import config_hash, plan_run

    cells, plan = [], None
    for seed in range(seeds):
        cell = Cell(model, dataset, seed, setting)
        try:
            if plan is None:
                plan = plan_run(model, dataset, overrides=overrides, **planning)
            cell.plan = dataclasses.replace(plan, seed=seed, stacked=stacked)
            cell.config_hash = config_hash(cell.plan, planning["zoo"])
        except ZooError as exc:
            cell.skip = str(exc)
        cells.append(cell)
    return cells


def _settle(cells: list[Cell], zoo) -> None:
    """Mark the cells a finished run already answers, and those that repeat another cell's
    experiment (settings that differ only in ones that change no result); explain why the
    first of each new experiment is new."""
    from zoo.records.store import Store

    with Store() as store:
        finished = store.finished_by_hash()
        rows = store.rows() if any(c.config_hash not in finished for c in cells) else []
    first: dict[str, Cell] = {}
    settle_finished(cells, finished, zoo)
    for cell in cells:
        if cell.done:
            continue
        if cell.config_hash in first:  # differs only in settings that change no result
            cell.skip = (
                f"the same experiment as {first[cell.config_hash].label} (its "
                "settings differ only in ones that change no result)"
            )
        elif cell.config_hash:
            first[cell.config_hash] = cell
    explain_new_cells([c for c in first.values() if not c.done], rows, zoo)


def add_seed(sweep: Sweep, like: Cell, zoo=None) -> Cell:
    """One more seed of `like`'s model, dataset and setting (the one after the highest
    that row has), planned as plan_sweep plans a seed; a finished run of it is reused."""
    from zoo.core.loading import get_zoo
    from zoo.records.store import Store
    from zoo.train.plan import config_hash

    zoo = zoo or get_zoo()
    row = [
        c
        for c in sweep.cells
        if (c.model, c.dataset, c.setting) == (like.model, like.dataset, like.setting)
    ]
    cell = Cell(like.model, like.dataset, max(c.seed for c in row) + 1, like.setting)
    cell.plan = dataclasses.replace(like.plan, seed=cell.seed)
    cell.config_hash = config_hash(cell.plan, zoo)
    with Store() as store:
        settle_finished([cell], store.finished_by_hash(), zoo)
    sweep.cells.append(cell)
    if cell.seed not in sweep.seeds:
        sweep.seeds.append(cell.seed)
    return cell


def settle_finished(cells: list[Cell], finished: dict[str, str], zoo) -> None:
    """Mark each cell a finished run holds (``finished``: config hash -> run id) as done,
    unless that run read a local file that has changed since: then the cell trains again,
    saying why (``new_because``), and that run is ``stale``, never taken for it."""
    from zoo.train.reuse import data_changed

    changed: dict[str, str | None] = {}  # run id -> why its data is not the cell's now
    read: dict = {}  # each local dataset, as it reads now
    for cell in cells:
        done = finished.get(cell.config_hash) if cell.config_hash else None
        if done is None:
            continue
        if done not in changed:
            changed[done] = data_changed(cell.plan, done, read, zoo)
        if changed[done] is None:
            cell.done = done
        else:
            cell.new_because, cell.stale = changed[done], done


def explain_new_cells(cells: list[Cell], rows: list[dict], zoo) -> None:
    """A cell whose experiment finished before under other plugin code (a run with the
    same config hash once its plugins' identities are those that run recorded) says so:
    "plugin code changed", naming the plugins."""
    from zoo.train.plan import Plan, config_hash, plugin_identities
    from zoo.train.provenance import code_changes

    by_model: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("status") == "finished" and row.get("kind", "train") == "train":
            by_model.setdefault(str(row.get("model")), []).append(row)
    for cell in cells:
        if not isinstance(cell.plan, Plan):
            continue
        now = plugin_identities(cell.plan, zoo)
        tried: dict[str, str] = {}  # recorded identities -> the cell's hash under them
        for row in reversed(by_model.get(cell.model, [])):  # the latest first
            recorded = (row.get("config") or {}).get("versions") or {}
            found = {name: recorded.get(f"plugin:{name}") for name in now}
            if found == now or not all(isinstance(v, str) for v in found.values()):
                continue  # the same code, or a run that recorded no identity for one
            then = {name: str(value) for name, value in found.items()}
            key = repr(sorted(then.items()))
            if key not in tried:
                tried[key] = config_hash(cell.plan, zoo, plugins=then)
            if tried[key] == row.get("config_hash"):
                changes = code_changes(then, now)
                cell.new_because = f"plugin code changed since run {row['id']}: {changes}"
                break


def _pair_sections(names, datasets, overrides, task, zoo) -> list[dict]:
    """The config classes (model, tokenizer, train) of every model x dataset pair that can
    run without the grid: what the grid's keys and values are checked against."""
    from zoo.train.plan import PlanChoices, plan_run

    found = []
    for model in names:
        for dataset in datasets:
            try:
                plan = plan_run(
                    model, dataset, overrides=overrides, choices=PlanChoices(task=task), zoo=zoo
                )
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
    reasons: dict = {}
    for cell in sweep.impossible:  # one line per pair: the reason does not depend on the seed
        reasons.setdefault((cell.label, cell.dataset), cell.skip)
    for (label, dataset), reason in reasons.items():
        lines.append(f"  skip {label} on {dataset}: {reason}")
    new: dict[tuple[str, str], list[Cell]] = {}  # one line per pair, as for skipped cells
    for cell in sweep.todo:
        if cell.new_because:
            new.setdefault((cell.label, cell.dataset), []).append(cell)
    for (label, dataset), again in new.items():
        lines.append(f"  new {label} on {dataset} ({len(again)} cell(s)): {again[0].new_because}")
    return lines


def train_cell(
    plan, options: RunOptions, *, zoo=None, run_id=None, store=None, extra=None, on_validate=None
):
    """A cell's run started anew (its last run could not be resumed): a plan of seeds
    trained together is trained as a stack of one, so its run is what its configuration
    says (stacked), never a run trained alone; any other plan as ``execute`` trains it
    (``on_validate``: a search trial's callback; trials are never stacked)."""
    from zoo.train.runner import execute
    from zoo.train.seed_stack import train_together
    from zoo.train.starting import new_run_id

    if not plan.stacked:
        return execute(
            plan,
            options,
            zoo=zoo,
            run_id=run_id,
            store=store,
            extra=extra,
            on_validate=on_validate,
        )
    ((kind, value),) = train_together(
        [plan],
        [run_id or new_run_id()],
        options,
        zoo=zoo,
        stores=None if store is None else [store],
        extras=[extra],
    )
    if kind == "error":
        raise value
    return value


def settled_latest(store, config_hash: str | None) -> dict | None:
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


def should_resume(latest: dict | None) -> TypeGuard[dict]:
    """A cell continues its latest run when that was interrupted, or failed with a
    checkpoint kept (its worker process died, say); any other cell starts a new run."""
    from zoo.records.paths import run_folder
    from zoo.train import checkpoints

    if latest is None or latest.get("kind", "train") != "train":
        return False
    if latest["status"] == "interrupted":
        return True
    return latest["status"] == "failed" and checkpoints.latest(run_folder(latest["id"])) is not None


def headline(result: dict) -> str:
    from zoo.comparison.table import primary_metric

    metric = primary_metric(result["task"])
    value = result["metrics"].get(metric)
    return f"{metric} {value:.4f}" if isinstance(value, float) else f"{metric} {value}"


def one_line(exc: Exception) -> str:
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


def _asdict(config):

    return dataclasses.asdict(config) if config is not None else None
