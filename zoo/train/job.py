"""What a pipeline receives: the resolved model, configs, data and run folder."""

from __future__ import annotations

import json
import logging
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from zoo.core.config import incidental
from zoo.core.limits import sized
from zoo.core.phases import phase
from zoo.errors import ZooError
from zoo.io import atomic_write_bytes, atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from zoo.core.kinds import ArchitectureEntry, Entry
    from zoo.data.datasets import LoadedDataset

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """Training settings every pipeline shares; pipelines subclass it to add their own."""

    steps: int = 1000
    """Optimizer steps; with `time` set, the loop stops at whichever comes first."""
    time: float | None = None
    """Wall-clock budget in seconds, for comparisons at equal compute."""
    schedule: Literal["steps", "time"] = "steps"
    """What the cosine decay runs over after the warm-up: ``steps`` (the step budget) or
    ``time`` (the wall-clock budget ``time``, so a time-limited run reaches ``min_lr`` as its
    time ends, on a fast machine and a slow one alike; ``steps`` is then only a cap)."""
    batch_size: int = sized(32, role="batch")
    """Sequences (or texts) per training batch."""
    lr: float = 1e-3
    """The peak learning rate, reached after ``warmup_steps``."""
    min_lr: float = 1e-4
    """Cosine decay ends here."""
    warmup_steps: int = 100
    """Steps of linear warmup from 0 to ``lr``."""
    warmup_fraction: float | None = None
    """The warm-up as a share of the step budget (0.1: its first tenth); replaces
    ``warmup_steps``, so one recipe warms up alike on a small set and a large one."""
    weight_decay: float = 0.1
    """AdamW's decoupled weight decay, on matrices only."""
    beta1: float = 0.9
    """AdamW's first-moment decay."""
    beta2: float = 0.95
    """AdamW's second-moment decay (nanoGPT's Shakespeare config uses 0.99: few tokens per
    step)."""
    freeze: str = ""
    """Comma-separated globs of weight names (``hf.bert.*``) that keep the values they start
    with: the optimizer leaves them out. Train a new head on a frozen body, then start a run
    from that one (``--init``) that trains everything."""
    grad_clip: float = 1.0
    """The largest gradient norm; larger gradients are scaled down to it (0: no clipping)."""
    eval_interval: int | None = 250
    """Steps between validation estimates during training; none: the pipeline's choice
    (twice per epoch, say), and the loop alone validates only at the end."""
    eval_batches: int = sized(20, role="batch")
    """Batches per periodic validation estimate; the final evaluation uses whole splits."""
    eval_limit: int | None = None
    """Score at most this many examples of the validation and test splits (evenly spaced;
    windows of ``block_size`` tokens for language modeling): a smoke run's quick figures. A
    setting like any other, so a sampled run never shares a comparison row with a whole one.
    Unset: every example."""
    keep_best: bool = True
    """Report the validation and test splits with the weights of the best validation score (the
    step is recorded as best_step), not those of the last step."""
    average_best: int = 1
    """With keep_best: report the mean of the weights of this many best validations (1: the best
    one's). Snapshots of one run, so their mean is a model too (as in weight averaging)."""
    patience: int = 0
    """Stop after this many validations without improvement (0: never)."""
    checkpoint_every: int = incidental(500)
    """Steps between checkpoints for ``zoo resume`` (0: not by steps); changes no result."""
    checkpoint_seconds: float = incidental(600.0)
    """Seconds between checkpoints for ``zoo resume`` (0: not by time); changes no result."""
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    """``auto``: bf16 autocast on CUDA (fp16 + gradient scaling without bf16) and on CPUs with
    native bf16 (AVX512-BF16, AMX), fp32 on other CPUs."""
    compile: bool = False
    """``torch.compile`` the training forward (pays back only on long runs)."""
    cuda_graph: bool = False
    """On CUDA, capture the whole step once and replay it (zoo.train.cuda_graph); no effect
    elsewhere."""

    LEGACY: ClassVar[dict] = {"keep_best": False, "patience": 0}
    """What a run recorded before a field existed did, for fields added since (a resumed old run
    continues as it started): no best weights kept, no early stop."""

    def __post_init__(self):
        positive = ("steps", "batch_size", "lr", "eval_interval", "eval_batches", "average_best")
        at_least_zero = (
            "min_lr",
            "warmup_steps",
            "weight_decay",
            "grad_clip",
            "checkpoint_every",
            "checkpoint_seconds",
            "patience",
        )
        for name in positive:
            if name == "eval_interval" and self.eval_interval is None:
                continue  # a pipeline that picks its own interval (per epoch, say)
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in at_least_zero:
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be zero or more, got {getattr(self, name)}")
        if self.warmup_fraction is not None and not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.min_lr > self.lr:
            raise ValueError(
                f"min_lr ({self.min_lr:g}) is above lr ({self.lr:g}): the "
                "schedule decays from lr down to min_lr; set min_lr to lr or less"
            )
        if self.time is not None and not self.time > 0:
            raise ValueError(f"time must be positive, got {self.time}")
        if self.schedule == "time" and self.time is None:
            raise ValueError(
                "schedule=time decays the learning rate over the time budget, and none is "
                "set: set time (seconds of training) or use schedule=steps"
            )
        if self.schedule == "time" and self.warmup_fraction is not None:
            raise ValueError(
                "warmup_fraction is a share of the step budget, which schedule=time only "
                "caps: warm up by warmup_steps instead"
            )
        if self.eval_limit is not None and not self.eval_limit > 0:
            raise ValueError(f"eval_limit must be positive (or unset), got {self.eval_limit}")


