"""Datasets and their splits as token ids and texts, for pipelines and tokenizers: a loaded
dataset (``Job.dataset`` is a ``LoadedDataset``), its splits encoded through the shared
cache, and a tokenizer's vocabulary trained once per dataset and settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    "check_ids": "zoo.tokenizer",
    "unragged": "zoo.tokenizer",
}

if TYPE_CHECKING:  # what _LAZY imports on first use, spelled out for readers and the reference
    from zoo.data.datasets import LoadedDataset, load_dataset
    from zoo.data.encoded import (
        column_of,
        join_rows,
        row_ids,
        row_texts,
        split_ids,
        split_size,
        text_batches,
    )
    from zoo.data.tokenizer_cache import dataset_key, train_cached
    from zoo.tokenizer import check_ids, compression, unragged

__all__ = [
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
    "check_ids",
    "unragged",
]

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
