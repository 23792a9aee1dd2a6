"""Loading files that may come from strangers: weights only from safetensors, configs
only from JSON. Nothing here unpickles or runs code."""
from __future__ import annotations

from pathlib import Path

from zoo.errors import ZooError


def load_safetensors(path: Path) -> dict:
    from safetensors.numpy import load_file

    path = Path(path)
    if not path.is_file():
        raise ZooError(f"No weights at {path}")
    try:
        return load_file(str(path))
    except Exception as exc:
        raise ZooError(f"{path} is not a valid safetensors file: "
                       f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
