"""The plugin contract: pluggy hook specifications for the project name ``zoo``.

A plugin is any module or object with ``@zoo.plugin.hookimpl`` functions named like the specs
below. Each hook is called once, when the registry loads, with a ``register`` of its own
kind, typed below (``RegisterArchitecture``, ``RegisterTokenizer``, ...): it takes a name
(a pipeline: its ``Task``), what is registered, and that kind's keywords only.

What is registered is a ``"module:attr"`` string (imported on first use, so listing the
zoo stays fast) or the object itself; ``config`` names the plugin's config dataclass the
same way. The core checks every registration (names, clashes, targets) and sets a broken
plugin aside with a warning naming it. The form of API 1.1, one ``register`` taking every
kind's keywords (``target=``, ``task=``, another kind's ``tasks=``...), still works until
API 2.0, with a ``ZooDeprecationWarning`` naming the replacement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:  # annotations only: the contracts beside this one import nothing of it
    from zoo.tasks import Task

API_VERSION = "1.3.0"
"""The plugin API's version (semantic versioning), ``zoo.plugin.API_VERSION``: a minor
release adds names and may deprecate some (they keep working, with a
``ZooDeprecationWarning`` naming the replacement); only a major release removes them. A
plugin declares what it supports with a module attribute ``ZOO_PLUGIN_API``, a version
specifier such as ``">=1.2,<2"``."""

hookspec = pluggy.HookspecMarker("zoo")
hookimpl = pluggy.HookimplMarker("zoo")
"""Marks a plugin's hook implementations: ``@hookimpl def register_architectures(register)``."""

Target = Any
"""What a registration points at: a ``"module:attr"`` string (imported on first use) or the
object itself."""


# -- what each hook's `register` takes (for a plugin's own annotations and type checks) -----
class RegisterArchitecture(Protocol):
    """The ``register`` of ``register_architectures``."""

    def __call__(
        self,
        name: str,
        build: Target,
        *,
        config: Target | None = None,
        tasks: Sequence[str] = (),
        memory: Target | None = None,
        description: str = "",
    ) -> None: ...


class RegisterTokenizer(Protocol):
    """The ``register`` of ``register_tokenizers``."""

    def __call__(
        self, name: str, tokenizer: Target, *, config: Target | None = None, description: str = ""
    ) -> None: ...


class RegisterDataset(Protocol):
    """The ``register`` of ``register_datasets``."""

    def __call__(
        self,
        name: str,
        load: Target,
        *,
        config: Target | None = None,
        tasks: Sequence[str] = (),
        columns: Mapping[str, str] | None = None,
        description: str = "",
    ) -> None: ...


class RegisterPipeline(Protocol):
    """The ``register`` of ``register_pipelines``."""

    def __call__(
        self, task: Task, pipeline: Target, *, config: Target | None = None, description: str = ""
    ) -> None: ...


class RegisterPreset(Protocol):
    """The ``register`` of ``register_presets``."""

    def __call__(self, name: str, **table: Any) -> None: ...


class RegisterCommand(Protocol):
    """The ``register`` of ``register_commands``."""

    def __call__(
        self,
        name: str,
        handler: Target,
        *,
        help: str = "",
        description: str = "",
        arguments: Target | None = None,
    ) -> None: ...


class RegisterLogger(Protocol):
    """The ``register`` of ``register_loggers``."""

    def __call__(self, name: str, tracker: Target, *, description: str = "") -> None: ...


class RegisterExporter(Protocol):
    """The ``register`` of ``register_exporters``."""

    def __call__(
        self, name: str, exporter: Target, *, architectures: Sequence[str], description: str = ""
    ) -> None: ...


@hookspec
def register_architectures(register: RegisterArchitecture) -> None:
    """Add model architectures.

    :param register: ``register(name, build, *, config=None, tasks=(), memory=None,
        description="")``.

        - ``name``: letters, digits, ``_``, ``.`` or ``-`` (model names are
          ``ARCHITECTURE-TOKENIZER``, split at the last ``-``: ``hf-gpt_neox-char``).
        - ``build``: ``build(config, spec) -> model``, where ``config`` is an instance of
          ``config`` and ``spec`` a ``zoo.plugin.TaskSpec``. It returns a ``torch.nn.Module`` whose
          ``forward(input_ids, attention_mask)`` gives the output the task declares
          (``zoo.Task.output``; the engine trains it with the task's loss), or any object
          with the methods of ``zoo.plugin.Model``.
        - ``config``: the architecture's config dataclass (``--set`` keys are its fields).
          It declares its context length, the longest input in tokens that pipelines cut
          to, with ``zoo.plugin.config.sized(..., role="context")``, and its other sizes
          with their limits (``sized``).
        - ``tasks``: names of the registered tasks it has a head for.
        - ``memory``: optional ``memory(config, vocab_size) -> int``, the bytes a model of
          that config needs to train (weights, gradients, optimizer state), before anything
          is built; ``vocab_size`` is the vocabulary's size when known (a reloaded run's),
          the most the tokenizer's config allows before training, or None. zoo refuses a
          config this machine cannot hold. Without it, zoo estimates a transformer from the
          fields the config declares with the roles ``width``, ``depth``, ``mlp_width`` or
          ``mlp_ratio`` and ``context``.
    """


