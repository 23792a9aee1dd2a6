"""The Python API, beside the command line, for notebooks and scripts.

Each function takes the names and settings its command takes, and raises ``ZooError``
where the command exits with code 2 (an unknown name, a setting that cannot work), before
anything trains::

    import zoo

    run = zoo.run("decoder-char", "shakespeare", steps=200, n_layer=2)   # zoo run
    run.metrics["val_bpc"], run.folder
    model = zoo.load(run.id)                                            # a finished run
    model.generate("ROMEO:", tokens=100)                                # zoo generate
    model.evaluate("shakespeare", split="validation")                   # zoo eval
    zoo.load(other_id).predict(["what a film"])                         # zoo predict
    zoo.sweep(["decoder-char", "digits-char"], on=["digits"], seeds=2)  # zoo sweep
    zoo.runs(), zoo.compare(metric="val_bpc")                           # zoo runs, compare

Config settings are keyword arguments, as ``--set`` takes them: ``n_layer=2``; a key with a
section is passed as ``**{"train.lr": 1e-3}``.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from zoo.bounds import DEVICES
from zoo.errors import ZooError



@dataclass
class Run:
    """A recorded training run: what `zoo run --json` prints, and the run's folder."""

    id: str
    model: str
    dataset: str
    task: str
    status: str
    seed: int
    params: int | None
    metrics: dict
    folder: Path
    samples: list[str] = field(default_factory=list)

    @classmethod
    def from_result(cls, result: dict) -> "Run":
        return cls(result["run_id"], result["model"], result["dataset"], result["task"],
                   result["status"], result["seed"], result.get("params"), result["metrics"],
                   Path(result["run_dir"]), list(result.get("samples") or []))

    def load(self) -> "LoadedRun":
        """This run's model and tokenizer, to predict, generate and evaluate with."""
        return load(self.id)


@dataclass
class Evaluation:
    """An evaluation row (`zoo eval`): a trained run scored on a split of a dataset."""

    id: str
    parent_id: str
    dataset: str
    split: str
    metrics: dict


class LoadedRun:
    """A finished run reloaded from its folder (safetensors, no pickle), as `zoo predict`,
    `zoo generate` and `zoo eval` reload it."""

    def __init__(self, trained, pipeline, device: str = "auto"):
        self.trained, self._pipeline, self._device = trained, pipeline, device
        self.id, self.task = trained.run_id, trained.task

    def __repr__(self) -> str:
        return f"<zoo run {self.id}: {self.trained.config.get('model')} ({self.task})>"

    def predict(self, texts: str | Iterable[str]) -> list:
        """One prediction per text (a single string counts as one text), each of the type the
        task declares (``zoo.Task.prediction``, a ``zoo.Prediction`` dataclass); its
        ``record()`` is what `zoo predict --json` prints, without the text."""
        predict = getattr(self._pipeline, "predict", None)
        if predict is None:
            raise ZooError(f"run {self.id} is a {self.task} run, and the {self.task} "
                           "pipeline offers no prediction")
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
        return list(predict(self.trained, texts))

    def generate(self, prompt: str = "", tokens: int = 300, *, temperature: float = 0.8,
                 top_k: int | None = None, seed: int = 0) -> str:
        """The prompt and its continuation: what `zoo generate` prints (without the final
        newline)."""
        generate = getattr(self._pipeline, "generate", None)
        if generate is None:
            raise ZooError(f"run {self.id} is a {self.task} run, and the {self.task} "
                           "pipeline offers no generation")
        _positive("tokens", tokens, int)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or not (math.isfinite(temperature) and temperature >= 0):
            raise ZooError(f"temperature must be 0 (greedy) or a positive number, got "
                           f"{temperature!r}")
        if top_k is not None:
            _positive("top_k", top_k, int)
        pieces = generate(self.trained, prompt, tokens, temperature=temperature, top_k=top_k,
                          seed=seed)
        return prompt + "".join(pieces)

    def evaluate(self, dataset: str, split: str = "test", *, text_column: str | None = None,
                 label_column: str | None = None) -> Evaluation:
        """Score the run on a split of any dataset and record it, as `zoo eval` does."""
        from zoo.evaluation import evaluate_run

        result = evaluate_run(self.id, dataset, split, text_column=text_column,
                              label_column=label_column, device=self._device)
        return Evaluation(result["run_id"], result["parent_id"], result["dataset"],
                          result["split"], result["metrics"])


@dataclass
class SweepResult:
    """What `zoo sweep --json` prints: every cell (its state, the run that holds it, or why
    it was skipped) and the comparison of the sweep's runs, as `zoo compare` gives it."""

    cells: list[dict]
    comparison: object  # pandas DataFrame, one row per table cell (None: nothing finished)

    @property
    def failed(self) -> list[dict]:
        return [c for c in self.cells if c["state"] not in ("finished", "reused", "skipped")]


