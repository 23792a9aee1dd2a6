"""Whether a finished run can stand for a plan with its config hash: the hash names the
settings, the code and the data's source, not a local file's content, which is read when a
run starts. Sweeps and ensemble presets ask before they reuse a run."""

from __future__ import annotations

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
