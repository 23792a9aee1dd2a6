"""Dataset resolution: alias -> Hub id -> local mirror or the Hub; or a local path; or a
dataset plugin. Everything is loaded with ``datasets.load_dataset`` (or built by a plugin
as a ``datasets.DatasetDict``), so mirrors, the Hub and local files share one code path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import socket
import stat
import sys
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.core.catalogue import DatasetEntry, is_hub_id
from zoo.core.config import build_config, split_overrides
from zoo.core.names import tasks_for
from zoo.errors import UnknownNameError, ZooError, shown

TEXT_COLUMNS = ("text", "sentence", "content")
LABEL_COLUMNS = ("label", "labels")
FILE_BUILDERS = {
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".parquet": "parquet",
    ".txt": "text",
}
SPLIT_ROLES = ("train", "validation", "test")


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


@dataclass
class LoadedDataset:
    """A dataset as a pipeline receives it (``job.dataset``): its splits as a Hugging Face
    ``datasets.DatasetDict``, the columns that hold the text and the label, the class names
    of a labelled dataset, and the tasks it serves, best first."""

    ref: DatasetRef
    splits: object  # datasets.DatasetDict
    location: str  # where it was loaded from
    text_column: str
    label_column: str | None
    class_names: list[str] | None
    tasks: tuple[str, ...]
    split_names: dict[str, str] = field(default_factory=dict)  # role -> split name
    held_out: frozenset = frozenset()  # roles this run must never read (see holding_out)

    @property
    def roles(self) -> tuple[str, ...]:
        """The split roles a pipeline trains and reports on: all but the held-out ones."""
        return tuple(role for role in SPLIT_ROLES if role not in self.held_out)

    def holding_out(self, roles) -> LoadedDataset:
        """This dataset with `roles` out of reach: reading one raises, so a run that
        chooses settings (a search trial) provably never looks at its test split."""
        if not roles:
            return self
        return dataclasses.replace(self, held_out=self.held_out | frozenset(roles))

    def split(self, role: str):
        """The split that plays ``role`` (train, validation or test) as a ``datasets.Dataset``;
        an unknown one is a ZooError listing the dataset's splits."""
        name = self.split_names.get(role, role)
        if name in {self.split_names.get(r, r) for r in self.held_out}:
            raise ZooError(
                f"split {role!r} of dataset {self.ref.name!r} is held out: this "
                "run chooses settings and must not read it"
            )
        if name not in self.splits:
            raise UnknownNameError(
                "split",
                name,
                list(self.splits),
                hint=f"dataset {self.ref.name!r} has: {', '.join(self.splits)}",
            )
        return self.splits[name]

    @property
    def fingerprint(self) -> str:
        """A hash of every split's content (the ``datasets`` fingerprints)."""
        digest = hashlib.sha256()
        for name in sorted(self.splits):
            digest.update(f"{name}:{self.splits[name]._fingerprint};".encode())
        return digest.hexdigest()[:16]


def resolve(name: str, zoo) -> DatasetRef:
    """Turn a DATASET argument into a reference: alias, plugin dataset, path or Hub id."""
    catalogue = zoo.catalogue
    if name in catalogue.datasets:
        entry = catalogue.datasets[name]
        if entry.hub:
            return DatasetRef(name, "hub", entry.hub, entry)
        if entry.path:
            return DatasetRef(name, "path", entry.path, entry)
        return DatasetRef(name, "plugin", entry.plugin, entry)
    if name in zoo.datasets:
        return DatasetRef(name, "plugin", name)
    path = Path(name).expanduser()
    if path.exists():
        if not (path.is_file() or path.is_dir()):  # a FIFO, a device, a socket
            kind = (
                "a named pipe (FIFO)"
                if stat.S_ISFIFO(path.stat().st_mode)
                else (
                    "a device" if path.is_char_device() or path.is_block_device() else "not a file"
                )
            )
            raise ZooError(
                f"Dataset path {shown(name)} is {kind}: zoo reads a dataset more than "
                "once, so it must be a regular file or a folder"
            )
        return DatasetRef(name, "path", str(path.resolve()))
    looks_like_path = name.startswith((".", "/", "~")) or path.suffix.lower() in FILE_BUILDERS
    if looks_like_path:
        raise ZooError(f"Dataset path {shown(name)} does not exist")
    if "/" in name:
        if not is_hub_id(name):
            raise ZooError(
                f"Dataset {name!r} is neither an existing path nor a Hub id "
                "(OWNER/NAME: letters, digits, '-', '_', '.'; no '..')"
            )
        return DatasetRef(name, "hub", name)
    names = list(catalogue.datasets) + [
        n for n in zoo.datasets.names() if n not in catalogue.datasets
    ]
    raise UnknownNameError("dataset", name, names, hint="zoo list datasets shows all")


