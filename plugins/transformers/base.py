"""The checkpoint a fine-tuned transformers run started from (its ``pretrained`` setting), as
its export's model card names it: a Hub id read from the checkpoint's own card or config, and
the license its card names."""

from __future__ import annotations

import re
from pathlib import Path

from huggingface_hub import ModelCard

from zoo.plugin.io import load_json

# config.json's _name_or_path: where the checkpoint's weights were loaded from when it was
# saved, so the model it was made from (a copy of a Hub model names itself only in its card)
FROM_CONFIG = (
    "the checkpoint's config.json (_name_or_path, the model it was made from; "
    "zoo export --base-model names another)"
)
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hub_id(text) -> str | None:
    """``text`` when it reads as a Hub id (``owner/name``), not a local file or folder."""
    text = str(text or "")
    if not HUB_ID.match(text) or Path(text).expanduser().exists():
        return None
    return text


def base_checkpoint(trained) -> dict:
    """The checkpoint a fine-tuned run started from (its ``pretrained`` setting): ``name``
    (a Hub id, or a local folder's name), ``id`` (its Hub id, where known: the setting
    itself, or what the folder's own card or config names), ``license`` (from the folder's
    card) and ``source`` (where the id was read)."""
    pretrained = str(
        ((trained.config.get("configs") or {}).get("model") or {}).get("pretrained") or ""
    )
    if not pretrained:
        return {}
    folder = Path(pretrained).expanduser()
    base: dict[str, str | None] = {"name": folder.name if folder.is_dir() else pretrained}
    if not folder.is_dir():
        base.update(id=hub_id(pretrained), source="the run's pretrained setting")
    else:
        card = folder_card(folder)
        named = card.get("base_model") or card.get("model_id")
        if isinstance(named, list):
            named = named[0] if named else None
        config = _json(folder / "config.json")
        from_config = hub_id(config.get("_name_or_path"))
        if hub_id(named):
            base.update(id=named, source="the checkpoint's model card")
        elif from_config:
            base.update(id=from_config, source=FROM_CONFIG)
        if isinstance(card.get("license"), str):
            base["license"] = card["license"]
    return base


def folder_card(folder: Path) -> dict:
    path = folder / "README.md"
    if not path.is_file():
        return {}
    try:
        return ModelCard.load(path).data.to_dict()
    except Exception:  # noqa: BLE001 - a checkpoint's card is a stranger's file
        return {}


def _json(path: Path) -> dict:
    try:
        loaded = load_json(path)
    except Exception:  # noqa: BLE001 - absent or broken: it names nothing
        return {}
    return loaded if isinstance(loaded, dict) else {}
