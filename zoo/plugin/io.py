"""Files a plugin writes or reads: written atomically (whole or not at all), read with
checks (a damaged or hostile file is one ``ZooError`` line, never a traceback)."""

from __future__ import annotations

from zoo.lazy import lazy_names

_LAZY = {
    "load_json": "zoo.io",
    "atomic_write_text": "zoo.io",
    "atomic_folder": "zoo.atomic_folders",
    "check_new_folder": "zoo.atomic_folders",
    "natural_key": "zoo.core.kinds",
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
