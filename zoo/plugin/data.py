"""Datasets and their splits as token ids and texts, for pipelines and tokenizers: a loaded
dataset (``Job.dataset`` is a ``LoadedDataset``), its splits encoded through the shared
cache, and a tokenizer's vocabulary trained once per dataset and settings."""

from __future__ import annotations

from zoo.lazy import lazy_names

_LAZY = {
    "load_dataset": "zoo.data.datasets",
    "LoadedDataset": "zoo.data.datasets",
    "split_ids": "zoo.data.encoded",
    "row_ids": "zoo.data.encoded",
    "row_texts": "zoo.data.encoded",
    "split_size": "zoo.data.encoded",
    "text_batches": "zoo.data.encoded",
    "column_of": "zoo.data.encoded",
    "join_rows": "zoo.data.encoded",
    "train_cached": "zoo.data.tokenizer_cache",
    "dataset_key": "zoo.data.tokenizer_cache",
    "compression": "zoo.tokenizer",
    "unragged": "zoo.tokenizer",
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
