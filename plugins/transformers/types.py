"""The model types of the installed transformers and the tasks zoo trains each for, read
from transformers' auto mappings (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` and its siblings).

Listing the zoo must import neither torch nor transformers, and importing
``transformers.models.auto`` imports torch (about 3 s), so the mappings are read from the
source of ``modeling_auto.py`` (plain literals: ``OrderedDict([("gpt2", "GPT2LMHeadModel"),
...])``) with ``ast``; where a future transformers writes them otherwise, the module itself
is imported. Parsing takes longer than the rest of ``zoo list``, so what it read is kept in
zoo's cache folder, keyed by the installed transformers (its version, and the file's path,
size and modification time), and read again only when that key changes.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

from zoo.plugin import ZooError
from zoo.plugin.io import atomic_write_text, cache_home

# transformers' mapping -> the zoo tasks a class of that mapping serves; the first mapping
# that has a type gives its next-item head: an encoder's masked LM reads the whole context
MAPPINGS = {
    "MODEL_FOR_MASKED_LM_MAPPING_NAMES": ("masked-language-modeling", "next-item"),
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES": ("language-modeling", "next-item"),
    "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES": ("classification",),
    "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES": ("seq2seq",),  # encoder-decoders
}
TASK_ORDER = (
    "language-modeling",
    "classification",
    "next-item",
    "masked-language-modeling",
    "seq2seq",
)
PREFIX = "hf-"
# The types zoo had before the generic adapter keep their short names as well, so the
# presets and the runs recorded under them resolve: name -> model type
SHORT_NAMES = {"gpt2": "gpt2", "llama": "llama", "bert": "bert"}


@functools.cache
def model_types() -> dict[str, dict[str, str]]:
    """Every model type with a causal-LM, sequence-classification, masked-LM or
    encoder-decoder (sequence-to-sequence LM) class:
    type -> zoo task -> the transformers class name (next-item takes the masked LM where
    there is one, else the causal LM)."""
    types: dict[str, dict[str, str]] = {}
    for mapping, names in _mappings().items():
        for model_type, class_name in names.items():
            for task in MAPPINGS[mapping]:
                types.setdefault(model_type, {}).setdefault(task, class_name)
    return {
        model_type: {task: tasks[task] for task in TASK_ORDER if task in tasks}
        for model_type, tasks in sorted(types.items())
    }


def architecture_names() -> dict[str, str]:
    """Every architecture the adapter registers: name -> model type."""
    names = {PREFIX + model_type: model_type for model_type in model_types()}
    names.update({short: t for short, t in SHORT_NAMES.items() if t in model_types()})
    return names


def model_type_of(architecture: str) -> str:
    """The transformers model type an architecture name stands for."""
    return SHORT_NAMES.get(architecture) or architecture.removeprefix(PREFIX)


CACHE_FORMAT = 1  # bump when what the cache file holds changes


def _mappings() -> dict[str, dict[str, str]]:
    try:
        source = _source()
        key = _cache_key(source)
    except OSError:
        return _imported()
    cached = _read_cache(key)
    if cached is not None:
        return cached
    try:
        found = _parsed(source)
    except (OSError, SyntaxError, ValueError, KeyError, AttributeError, IndexError):
        return _imported()
    _write_cache(key, found)
    return found


def _imported() -> dict[str, dict[str, str]]:
    from transformers.models.auto import modeling_auto

    return {name: dict(getattr(modeling_auto, name)) for name in MAPPINGS}


def _source() -> Path:
    spec = importlib.util.find_spec("transformers")  # finds the package, runs none of it
    if spec is None or spec.origin is None:
        raise OSError("transformers is not installed")
    return Path(spec.origin).parent / "models" / "auto" / "modeling_auto.py"


def _cache_key(source: Path) -> dict:
    """What the parsed mappings depend on: an upgrade changes the version, an edited or
    reinstalled file its size or modification time."""
    from importlib.metadata import version

    stat = source.stat()
    return {
        "format": CACHE_FORMAT,
        "transformers": version("transformers"),
        "path": str(source.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
    }


def cache_file() -> Path:
    return cache_home() / "transformers-types.json"


def _read_cache(key: dict) -> dict[str, dict[str, str]] | None:
    """The cached mappings if the cache was written for ``key``; None where it is missing,
    stale or damaged (it is then parsed again and rewritten)."""
    try:
        data = json.loads(cache_file().read_text(encoding="utf-8"))
        mappings = data["mappings"]
        if data["key"] != key or set(mappings) != set(MAPPINGS):
            return None
        return {name: _pairs(mappings[name]) for name in MAPPINGS}
    except (OSError, ValueError, KeyError, TypeError, ZooError):
        return None


def _pairs(names) -> dict[str, str]:
    if not isinstance(names, dict) or not all(
        isinstance(t, str) and isinstance(c, str) for t, c in names.items()
    ):
        raise TypeError("not a mapping of names")
    return names


def _write_cache(key: dict, mappings: dict[str, dict[str, str]]) -> None:
    """Kept for the next run where the cache folder is writable; listing never fails for
    want of it."""
    try:
        path = cache_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"key": key, "mappings": mappings}) + "\n")
    except (OSError, ZooError):
        pass


def _parsed(source: Path) -> dict[str, dict[str, str]]:
    import ast

    found = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name in MAPPINGS and isinstance(node.value, ast.Call):
            pairs = ast.literal_eval(node.value.args[0])
            found[name] = {str(t): str(c) for t, c in pairs}
    return {name: found[name] for name in MAPPINGS}
