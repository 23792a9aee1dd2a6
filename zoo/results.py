"""What the Python API returns: a recorded run, an evaluation, a reloaded run to predict and
generate with, the results of a sweep, a search and an export, and what `zoo list` and
`zoo show` find. Data only: the command line renders them."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.errors import ZooDeprecationWarning

if TYPE_CHECKING:
    from zoo.operations.ensemble import Ensemble
    from zoo.operations.reload import LoadedRun


@dataclass
class Run:
    """A recorded run, as `zoo.run` returns it: what `zoo run --json` prints, and the run's
    folder. For an ensemble preset it is the ensemble's row, and ``ensemble`` holds the runs
    it combines."""

    id: str
    """The run's id (its folder's name)."""
    model: str
    """The model, ``ARCHITECTURE-TOKENIZER`` (or a preset's name)."""
    dataset: str
    """The dataset's name."""
    task: str
    """The task the run trained for."""
    status: str
    """``finished``, ``failed``, ``diverged``, ``interrupted``, ``pruned``, ..."""
    seed: int
    """The run's seed."""
    params: int | None
    """Trainable parameters (None when unknown)."""
    metrics: dict
    """Every figure, named as the task declares them (``val_*``, ``test_*``, ...)."""
    folder: Path | None
    """The run's folder (config.json, weights, tokenizer, curve); None for an ensemble,
    whose weights are its runs'."""
    samples: list[str] = field(default_factory=list)
    """Example outputs printed after the run."""
    duration: float | None = None
    """Seconds, set-up and evaluation included."""
    summary: dict = field(default_factory=dict, repr=False)
    """Everything `zoo run` prints."""
    trackers: dict = field(default_factory=dict)
    """Where each tracker (``log_to``) wrote: ``{"mlflow": {"tracking_uri": ..., "run_id":
    ...}, "tensorboard": {"log_dir": ...}}``."""

    ensemble: Ensemble | None = None
    """For an ensemble preset: the runs it combines (each member trained, or its finished
    run reused) with their weights, as ``zoo.ensemble`` returns them."""

    @classmethod
    def of_ensemble(cls, combined: Ensemble, seed: int) -> Run:
        """The Run of an ensemble preset's row (`zoo run ENSEMBLE-PRESET DATASET`), whose
        members all trained with ``seed``."""
        return cls(
            combined.id,
            combined.model,
            combined.dataset,
            combined.task,
            "finished",
            seed,
            combined.params,
            combined.metrics,
            None,
            duration=combined.duration,
            ensemble=combined,
        )

    def __getattr__(self, name: str):
        ensemble = self.__dict__.get("ensemble")
        if ensemble is None or name not in ("weighting", "runs"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(  # zoo.run gave an Ensemble for an ensemble preset before
            f"zoo.run(ENSEMBLE_PRESET).{name} is deprecated: zoo.run returns a zoo.Run; "
            f"read .ensemble.{name} (the shortcut goes in zoo 0.2)",
            ZooDeprecationWarning,
            stacklevel=2,
        )
        return getattr(ensemble, name)

    @classmethod
    def from_result(cls, result: dict) -> Run:
        """A Run from the dict a training run returns (``run_id``, ``model``, ...)."""
        return cls(
            result["run_id"],
            result["model"],
            result["dataset"],
            result["task"],
            result["status"],
            result["seed"],
            result.get("params"),
            result["metrics"],
            Path(result["run_dir"]),
            list(result.get("samples") or []),
            result.get("duration"),
            dict(result),
            dict(result.get("trackers") or {}),
        )

    def load(self) -> LoadedRun:
        """This run's model and tokenizer, to predict, generate and evaluate with."""
        from zoo.operations.reload import load_trained

        return load_trained(self.id)


@dataclass
class SweepResult:
    """What `zoo sweep --json` prints: every cell (its state, the run that holds it, or why
    it was skipped) and the comparison of the sweep's runs, as `zoo compare` gives it."""

    cells: list[dict]
    """Every cell of the grid: its state, the run that holds it, or why it was skipped."""
    comparison: Any = field(default=None, repr=False)
    """The ``zoo.Comparison`` of the sweep's runs, as ``zoo.compare`` gives one (None:
    nothing finished)."""
    frame: Any = None
    """The comparison's cells, a pandas DataFrame as ``comparison.cells``, with a typed
    column per grid key in the grid's order (None: nothing finished)."""

    def __getattr__(self, name: str):
        if name != "table":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(  # the Comparison was .table, beside a .comparison that was a frame
            "SweepResult.table is deprecated: it is SweepResult.comparison (and the frame "
            "that was .comparison is .frame); .table goes in zoo 0.2",
            ZooDeprecationWarning,
            stacklevel=2,
        )
        return self.__dict__.get("comparison")

    @property
    def failed(self) -> list[dict]:
        """The cells that did not finish (and were not reused or skipped)."""
        return [c for c in self.cells if c["state"] not in ("finished", "reused", "skipped")]


@dataclass
class TuneResult:
    """What `zoo tune` prints: per model and dataset its study, best validation trial and
    settings, the best trial's test figure (measured once), the test figures of those
    settings and of the untuned preset over the seeds; the table and the presets as text."""

    studies: list[dict]
    """Per model and dataset: its study, best trial, settings and test figures."""
    table: str
    """The equal-budget table, as `zoo tune` prints it."""
    presets: str
    """The winners as registry.toml presets."""


@dataclass
class Reproduction:
    """What `zoo reproduce` reports: the run trained again from its recorded configs and
    every metric compared (timing figures, which vary, are left out)."""

    run_id: str
    """The original run."""
    rerun_id: str
    """The run that trained it again."""
    match: bool
    """Every compared metric and the status the same."""
    metrics: list[dict]
    """Per metric: ``metric``, ``original``, ``rerun``, ``same``."""
    notes: list[str]
    """What else differs: versions, parameter count, status."""
    excluded: list[str]
    """Timing metrics, which vary, not compared."""


@dataclass
class Listing:
    """What `zoo list` finds: per kind (architectures, tokenizers, datasets, models,
    pipelines, loggers, plugins), a row per entry with its name, plugin and description; or,
    asked for the matrix, which task each dataset serves with which model."""

    sections: dict[str, list[dict]]
    """Kind -> its rows (name, plugin, description, the kind's own fields); empty for the matrix."""
    matrix: list[dict] = field(default_factory=list)
    """With ``matrix=True``: for every architecture and dataset, the task that would run, or why none can."""
    presets_only: bool = False
    """The models listed are the presets alone (not every ARCHITECTURE-TOKENIZER pair)."""


@dataclass
class ConfigField:
    """One field of a config dataclass, as `zoo show` lists it."""

    name: str
    """The field's name: the key ``--set`` and keyword settings take."""
    type: str
    """Its type, as written in the dataclass (``int``, ``float | None``)."""
    value: Any
    """What the shown model or dataset sets it to (its default where it sets nothing)."""
    default: Any = None
    """The dataclass's default (``required`` is True where it has none)."""
    required: bool = False
    """The field has no default."""
    set_here: bool = False
    """The preset or catalogue entry sets it (``value`` is not the default)."""


@dataclass
class ModelDetails:
    """A model `zoo run` takes (a preset or an ARCHITECTURE-TOKENIZER pair), as `zoo show`
    shows it. An ensemble preset has ``members`` and ``weights`` instead of the rest."""

    name: str
    description: str
    origin: str | None = None
    """Where a preset comes from: ``zoo`` (built in), a plugin's distribution, the user's
    registry.toml; None for a pair that is no preset."""
    architecture: str = ""
    architecture_plugin: str = ""
    tokenizer: str = ""
    tokenizer_plugin: str = ""
    tasks: list[str] = field(default_factory=list)
    """The tasks its architecture serves."""
    base: list[str] = field(default_factory=list)
    """The presets it builds on (registry.toml's ``base``)."""
    pipeline: str | None = None
    """The task whose training config is shown under ``train``."""
    configs: dict[str, list[ConfigField]] = field(default_factory=dict)
    """Section (``model``, ``tokenizer``, ``train``) -> its fields, with the preset's values."""
    members: list[str] = field(default_factory=list)
    """An ensemble preset's members."""
    weights: str | None = None
    """An ensemble preset's weighting (``equal``, ``fit``)."""


@dataclass
class EntryDetails:
    """A plugin's architecture, tokenizer or pipeline, as `zoo show NAME` shows it."""

    kind: str
    """``architecture``, ``tokenizer`` or ``pipeline``."""
    name: str
    plugin: str
    description: str
    tasks: list[str]
    """The tasks an architecture serves."""
    task: Any
    """A pipeline's task declaration (``zoo.plugin.Task``), else None."""
    config: list[ConfigField]
    """Its config dataclass's fields."""


@dataclass
class DatasetDetails:
    """A dataset, as `zoo show NAME` shows it: where it loads from and how it is read."""

    name: str
    source_kind: str
    """``hub``, ``local`` or ``plugin``."""
    source: str
    tasks: list[str]
    """The tasks it serves (empty: detected when it loads)."""
    mirror: str | None
    """For a Hub dataset: the local mirror that holds it (None: the Hub)."""
    description: str
    plugin: str | None
    """The plugin entry that generates it: ``NAME (PLUGIN)``."""
    text_column: str | None
    """None: detected when it loads."""
    label_column: str | None
    splits: Any
    """The catalogue's split mapping, if it sets one."""
    config: list[ConfigField] | None
    """Its config's fields, with the catalogue's values; None: it has no config."""


@dataclass
class RunDetails:
    """A recorded run, as `zoo show RUN_ID` shows it."""

    row: dict
    """Its store row: status, metrics, config (what `zoo show RUN --json` prints)."""
    evaluations: list[dict]
    """The evaluation rows that score it: id, status, dataset, split and, under
    ``metric``/``value``, its task's primary evaluation figure."""
    folder: Path
    """Its run folder."""
    files: list[str] | None
    """The files in its folder (None: the folder is gone)."""
    vocab_size: int | None
    """Its tokenizer's vocabulary: recorded, else read from the folder's tokenizer.json."""


@dataclass
class Shown:
    """What `zoo show NAME` finds: a model (preset or pair), a run, or other entries of the
    zoo. A name can name several things (``digits`` is an architecture and a dataset):
    ``details`` holds each."""

    type: str
    """``"model"``, ``"run"`` or ``"entry"``: what the name names first."""
    name: str
    """The name shown (a run's full id)."""
    record: dict
    """What `zoo show --json` prints: the model's settings, the run's store row, an entry's
    kind, plugin, description and config fields."""
    details: list[ModelDetails | EntryDetails | DatasetDetails | RunDetails] = field(
        default_factory=list
    )
    """Everything the name names, each as its own typed record, in the order shown."""


@dataclass
class Removal:
    """What `zoo rm` removed (or, for a dry run, would remove): per run its id, model,
    dataset and status."""

    runs: list[dict]
    """Per run removed: ``id``, ``model``, ``dataset``, ``status``."""
    dry_run: bool = False
    """Nothing was removed: the runs are what would be."""


@dataclass
class Export:
    """What `zoo export` wrote: a finished run as a folder that loads without zoo, checked
    against zoo's own predictions before it was written."""

    run_id: str
    """The exported run."""
    folder: Path
    """The folder written."""
    format: str
    """The exporter that wrote it (``onnx``, ``transformers``, ...)."""
    summary: str
    """What the exporter says it wrote."""
    compared: int
    """How many validation texts the export's predictions were compared on."""
    max_difference: float
    """The largest difference between its probabilities and zoo's."""
    labels_agree: bool
    """Every compared text got the same label as zoo gives it."""

    def record(self) -> dict:
        """What `zoo export --json` prints."""
        return {**dataclasses.asdict(self), "folder": str(self.folder)}

    def __getitem__(self, key: str):
        """The dict zoo.export returned before: deprecated, read the attributes."""
        warnings.warn(
            f"zoo.export(...)[{key!r}] is deprecated: zoo.export returns a zoo.Export; read "
            f".{key} (the dict access goes in zoo 0.2)",
            ZooDeprecationWarning,
            stacklevel=2,
        )
        return self.record()[key]
