"""zoo: a plugin-based model zoo for small transformer models.

The public API. For plugin authors (``import zoo``; ``@zoo.hookimpl``): everything a plugin
needs is exported here, and the built-in plugins and pipelines import only these names. For
users, the Python API beside the command line (zoo.api): ``zoo.run``, ``zoo.load``,
``zoo.sweep``, ``zoo.runs``, ``zoo.compare``, ``zoo.ensemble``. Names backed by heavier
modules are imported on first use, so ``import zoo`` (and ``zoo list``) stays light and never imports torch.
"""
from __future__ import annotations

import importlib

from zoo.errors import UnknownNameError, ZooError
from zoo.hookspecs import hookimpl
from zoo.tasks import Metric, Prediction, Task

__version__ = "0.1.0"

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    # the user's Python API
    "run": "zoo.api",
    "load": "zoo.api",
    "sweep": "zoo.api",
    "runs": "zoo.api",
    "compare": "zoo.api",
    "ensemble": "zoo.api",
    # the plugin API
    "TaskSpec": "zoo.model",
    "Model": "zoo.model",
    "IGNORE_INDEX": "zoo.model",
    "NonFiniteError": "zoo.model",
    "Tokenizer": "zoo.tokenizer",
    "TokenizersTokenizer": "zoo.tokenizer",
    "SPECIAL_TOKENS": "zoo.tokenizer",
    "PAD": "zoo.tokenizer",
    "UNK": "zoo.tokenizer",
    "CLS": "zoo.tokenizer",
    "train_cached": "zoo.tokenizer",
    "dataset_key": "zoo.tokenizer",
    "compression": "zoo.tokenizer",
    "unragged": "zoo.tokenizer",
    "split_ids": "zoo.tokenized",
    "row_ids": "zoo.tokenized",
    "row_texts": "zoo.tokenized",
    "split_size": "zoo.tokenized",
    "text_batches": "zoo.tokenized",
    "column_of": "zoo.tokenized",
    "join_rows": "zoo.tokenized",
    "natural_key": "zoo.registry",
    "check_positive": "zoo.config",
    "check_divisible": "zoo.config",
    "check_probability": "zoo.config",
    "attention": "zoo.layers",
    "TrainConfig": "zoo.job",
    "Job": "zoo.job",
    "RunFolder": "zoo.job",
    "RunResult": "zoo.job",
    "Batch": "zoo.trainer",
    "train": "zoo.trainer",
    "Trained": "zoo.trained",
    "load_trained": "zoo.trained",
    "load_dataset": "zoo.data",
    "load_json": "zoo.safeload",
    "load_safetensors": "zoo.safeload",
    "atomic_write_text": "zoo.files",
}

__all__ = ["hookimpl", "ZooError", "UnknownNameError", "Task", "Metric", "Prediction", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
