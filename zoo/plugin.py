"""The plugin author's API: everything an architecture, tokenizer, dataset, task or command
plugin needs, and all the built-in plugins and pipelines use.

    from zoo.plugin import hookimpl, TaskSpec

    @hookimpl
    def register_architectures(register):
        register("tiny", "my_package.model:build", config=TinyConfig, tasks=("classification",))

Names backed by torch are imported on first use, so a plugin's registration module (and
``zoo list``) stays light. The hooks themselves are documented in ``zoo.hookspecs``.
"""
from __future__ import annotations

import importlib

from zoo.errors import UnknownNameError, ZooError
from zoo.hookspecs import hookimpl
from zoo.tasks import Metric, Prediction, SplitProbabilities, Task

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    # what a model is and what it is built for
    "TaskSpec": "zoo.model",
    "Model": "zoo.model",
    "IGNORE_INDEX": "zoo.model",
    "NonFiniteError": "zoo.model",
    # config checks for a plugin's dataclass
    "check_positive": "zoo.config",
    "check_divisible": "zoo.config",
    "check_probability": "zoo.config",
    # tokenizers
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
    # dataset splits as token ids and texts
    "split_ids": "zoo.tokenized",
    "row_ids": "zoo.tokenized",
    "row_texts": "zoo.tokenized",
    "split_size": "zoo.tokenized",
    "text_batches": "zoo.tokenized",
    "column_of": "zoo.tokenized",
    "join_rows": "zoo.tokenized",
    "load_dataset": "zoo.data",
    # torch building blocks for architectures
    "attention": "zoo.layers",
    "SelfAttention": "zoo.layers",
    "MLP": "zoo.layers",
    "PreLNBlock": "zoo.layers",
    "ThreadInvariantLayerNorm": "zoo.layers",
    "check_length": "zoo.layers",
    "key_mask": "zoo.layers",
    "last_real": "zoo.layers",
    "init_gpt2": "zoo.layers",
    "token_bigram_ids": "zoo.layers",
    # what a pipeline receives, trains with and returns
    "TrainConfig": "zoo.job",
    "Job": "zoo.job",
    "RunFolder": "zoo.job",
    "RunResult": "zoo.job",
    "Batch": "zoo.trainer",
    "TrainResult": "zoo.trainer",
    "train": "zoo.trainer",
    "Trained": "zoo.trained",
    "load_trained": "zoo.trained",
    # files from strangers, written atomically
    "natural_key": "zoo.registry",
    "load_json": "zoo.safeload",
    "load_safetensors": "zoo.safeload",
    "atomic_write_text": "zoo.files",
}

__all__ = ["hookimpl", "ZooError", "UnknownNameError", "Task", "Metric", "Prediction",
           "SplitProbabilities", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'zoo.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