@hookspec
def register_tokenizers(register: RegisterTokenizer) -> None:
    """Add tokenizers.

    :param register: ``register(name, tokenizer, *, config=None, description="")``.

        - ``tokenizer``: a subclass of ``zoo.plugin.Tokenizer`` (or ``zoo.plugin.TokenizersTokenizer``).
        - ``config``: its config dataclass, passed to ``train(texts, config)``.
    """


@hookspec
def register_datasets(register: RegisterDataset) -> None:
    """Add datasets that a plugin generates or loads.

    :param register: ``register(name, load, *, config=None, tasks=(), columns=None,
        description="")``.

        - ``load``: ``load(config) -> datasets.DatasetDict`` with ``train``,
          ``validation`` and ``test`` splits, where ``config`` is an instance of ``config``
          (a dataset registered without a config dataclass gets ``load(**options)``, the
          options of its catalogue entry's ``config`` table).
        - ``config``: the dataset's config dataclass. Its fields are set by a catalogue
          entry's ``config`` table and by ``--set KEY=VALUE`` (or ``dataset.KEY=VALUE``),
          checked against the fields like any other key; ``zoo show NAME`` lists them.
        - ``tasks``: the registered tasks it serves, best first.
        - ``columns``: its columns by role, ``{"text": ..., "label": ...}`` (a catalogue
          entry or ``--text-column``/``--label-column`` may still override them).
    """


@hookspec
def register_pipelines(register: RegisterPipeline) -> None:
    """Add task pipelines, one per task.

    :param register: ``register(task, pipeline, *, config=None, description="")``.

        - ``task``: a ``zoo.plugin.Task``, registered under its name (``task.name``): the loss, the module output, every metric with its
          direction and unit, the primary metric, the datasets it can use, the prediction
          type and the validation metric of the training curve. The core knows the task
          only through this declaration.
        - ``pipeline``: a class or object implementing ``zoo.plugin.Pipeline``: ``run(job)``
          and any of its optional methods (``check_dataset``, ``predict``, ``evaluate``,
          ``generate``, ``split_probabilities`` with ``score_probabilities``,
          ``score_statistics``), each of which enables what needs it.
        - ``config``: its training config dataclass, a subclass of ``zoo.plugin.TrainConfig``.
    """


@hookspec
def register_presets(register: RegisterPreset) -> None:
    """Add model presets: what a ``[models.NAME]`` table of a registry.toml says, shipped
    with the plugin.

    :param register: ``register(name, **table)``, the keys of a ``[models.NAME]`` table as
        keyword arguments: ``architecture``, ``tokenizer``, ``set`` (a dict, the meaning of
        ``--set``), ``base`` (presets it builds on: built-in ones or this plugin's own),
        ``template``, ``description``; or ``members`` and ``weights`` for a preset of
        presets. ``register("bow-small", architecture="bow", tokenizer="words",
        set={"n_embd": 32})``.

    The presets show in ``zoo list`` beside the built-in ones, naming the plugin's
    distribution, and run like them (``zoo run bow-small DATASET``). A name that a built-in
    preset or another plugin's preset has is a clash (the plugin is set aside); a preset of
    the same name in the user's own registry.toml wins over the plugin's.
    """


@hookspec
def register_commands(register: RegisterCommand) -> None:
    """Add `zoo` subcommands.

    :param register: ``register(name, handler, *, help="", description="", arguments=None)``.

    - ``name``: the command, as typed after ``zoo`` (lower-case letters, digits, ``-``); it
      may not be a command zoo already has.
    - ``handler``: ``"module:function"`` (imported only when the command runs) or the
      function, called with the parsed ``argparse.Namespace``; it returns the exit code
      (``None`` means 0). A ``ZooError`` it raises prints one line and exits 2.
    - ``help``: one line for ``zoo --help``; ``description``: the text of ``zoo NAME --help``.
    - ``arguments``: a function (or ``"module:function"``) ``arguments(parser)`` that adds the
      command's options to its ``argparse.ArgumentParser``. It runs every time ``zoo``
      starts, so it and its module must import nothing heavy (no torch).
    """


