"""What a search ends with: the equal-budget table (each model at its best validation
settings, re-run over seeds and reported on test, beside its untuned preset), the winners
as registry.toml presets, and Optuna's plots of each study."""

from __future__ import annotations

import logging
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# a study's user attribute: its row of the equal-budget table its latest search printed
EQUAL_BUDGET = "zoo_equal_budget"


@dataclass
class StudyResult:
    """One model on one dataset after its search."""

    model: str
    dataset: str
    study: str  # the Optuna study name
    objective: str  # the validation figure chosen on, e.g. val_accuracy
    test_metric: str  # the task's headline test figure, e.g. test_accuracy
    trials: dict  # state -> count (COMPLETE, PRUNED, FAIL)
    trial_seconds: float
    best: dict | None = None  # {"trial", "value", "params", "run_id"}
    best_test: float | None = None  # the best trial's test figure, measured once
    settings: dict = field(default_factory=dict)  # the best params, typed as the config has them
    fixed: dict = field(default_factory=dict)  # --set and --steps of every trial, typed alike
    tuned: list = field(default_factory=list)  # test figures of the best settings, per seed
    preset: list = field(default_factory=list)  # test figures of the untuned preset, per seed
    tuned_seeds: list = field(default_factory=list)  # the seed of each figure in `tuned`
    preset_seeds: list = field(default_factory=list)
    same_as_preset: bool = False  # the best settings are the preset's: one set of runs
    plots: list = field(default_factory=list)  # paths written

    @property
    def best_trial(self) -> dict:
        """``best``, for a search that finished a trial (callers check ``best`` first)."""
        if self.best is None:
            raise ValueError(f"the search of {self.model} on {self.dataset} finished no trial")
        return self.best

    def paired(self, level: float = 0.95):
        """tuned - preset over the seeds both have (zoo.comparison.stats.Interval)."""
        from zoo.comparison.stats import paired_interval

        preset = dict(zip(self.preset_seeds, self.preset))
        shared = [s for s in self.tuned_seeds if s in preset]
        tuned = dict(zip(self.tuned_seeds, self.tuned))
        return paired_interval([tuned[s] for s in shared], [preset[s] for s in shared], level)

    @classmethod
    def from_record(cls, record: dict) -> StudyResult:
        """The result ``record()`` wrote (its derived ``paired`` recomputed when asked)."""
        from dataclasses import fields

        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in known})

    def record(self) -> dict:
        return {
            "model": self.model,
            "dataset": self.dataset,
            "study": self.study,
            "objective": self.objective,
            "test_metric": self.test_metric,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "best": self.best,
            "best_test": self.best_test,
            "settings": self.settings,
            "tuned": self.tuned,
            "preset": self.preset,
            "tuned_seeds": self.tuned_seeds,
            "preset_seeds": self.preset_seeds,
            "same_as_preset": self.same_as_preset,
            "paired": _interval_record(self.paired()) if self.best else None,
            "plots": self.plots,
        }


def _interval_record(interval) -> dict:
    def finite(x):
        finite = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
        return x if finite else None

    return {
        "diff": finite(interval.diff),
        "ci_low": finite(interval.low),
        "ci_high": finite(interval.high),
        "df": finite(interval.df),
        "p": finite(interval.p),
        "significant": interval.significant,
    }


def test_once(result: StudyResult, device: str) -> None:
    """The best trial's test figure: evaluated once (`zoo eval`), and read back from that
    evaluation when the search runs again."""
    from zoo.comparison.table import eval_value
    from zoo.operations.evaluate import evaluate_run
    from zoo.operations.reload import load_trained
    from zoo.records.store import Store
    from zoo.tasks import strip_split

    run_id, name = result.best_trial["run_id"], strip_split(result.test_metric)
    with Store() as store:
        trained_on = store.get(run_id)["dataset"]
        done = [  # the search's own evaluation: the test split of the data it searched on
            row
            for row in store.evaluations(run_id)
            if row.get("status") == "finished"
            and (row.get("config") or {}).get("split") == "test"
            and row.get("dataset") == trained_on
        ]
    if done:
        metrics = done[-1]["metrics"]
    else:
        log.info(
            f"    {result.model}: best trial {result.best_trial['trial']} (run {run_id}) on test, once"
        )
        trained = load_trained(run_id, device=device)
        metrics = evaluate_run(trained, result.dataset, "test")["metrics"]
    result.best_test = eval_value(metrics, name, "test")


