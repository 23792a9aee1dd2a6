"""Files a plugin writes or reads: written atomically (whole or not at all), read with
checks (a damaged or hostile file is one ``ZooError`` line, never a traceback); and zoo's
cache folder, for what a plugin can rebuild."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import lazy_names

_LAZY = {
    "load_json": "zoo.io",
    "load_safetensors": "zoo.io",
    "atomic_write_text": "zoo.io",
    "atomic_folder": "zoo.atomic_folders",
    "check_new_folder": "zoo.atomic_folders",
    "natural_key": "zoo.core.kinds",
    "cache_home": "zoo.home",
}

if TYPE_CHECKING:  # what _LAZY imports on first use, spelled out for readers and the reference
    from zoo.atomic_folders import atomic_folder, check_new_folder
    from zoo.core.kinds import natural_key
    from zoo.home import cache_home
    from zoo.io import atomic_write_text, load_json, load_safetensors

__all__ = [
    "load_json",
    "load_safetensors",
    "atomic_write_text",
    "atomic_folder",
    "check_new_folder",
    "natural_key",
    "cache_home",
]

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
