"""Which data a plan reads, and whether a finished run read the same: the config hash
names the settings, the code, the data's source and the columns and splits chosen
(``data_choices``), not a local file's content, which is read when a run starts and
compared here (``data_changed``) before a sweep, a search or an ensemble preset reuses a
run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.data import datasets as zoo_data
from zoo.errors import ZooError


def data_changed(plan, run_id: str, read: dict, zoo) -> str | None:
    """Why finished run ``run_id`` of the plan's config hash did not read the data the plan
    would read now, or None: a local file is compared by the fingerprint the run recorded.
    ``read`` keeps each local dataset as it reads now, for the next plan that asks."""
    from zoo.records.store import Store

    ref = plan.dataset_ref
    if ref.kind != "path":  # a Hub id or mirror names its data; a plugin's is its config
        return None
    with Store() as store:
        then = (store.get(run_id).get("config") or {}).get("dataset_fingerprint")
    key = (ref.name, ref.source, plan.columns)
    if key not in read:
        try:
            read[key] = plan.loaded or zoo_data.load(
                ref, zoo, text_column=plan.columns[0], label_column=plan.columns[1], quiet=True
            )
        except ZooError:
            read[key] = None  # unreadable now: the cell fails as it runs, and says why
    now = read[key]
    return None if now is None else zoo_data.changed_since(now, run_id, then)


def data_choices(plan) -> dict:
    """The choices of which data a run reads that its dataset's source does not say: the
    text and label columns named on the command line, and the columns and splits a user's
    catalogue entry names (two entries may read one file differently). The built-in
    catalogue's entries are zoo's own, part of the code its version identifies, and stay
    out, so the hashes of runs on them are as they were."""
    from zoo.core.catalogue import BUILTIN_FILE

    entry = getattr(plan.dataset_ref, "entry", None)
    text, label = plan.columns
    chosen: dict[str, Any] = {"text_column": text, "label_column": label, "splits": None}
    if entry is not None and Path(entry.source).resolve() != BUILTIN_FILE:  # a user's own
        chosen["text_column"] = text or entry.text_column
        chosen["label_column"] = label or entry.label_column
        chosen["splits"] = dict(sorted(entry.splits.items())) if entry.splits else None
    return {key: value for key, value in chosen.items() if value}