def load_dataset(
    name: str,
    zoo=None,
    *,
    text_column: str | None = None,
    label_column: str | None = None,
    quiet: bool = True,
) -> LoadedDataset:
    """A DATASET argument (catalogue alias, plugin dataset, path or Hub id) resolved and
    loaded, as `zoo run` would: the public way for a plugin to load a dataset by name."""
    from zoo.core.registry import get_zoo

    zoo = zoo or get_zoo()
    return load(
        resolve(name, zoo), zoo, text_column=text_column, label_column=label_column, quiet=quiet
    )


def tasks_of(ref: DatasetRef, zoo) -> tuple[str, ...]:
    """The tasks a dataset serves, known without loading it where the catalogue or its
    plugin says: the task it names first, then the registered tasks declared to use such
    datasets (see ``zoo.core.names.tasks_for``)."""
    if ref.entry and ref.entry.task:
        return tasks_for(ref.entry.task, set(), zoo)
    if (
        ref.entry and ref.entry.text_column and ref.kind != "plugin"
    ):  # columns named: no load needed
        return tasks_for(None, column_roles(ref.entry.text_column, ref.entry.label_column), zoo)
    if ref.kind == "plugin" and ref.source in zoo.datasets:
        declared = zoo.datasets.get(ref.source).tasks
        if declared:
            return tuple(dict.fromkeys(t for name in declared for t in tasks_for(name, set(), zoo)))
        text, label = ref.column("text", zoo), ref.column("label", zoo)
        if text:  # no task declared, but its columns are
            return tasks_for(None, column_roles(text, label), zoo)
    return ()


def column_roles(text_column: str | None, label_column: str | None) -> set[str]:
    """The column roles a loaded dataset has, matched against tasks' declared ``columns``."""
    return {role for role, column in (("text", text_column), ("label", label_column)) if column}


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


def load(
    ref: DatasetRef,
    zoo,
    *,
    text_column: str | None = None,
    label_column: str | None = None,
    quiet: bool = False,
    held_out: tuple = (),
) -> LoadedDataset:
    """Load and check a dataset (what every task needs; see ``check``). ``held_out`` roles
    are out of reach from the start (``LoadedDataset.holding_out``): not even checked."""
    import datasets

    # The datasets library's own progress bars follow the same rule as ours.
    if quiet or not sys.stderr.isatty():
        datasets.disable_progress_bars()
    else:
        datasets.enable_progress_bars()
    splits, location = _load_splits(ref, zoo)
    if len(splits) == 0:
        raise ZooError(f"Dataset {ref.name!r} has no splits")
    entry = ref.entry
    split_names = {role: role for role in SPLIT_ROLES}
    if entry and entry.splits:
        split_names.update(entry.splits)
        for role, name in entry.splits.items():  # named explicitly: it must exist
            if name not in splits:
                raise UnknownNameError(
                    "split",
                    name,
                    list(splits),
                    hint=f"[datasets.{ref.name}] splits maps {role} to it; "
                    f"the dataset has: {', '.join(splits)}",
                )
    splits = _carve_missing_splits(splits, split_names, ref.name)
    columns = list(next(iter(splits.values())).column_names)
    text_column = _pick_column(
        text_column or ref.column("text", zoo),
        TEXT_COLUMNS,
        columns,
        "text",
        ref.name,
        required=True,
    )
    label_column = _pick_column(
        label_column or ref.column("label", zoo),
        LABEL_COLUMNS,
        columns,
        "label",
        ref.name,
        required=False,
    )
    class_names = None
    if label_column:
        feature = next(iter(splits.values())).features[label_column]
        class_names = list(getattr(feature, "names", None) or []) or None
    tasks = tasks_of(ref, zoo) or tasks_for(None, column_roles(text_column, label_column), zoo)
    loaded = LoadedDataset(
        ref, splits, location, text_column, label_column, class_names, tuple(tasks), split_names
    ).holding_out(held_out)
    check(loaded)
    return loaded


