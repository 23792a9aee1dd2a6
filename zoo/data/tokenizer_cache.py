"""The tokenizer training cache: a tokenizer trained once per class, name, config and
training texts, kept under $ZOO_CACHE/tokenizers (default $ZOO_HOME/.cache/tokenizers) and
reused by every run that asks for the same (see ``zoo.tokenizer`` for how pipelines call
``train_cached``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from zoo.core.phases import phase
from zoo.home import cache_home
from zoo.tokenizer import Tokenizer

CACHE_FORMAT = 1  # bump when what a cache entry holds changes


def cache_root() -> Path:
    """Where trained tokenizers are kept: $ZOO_CACHE/tokenizers, else $ZOO_HOME/.cache/tokenizers."""
    return cache_home() / "tokenizers"


def dataset_key(dataset, role: str = "train", column: str | None = None) -> str:
    """A fingerprint of one text column of one split of a ``zoo.data.datasets.LoadedDataset``."""
    column = column or dataset.text_column
    return f"{dataset.fingerprint}/{dataset.split_names.get(role, role)}/{column}"


def cache_key(tokenizer_cls: type, name: str, config, fingerprint: str) -> dict:
    """Everything a trained tokenizer depends on, as plain JSON data."""
    from importlib import metadata

    try:
        library = metadata.version("tokenizers")
    except metadata.PackageNotFoundError:
        library = None
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    return {
        "format": CACHE_FORMAT,
        "tokenizer": name,
        "class": f"{tokenizer_cls.__module__}.{tokenizer_cls.__qualname__}",
        "config": config,
        "texts": fingerprint,
        "tokenizers": library,
    }


def cache_folder(key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()
    return cache_root() / f"{key['tokenizer']}-{digest[:16]}"


@phase("data")
def train_cached(
    tokenizer_cls: type[Tokenizer],
    name: str,
    config,
    texts_fn: Callable[[], Iterable[str]],
    fingerprint: str,
    *,
    say: Callable[[str], None] | None = None,
) -> Tokenizer:
    """``tokenizer_cls.train(texts_fn(), config)``, or the same tokenizer from the cache."""
    say = say or (lambda message: None)
    if not tokenizer_cls.cached:
        return tokenizer_cls.train(texts_fn(), config)
    key = cache_key(tokenizer_cls, name, config, fingerprint)
    folder = cache_folder(key)
    path = folder / "tokenizer.json"
    if path.is_file():
        try:
            tokenizer = tokenizer_cls.load(path)
        except Exception as exc:  # a damaged entry is retrained, never fatal
            say(f"{name} tokenizer: cache entry {folder} unreadable ({exc}); training again")
        else:
            say(f"{name} tokenizer: reused from the cache ({folder})")
            return tokenizer
    start = time.perf_counter()
    tokenizer = tokenizer_cls.train(texts_fn(), config)
    seconds = time.perf_counter() - start
    _store(tokenizer, key, folder)
    say(
        f"{name} tokenizer: trained in {seconds:.2f} s, {tokenizer.vocab_size:,} tokens "
        f"(cached in {folder})"
    )
    return tokenizer


def _store(tokenizer: Tokenizer, key: dict, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        tokenizer.save(staging / "tokenizer.json")
        (staging / "key.json").write_text(
            json.dumps(key, indent=2, default=str) + "\n", encoding="utf-8"
        )
        if folder.exists():  # a damaged entry: make room for the new one
            shutil.rmtree(folder, ignore_errors=True)
        os.rename(staging, folder)  # atomic; fails if another run stored it first
    except OSError:
        pass  # that other run's entry is as good as ours; the cache is only a shortcut
    finally:
        shutil.rmtree(staging, ignore_errors=True)
