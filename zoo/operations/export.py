"""``zoo export RUN_ID DIR [--format NAME]``: a trained run as a folder that loads without
zoo, checked against zoo's own predictions before it is moved into place.

The format is the one ``--format`` names, else the first registered format that names the
run's architecture and accepts the run, else one registered for any architecture (``"*"``).
Every format is a ``register_exporters`` registration (zoo.hookspecs), built-in or not: the
exporter writes the folder and compares its predictions on validation texts with zoo's; zoo
refuses a difference above ``TOLERANCE`` or a different label, writes the model card and
moves the folder into place.
"""

from __future__ import annotations

import math
from pathlib import Path

from zoo.atomic_folders import atomic_folder, check_new_folder
from zoo.core.containment import call_plugin
from zoo.core.loading import get_zoo
from zoo.errors import ZooError, shown
from zoo.operations.card import check_card_metadata, model_card
from zoo.operations.reload import load_trained

CHECK_TEXTS = 32  # validation texts every export is checked on
TOLERANCE = 1e-4  # largest probability difference an export may show against zoo
PIECE_CHARS = 400  # a long text (a whole book in one row) is checked in pieces this long


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
    folder = Path(folder)
    check_card_metadata(license, base_model)  # before any work, as the folder is
    zoo = get_zoo()
    chosen = zoo.exporters.get(format) if format else None  # an unknown name: did-you-mean
    check_new_folder(folder, force=force, what="export to")  # before any work
    trained = load_trained(run_id, device="cpu", precision="fp32")  # exported from the CPU
    entry, exporter = pick(zoo, trained, chosen)
    texts = validation_texts(trained)
    with atomic_folder(folder, force=force, what="export to") as staging:
        facts = written_facts(entry, _call(entry, exporter.write, trained, staging))
        checked = check_batches(entry, exporter, trained, staging, texts)
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
    keep_card(trained.run_id, card)
    return {
        "run_id": trained.run_id,
        "folder": str(folder),
        "format": entry.name,
        "summary": facts.get("summary", ""),
        "max_difference": checked["max_difference"],
        "compared": checked["compared"],
        "labels_agree": checked["agree"],
    }


def keep_card(run_id: str, card: str) -> None:
    """The card beside the run, too (its folder's MODEL_CARD), where zoo ui shows it; a
    run folder that cannot be written (an archived store) keeps none, and says so."""
    import logging

    from zoo.io import atomic_write_text
    from zoo.records.paths import MODEL_CARD, run_folder

    try:
        atomic_write_text(run_folder(run_id) / MODEL_CARD, card)
    except (OSError, ZooError) as exc:
        logging.getLogger(__name__).warning(f"the model card was not kept beside the run: {exc}")


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
    return call_plugin(function, *args, what=f"exporter {entry.name!r}", plugin=entry.plugin)


def batches(texts: list[str]) -> list[tuple[str, list[str]]]:
    """What an export is checked on, described: a text alone, a text of a few characters
    alone (an input of one or a few tokens), three texts of other lengths together (padded),
    and every text together (long ones cut to the context). A graph traced at one shape, or
    that pads differently from zoo, differs on one of them."""
    short = min(texts, key=len).strip()[:3] or texts[0]
    return [
        ("a text alone", texts[:1]),
        (f"the {len(short)}-character text {short!r} alone", [short]),
        (f"{len(texts[:3])} texts together", texts[:3]),
        (f"{len(texts)} texts together", texts),
    ]


def check_batches(entry, exporter, trained, staging: Path, texts: list[str]) -> dict:
    """The exporter's ``check`` on every batch of ``batches``; the first that differs from
    zoo's predictions (by more than TOLERANCE, or on a label) refuses the export."""
    worst: dict = {"max_difference": 0.0, "agree": True, "compared": 0}
    for described, batch in batches(texts):
        checked = check_answer(entry, _call(entry, exporter.check, trained, staging, batch), batch)
        refused = _refusal(checked, entry.name, described)
        if refused:
            raise ZooError(refused)
        worst["max_difference"] = max(worst["max_difference"], checked["max_difference"])
        worst["compared"] += checked.get("compared") or len(batch)
    return worst