def figures(sweep, config_hashes: set[str], metric: str) -> dict:
    """seed -> test figure of each finished run of `sweep` with one of these config hashes;
    each run read once, however many cells name it."""
    from zoo.records.store import Store

    runs = {}
    for cell in sweep.cells:
        run_id = cell.done or cell.run_id
        if cell.config_hash in config_hashes and run_id is not None:
            runs[run_id] = cell.seed
    values = {}
    with Store() as store:
        for run_id, seed in sorted(runs.items(), key=lambda item: item[1]):
            row = store.get(run_id)
            value = (row.get("metrics") or {}).get(metric)
            if seed in values or row["status"] != "finished":
                continue
            if isinstance(value, (int, float)) and math.isfinite(value):
                values[seed] = float(value)
    return values


def _mean(values: list[float]) -> str:
    from zoo.comparison.render import mean_std_text

    if not values:
        return "- (n=0)"
    std = statistics.stdev(values) if len(values) > 1 else math.nan
    return mean_std_text(statistics.mean(values), std, len(values))


def paired_text(result: StudyResult) -> str:
    """tuned - preset over their shared seeds, with its t interval, or why there is none."""
    from zoo.comparison.render import number
    from zoo.comparison.stats import NO_VARIANCE

    if not result.best:
        return "-"
    if result.same_as_preset:
        return "0 (the preset's settings)"
    interval = result.paired()
    if math.isnan(interval.diff):
        return "- (no shared seeds)"
    width, like = interval.high - interval.low, statistics.mean(result.preset)

    def shown(value):
        return number(value, like, width)

    text = f"{'+' if interval.diff >= 0 else ''}{shown(interval.diff)}"
    if interval.untestable == NO_VARIANCE:
        return text + " (the same difference at every seed: no test)"
    if interval.untestable:
        return text + f" ({interval.untestable})"
    low, high = shown(interval.low), shown(interval.high)
    return text + f" [{low}, {high}]" + (" †" if interval.significant else "")


def budget_text(trials: int | None, time: float | None) -> str:
    """A search's budget per model, as its table's title says it."""
    return f"{trials} trials" if trials is not None else f"{time:g}s of trials"


def keep_rows(studies: list, results: list[StudyResult], budget: str) -> None:
    """Each study keeps its row of this search's table (user attribute EQUAL_BUDGET), so
    the table can be shown again without training anything (zoo ui)."""
    import time

    search = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    for row, (study, result) in enumerate(zip(studies, results)):
        kept = {"budget": budget, "search": search, "row": row, **result.record()}
        study.set_user_attr(EQUAL_BUDGET, kept)


def kept_tables(kept: list[dict]) -> list[dict]:
    """The tables the searches printed, from the rows their studies kept (the
    EQUAL_BUDGET attribute of each): per search, newest first, its finish time, budget
    and table text."""
    searches: dict[tuple, list[dict]] = {}
    for row in kept:
        searches.setdefault((row.get("search", ""), row["budget"]), []).append(row)
    return [
        {
            "search": search,
            "budget": budget,
            "table": table(
                [StudyResult.from_record(r) for r in sorted(rows, key=lambda r: r.get("row", 0))],
                budget,
            ),
        }
        for (search, budget), rows in sorted(searches.items(), reverse=True)
    ]


