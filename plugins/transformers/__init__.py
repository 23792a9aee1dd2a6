"""The `hf-<type>` architectures: every model type of the installed Hugging Face transformers
with a causal-LM, sequence-classification or masked-LM class (``hf-mamba``, ``hf-qwen2``,
``hf-deberta-v2``, ...; ``gpt2``, ``llama`` and ``bert`` also by their short names), built
from scratch from their config classes or started from a ``save_pretrained`` checkpoint, and
the `pretrained` tokenizer that uses a checkpoint's own tokenizer.

Nothing here imports transformers or torch, so listing the zoo stays fast: the types are
read from transformers' source (``types.py``); the configs (``configs.py``, made from
transformers' config classes), the networks (``model.py``), the tokenizer (``tokenizer.py``)
and the ``transformers`` export format (``export.py``) load on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zoo.plugins.transformers.types import architecture_names, model_type_of, model_types

from zoo.plugin import hookimpl

# the short names' own descriptions; every other architecture names its classes
DESCRIPTIONS = {
    "gpt2": "transformers GPT-2 (pre-LN, learned positions, GELU MLP, tied head)",
    "llama": "transformers Llama (pre-RMSNorm, rotary positions, SwiGLU MLP)",
    "bert": "transformers BERT (post-LN bidirectional encoder, [CLS] pooler)",
}


def description(architecture: str) -> str:
    if architecture in DESCRIPTIONS:
        return DESCRIPTIONS[architecture]
    classes = dict.fromkeys(model_types()[model_type_of(architecture)].values())
    return f"transformers {', '.join(classes)}, trained from scratch at zoo's shapes"


@dataclass
class PretrainedTokenizerConfig:
    # the save_pretrained folder or Hub id whose tokenizer to use; the transformers
    # architectures read the same key, so one --set pretrained=... sets both
    pretrained: str = field(default="", metadata={"shared": True})

    def __post_init__(self):
        if not self.pretrained:
            raise ValueError("the pretrained tokenizer needs the setting pretrained=PATH_OR_HUB_ID")
        folder = Path(self.pretrained).expanduser()
        if folder.is_dir() and not (folder / "tokenizer.json").is_file():
            raise ValueError(
                f"{folder} has no tokenizer.json (a fast tokenizer, as "
                "save_pretrained writes it); use a tokenizer zoo trains instead"
            )


@hookimpl
def register_architectures(register):
    for name, model_type in architecture_names().items():
        register(
            name,
            "zoo.plugins.transformers.model:build",
            config=f"zoo.plugins.transformers.configs:{name}",
            tasks=tuple(model_types()[model_type]),
            description=description(name),
        )


@hookimpl
def register_tokenizers(register):
    register(
        "pretrained",
        "zoo.plugins.transformers.tokenizer:PretrainedTokenizer",
        config=PretrainedTokenizerConfig,
        description="a checkpoint's own tokenizer (--set pretrained=PATH_OR_HUB_ID)",
    )


@hookimpl
def register_exporters(register):
    register(
        "transformers",
        "zoo.plugins.transformers.export:TransformersExporter",
        architectures=("decoder", "numpy", "encdec", "mamba", *architecture_names()),
        description="a folder transformers loads with from_pretrained (decoder and numpy "
        "runs in GPT-2's layout, encdec runs in Pegasus's, mamba runs in Mamba's)",
    )
