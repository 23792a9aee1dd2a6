"""`zoo export`: a trained run as a folder that loads without zoo."""

from __future__ import annotations

from zoo.cli.options import print_json


def cmd_export(args) -> int:
    from zoo.records.export import export_run

    done = export_run(
        args.run_id,
        args.folder,
        format=args.format,
        force=args.force,
        license=args.license,
        base_model=args.base_model,
    )
    if args.json:
        print_json(done)
        return 0
    print(
        f"exported run {done['run_id']} to {done['folder']} as {done['format']}: "
        f"{done['summary']}\nchecked on {done['compared']} validation texts: the same "
        f"labels as zoo, largest probability difference {done['max_difference']:.2g}"
    )
    return 0


def add_commands(commands) -> None:
    p = commands.add_parser(
        "export",
        help="write a run as a folder that loads without zoo (transformers or ONNX)",
        description="Write a trained run as a folder that loads with no zoo installed: a "
        "transformers model (from_pretrained) where transformers has the same layout "
        "(decoder and numpy runs map onto GPT-2; gpt2, llama and bert runs are saved as they "
        "are), otherwise an ONNX graph that onnxruntime runs (--format onnx for any run); "
        "the tokenizer as tokenizer.json, and a model card (README.md) in the Hugging Face "
        "Hub's layout. Before the folder is moved into place it is loaded as a user without "
        "zoo would, and its predictions on 32 validation texts are compared with zoo's: the "
        "same labels and probabilities within 1e-4, or nothing is written (exit 2).",
    )
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("folder", help="where to write it (new or empty); written whole or not at all")
    p.add_argument(
        "--format",
        help="onnx, transformers, or a format a plugin adds (default: the first format for "
        "the run's architecture, transformers where it maps, else onnx)",
    )
    p.add_argument(
        "--license",
        help="the license the model card names (default: the base model's, else unknown)",
    )
    p.add_argument(
        "--base-model",
        help="the Hub id of the checkpoint a fine-tuned run started from, where its folder "
        "names none",
    )
    p.add_argument("--force", action="store_true", help="replace an existing folder there, whole")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=cmd_export)
