"""The plugin author's API: the contract an architecture, tokenizer, dataset, task or command
plugin implements, and what a pipeline receives, trains with and returns.

    from dataclasses import dataclass

    from zoo.plugin import hookimpl
    from zoo.plugin.config import sized

    @dataclass
    class TinyConfig:
        n_embd: int = sized(64, role="width")
        block_size: int = sized(128, role="context")

    @hookimpl
    def register_architectures(register):
        register("tiny", "my_package.model:build", config=TinyConfig, tasks=TASKS)

The hooks are documented in ``zoo.hookspecs``. Helpers live in four sub-namespaces:
``zoo.plugin.config`` (declaring and checking a config dataclass), ``zoo.plugin.layers``
(torch building blocks of the built-in architectures), ``zoo.plugin.data`` (datasets and
their splits as token ids and texts) and ``zoo.plugin.io`` (files written atomically, read
safely). Names backed by torch are imported on first use, so a plugin's registration module
(and ``zoo list``) stays light.

The API is versioned (``API_VERSION``, semantic versioning); a plugin may declare the range
it supports with a module attribute, ``ZOO_PLUGIN_API = ">=1.1,<2"``. A name that moved
still imports from here with a ``ZooDeprecationWarning`` naming its new home, until the next
major version.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

from zoo.errors import ZooDeprecationWarning, ZooError
from zoo.hookspecs import API_VERSION, hookimpl
from zoo.lazy import lazy_names as _lazy_names
from zoo.pipeline import Pipeline
from zoo.tasks import Metric, Prediction, SplitProbabilities, Task

# Names that lived flat in zoo.plugin in API 1.0 -> where they live now. They still import
# from here, with a warning naming the new home, until API 2.0 (docs/plugins/migration.md).
MOVED = {
    **dict.fromkeys(
        (
            "incidental",
            "check_positive",
            "check_divisible",
            "check_probability",
            "check_budget",
            "within_budget",
            "MAX_VOCAB",
        ),
        "zoo.plugin.config",
    ),
    **dict.fromkeys(
        (
            "attention",
            "SelfAttention",
            "MLP",
            "PreLNBlock",
            "ThreadInvariantLayerNorm",
            "check_length",
            "key_mask",
            "last_real",
            "init_gpt2",
            "token_bigram_ids",
        ),
        "zoo.plugin.layers",
    ),
    **dict.fromkeys(
        (
            "load_dataset",
            "LoadedDataset",
            "split_ids",
            "row_ids",
            "row_texts",
            "split_size",
            "text_batches",
            "column_of",
            "join_rows",
            "train_cached",
            "dataset_key",
            "compression",
            "unragged",
        ),
        "zoo.plugin.data",
    ),
    **dict.fromkeys(
        (
            "natural_key",
            "load_json",
            "load_safetensors",
            "atomic_write_text",
            "atomic_folder",
            "check_new_folder",
        ),
        "zoo.plugin.io",
    ),
    "UnknownNameError": "zoo.errors",
}

# API 1.1 deprecations are shown by default: a plugin's author sees them at `zoo run`
warnings.filterwarnings("default", category=ZooDeprecationWarning)

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    # what a model is and what it is built for
    "TaskSpec": "zoo.train.model",
    "Model": "zoo.train.model",
    "IGNORE_INDEX": "zoo.train.model",
    "NonFiniteError": "zoo.train.model",
    # tokenizers
    "Tokenizer": "zoo.tokenizer",
    "TokenizersTokenizer": "zoo.tokenizer",
    "SPECIAL_TOKENS": "zoo.tokenizer",
    "PAD": "zoo.tokenizer",
    "UNK": "zoo.tokenizer",
    "CLS": "zoo.tokenizer",
    # what a pipeline receives, trains with and returns
    "TrainConfig": "zoo.train.job",
    "Job": "zoo.train.job",
    "RunFolder": "zoo.train.job",
    "RunResult": "zoo.train.job",
    "Batch": "zoo.train.loop",
    "TrainingOutcome": "zoo.train.loop",
    "train": "zoo.train.loop",
    "LoadedRun": "zoo.operations.reload",
    "load_trained": "zoo.operations.reload",
}

# Names API 1.1 gave to what is now under another name -> that name. They still import,
# with a warning, until API 2.0 (docs/plugins/migration.md).
RENAMED = {"Trained": "LoadedRun", "TrainResult": "TrainingOutcome"}

if TYPE_CHECKING:  # what _LAZY imports on first use, spelled out for readers and type checkers
    from zoo.operations.reload import LoadedRun, load_trained
    from zoo.tokenizer import CLS, PAD, SPECIAL_TOKENS, UNK, Tokenizer, TokenizersTokenizer
    from zoo.train.job import Job, RunFolder, RunResult, TrainConfig
    from zoo.train.loop import Batch, TrainingOutcome, train
    from zoo.train.model import IGNORE_INDEX, Model, NonFiniteError, TaskSpec

__all__ = [
    "API_VERSION",
    "ZooDeprecationWarning",
    # hooks and declarations
    "hookimpl",
    "ZooError",
    "Task",
    "Metric",
    "Prediction",
    "SplitProbabilities",
    # what a model is and what it is built for
    "TaskSpec",
    "Model",
    "IGNORE_INDEX",
    "NonFiniteError",
    # tokenizers
    "Tokenizer",
    "TokenizersTokenizer",
    "SPECIAL_TOKENS",
    "PAD",
    "UNK",
    "CLS",
    # what a pipeline implements, receives, trains with and returns
    "Pipeline",
    "TrainConfig",
    "Job",
    "RunFolder",
    "RunResult",
    "Batch",
    "TrainingOutcome",
    "train",
    "LoadedRun",
    "load_trained",
]

_SUBMODULES = ("config", "layers", "data", "io", "losses")

_lazy_getattr, __dir__ = _lazy_names(globals(), _LAZY)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        return _lazy_getattr(name)
    if name in RENAMED:  # an API 1.1 name: it works, and says what it is called now
        warnings.warn(
            f"zoo.plugin.{name} is deprecated: it is zoo.plugin.{RENAMED[name]} now; the "
            "old name goes in plugin API 2.0",
            ZooDeprecationWarning,
            stacklevel=2,
        )
        return _lazy_getattr(RENAMED[name])
    if name in MOVED:  # an API 1.0 name: it works, and says where it lives now
        home = MOVED[name]
        warnings.warn(
            f"zoo.plugin.{name} is deprecated: import it from {home} "
            f"(from {home} import {name}); the flat name goes in plugin API 2.0",
            ZooDeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)
    # a helper lives in one sub-namespace only; the error says which
    homes = [s for s in _SUBMODULES if name in importlib.import_module(f"{__name__}.{s}").__all__]
    hint = f"; it is zoo.plugin.{homes[0]}.{name}" if homes else ""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}{hint}")