PER_EXAMPLE = "per_example.safetensors"  # RunResult.per_example, metric -> scores
SCORED_SPLITS = {"val": "validation", "test": "test"}  # a per-example metric's prefix -> role


class RunFolder:
    """runs/<id>/: config.json, model.safetensors, tokenizer.json, metrics.jsonl, samples.txt."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.id = self.path.name
        self.observer = None  # called with each logged record (zoo.train.tracking)

    def create(self) -> RunFolder:
        """Make the folder (it must not exist yet); returns itself."""
        self.path.mkdir(parents=True, exist_ok=False)
        return self

    def file(self, name: str) -> Path:
        """The path of the run's file ``name`` (``"classes.json"``), to read or write."""
        return self.path / name

    def write_json(self, name: str, data) -> None:
        """``data`` as the JSON file ``name``, written atomically (whole or not at all)."""
        atomic_write_json(self.file(name), data)

    def read_json(self, name: str):
        """The JSON file ``name``, read with checks (a damaged file is a ZooError)."""
        from zoo.io import load_json

        return load_json(self.file(name))

    def write_text(self, name: str, text: str) -> None:
        """``text`` as the file ``name``, written atomically."""
        atomic_write_text(self.file(name), text)

    def log(self, record: dict) -> None:
        """Append one line to the training curve."""
        with open(self.file("metrics.jsonl"), "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        if self.observer is not None:
            self.observer(record)

    def curve(self) -> list[dict]:
        """The training curve so far: the records of metrics.jsonl, oldest first."""
        from zoo.records.folder import read_curve

        return read_curve(self.file("metrics.jsonl"))

    def read_classes(self, name: str) -> list[str]:
        """A list of class names (classes.json), checked: a tampered file is a ZooError."""
        from zoo.records.folder import read_classes

        return read_classes(self.file(name))

    def config(self) -> dict:
        """config.json, checked (zoo.records.folder): a tampered file is a ZooError naming it."""
        from zoo.records.folder import read_config

        return read_config(self.file("config.json"))

    def save_weights(self, state: dict, name: str = "model.safetensors") -> None:
        """``state`` (name -> NumPy array) as a safetensors file, written atomically."""
        from safetensors.numpy import save

        atomic_write_bytes(self.file(name), save(state))

    def save_per_example(self, result: RunResult, dataset=None) -> None:
        """A RunResult's per-example scores (metric -> array) as per_example.safetensors,
        their weights (``weights:test_loss``) where it gives any, and, per split scored, the
        digest of what was scored (``examples:test``: the LoadedDataset's rows_digest, with
        the RunResult's examples_digest of the split mixed in), so only runs that scored
        the same examples pair."""
        import hashlib

        import numpy as np

        def array(values):
            return np.asarray(values, dtype=np.float32).ravel()

        tensors: dict = {name: array(values) for name, values in result.per_example.items()}
        tensors.update(
            {f"weights:{name}": array(w) for name, w in result.per_example_weights.items()}
        )
        tensors.update(
            {
                f"statistics:{name}": np.asarray(table, dtype=np.float64)
                for name, table in result.per_example_statistics.items()
            }
        )
        if dataset is not None:
            names = set(result.per_example) | set(result.per_example_statistics)
            prefixes = {name.partition("_")[0] for name in names}
            for prefix in prefixes & set(SCORED_SPLITS):
                digest = dataset.rows_digest(SCORED_SPLITS[prefix])
                scored = result.examples_digest.get(prefix)
                if scored is not None:
                    digest = hashlib.sha256(digest + scored.encode()).digest()
                tensors[f"examples:{prefix}"] = np.frombuffer(digest, dtype=np.uint8).copy()
        self.save_weights(tensors, PER_EXAMPLE)

    def load_weights(self, name: str = "model.safetensors") -> dict:
        """The safetensors file ``name`` as name -> NumPy array, read with checks."""
        from zoo.io import load_safetensors

        return load_safetensors(self.file(name))


@dataclass
class RunResult:
    """What a pipeline's ``run(job)`` returns; the core records it in the store."""

    params: int
    """Trainable parameters of the model."""
    metrics: dict[str, Any]
    """Every figure, named as the task declares them (val_*, test_*, ...)"""
    spec: Any
    """The zoo.plugin.TaskSpec the model was built with: reloading the run rebuilds it from
    this."""
    samples: list[str] = field(default_factory=list)
    """Example outputs printed after the run."""
    status: str = "finished"
    """``finished``, or the status word that stopped training early (``pruned``)."""
    per_example: dict[str, Any] = field(default_factory=dict)
    """Optional: metric name -> one score per example of its split, in the split's order,
    whose mean is that metric (``{"test_accuracy": correct}`` with 1.0 for a right answer
    and 0.0 for a wrong one; a loss per example for a mean loss). The core keeps them in
    the run folder (``per_example.safetensors``), and comparisons of runs scored on the
    same examples count the evaluation set's sampling noise from them, paired by example."""
    per_example_weights: dict[str, Any] = field(default_factory=dict)
    """Optional, beside ``per_example``: metric name -> the weight of each of its scores,
    where the figure is their weighted mean rather than their mean (a loss per token over
    windows of unequal length: each window's loss per token, weighted by its tokens, so
    the figure is the ratio of the summed nats to the summed tokens)."""
    per_example_statistics: dict[str, Any] = field(default_factory=dict)
    """Optional, for a corpus score that is no mean of per-example scores (BLEU, chrF):
    metric name -> an (examples, k) array of each example's sufficient statistics (n-gram
    matches and totals), whose sums over the split give the figure through the pipeline's
    ``score_statistics``; a comparison's bootstrap sums each draw's and scores them."""
    examples_digest: dict[str, str] = field(default_factory=dict)
    """Optional, beside ``per_example``: split prefix (``val``, ``test``) -> a digest of
    the examples scored, where they are not the split's rows themselves (a language
    model's token windows: a hash of their ids). Runs are paired by example only where
    both the split's rows and this digest agree."""


# The pipeline's TrainConfig subclass: `def run(job: Job[MyConfig])` reads its own fields.
TrainConfigT = TypeVar("TrainConfigT", bound=TrainConfig)


@dataclass(kw_only=True, eq=False)  # a job is itself: the runner's state is keyed by it
class Job(Generic[TrainConfigT]):
    """What a pipeline's ``run(job)`` receives: one run to train, with everything it is
    trained with. ``build_model(spec)`` builds the architecture; ``saved_tokenizer()``
    gives the run's own tokenizer when it is resumed (or the tokenizer of the run it starts
    from); ``context_length`` is the longest input; ``say`` reports progress unless quiet.
    zoo creates it (keyword arguments only); it holds only the fields documented here (the
    runner keeps its own state apart, in ``runner_state(job)``)."""

    model_name: str
    """The model's name, ``ARCHITECTURE-TOKENIZER`` (``decoder-char``)."""
    architecture: ArchitectureEntry
    """The architecture's registration (``.name``, ``.plugin``); ``build_model`` builds it."""
    tokenizer: Entry
    """The tokenizer's registration: ``.name``, and ``.load()`` for its class (a
    ``zoo.plugin.Tokenizer`` subclass, whose ``train(texts, config)`` builds one)."""
    task: str
    """The task's name, as its pipeline registers it."""
    model_config: Any
    """The architecture's config dataclass, as this run sets it."""
    tokenizer_config: Any
    """The tokenizer's config dataclass (None when it registers none)."""
    train_config: TrainConfigT
    """The pipeline's ``TrainConfig`` subclass, as this run sets it."""
    dataset: LoadedDataset
    """The loaded dataset: ``split(role)``, ``roles`` (the splits this run may read),
    ``text_column``, ``label_column``, ``class_names``."""
    seed: int
    """The run's seed (zoo seeds Python, NumPy and torch with it before ``run``)."""
    device: str
    """Where the model trains: ``cpu``, ``cuda`` or ``auto``."""
    run: RunFolder
    """The run's folder: save the tokenizer, weights and any files there."""
    quiet: bool = False
    """No progress output (``say`` and ``progress`` stay silent)."""
    resuming: bool = False
    """``zoo resume``: reuse what the run folder holds (``saved_tokenizer``)."""
    init: Any = None
    """The finished run this one starts from (``--init``), if any."""
    declared_task: Any = None
    """The ``zoo.plugin.Task`` the pipeline registered (looked up by ``task`` if None)."""

    @property
    def context_length(self) -> int:
        """The longest input in tokens: the context length the architecture's config declares
        (``sized(..., role="context")``); pipelines cut inputs to it."""
        from zoo.core.limits import context_length

        length = context_length(self.model_config)
        if length is None:  # the plan refuses such an architecture before a job exists
            raise ZooError(f"architecture {self.architecture.name!r} declares no context length")
        return length

    def build_model(self, spec, *, train_loss=None):
        """The architecture built for ``spec`` (a ``zoo.plugin.TaskSpec``) on the run's device, as a
        ``zoo.plugin.Model`` that trains with the task's declared loss, or with ``train_loss``
        (``loss(outputs, targets, reduction)``) where the pipeline's settings change the
        training objective (label smoothing); evaluation keeps the declared loss."""
        with phase("build"):
            return self._build_model(spec, train_loss)

    def _build_model(self, spec, train_loss=None):
        from zoo.core.containment import call_plugin
        from zoo.core.loading import task_loss
        from zoo.core.names import get_task
        from zoo.train.torch_model import as_model, pick_device

        task = self.declared_task or get_task(self.task)
        if task is None:
            raise ZooError(f"no registered pipeline declares the task {self.task!r}")
        from zoo.train.losses import check_output

        who = f"architecture {self.architecture.name!r} from plugin {self.architecture.plugin!r}"
        built = call_plugin(
            self.architecture.load(),
            self.model_config,
            spec,
            what=f"architecture {self.architecture.name!r}",
            plugin=self.architecture.plugin,
        )
        model = as_model(
            built, pick_device(self.device), loss=task_loss(task), train_loss=train_loss
        )
        if train_loss is not None and model is built:  # not a torch module: its own loss
            raise ZooError(f"{who} computes its own loss; it cannot train with another one")
        state = runner_state(self)
        if state.stack is not None:
            model = state.stack.join(model)
        check_output(model, task, spec, self.context_length, who)
        if self.init is not None and state.resume_from is None:  # a checkpoint has its own
            from zoo.train.transfer import initialize

            state.init_report = initialize(model, self.init, self.say)
        if self.train_config.freeze:
            self._freeze(model, who)
        return model

    def _freeze(self, model, who: str) -> None:
        """Keep the weights ``freeze`` names as they start (after ``init`` put them there)."""
        from zoo.train.model import optional_member

        freeze = optional_member(model, "freeze")
        if freeze is None:
            raise ZooError(f"freeze: {who} cannot keep weights out of training")
        patterns = [p.strip() for p in self.train_config.freeze.split(",") if p.strip()]
        frozen = freeze(patterns)
        self.say(f"freeze: {len(frozen)} weights kept as they start ({', '.join(patterns)})")

    def saved_tokenizer(self):
        """When resuming, the tokenizer the run saved, so it keeps exactly the vocabulary it
        started with (a cache or a retrained one might differ); starting from another run
        (``init``), that run's tokenizer; otherwise None."""
        path = self.run.file("tokenizer.json")
        if not (self.resuming and path.is_file()):
            if self.init is not None:
                tokenizer = self.init.load_tokenizer(self.tokenizer)
                self.say(f"tokenizer: run {self.init.run_id}'s ({tokenizer.vocab_size:,} tokens)")
                return tokenizer
            return None
        from zoo.io import load_tokenizer

        return load_tokenizer(self.tokenizer.load(), path)

    def progress(self, total: int, desc: str = "train"):
        """Training progress (zoo.train.progress): a bar on a terminal, a line every
        ``log_every`` steps or seconds when the output is redirected, nothing with --quiet."""
        from zoo.train.progress import Progress

        state = runner_state(self)
        return Progress(
            total,
            desc=desc,
            quiet=self.quiet,
            label=state.label,
            log_every=state.log_every,
            time_budget=getattr(self.train_config, "time", None),
        )

    def say(self, message: str) -> None:
        """Report a line of progress (``zoo run`` shows it on stderr) unless ``quiet``."""
        if not self.quiet:
            log.info(message)


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out and reported, whichever command starts it (`zoo run`, an
    ensemble's member, a sweep's cell, a search's trial): none of it changes what the run
    learns, so none of it is in its config hash."""

    device: str = "auto"
    """Where it trains: ``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``."""
    quiet: bool = False
    """No progress lines."""
    log_to: str | list[str] | None = None
    """The trackers it reports to (zoo.train.tracking); None: those ZOO_LOG_TO names."""
    log_every: int | float | None = None
    """How often a redirected output gets a progress line: steps (int) or seconds (float)."""
    label: str | None = None
    """Which run this is in a larger whole, in progress lines ("member 2/3 lstm-wordpunct")."""


@dataclass
class RunnerState:
    """What the runner keeps of a job for itself: not the pipeline's business, so not on the
    Job a pipeline receives."""

    resume_from: Any = None
    """The Checkpoint the training loop continues (``zoo resume``), or None."""
    identity: dict = field(default_factory=dict)
    """What a checkpoint records of the run, checked when it resumes."""
    on_validate: Any = None
    """Called by the training loop after each periodic validation with (step, validation
    number, figures); a status word it returns ("pruned") stops training."""
    stopped: tuple | None = None
    """(status, step) where ``on_validate`` stopped training, for the run's record."""
    init_report: dict = field(default_factory=dict)
    """Which tensors came from the ``--init`` run, and which are new."""
    label: str | None = None
    """Which run this is in a larger whole, in progress lines ("member 2/3 lstm-wordpunct")."""
    log_every: int | float | None = None
    """How often a redirected output gets a progress line: steps (int) or seconds (float)."""
    stack: Any = None
    """Seeds trained together (zoo.train.seed_stack): this run's StackSlot, whose model
    trains through the stack's batched step."""


_RUNNER_STATE: weakref.WeakKeyDictionary[Any, RunnerState] = weakref.WeakKeyDictionary()


def keep_runner_state(job, state: RunnerState) -> None:
    """Keep ``state`` as the runner's own state of ``job`` (zoo.train.starting.plan_job)."""
    _RUNNER_STATE[job] = state


def runner_state(job) -> RunnerState:
    """The runner's own state of ``job`` (a fresh one for a job it did not start: a test's,
    the conformance kit's)."""
    state = _RUNNER_STATE.get(job)
    if state is None:
        state = _RUNNER_STATE[job] = RunnerState()
    return state