def check(dataset: LoadedDataset) -> None:
    """Fail before training on what would fail during it: an empty split, or a text column
    that is not text or has empty rows. What a task needs beyond that (labels that can be
    classes, say) its pipeline's ``check_dataset`` checks."""
    name = dataset.ref.name
    for role in dataset.roles:
        split = dataset.split(role)
        where = f"split {dataset.split_names.get(role, role)!r} of dataset {name!r}"
        if len(split) == 0:
            raise ZooError(f"{where} has no rows; every split needs at least one")
        feature = split.features[dataset.text_column]
        if getattr(feature, "dtype", None) not in ("string", "large_string"):
            kind = getattr(feature, "dtype", None) or type(feature).__name__
            raise ZooError(
                f"text column {dataset.text_column!r} of dataset {name!r} holds "
                f"{kind} values, not text; name a text column with --text-column "
                f"(columns: {', '.join(split.column_names)})"
            )
        empty = split.data.column(dataset.text_column).null_count
        if empty:
            raise ZooError(
                f"{where} has {empty} empty (None) rows in text column "
                f"{dataset.text_column!r}; every row needs text (drop or fill them)"
            )


def _carve_missing_splits(splits, split_names: dict, name: str):
    """A dataset without a validation or a test split (a local file, say) gets each missing
    one as 5% of its training rows, drawn with a fixed seed so every run sees the same; the
    rest stays for training (no row is dropped)."""
    import datasets

    missing = [role for role in ("validation", "test") if split_names[role] not in splits]
    if not missing:
        return splits
    train = splits.get(split_names["train"])
    if train is None:
        raise UnknownNameError(
            "split",
            split_names["train"],
            list(splits),
            hint=f"dataset {name!r} has: {', '.join(splits)}",
        )
    if len(train) < 20:
        raise ZooError(
            f"Dataset {name!r} has no {' or '.join(missing)} split and only "
            f"{len(train)} rows to carve one from (need at least 20)"
        )
    result = dict(splits)
    held = train.train_test_split(test_size=0.05 * len(missing), seed=0, shuffle=True)
    result[split_names["train"]] = held["train"]
    if len(missing) == 1:
        result[split_names[missing[0]]] = held["test"]
    else:
        halves = held["test"].train_test_split(test_size=0.5, seed=0, shuffle=True)
        result[split_names["validation"]], result[split_names["test"]] = (
            halves["train"],
            halves["test"],
        )
    return datasets.DatasetDict(result)


def _pick_column(chosen, candidates, columns, what, dataset, required):
    if chosen:
        if chosen not in columns:
            raise UnknownNameError(
                f"{what} column",
                chosen,
                columns,
                hint=f"dataset {dataset!r} has columns: {', '.join(columns)}",
            )
        return chosen
    for name in candidates:
        if name in columns:
            return name
    if required:
        raise ZooError(
            f"Dataset {dataset!r} has no {what} column ({'/'.join(candidates)}); "
            f"columns: {', '.join(columns)}. Use --{what}-column NAME"
        )
    return None


def _load_splits(ref: DatasetRef, zoo):
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
            return datasets.load_dataset(builder, data_files=str(path)), str(path)
        except ZooError:
            raise
        except Exception as exc:
            raise ZooError(f"Cannot load dataset from {path}: {_explain(exc)}") from None
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
            f"cache{why}: {_short(exc)}"
        ) from None


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the Hub opens within ``timeout`` seconds."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = urllib.parse.urlparse(hub_endpoint())
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
    except (OSError, ValueError, TypeError):
        return False
    return True


@contextlib.contextmanager
def hub_access():
    """Around a Hub call: with no network, the libraries run offline (the cache only), so an
    unknown id fails at once instead of after 25 s of retries; and their log lines (retries,
    warnings) stay out of zoo's output, whose own error line says what went wrong.
    Yields whether the Hub could be reached."""
    import datasets.config
    import huggingface_hub.constants

    reachable = hub_reachable()
    saved = huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE
    loggers = [logging.getLogger(name) for name in ("huggingface_hub", "datasets", "fsspec")]
    levels = [logger.level for logger in loggers]
    if not reachable:
        huggingface_hub.constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield reachable
    finally:
        huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = saved
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _explain(exc: Exception) -> str:
    """The root cause of a loading failure, in words (datasets wraps it in its own error)."""
    chain = [exc]
    while len(chain) < 20 and (chain[-1].__cause__ or chain[-1].__context__) is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    for error in chain:
        if isinstance(error, UnicodeDecodeError):
            return (
                f"the file is not UTF-8 text ({error.reason} at byte {error.start}); "
                "save it as UTF-8"
            )
        if "corresponds to no data" in str(error):
            return f"a split has no rows ({str(error).strip()}); every split needs at least one"
    if type(chain[-1]).__name__ == "SchemaInferenceError":
        return "the file has no rows"
    return _short(chain[-1])


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


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
