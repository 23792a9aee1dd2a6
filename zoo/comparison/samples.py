"""What one sample of a comparison is: a configuration (the settings that change the result)
at one seed. A tune trial and its re-run, a run and its repeat, a resumed run: each counts
once, whatever else differs in their config hashes (held-out splits, plugin code, run ids).

An ensemble's configuration is each member's configuration and the weighting, so ensembles
whose members differ in any setting are different rows; its seed is its members' seeds.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from zoo.records.columns import SETTINGS_CONFIG_KEYS

# What a sample's identity reads of a run's config, besides its settings.
SAMPLE_CONFIG_KEYS = SETTINGS_CONFIG_KEYS + (
    "combines",
    "weighting",
    "weights_rule",
    "trained_on",
    "split",
)


def settings_of(
    row: dict, rows: dict | None = None, results: dict | None = None
) -> tuple[dict, str | None, str | None]:
    """(settings, trained_on, split) of a store row: the settings that change its result
    (an ensemble's: its members'), and for an evaluation what it scores. ``results``: run
    id -> zoo.records.columns.result_settings of its row, where the caller has them (the
    settings returned may be that dict: read them, never change them)."""
    from zoo.records.columns import result_settings

    config = row.get("config") or {}
    evaluation = row.get("kind") == "eval"
    parent = (rows or {}).get(row.get("parent_id")) if evaluation else None
    # an evaluation is of its trained run's configuration, as that run records it
    source = parent if parent is not None and not is_ensemble(row) else row
    if is_ensemble(source):
        flat = ensemble_settings(source.get("config") or {}, rows or {})
    else:
        known = (results or {}).get(source.get("id"))
        flat = known if known is not None else result_settings(source)
    trained_on = config.get("trained_on") if evaluation else None
    if trained_on is not None:
        flat = {**flat, "trained_on": trained_on}
    return flat, trained_on, config.get("split") if evaluation else None


def is_ensemble(row: dict) -> bool:
    return row.get("kind") == "ensemble" or bool((row.get("config") or {}).get("combines"))


def members_in_order(config: dict, rows: dict) -> list[tuple[dict, dict | None]]:
    """An ensemble's members, each with its row (None when not recorded), in an order that
    does not depend on the order they were given in: by model, configuration and seed.
    The same members in another order are the same ensemble."""
    from zoo.records.columns import result_settings

    def order(pair):
        member, row = pair
        settings = result_settings(row) if row is not None else member.get("config_hash")
        identity = json.dumps(settings, sort_keys=True, default=str)
        return str(member.get("model")), identity, str(member.get("seed"))

    pairs = [(m, rows.get(m.get("run_id"))) for m in config.get("combines") or []]
    return sorted(pairs, key=order)


def ensemble_settings(config: dict, rows: dict) -> dict:
    """'member.setting' -> value for each combined run (a member recorded without its row,
    by its config hash), and the weighting. A member's seed is not a setting: ensembles of
    the same members at other seeds are the same configuration."""
    from zoo.records.columns import result_settings

    members = members_in_order(config, rows)
    names = [member.get("model") or "run" for member, _ in members]
    flat: dict[str, Any] = {"weighting": config.get("weighting")}
    if config.get("weights_rule"):  # recorded since fitted weights minimise log loss
        flat["weights_rule"] = config["weights_rule"]
    for index, (member, row) in enumerate(members):
        prefix = names[index] if names.count(names[index]) == 1 else f"{names[index]}#{index}"
        if row is None:
            flat[f"{prefix}.config_hash"] = member.get("config_hash")
            continue
        settings = result_settings(row)
        bare = [key.rpartition(".")[2] for key in settings]
        for key, value in settings.items():
            field = key.rpartition(".")[2]
            flat[f"{prefix}.{field if bare.count(field) == 1 else key}"] = value
    return flat


def seed_of(row: dict, rows: dict | None = None):
    """The seed a sample was drawn at: the run's, or an ensemble's members' (one seed when
    they share it, else their seeds, the members in their order)."""
    config = row.get("config") or {}
    if is_ensemble(row):
        seeds = [member.get("seed") for member, _ in members_in_order(config, rows or {})]
        return seeds[0] if len(set(map(str, seeds))) == 1 else tuple(seeds)
    return row.get("seed")


def sample_key(
    row: dict, rows: dict, settings_found: tuple | None = None, texts: dict | None = None
) -> str:
    """Equal for two rows that are the same configuration at the same seed (for an
    evaluation: on the same data and split). A row that records no settings at all is
    known only by its config hash. ``settings_found``: what settings_of(row, rows) gave;
    ``texts``: where the JSON of settings shared by several rows is kept, once each."""
    settings, trained_on, split = settings_found or settings_of(row, rows)
    config = row.get("config") or {}
    known = "configs" in config or is_ensemble(row)
    configuration = settings if known else row.get("config_hash") or row.get("id")
    head = [row.get("kind") == "eval", row.get("model"), row.get("dataset"), row.get("task")]
    head += [trained_on, split]
    seed = _ENCODER.encode(seed_of(row, rows))
    # json.dumps(head + [configuration, seed], sort_keys=True, default=str), in pieces: the
    # settings' text is written once for the rows that share them
    text = f"{_ENCODER.encode(head)[:-1]}, {_json(configuration, texts)}, {seed}]"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_ENCODER = json.JSONEncoder(sort_keys=True, default=str)  # json.dumps's, made once


def _json(value, texts: dict | None = None) -> str:
    """json.dumps(value, sort_keys=True, default=str); a dict's text kept in ``texts`` by
    the dict itself (rows sharing their settings share one dict: zoo.comparison.table)."""
    if texts is None or not isinstance(value, dict):
        return _ENCODER.encode(value)
    found = texts.get(id(value))
    if found is None or found[0] is not value:  # the dict is kept: its id stays its own
        found = texts[id(value)] = (value, _ENCODER.encode(value))
    return found[1]


def one_per_sample(long):
    """`long` (one row per run and metric, with 'sample' and 'created') cut to one run per
    sample and metric, the latest; and how many were merged."""
    ordered = long.sort_values("created", kind="stable")
    kept = ordered.drop_duplicates(["sample", "metric"], keep="last")
    return kept.sort_index(), len(long) - len(kept)


def left_out_by_status(data, status) -> list[str]:
    """A note for the matching runs a status filter leaves out (failed, interrupted, ...)."""
    out = data[~data["status"].isin(list(status))]
    if out.empty:
        return []
    counts = out["status"].value_counts()
    listed = ", ".join(f"{count} {name}" for name, count in counts.items())
    return [
        f"{len(out)} matching run(s) not {' or '.join(status)} are left out ({listed}); "
        "--status all counts them"
    ]


def nan_metrics(row: dict) -> frozenset:
    """The metrics a run recorded as NaN (a diverged figure), which a frame cannot tell
    from a metric it never recorded."""
    metrics = row.get("metrics") or {}
    return frozenset(
        k
        for k, v in metrics.items()
        if isinstance(v, float) and v != v  # NaN only
    )


def non_finite_note(bad) -> list[str]:
    """A note for runs whose figure is NaN or infinite (diverged): left out of every
    statistic, named by run."""
    if bad.empty:
        return []
    names = ", ".join(sorted(set(bad["metric"])))
    return [
        f"{len(bad)} run(s) diverged (a non-finite {names}) and are left out: "
        + " ".join(f"{i} ({v:g})" for i, v in zip(bad["id"][:5], bad["value"][:5]))
        + (" ..." if len(bad) > 5 else "")
    ]
