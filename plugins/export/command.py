"""``zoo export RUN_ID DIR [--format NAME]``: a trained run as a folder that loads without
zoo, checked against zoo's own predictions before it is moved into place.

The format is the one ``--format`` names, else the first registered format that names the
run's architecture and accepts the run (``transformers`` for decoder, numpy, gpt2, llama
and bert runs it can map), else ``onnx`` (any network that traces). Every format is a
``register_exporters`` registration (zoo.hookspecs), the built-in ones included.
"""

from __future__ import annotations

import json
from pathlib import Path

from zoo.plugins.export.card import model_card
from zoo.plugins.export.reading import TOLERANCE, validation_texts

from zoo.plugin import ZooError, atomic_folder, check_new_folder, load_trained


def export_run(
    run_id: str,
    folder: str | Path,
    *,
    format: str | None = None,
    force: bool = False,
    license: str | None = None,
    base_model: str | None = None,
) -> dict:
    """Write the run to ``folder`` (new or empty; replaced whole with ``force``), all at once:
    a failed, refused or killed export leaves nothing there. Returns what was written and how
    far the folder's predictions on validation texts are from zoo's."""
    from zoo.core.registry import get_zoo

    folder = Path(folder)
    zoo = get_zoo()
    chosen = zoo.exporters.get(format) if format else None  # an unknown name: did-you-mean
    check_new_folder(folder, force=force, what="export to")  # before any work
    trained = load_trained(run_id, device="cpu", precision="fp32")  # exported from the CPU
    entry, exporter = pick(zoo, trained, chosen)
    texts = validation_texts(trained)
    with atomic_folder(folder, force=force, what="export to") as staging:
        facts = _call(entry, exporter.write, trained, staging)
        checked = _call(entry, exporter.check, trained, staging, texts)
        refused = _refusal(checked, entry.name)
        if refused:
            raise ZooError(refused)
        card = model_card(
            trained,
            facts,
            checked,
            format=entry.name,
            folder_name=folder.name,
            license=license,
            base_model=base_model,
        )
        (staging / "README.md").write_text(card, encoding="utf-8")
    return {
        "run_id": trained.run_id,
        "folder": str(folder),
        "format": entry.name,
        "summary": facts.get("summary", ""),
        "max_difference": checked["max_difference"],
        "compared": checked["compared"],
        "labels_agree": checked["agree"],
    }


def pick(zoo, trained, chosen=None):
    """The exporter entry and its loaded target for the run (see the module docstring)."""
    architecture = trained.config["architecture"]
    if chosen is not None:
        candidates = [chosen]
        if not ({architecture, "*"} & set(chosen.architectures)):
            raise ZooError(
                f"the {chosen.name} format does not export {architecture} runs (it exports "
                f"{', '.join(chosen.architectures)}); formats for it: "
                f"{', '.join(formats_for(zoo, architecture)) or 'none'}"
            )
    else:
        candidates = [
            e for e in zoo.exporters.entries_in_order() if architecture in e.architectures
        ]
        candidates += [e for e in zoo.exporters.entries_in_order() if "*" in e.architectures]
    reasons = []
    for entry in candidates:
        exporter = entry.load()
        reason = _call(entry, exporter.unsupported, trained)
        if reason is None:
            return entry, exporter
        reasons.append(f"{entry.name}: {reason}")
    if not reasons:
        raise ZooError(f"no installed format exports {architecture} runs")
    raise ZooError(f"run {trained.run_id} cannot be exported ({'; '.join(reasons)})")


def formats_for(zoo, architecture: str) -> list[str]:
    return [
        e.name
        for e in zoo.exporters.entries_in_order()
        if {architecture, "*"} & set(e.architectures)
    ]


def _call(entry, function, *args):
    from zoo.core.containment import call_plugin

    return call_plugin(function, *args, what=f"exporter {entry.name!r}", plugin=entry.plugin)


def _refusal(checked: dict, name: str) -> str | None:
    difference, agree = checked.get("max_difference"), checked.get("agree")
    if not isinstance(difference, (int, float)) or not difference <= TOLERANCE:
        return (
            f"the {name} export's predictions on {checked.get('compared')} validation texts "
            f"differ from zoo's by {difference:.3g} (more than {TOLERANCE}); nothing was written"
        )
    if agree is not True:
        return (
            f"the {name} export predicts other labels than zoo on validation texts; "
            "nothing was written"
        )
    return None


def command(args) -> int:
    """`zoo export RUN_ID DIR`."""
    done = export_run(
        args.run_id,
        args.folder,
        format=args.format,
        force=args.force,
        license=args.license,
        base_model=args.base_model,
    )
    if args.json:
        print(json.dumps(done))
        return 0
    print(
        f"exported run {done['run_id']} to {done['folder']} as {done['format']}: "
        f"{done['summary']}\nchecked on {done['compared']} validation texts: the same "
        f"labels as zoo, largest probability difference {done['max_difference']:.2g}"
    )
    return 0
