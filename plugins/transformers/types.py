"""The model types of the installed transformers and the tasks zoo trains each for, read
from transformers' auto mappings (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` and its siblings).

Listing the zoo must import neither torch nor transformers, and importing
``transformers.models.auto`` imports torch (about 3 s), so the mappings are read from the
source of ``modeling_auto.py`` (plain literals: ``OrderedDict([("gpt2", "GPT2LMHeadModel"),
...])``) with ``ast``, in about 30 ms; where a future transformers writes them otherwise,
the module itself is imported.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

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


def _mappings() -> dict[str, dict[str, str]]:
    try:
        return _parsed()
    except (OSError, SyntaxError, ValueError, KeyError, AttributeError, IndexError):
        from transformers.models.auto import modeling_auto

        return {name: dict(getattr(modeling_auto, name)) for name in MAPPINGS}


def _parsed() -> dict[str, dict[str, str]]:
    spec = importlib.util.find_spec("transformers")  # finds the package, runs none of it
    if spec is None or spec.origin is None:
        raise OSError("transformers is not installed")
    source = Path(spec.origin).parent / "models" / "auto" / "modeling_auto.py"
    found = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name in MAPPINGS and isinstance(node.value, ast.Call):
            pairs = ast.literal_eval(node.value.args[0])
            found[name] = {str(t): str(c) for t, c in pairs}
    return {name: found[name] for name in MAPPINGS}