# What an exporter's write() may return: key -> the types its value may have
FACT_TYPES: dict[str, tuple[type, ...]] = {
    "library_name": (str, type(None)),
    "pipeline_tag": (str, type(None)),
    "summary": (str,),
    "usage": (str, type(None)),
    "base": (dict, type(None)),
}


def _answer_error(entry, method: str, problem: str) -> ZooError:
    return ZooError(
        f"exporter {entry.name!r} from plugin {entry.plugin!r}: {method}() {problem} "
        "(zoo.hookspecs.register_exporters says what it returns); nothing was written"
    )


def written_facts(entry, facts) -> dict:
    """write()'s answer checked as user input is: a dict whose known keys have their types."""
    if not isinstance(facts, dict):
        raise _answer_error(entry, "write", f"returned {type(facts).__name__}, not a dict")
    for key, types in FACT_TYPES.items():
        if key in facts and not isinstance(facts[key], types):
            names = " or ".join("None" if t is type(None) else t.__name__ for t in types)
            raise _answer_error(
                entry, "write", f"returned {key} as {type(facts[key]).__name__}, not {names}"
            )
    return facts


def check_answer(entry, checked, texts: list[str]) -> dict:
    """check()'s answer checked as user input is: a dict saying it compared at least one of
    ``texts`` (and no more than were given), a difference that is a number, not negative
    and not NaN, and whether the labels agree as a bool. A check that compared nothing
    vouches for nothing."""
    if not isinstance(checked, dict):
        raise _answer_error(entry, "check", f"returned {type(checked).__name__}, not a dict")
    compared, difference = checked.get("compared"), checked.get("max_difference")
    if not isinstance(compared, int) or isinstance(compared, bool):
        raise _answer_error(entry, "check", f"returned compared = {shown(compared)}, not a count")
    if not 1 <= compared <= len(texts):
        raise _answer_error(
            entry, "check", f"compared {compared} texts; it must compare 1 to {len(texts)}"
        )
    if (
        not isinstance(difference, (int, float))
        or isinstance(difference, bool)
        or math.isnan(difference)
        or difference < 0
    ):
        raise _answer_error(
            entry,
            "check",
            f"returned max_difference = {shown(difference)}, not a number 0 or more",
        )
    if not isinstance(checked.get("agree"), bool):
        raise _answer_error(
            entry, "check", f"returned agree = {shown(checked.get('agree'))}, not true or false"
        )
    return checked


def _refusal(checked: dict, name: str, described: str) -> str | None:
    difference, agree = checked.get("max_difference"), checked.get("agree")
    if not isinstance(difference, (int, float)) or not difference <= TOLERANCE:
        return (
            f"the {name} export's predictions on {described} (validation texts) differ from "
            f"zoo's by {difference:.3g} (more than {TOLERANCE}); nothing was written"
        )
    if agree is not True:
        return (
            f"the {name} export predicts otherwise than zoo on {described} (validation "
            "texts: other labels, tokens or translations); nothing was written"
        )
    return None


def validation_texts(trained, count: int = CHECK_TEXTS) -> list[str]:
    """``count`` texts to check an export on: the run's validation texts (a long text, such
    as a whole book in one row, cut into pieces), topped up from its training texts where
    validation has fewer; never its test texts."""
    from zoo.data.datasets import load_dataset

    config = trained.config
    where = config.get("dataset_location") or config.get("dataset_id") or config["dataset"]
    try:
        dataset = load_dataset(
            str(where if Path(str(where)).exists() else config["dataset"]),
            text_column=config.get("text_column"),
            label_column=config.get("label_column"),
        )
    except ZooError as exc:
        raise ZooError(
            f"run {trained.run_id}: its dataset is needed to check the export: {exc}"
        ) from None
    texts: list[str] = []
    for role in ("validation", "train"):
        split = dataset.split(role)
        for text in split.select(range(min(len(split), count)))[dataset.text_column]:
            text = str(text or "")
            texts += [text[i : i + PIECE_CHARS] for i in range(0, len(text), PIECE_CHARS)]
            texts = [t for t in texts if t.strip()]
            if len(texts) >= count:
                return texts[:count]
    if not texts:
        raise ZooError(f"run {trained.run_id}: its dataset has no text to check the export on")
    return texts
