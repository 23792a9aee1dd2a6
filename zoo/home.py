"""ZOO_HOME, zoo's own folder (the store and the run folders), which nothing a user names may
touch; and names that become parts of file names, checked or escaped so none is a path."""

from __future__ import annotations

import os
import re
from pathlib import Path

from zoo.errors import ZooError


def zoo_home() -> Path:
    """The runs folder: ZOO_HOME, or ./runs. An empty ZOO_HOME is a mistake (it would
    silently mean the current folder), not a choice."""
    value = os.environ.get("ZOO_HOME", "runs")
    if not value.strip():
        raise ZooError("ZOO_HOME is set but empty; unset it (runs go to ./runs) or name a folder")
    return Path(value).expanduser()


def cache_home() -> Path:
    """zoo's cache folder, for what it can rebuild (trained tokenizers, tokenized splits,
    the transformers type list): ZOO_CACHE, else ZOO_HOME/.cache."""
    base = os.environ.get("ZOO_CACHE")
    if not base:
        return zoo_home() / ".cache"
    folder = Path(base).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ZooError(f"ZOO_CACHE={base} is not a folder; point it at a folder (or unset it)")
    return folder


def check_outside_home(target, what: str = "write", allowed=()) -> None:
    """A ZooError unless ``target`` is clear of ZOO_HOME: not ZOO_HOME itself, not inside it
    (a run folder, the store) and not a folder that holds it. Paths are compared resolved,
    so a link or ``..`` cannot get round it. ``allowed``: folders under ZOO_HOME that zoo
    itself fills with such files (tune's plots)."""
    home = os.path.realpath(zoo_home())
    path = os.path.realpath(target)
    if any(path == os.path.realpath(folder) for folder in allowed):
        return
    relation = (
        "is ZOO_HOME"
        if path == home
        else "is inside ZOO_HOME"
        if _within(path, home)
        else "holds ZOO_HOME"
        if _within(home, path)
        else None
    )
    if relation is not None:
        raise ZooError(
            f"cannot {what} {shown_path(target)}: it {relation} ({home}), where zoo keeps "
            "its runs and store; name a folder outside it"
        )


def _within(path: str, folder: str) -> bool:
    return path != folder and os.path.commonpath([path, folder]) == folder


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_name_part(name, what: str) -> str:
    """``name`` if it can be part of a file name as it is (letters, digits, '.', '_', '-',
    starting with a letter or digit, at most 128); a ZooError naming ``what`` otherwise."""
    if isinstance(name, str) and SAFE_NAME.fullmatch(name):
        return name
    shown = repr(name if not isinstance(name, str) or len(name) <= 60 else name[:60] + "...")
    raise ZooError(
        f"{what} {shown} cannot be part of a file name: use letters, digits, '.', '_' and "
        "'-' (at most 128, starting with a letter or digit)"
    )


def safe_name_part(text: str, limit: int = 120) -> str:
    """``text`` made safe to be part of one file name: every character but letters, digits,
    '.', '_' and '-' becomes '_', and it starts with a letter or digit (so never '..' or a
    hidden file). Names from elsewhere (a dataset's file name, a stored study) go through it."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", str(text))[:limit]
    return safe if safe[:1].isalnum() else f"x{safe}"[:limit]


def shown_path(path, limit: int = 120) -> str:
    text = str(path)
    return text if len(text) <= limit else text[: limit // 2] + "..." + text[-limit // 2 :]
