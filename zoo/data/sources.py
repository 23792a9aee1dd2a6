"""Where a dataset's splits come from: a plugin's loader, a local file or folder, a mirror
folder (ZOO_DATASETS, registry.toml's mirrors), or the Hugging Face Hub."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.core.catalogue import DatasetEntry
from zoo.core.config import build_config, split_overrides
from zoo.data.hub import explain_error, hub_access, hub_endpoint, short_error
from zoo.errors import ZooError

FILE_BUILDERS = {
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".parquet": "parquet",
    ".txt": "text",
}


@dataclass
class DatasetRef:
    """What a DATASET argument names, before anything is loaded."""

    name: str
    kind: str  # "hub", "path" or "plugin"
    source: str  # Hub id, filesystem path, or plugin dataset name
    entry: DatasetEntry | None = None
    config: Any = None  # a plugin dataset's config, as planned (None: from the catalogue)

    def plugin_entry(self, zoo):
        """The registration of the plugin that makes this dataset, or None."""
        return zoo.datasets.get(self.source) if self.kind == "plugin" else None

    def column(self, role: str, zoo) -> str | None:
        """The column with this role ("text", "label") that the catalogue entry, or else the
        dataset plugin, names (None: detected on load)."""
        named = getattr(self.entry, f"{role}_column", None) if self.entry else None
        plugin = self.plugin_entry(zoo)
        return named or (dict(plugin.columns).get(role) if plugin else None)


def config_class(ref: DatasetRef, zoo):
    """The config dataclass a plugin dataset registered, or None (then there is nothing to
    set: a config-less plugin gets its catalogue options as keyword arguments)."""
    plugin = ref.plugin_entry(zoo)
    return plugin.config_class() if plugin is not None else None


def catalogue_options(ref: DatasetRef) -> dict:
    """The options a catalogue entry's ``config`` table gives a plugin dataset."""
    return dict(ref.entry.config) if ref.entry else {}


def dataset_config(ref: DatasetRef, zoo, overrides: dict | None = None):
    """A plugin dataset's config: its catalogue options, then ``overrides``, on top of the
    dataclass defaults; keys and values are checked like any --set (did-you-mean)."""
    cls = config_class(ref, zoo)
    values = {**catalogue_options(ref), **(overrides or {})}
    try:
        return build_config(cls, split_overrides(values, {"dataset": cls})["dataset"])
    except ZooError as exc:
        raise ZooError(f"dataset {ref.name!r}: {exc}") from None


def search_folders(zoo) -> list[Path]:
    folders = [
        Path(p).expanduser() for p in os.environ.get("ZOO_DATASETS", "").split(os.pathsep) if p
    ]
    return folders + list(zoo.catalogue.mirrors)


def find_in_mirrors(hub_id: str, zoo) -> Path | None:
    for folder in search_folders(zoo):
        candidate = folder / hub_id
        if candidate.is_dir():
            return candidate
    return None


def load_splits(ref: DatasetRef, zoo):
    import datasets

    if ref.kind == "plugin":
        entry = zoo.datasets.get(ref.source)
        loader = entry.load()
        what = f"dataset plugin {entry.name!r} (from {entry.plugin})"
        if config_class(ref, zoo) is not None:
            config = ref.config if ref.config is not None else dataset_config(ref, zoo)
            _check_call(loader, (config,), {}, what)
            splits = loader(config)
        else:
            options = catalogue_options(ref)
            _check_call(loader, (), options, what)
            splits = loader(**options)
        if not isinstance(splits, (datasets.DatasetDict, dict)):
            raise ZooError(
                f"dataset plugin {entry.name!r} (from {entry.plugin}) returned a "
                f"{type(splits).__name__}, not a datasets.DatasetDict"
            )
        return datasets.DatasetDict(splits), f"plugin {entry.plugin}:{entry.name}"
    if ref.kind == "path":
        path = Path(ref.source)
        try:
            if path.is_dir():
                return datasets.load_dataset(str(path)), str(path)
            builder = FILE_BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise ZooError(
                    f"Cannot read {path}: expected a folder or a "
                    f"{'/'.join(sorted(FILE_BUILDERS))} file"
                )
            # data_files is a pattern: '[' in a file's name is a character class unless escaped
            return datasets.load_dataset(builder, data_files=glob.escape(str(path))), str(path)
        except ZooError:
            raise
        except Exception as exc:
            raise ZooError(f"Cannot load dataset from {path}: {explain_error(exc)}") from None
    mirror = find_in_mirrors(ref.source, zoo)
    if mirror is not None:
        return datasets.load_dataset(str(mirror)), str(mirror)
    reachable = True
    try:
        with hub_access() as reachable:
            return datasets.load_dataset(ref.source), f"hub:{ref.source}"
    except Exception as exc:
        searched = ", ".join(str(f) for f in search_folders(zoo)) or "none"
        offline = os.environ.get("HF_HUB_OFFLINE")
        why = (
            f" (HF_HUB_OFFLINE={offline}: only the cache was tried)"
            if offline
            else ""
            if reachable
            else f"; {hub_endpoint()} cannot be reached, so only the cache was tried"
        )
        raise ZooError(
            f"Cannot load dataset {ref.name!r} ({ref.source}): not in any mirror folder "
            f"(searched: {searched}; add one with ZOO_DATASETS) and not from the Hub or its "
            f"cache{why}: {short_error(exc)}"
        ) from None


def _check_call(function, args: tuple, kwargs: dict, what: str) -> None:
    """A ZooError, instead of a TypeError deep inside, if ``function`` cannot take these."""
    import inspect

    if not callable(function):
        raise ZooError(f"{what} is a {type(function).__name__}, not something callable")
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError as exc:
        raise ZooError(
            f"{what} cannot be called with {', '.join(kwargs) or 'no options'}: {exc}"
        ) from None
    except ValueError:  # no signature to inspect (a builtin): let the call decide
        pass