def run(model: str, dataset: str, *, steps: int | None = None, time: float | None = None,
        seed: int = 0, device: str = "auto", task: str | None = None,
        text_column: str | None = None, label_column: str | None = None, quiet: bool = False,
        init: str | None = None, **settings) -> Run:
    """Train and evaluate MODEL on DATASET and record the run (`zoo run`); ``init`` names a
    finished run whose tokenizer and matching weights it starts from (`--init`)."""
    from zoo.plan import plan_run
    from zoo.runner import execute

    if device not in DEVICES:
        raise ZooError(f"device must be {', '.join(DEVICES)}, not {device!r}")
    overrides = _overrides(settings, steps, time)
    plan = plan_run(model, dataset, overrides=overrides, seed=seed, task=task,
                    text_column=text_column, label_column=label_column, init=init)
    return Run.from_result(execute(plan, device=device, quiet=quiet, text_column=text_column,
                                   label_column=label_column))


def load(run_id: str, *, device: str = "auto") -> LoadedRun:
    """A finished run (an id or a unique prefix of one), ready to predict, generate and
    evaluate with, on `device` (auto: CUDA when present)."""
    from zoo.registry import get_zoo
    from zoo.trained import load_trained

    zoo = get_zoo()
    trained = load_trained(run_id, zoo, device=device)
    return LoadedRun(trained, zoo.pipelines.get(trained.task).load(), device)


def sweep(models: str | list[str], on: str | list[str], *, seeds: int = 1,
          steps: int | None = None, time: float | None = None, task: str | None = None,
          device: str = "auto", progress: bool = True, quiet: bool = True,
          metric: str | None = None, grid: dict[str, list] | None = None, jobs: int = 1,
          executor: str = "local", address: str | None = None, cell_cpus: int | None = None,
          cell_gpus: float | None = None, **settings) -> SweepResult:
    """Train every model x dataset x seed cell not finished before (`zoo sweep`); a cell
    that fails is recorded as failed and the sweep goes on. `progress` prints a line per
    cell on stderr (not with `zoo sweep --quiet`); `quiet=False` adds each run's own
    progress (`zoo sweep --verbose`). `grid={"n_layer": [1, 2]}` is `--grid n_layer=1,2`;
    `jobs`, `executor`, `address`, `cell_cpus` and `cell_gpus` are the options of the same
    names."""
    from zoo import sweeps
    from zoo.executors import make_executor

    if device not in DEVICES:
        raise ZooError(f"device must be {', '.join(DEVICES)}, not {device!r}")
    if executor not in ("local", "ray"):
        raise ZooError(f"executor must be local or ray, not {executor!r}")
    models = [models] if isinstance(models, str) else list(models)
    datasets = [on] if isinstance(on, str) else list(on)
    # the command's --grid key=v1,v2, so values are checked and labelled as it does
    grid_options = [f"{key}={','.join(str(v) for v in values)}"
                    for key, values in (grid or {}).items()]
    pool = make_executor(_positive("jobs", jobs, int), executor, address, cell_cpus, cell_gpus)
    plan = sweeps.plan_sweep(models, datasets, seeds=_positive("seeds", seeds, int),
                             overrides=_overrides(settings, steps, time), task=task,
                             grid=sweeps.parse_grid(grid_options))
    if not plan.todo and not plan.finished_before:
        reasons = "; ".join(line.strip() for line in sweeps.describe_plan(plan)[1:])
        raise ZooError(f"no cell of the sweep can run ({reasons})")
    sweeps.run_sweep(plan, device=device, quiet=quiet, out=None if progress else io.StringIO(),
                     executor=pool)
    finished = any(c.status == "finished" or c.done for c in plan.cells)
    return SweepResult(sweeps.records(plan),
                       sweeps.table(plan, metric=metric).cells if finished else None)


def runs():
    """All recorded runs as a pandas DataFrame (one column per metric): `zoo runs`."""
    from zoo.store import Store

    with Store() as store:
        return store.frame()


def compare(*, metric=None, where=None, by=None, columns=None, baseline=None, evals=False,
            status=("finished",), better=None, pool=False):
    """The comparison table as a pandas DataFrame, one row per cell (`zoo compare`).

    Columns: the row keys (default model) and column keys (default dataset), task, metric,
    better, mean, std, n, best, setting, configs, runs; with ``baseline`` also diff, ci_low,
    ci_high, df and significant. Options mean what `zoo compare`'s options mean.
    """
    from zoo.comparison import load_runs, summarize

    return summarize(load_runs(), metric=metric, where=where, by=by, columns=columns,
                     baseline=baseline, evals=evals, status=status, better=better,
                     pool=pool).cells


def _overrides(settings: dict, steps, time) -> dict:
    """--set values, with --steps and --time as the command adds them."""
    overrides = dict(settings)
    if steps is not None and time is not None:
        raise ZooError("give steps or time, not both")
    if steps is not None:
        overrides["train.steps"] = _positive("steps", steps, int)
    if time is not None:
        overrides["train.time"] = _positive("time", time, float)
    return overrides


def _integer(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZooError(f"{name} must be an integer, got {value!r}")
    return value


def _positive(name: str, value, kind: type):
    """A positive int (or finite float), as the command's option parser checks it."""
    if kind is int:
        value = _integer(name, value)
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ZooError(f"{name} must be a positive number, got {value!r}")
    if not value > 0:
        raise ZooError(f"{name} must be positive, got {value!r}")
    return value
