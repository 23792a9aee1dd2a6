"""`zoo export` and the `onnx` format: a trained run as a folder that loads without zoo.

``zoo export RUN DIR`` writes the run in the format ``--format`` names, or by default the
first format that names the run's architecture (``transformers`` for the architectures it
maps) and otherwise ``onnx``, for any architecture whose network traces. Formats are
``register_exporters`` registrations (zoo.hookspecs): a plugin adds its own the same way.
Nothing here imports torch; the command (``command.py``) and the format (``onnx.py``) load
on first use.
"""

from __future__ import annotations

import argparse

from zoo.plugin import hookimpl


@hookimpl
def register_exporters(register):
    register(
        "onnx",
        "zoo.plugins.export.onnx:OnnxExporter",
        architectures=("*",),
        description="model.onnx (onnxruntime) and tokenizer.json, for any network that traces",
    )


@hookimpl
def register_commands(register):
    register(
        "export",
        "zoo.plugins.export.command:command",
        arguments=export_arguments,
        help="write a run as a folder that loads without zoo (transformers or ONNX)",
        description="Write a trained run as a folder that loads with no zoo installed: a "
        "transformers model (from_pretrained) where transformers has the same layout "
        "(decoder and numpy runs map onto GPT-2; gpt2, llama and bert runs are saved as they "
        "are), otherwise an ONNX graph that onnxruntime runs; the tokenizer as "
        "tokenizer.json, and a model card (README.md) in the Hugging Face Hub's layout. "
        "Before the folder is moved into place, it is loaded as a user without zoo would and "
        "its predictions on 32 validation texts are compared with zoo's: the same labels, "
        "probabilities within 1e-4, or nothing is written (exit 2).",
    )


def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", help="run id (or a unique prefix)")
    parser.add_argument(
        "folder", help="where to write it (new or empty); written whole or not at all"
    )
    parser.add_argument(
        "--format",
        help="the format: onnx, transformers, or one a plugin adds (default: transformers "
        "where the architecture maps onto it, else onnx)",
    )
    parser.add_argument(
        "--license",
        help="the license named in the model card (default: the base model's, else unknown)",
    )
    parser.add_argument(
        "--base-model",
        help="the Hub id of the checkpoint a fine-tuned run started from, where its folder "
        "does not name one",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an existing folder there, whole"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
