"""Run ids and run folders are data, never paths to follow.

A run id, whether read from the results store (which anyone with the file can edit) or
typed by a user, names one folder directly under ZOO_HOME: it must match ``RUN_ID``
(letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit), so it holds no
``/`` and cannot be ``..``; and the folder must resolve inside ZOO_HOME, so a folder that
is a link to elsewhere is refused too. Every place that turns an id into a folder goes
through ``run_folder``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from zoo.errors import ZooError
from zoo.home import zoo_home  # noqa: F401  (where the runs folder is)

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SHOWN = 60  # characters of a bad id echoed back
MODEL_CARD = "model_card.md"  # in a run's folder: the card of its latest export (zoo export)


def check_run_id(run_id) -> str:
    """``run_id`` if it is a well-formed run id; a ZooError (one line) otherwise."""
    if isinstance(run_id, str) and RUN_ID.fullmatch(run_id):
        return run_id
    shown = repr(
        run_id if not isinstance(run_id, str) or len(run_id) <= SHOWN else run_id[:SHOWN] + "..."
    )
    raise ZooError(
        f"{shown} is not a run id: a run id is letters, digits, '.', '_' and '-' "
        "(at most 128, starting with a letter or digit); zoo runs lists them"
    )


def run_folder(run_id, home: Path | None = None) -> Path:
    """The folder of run ``run_id``: ZOO_HOME/ID, checked to be an id and to resolve inside
    ZOO_HOME (a link out of it is refused, never followed)."""
    base = Path(home) if home is not None else zoo_home()
    folder = base / check_run_id(run_id)
    inside = os.path.realpath(base)
    if os.path.commonpath([inside, os.path.realpath(folder)]) != inside:
        raise ZooError(
            f"run {run_id}: its folder {folder} leads outside the runs folder "
            f"({base}); refusing to follow it"
        )
    return folder
