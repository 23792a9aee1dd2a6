"""Reloading a finished run: its model and tokenizer from the run folder, without pickle."""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zoo.core.config import build_config
from zoo.core.containment import call_plugin
from zoo.core.culprits import naming_plugins
from zoo.core.limits import MAX_GENERATE_TOKENS, check_memory, context_length, positive_argument
from zoo.core.loading import get_zoo, task_loss
from zoo.core.names import get_task
from zoo.errors import ZooDeprecationWarning, ZooError
from zoo.io import load_tokenizer
from zoo.pipeline import optional_method
from zoo.records.paths import run_folder
from zoo.records.store import Store
from zoo.train.job import RunFolder

if TYPE_CHECKING:
    from zoo.operations.evaluate import Evaluation


@dataclass
class LoadedRun:
    """A finished run reloaded from its folder (weights from safetensors, no pickle): what
    ``zoo.load`` returns, to predict, generate and evaluate with (as `zoo predict`, `zoo
    generate` and `zoo eval` do), and what a pipeline's ``predict``, ``evaluate`` and
    ``generate`` receive."""

    run_id: str
    """The run's id."""
    task: str
    """The run's task."""
    row: dict
    """The run's store row (metrics included)."""
    config: dict
    """``config.json``: provenance and the resolved configs as recorded."""
    tokenizer: Any
    """The ``zoo.plugin.Tokenizer``, loaded from the run's tokenizer.json."""
    model: Any
    """The ``zoo.plugin.Model`` with the run's weights."""
    context_length: int | None
    """The longest input in tokens, as the architecture declares it."""
    folder: RunFolder
    """The run folder (files a pipeline saved there, e.g. classes.json)."""
    model_config: Any = None
    """The architecture's config dataclass, as the run used it."""
    tokenizer_config: Any = None
    """The tokenizer's config dataclass (None when it has none)."""
    train_config: Any = None
    """The pipeline's TrainConfig subclass, as the run used it."""
    declared_task: Any = None
    """The zoo.plugin.Task the run's pipeline registers."""
    device: str = "auto"
    """The device it was loaded for (auto: CUDA when present); `evaluate` scores there."""
    _pipeline: Any = field(default=None, repr=False)  # the task's pipeline entry (the zoo's)

    @property
    def id(self) -> str:
        """The run's id, as ``zoo.Run.id`` names it."""
        return self.run_id

    def __repr__(self) -> str:
        return f"<zoo run {self.run_id}: {self.config.get('model')} ({self.task})>"

    def _pipeline_method(self, name: str):
        """The task pipeline's optional method ``name`` (None when it offers none)."""
        if self._pipeline is None:
            self._pipeline = get_zoo().pipelines.get(self.task)
        return optional_method(self._pipeline.load(), name)

    @property
    def network(self) -> Any:
        """The ``torch.nn.Module`` the architecture's ``build`` returned, with the run's
        weights (None for a model that is not torch): what an exporter converts. Its
        ``forward(input_ids, attention_mask)`` gives the output the task declares; the
        tokenizer that makes its inputs is ``tokenizer`` (for a ``TokenizersTokenizer``,
        ``tokenizer.backend`` is the ``tokenizers.Tokenizer`` to save beside it)."""
        from zoo.train.torch_model import TorchModel

        return self.model.module if isinstance(self.model, TorchModel) else None

    def __getattr__(self, name: str):
        if name == "block_size":  # API 1.0's name of context_length, until API 2.0
            warnings.warn(
                "Trained.block_size is deprecated: use LoadedRun.context_length (plugin API "
                "2.0 removes block_size)",
                ZooDeprecationWarning,
                stacklevel=2,
            )
            return self.context_length
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def predict(self, texts: str | Iterable[str], *, beam: int | None = None) -> list:
        """One prediction per text (a single string counts as one text), each of the type the
        task declares (``zoo.plugin.Task.prediction``, a ``zoo.plugin.Prediction`` dataclass); its
        ``record()`` is what `zoo predict --json` prints, without the text. ``beam``: the
        beam size, for a task that writes text (translation); else the run's own setting."""
        predict = self._pipeline_method("predict")
        if predict is None:
            raise ZooError(
                f"run {self.id} is a {self.task} run, and the {self.task} "
                "pipeline offers no prediction"
            )
        options = {} if beam is None else {"beam": beam}
        if options and "beam" not in inspect.signature(predict).parameters:
            raise ZooError(f"run {self.id} is a {self.task} run: its predictions take no beam")
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
        with naming_plugins("prediction"):
            return list(predict(self, texts, **options))

    def generate(
        self,
        prompt: str | list[str] = "",
        tokens: int = 300,
        *,
        temperature: float = 0.8,
        top_k: int | None = None,
        seed: int = 0,
        cache: bool = True,
        stream: bool = False,
    ):
        """The prompt and its continuation: what `zoo generate` prints (without the final
        newline). Several prompts (a list) are sampled side by side and give a list of texts;
        ``stream=True`` yields the continuation of one prompt piece by piece instead.
        ``cache=False`` recomputes the whole context for every token."""
        generate = self._pipeline_method("generate")
        if generate is None:
            raise ZooError(
                f"run {self.id} is a {self.task} run, and the {self.task} "
                "pipeline offers no generation"
            )
        positive_argument("tokens", tokens, int)
        if tokens > MAX_GENERATE_TOKENS:
            raise ZooError(f"tokens must be at most {MAX_GENERATE_TOKENS:,}, got {tokens:,}")
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not (math.isfinite(temperature) and temperature >= 0)
        ):
            raise ZooError(
                f"temperature must be 0 (greedy) or a positive number, got {temperature!r}"
            )
        if top_k is not None:
            positive_argument("top_k", top_k, int)
        options = dict(temperature=temperature, top_k=top_k, seed=seed)
        if not cache:  # only then: a pipeline's generate need not know the option
            options["cache"] = False
        if isinstance(prompt, list):
            if stream:
                raise ZooError("stream=True takes one prompt, not a list")
            texts = list(prompt)
            with naming_plugins("generation"):
                for row, piece in generate(self, texts, tokens, **options):
                    texts[row] += piece
            return texts
        pieces = generate(self, prompt, tokens, **options)
        if stream:
            return _named_stream(pieces)
        with naming_plugins("generation"):
            return prompt + "".join(pieces)

    def evaluate(
        self,
        dataset: str,
        split: str = "test",
        *,
        text_column: str | None = None,
        label_column: str | None = None,
    ) -> Evaluation:
        """Score the run on a split of any dataset and record it, as `zoo eval` does."""
        from zoo.operations.evaluate import Evaluation

        return Evaluation.record(
            self,
            dataset,
            split,
            text_column=text_column,
            label_column=label_column,
        )