@hookspec
def register_loggers(register: RegisterLogger) -> None:
    """Add experiment trackers: where a run's figures go besides its folder and the store.

    :param register: ``register(name, tracker, *, description="")``.

    - ``name``: what ``--log-to NAME`` (or ``log_to`` in a config file, or ``ZOO_LOG_TO``)
      chooses.
    - ``tracker``: ``"module:Class"`` (imported only when chosen) or the class; called with no
      arguments when a run starts, it returns an object with three methods:
      ``start(run)`` (``run``: a dict with ``id``, ``folder``, ``model``, ``dataset``,
      ``task``, ``seed``, ``settings``, the resolved config as ``"section.key"`` ->
      value, and ``group``, the sweep, study or ensemble preset the run belongs to, or
      None; it may return a dict of strings saying where it writes, such as
      ``{"log_dir": ...}``, which zoo prints and keeps in the run's record),
      ``log(record)`` (each record of metrics.jsonl: ``step``, ``train_loss``,
      ``lr``, validation figures...) and ``finish(metrics, folder, status)`` (the final
      metrics, the run folder with every artifact, the run's status).

    Each tracker's calls run in order on a thread of its own: a slow tracker never slows
    training. A call that takes more than ZOO_TRACKER_TIMEOUT seconds (default 10), or
    raises, is that plugin's failure: one warning, and it gets no more calls; the run goes
    on and its row says "finished" as soon as its own work is done. An ImportError when it is created (a missing extra) stops the run
    before it trains.
    """


@hookspec
def register_exporters(register: RegisterExporter) -> None:
    """Add formats that ``zoo export RUN DIR --format NAME`` writes a trained run in.

    :param register: ``register(name, exporter, *, architectures, description="")``.

    - ``name``: the format, as ``--format`` names it (``onnx``, ``transformers``, ...).
    - ``architectures``: the architecture names it exports, or ``("*",)`` for any whose
      network it can convert. Without ``--format``, a run is exported by the first format
      that names its architecture and accepts the run, else by a ``"*"`` format (the
      built-in ``onnx``, for any network that traces).
    - ``exporter``: an object (a class, module or instance; ``"module:attr"`` imports it on
      first use) with three functions:

      - ``unsupported(trained) -> str | None``: why this run cannot be written in the
        format (``trained``: a ``zoo.plugin.LoadedRun`` on the CPU in fp32), or None.
        ``trained.network`` is the torch module the architecture built, with the run's
        weights (None for a model that is not torch); ``trained.tokenizer`` the
        ``zoo.plugin.Tokenizer`` (``trained.tokenizer.backend``: the ``tokenizers``
        tokenizer of a ``TokenizersTokenizer``); ``trained.context_length`` the longest
        input.
      - ``write(trained, folder) -> dict``: write the model and everything needed to use it
        without zoo (its tokenizer included) into ``folder``, a new empty folder. Returns
        what the model card says about it: ``library_name`` (the Hub's library tag),
        ``summary`` (one sentence: what the folder holds) and ``usage`` (a Python snippet
        that loads the folder, named by the string ``"FOLDER"``, without zoo and predicts).
      - ``check(trained, folder, texts) -> dict``: load the written folder as a user without
        zoo would, predict on ``texts`` (validation texts of the run's dataset) and compare
        with zoo's own predictions; returns ``max_difference`` (the largest difference of a
        predicted probability, or of an output where the task has none), ``agree``
        (whether every predicted label is the same) and ``compared`` (the texts compared).

    The answers are checked as user input is: ``write`` returns a dict (``summary`` a
    string; ``library_name``, ``pipeline_tag`` and ``usage`` strings or None; ``base`` a dict
    or None), ``check`` a dict whose ``compared`` is 1 to ``len(texts)``, whose
    ``max_difference`` is a number, 0 or more (not NaN), and whose ``agree`` is a bool;
    anything else is one line naming the plugin, exit 2, nothing written.
    zoo calls ``check`` on a text alone, on a text of a few characters alone, on three
    texts together and on all of them (long ones cut to the context), so an export that
    fixed a length or a batch size differs on one of them. zoo writes everything into a
    staging folder, refuses (exit 2, nothing written) an export whose check differs by
    more than 1e-4 or disagrees on a label, adds the model
    card (``README.md``) and only then moves the folder into place.
    """
