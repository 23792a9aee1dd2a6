"""zoo: a plugin-based model zoo for small transformer models.

The public API, for plugin authors (``import zoo``; ``@zoo.hookimpl``) and for users
(``zoo.runs()``, ``zoo.compare()``). Everything a plugin needs is exported here; the built-in
plugins and pipelines import only these names. Names backed by heavier modules are imported
on first use, so ``import zoo`` (and ``zoo list``) stays light and never imports torch.
"""
from __future__ import annotations

import importlib

from zoo.errors import UnknownNameError, ZooError
from zoo.hookspecs import hookimpl
from zoo.tasks import Metric, Prediction, Task

__version__ = "0.1.0"

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
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
    "natural_key": "zoo.registry",
    "attention": "zoo.layers",
    "TrainConfig": "zoo.job",
    "Job": "zoo.job",
    "RunFolder": "zoo.job",
    "RunResult": "zoo.job",
    "Batch": "zoo.trainer",
    "train": "zoo.trainer",
    "Trained": "zoo.trained",
}

__all__ = [
    "hookimpl", "ZooError", "UnknownNameError",
    "Task", "Metric", "Prediction",
    *_LAZY,
    "runs", "compare",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def runs():
    """All recorded runs as a pandas DataFrame (one column per metric)."""
    from zoo.store import Store

    with Store() as store:
        return store.frame()


def compare(*, metric=None, where=None, by=None, columns=None, baseline=None, evals=False,
            status=("finished",), better=None, pool=False):
    """The comparison table as a pandas DataFrame, one row per cell.

    Columns: the row keys (default model) and column keys (default dataset), task, metric,
    better, mean, std, n, best, setting, configs, runs; with ``baseline`` also diff, ci_low,
    ci_high, df and significant. Options mean what `zoo compare`'s options mean.
    """
    from zoo.comparison import load_runs, summarize

    return summarize(load_runs(), metric=metric, where=where, by=by, columns=columns,
                     baseline=baseline, evals=evals, status=status, better=better,
                     pool=pool).cells