def load_trained(
    run_id: str, zoo=None, device: str = "auto", precision: str | None = None
) -> LoadedRun:
    """A finished run's model and tokenizer, on `device` (auto: CUDA when present, as `zoo run`
    picks, so a run and its reloads compute alike). It evaluates at the precision the run
    trained with (its `precision` setting) unless `precision` says otherwise."""
    from zoo.train.model import TaskSpec, optional_member
    from zoo.train.torch_model import as_model, pick_device

    zoo = zoo or get_zoo()
    with Store() as store:
        row = store.get(run_id)
    if row.get("kind") in ("eval", "ensemble"):
        what = (
            f"an evaluation of run {row.get('parent_id')}; use that run"
            if row["kind"] == "eval"
            else "an ensemble (its members' predictions combined) with no model of its own; "
            "use one of its members (zoo show lists them)"
        )
        raise ZooError(f"run {row['id']} is {what}")
    folder = RunFolder(run_folder(row["id"]))
    if not folder.file("config.json").is_file():
        raise ZooError(f"run {row['id']} has no config.json in {folder.path}")
    provenance = folder.config()
    if "spec" not in provenance or not folder.file("model.safetensors").is_file():
        raise ZooError(f"run {row['id']} has no saved model (status: {row['status']})")
    architecture = zoo.architectures.get(provenance["architecture"])
    tokenizer_entry = zoo.tokenizers.get(provenance["tokenizer"])
    try:
        model_config = build_config(
            architecture.config_class(), provenance["configs"].get("model") or {}
        )
    except ZooError as exc:  # a tampered or outdated config.json
        raise ZooError(f"{folder.file('config.json')}: {exc}") from None
    tokenizer = load_tokenizer(tokenizer_entry.load(), folder.file("tokenizer.json"))
    try:
        check_memory(architecture, model_config, vocab_size=tokenizer.vocab_size)
    except ZooError as exc:
        raise ZooError(f"{folder.file('config.json')}: {exc}") from None
    task = get_task(provenance["task"], zoo)
    if task is None:
        raise ZooError(
            f"run {row['id']} is a {provenance['task']} run, and no installed plugin "
            f"registers that task (zoo list pipelines shows the tasks)"
        )
    built = call_plugin(
        architecture.load(),
        model_config,
        TaskSpec(**provenance["spec"]),
        what=f"architecture {architecture.name!r}",
        plugin=architecture.plugin,
    )
    model = as_model(built, pick_device(device), loss=task_loss(task))
    model.load_state_dict(finite_weights(folder.load_weights(), row["id"], folder))
    configure = optional_member(model, "configure_engine")
    if configure is not None:
        trained_with = (provenance["configs"].get("train") or {}).get("precision", "auto")
        configure(precision=precision or trained_with)
    configs = provenance.get("configs") or {}
    pipeline = zoo.pipelines.get(provenance["task"])
    return LoadedRun(
        row["id"],
        provenance["task"],
        row,
        provenance,
        tokenizer,
        model,
        context_length(model_config),
        folder,
        model_config,
        _recorded(tokenizer_entry.config_class(), configs.get("tokenizer")),
        _recorded(pipeline.config_class(), configs.get("train")),
        task,
        device,
        pipeline,
    )


def _recorded(cls, values: dict | None):
    """A config dataclass from what a run recorded; fields this version no longer has are
    left out (they cannot matter to a reloaded model), and None when it cannot be built."""
    if cls is None:
        return None
    known = {f.name for f in dataclasses.fields(cls)}
    try:
        return build_config(cls, {k: v for k, v in (values or {}).items() if k in known})
    except ZooError:
        return None


def finite_weights(weights: dict, run_id: str, folder) -> dict:
    """The run's weights, refused (one line) when any holds NaN or an infinity: a folder
    edited by hand or a damaged file, which would otherwise fail deep inside sampling."""
    import numpy as np

    bad = [
        name
        for name, array in weights.items()
        if np.issubdtype(np.asarray(array).dtype, np.floating) and not np.isfinite(array).all()
    ]
    if bad:
        more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
        raise ZooError(
            f"run {run_id}: {folder.file('model.safetensors')} holds NaN or infinite "
            f"values ({bad[0]}{more}); the file was changed or damaged: train the "
            "run again"
        )
    return weights


def _named_stream(pieces):
    """A generation's pieces as they come; a failure of the pipeline's code names it."""
    with naming_plugins("generation"):
        yield from pieces