def table(results: list[StudyResult], budget: str) -> str:
    """The equal-budget comparison as text."""
    header = [
        "model",
        "dataset",
        "trials (ok/pruned/failed)",
        "best val",
        "its test",
        "tuned test (seeds)",
        "preset test (seeds)",
        "tuned - preset (paired)",
        "best settings",
    ]
    # one pair of figures for every row goes in the title; several get a column of their own
    pairs = list(dict.fromkeys((r.objective, r.test_metric) for r in results))
    several = len(pairs) > 1
    if several:
        header.insert(2, "chosen on / reported as")
    rows = []
    for r in results:
        counts = (
            f"{r.trials.get('COMPLETE', 0)}/{r.trials.get('PRUNED', 0)}/{r.trials.get('FAIL', 0)}"
        )
        best = f"{r.best['value']:.4f}" if r.best else "-"
        test = f"{r.best_test:.4f}" if isinstance(r.best_test, float) else "-"
        settings = ", ".join(f"{k}={_short(v)}" for k, v in r.settings.items()) or "-"
        rows.append(
            [
                r.model,
                r.dataset,
                counts,
                best,
                test,
                _mean(r.tuned) if r.best else "-",
                _mean(r.preset),
                paired_text(r),
                settings,
            ]
        )
        if several:
            rows[-1].insert(2, f"{r.objective} / {r.test_metric}")
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]

    def line(cells) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    objective, metric = pairs[0] if len(pairs) == 1 else ("validation", "test, per row")
    lines = [
        f"equal budget: {budget} per model; chosen on {objective}, reported as {metric}",
        line(header),
        line(["-" * w for w in widths]),
    ]
    legend = [
        "",
        "tuned, preset: mean ± std over the re-run seeds (n runs), which are never a trial's seed;",
        "tuned - preset: mean difference over the seeds both have, with a 95% t interval "
        "(paired by seed); † the interval excludes 0.",
        "Only seed variance is counted: the test set's own sampling noise is not.",
    ]
    return "\n".join(lines + [line(row) for row in rows] + legend)


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


BUDGET = ("steps", "time")  # settings that size a search's trials


def preset_snippet(result: StudyResult) -> str:
    """The winner as a registry.toml preset: the original preset's options, then the
    settings every trial had (--set, --steps), then the best settings over them."""
    from zoo.core.loading import get_zoo
    from zoo.core.names import resolve_model

    spec = resolve_model(result.model, get_zoo())
    # The trials' --steps/--time is the search's budget, not the recipe: left out
    budget = {k: v for k, v in result.fixed.items() if k.rpartition(".")[2] in BUDGET}
    fixed = {k: v for k, v in result.fixed.items() if k not in budget}
    values = {}
    for key, value in {**spec.overrides, **fixed, **result.settings}.items():
        values[key.rpartition(".")[2]] = value  # train.steps and steps are one setting
    name = f"{result.model}-tuned"
    description = (
        f"{result.model} with the settings `zoo tune` found on {result.dataset} "
        f"({result.objective} {result.best_trial['value']:.4f}, study {result.study})"
    )
    lines = [
        f"[models.{name}]",
        f'architecture = "{spec.architecture.name}"',
        f'tokenizer = "{spec.tokenizer.name}"',
        f"description = {_toml(description)}",
        *(
            f"# each trial trained {key.rpartition('.')[2]} = {_toml(value)}: the search's "
            "budget, not part of the preset"
            for key, value in budget.items()
        ),
        f"[models.{name}.set]",
    ]
    lines += [f"{key} = {_toml(value)}" for key, value in values.items()]
    return "\n".join(lines)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else '"nan"'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def save_plots(study, folder: Path) -> list[str]:
    """Optuna's optimisation history and parameter importances (matplotlib) as PNGs. A plot
    that cannot be drawn (too few finished trials) is skipped with a note, never fatal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna.visualization.matplotlib as ov

    from zoo.home import safe_name_part
    from zoo.io import atomic_write_bytes

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    finished = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    for name, draw, needs in (
        ("history", ov.plot_optimization_history, 1),
        ("importances", ov.plot_param_importances, 2),
    ):
        if len(finished) < needs:
            log.info(
                f"    no {name} plot for {study.study_name}: {len(finished)} finished "
                f"trial(s), it needs {needs}"
            )
            continue
        try:
            import io
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Optuna marks its matplotlib plots experimental
                axes: Any = draw(study)
            figure: Any = axes.figure if hasattr(axes, "figure") else axes.flat[0].figure
            figure.set_size_inches(7, 4.5)
            figure.tight_layout()
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=100)
            plt.close(figure)
            path = folder / f"{safe_name_part(study.study_name)}-{name}.png"
            atomic_write_bytes(path, buffer.getvalue())
            written.append(str(path))
        except Exception as exc:  # e.g. importances of a one-value space
            log.info(f"    no {name} plot for {study.study_name}: {type(exc).__name__}: {exc}")
    return written
