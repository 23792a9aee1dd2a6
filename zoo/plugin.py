"""The plugin author's API: everything an architecture, tokenizer, dataset, task or command
plugin needs, and all the built-in plugins and pipelines use.

    from zoo.plugin import hookimpl, TaskSpec

    @hookimpl
    def register_architectures(register):
        register("tiny", "my_package.model:build", config=TinyConfig, tasks=TASKS)

Names backed by torch are imported on first use, so a plugin's registration module (and
``zoo list``) stays light. The hooks themselves are documented in ``zoo.hookspecs``.
"""

from __future__ import annotations

from zoo.errors import UnknownNameError, ZooError
from zoo.hookspecs import hookimpl
from zoo.lazy import lazy_names
from zoo.tasks import Metric, Prediction, SplitProbabilities, Task

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    # what a model is and what it is built for
    "TaskSpec": "zoo.train.model",
    "Model": "zoo.train.model",
    "IGNORE_INDEX": "zoo.train.model",
    "NonFiniteError": "zoo.train.model",
    # config checks for a plugin's dataclass
    "incidental": "zoo.core.config",
    "check_positive": "zoo.core.config",
    "check_divisible": "zoo.core.config",
    "check_probability": "zoo.core.config",
    "check_budget": "zoo.core.bounds",  # a dataset's or vocabulary's estimated cost, bounded
    "within_budget": "zoo.core.bounds",
    "MAX_VOCAB": "zoo.core.bounds",  # the most tokens a vocabulary may hold
    # tokenizers
    "Tokenizer": "zoo.tokenizer",
    "TokenizersTokenizer": "zoo.tokenizer",
    "SPECIAL_TOKENS": "zoo.tokenizer",
    "PAD": "zoo.tokenizer",
    "UNK": "zoo.tokenizer",
    "CLS": "zoo.tokenizer",
    "train_cached": "zoo.data.tokenizer_cache",
    "dataset_key": "zoo.data.tokenizer_cache",
    "compression": "zoo.tokenizer",
    "unragged": "zoo.tokenizer",
    # dataset splits as token ids and texts
    "split_ids": "zoo.data.encoded",
    "row_ids": "zoo.data.encoded",
    "row_texts": "zoo.data.encoded",
    "split_size": "zoo.data.encoded",
    "text_batches": "zoo.data.encoded",
    "column_of": "zoo.data.encoded",
    "join_rows": "zoo.data.encoded",
    "load_dataset": "zoo.data.datasets",
    "LoadedDataset": "zoo.data.datasets",
    # torch building blocks for architectures
    "attention": "zoo.train.layers",
    "SelfAttention": "zoo.train.layers",
    "MLP": "zoo.train.layers",
    "PreLNBlock": "zoo.train.layers",
    "ThreadInvariantLayerNorm": "zoo.train.layers",
    "check_length": "zoo.train.layers",
    "key_mask": "zoo.train.layers",
    "last_real": "zoo.train.layers",
    "init_gpt2": "zoo.train.layers",
    "token_bigram_ids": "zoo.train.layers",
    # what a pipeline receives, trains with and returns
    "TrainConfig": "zoo.train.job",
    "Job": "zoo.train.job",
    "RunFolder": "zoo.train.job",
    "RunResult": "zoo.train.job",
    "Batch": "zoo.train.loop",
    "TrainResult": "zoo.train.loop",
    "train": "zoo.train.loop",
    "Trained": "zoo.operations.reload",
    "load_trained": "zoo.operations.reload",
    # files from strangers, written atomically
    "natural_key": "zoo.core.kinds",
    "load_json": "zoo.io",
    "load_safetensors": "zoo.io",
    "atomic_write_text": "zoo.io",
    "atomic_folder": "zoo.atomic_folders",
    "check_new_folder": "zoo.atomic_folders",
}

__all__ = [
    "hookimpl",
    "ZooError",
    "UnknownNameError",
    "Task",
    "Metric",
    "Prediction",
    "SplitProbabilities",
    *_LAZY,
]


__getattr__, __dir__ = lazy_names(globals(), _LAZY)
