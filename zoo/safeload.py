"""Loading files that may come from strangers: weights only from safetensors, configs
only from JSON, tokenizers only from tokenizer.json. Nothing here unpickles or runs code, and
every way a file can be broken (missing, truncated, not what it claims) is a ZooError naming
the file: one line, exit 2."""
from __future__ import annotations

import json
from pathlib import Path

from zoo.errors import ZooError


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def load_safetensors(path: Path) -> dict:
    """The tensors of a safetensors file as NumPy arrays; a missing, truncated or corrupt
    file (or one whose header lies) is a ``ZooError`` naming it. Never unpickles."""
    from safetensors.numpy import load

    path = Path(path)
    if not path.is_file():
        raise ZooError(f"No weights at {path}")
    try:
        # Read the bytes rather than mmap the file: a file that changes under us cannot
        # crash the process, and the parser sees exactly what was checked.
        return load(path.read_bytes())
    except Exception as exc:
        raise ZooError(f"{path} is not a valid safetensors file ({_first_line(exc)}); "
                       "weights are only ever read from safetensors") from None


def load_json(path: Path):
    """The JSON in a file; a missing, unreadable or malformed one is a ``ZooError`` naming
    it."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ZooError(f"{path} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ZooError(f"{path} is not valid JSON ({_first_line(exc)})") from None
    except RecursionError:
        raise ZooError(f"{path} is nested too deeply to be a zoo file") from None


def load_tokenizer(cls, path: Path):
    """``cls.load(path)`` for a tokenizer file, with a broken file as a ZooError."""
    path = Path(path)
    if not path.is_file():
        raise ZooError(f"No tokenizer at {path}")
    try:
        return cls.load(path)
    except Exception as exc:
        raise ZooError(f"{path} is not a valid tokenizer file ({_first_line(exc)})") from None
