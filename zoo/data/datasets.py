"""Dataset resolution: alias -> Hub id -> local mirror or the Hub; or a local path; or a
dataset plugin. Everything is loaded with ``datasets.load_dataset`` (or built by a plugin
as a ``datasets.DatasetDict``), so mirrors, the Hub and local files share one code path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.core.catalogue import is_hub_id
from zoo.core.names import tasks_for
from zoo.core.phases import phase
from zoo.data.sources import (
    FILE_BUILDERS,
    DatasetRef,
    load_splits,
)
from zoo.errors import UnknownNameError, ZooError, shown

TEXT_COLUMNS = ("text", "sentence", "content")
LABEL_COLUMNS = ("label", "labels")
SPLIT_ROLES = ("train", "validation", "test")


@dataclass
class LoadedDataset:
    """A dataset as a pipeline receives it (``job.dataset``): its splits as a Hugging Face
    ``datasets.DatasetDict``, the columns that hold the text and the label, the class names
    of a labelled dataset, and the tasks it serves, best first."""

    ref: DatasetRef
    """Which dataset: ``.name`` (as the user named it), ``.kind`` and ``.source``."""
    splits: Any
    """Every split, a ``datasets.DatasetDict``; read a role's with ``split(role)``."""
    location: str
    """Where it was loaded from (a mirror folder, the Hub cache, a file)."""
    text_column: str
    """The column that holds the text."""
    label_column: str | None
    """The column that holds the label; None for unlabelled text."""
    class_names: list[str] | None
    """The label's class names, when the dataset declares them; else None."""
    tasks: tuple[str, ...]
    """The tasks it serves, best first."""
    split_names: dict[str, str] = field(default_factory=dict)
    """Role (``train``, ``validation``, ``test``) -> the split's name, where they differ."""
    held_out: frozenset = frozenset()
    """Roles this run must never read (``holding_out``): reading one raises."""

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

    def sampling_evaluation(self, limit: int | None) -> LoadedDataset:
        """This dataset with its validation and test splits cut to ``limit`` evenly spaced
        rows (``eval_limit``: a smoke run's quick figures); ``None`` keeps them whole."""
        if limit is None:
            return self
        import numpy as np

        splits = dict(self.splits)
        for role in ("validation", "test"):
            name = self.split_names.get(role, role)
            if name in splits and len(splits[name]) > limit:
                rows = np.linspace(0, len(splits[name]) - 1, limit).round().astype(np.int64)
                splits[name] = splits[name].select(np.unique(rows))
        return dataclasses.replace(self, splits=splits)

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

    def rows_digest(self, role: str) -> bytes:
        """A hash of the rows of a role's split as scored: its text and label columns, in
        order (after ``sampling_evaluation``). Two runs with equal digests scored the same
        examples, so their per-example scores pair example by example."""
        split = self.split(role)
        digest = hashlib.sha256()
        for column in (self.text_column, self.label_column):
            if column is not None and column in split.column_names:
                digest.update(json.dumps(split[column], default=str).encode())
        return digest.digest()[:16]

    @property
    def fingerprint(self) -> str:
        """A hash of every split's content (the ``datasets`` fingerprints)."""
        digest = hashlib.sha256()
        for name in sorted(self.splits):
            digest.update(f"{name}:{self.splits[name]._fingerprint};".encode())
        return digest.hexdigest()[:16]


def changed_since(loaded: LoadedDataset, run_id: str, recorded: str | None) -> str | None:
    """Why ``loaded``, a local file or folder, is not the data run ``run_id`` trained on (its
    ``recorded`` fingerprint), or None. Edited since, it has its missing splits carved again,
    so its validation and test rows may be rows the run trained on. A Hub id or a plugin's
    dataset names its data (a plugin's by its options): None."""
    if loaded.ref.kind != "path" or recorded is None or recorded == loaded.fingerprint:
        return None
    return (
        f"the dataset changed since run {run_id} trained on it (fingerprint {recorded} "
        f"then, {loaded.fingerprint} now)"
    )


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
    from zoo.core.loading import get_zoo

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


@phase("data")
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
    splits, location = load_splits(ref, zoo)
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
                f"{kind} values, not text; name a text column (text_column) "
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
