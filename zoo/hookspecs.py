"""The plugin contract: pluggy hook specifications for the project name ``zoo``.

A plugin is any module or object with ``@hookimpl`` functions named like the specs below.
Each hook receives a ``register`` callback:

    register(name, target, *, description="", config=None, tasks=())

``target`` is a ``"module:attr"`` string (imported on first use, so listing the zoo stays
fast) or the object itself. ``config`` names the plugin's config dataclass the same way.
"""
import pluggy

hookspec = pluggy.HookspecMarker("zoo")
hookimpl = pluggy.HookimplMarker("zoo")


@hookspec
def register_architectures(register):
    """Called once when the registry loads, to add model architectures.

    The target is ``build(config, spec) -> model`` (see ``zoo.model``); ``tasks`` lists the
    tasks it can serve, e.g. ``("language-modeling", "next-item")``.
    """


@hookspec
def register_tokenizers(register):
    """Called once when the registry loads, to add tokenizers (``zoo.tokenizer.Tokenizer`` classes)."""


@hookspec
def register_datasets(register):
    """Called once when the registry loads, to add datasets that a plugin generates or loads.

    The target is ``load(config) -> datasets.DatasetDict``; ``tasks`` lists what it serves.
    """


@hookspec
def register_pipelines(register):
    """Called once when the registry loads, to add task pipelines, one per task name.

    The target is a class (or object) with ``run(job) -> dict`` (see ``zoo.job``) and,
    optionally, ``predict(trained, texts) -> list[dict]``, ``evaluate(trained, dataset,
    split) -> dict`` and ``check_dataset(dataset)`` (called on the loaded dataset before a run
    is recorded; raises ``ZooError`` when the pipeline cannot use it); ``config`` is its
    training config dataclass, a subclass of ``zoo.job.TrainConfig``.
    """


@hookspec
def register_commands(register):
    """Called once when the registry loads, to add `zoo` subcommands.

    ``register(name, handler, *, help="", description="", arguments=None)``:

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
