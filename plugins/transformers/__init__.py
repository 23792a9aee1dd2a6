"""`gpt2`, `llama` and `bert` architecture plugin: Hugging Face transformers' models, built
from scratch from their config classes or started from a ``save_pretrained`` checkpoint, and
the `pretrained` tokenizer that uses a checkpoint's own tokenizer.

Nothing here imports transformers or torch, so listing the zoo stays fast: the configs
(``configs.py``, made from transformers' config classes), the networks (``model.py``), the
tokenizer (``tokenizer.py``) and the ``zoo export`` command (``export.py``) load on first use.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from zoo.plugin import hookimpl

ARCHITECTURES = {
    "gpt2": (
        ("language-modeling", "classification", "next-item"),
        "transformers GPT-2 (pre-LN, learned positions, GELU MLP, tied head)",
    ),
    "llama": (
        ("language-modeling", "classification", "next-item"),
        "transformers Llama (pre-RMSNorm, rotary positions, SwiGLU MLP)",
    ),
    "bert": (
        ("classification", "next-item", "masked-language-modeling"),
        "transformers BERT (post-LN bidirectional encoder, [CLS] pooler)",
    ),
}


@dataclass
class PretrainedTokenizerConfig:
    # the save_pretrained folder or Hub id whose tokenizer to use; the transformers
    # architectures read the same key, so one --set pretrained=... sets both
    pretrained: str = field(default="", metadata={"shared": True})

    def __post_init__(self):
        if not self.pretrained:
            raise ValueError("the pretrained tokenizer needs --set pretrained=PATH_OR_HUB_ID")
        folder = Path(self.pretrained).expanduser()
        if folder.is_dir() and not (folder / "tokenizer.json").is_file():
            raise ValueError(
                f"{folder} has no tokenizer.json (a fast tokenizer, as "
                "save_pretrained writes it); use a tokenizer zoo trains instead"
            )


@hookimpl
def register_architectures(register):
    for name, (tasks, description) in ARCHITECTURES.items():
        register(
            name,
            "zoo.plugins.transformers.model:build",
            config=f"zoo.plugins.transformers.configs:{name.title()}Config",
            tasks=tasks,
            description=description,
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
def register_commands(register):
    register(
        "export",
        "zoo.plugins.transformers.export:command",
        arguments=export_arguments,
        help="write a run as a folder transformers loads (from_pretrained)",
        description="Write a trained run as a Hugging Face transformers folder: weights "
        "(safetensors), config.json and a fast tokenizer, which "
        "AutoModelForCausalLM (or AutoModelForSequenceClassification) and AutoTokenizer "
        ".from_pretrained(DIR) load with no zoo installed. Decoder runs map onto GPT-2; "
        "gpt2, llama and bert runs are saved as they are. What has no transformers "
        "counterpart exits 2 saying why.",
    )


def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", help="run id (or a unique prefix)")
    parser.add_argument(
        "folder", help="where to write it (new or empty); written whole or not at all"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an existing folder there, whole"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
