"""`zoo generate`, `zoo predict`, `zoo eval` and `zoo export`: commands that use a trained run."""

from __future__ import annotations

import sys
import unicodedata

from zoo.cli.options import (
    RELOAD_DEVICE_HELP,
    add_column_options,
    batches_of_texts,
    positive_int,
    print_json,
    read_texts,
    temperature,
)
from zoo.core.limits import DEVICES, seed_argument
from zoo.errors import ZooError
from zoo.tasks import prediction_line, prediction_record


def cmd_generate(args) -> int:
    from zoo import api

    run = api.load(args.run_id, device=args.device)
    options = dict(
        temperature=args.temperature, top_k=args.top_k, seed=args.seed, cache=not args.no_cache
    )
    prompts = args.prompt or [""]
    if args.json:  # one object per prompt: the run, the prompt and the whole text
        texts = (
            run.generate(prompts, args.tokens, **options)
            if len(prompts) > 1
            else [run.generate(prompts[0], args.tokens, **options)]
        )
        for prompt, text in zip(prompts, texts):
            print_json(
                {
                    "run_id": run.id,
                    "prompt": prompt,
                    "text": text,
                    "tokens": args.tokens,
                    "seed": args.seed,
                }
            )
        return 0
    if len(prompts) == 1:  # one text: print it as it comes
        sys.stdout.write(prompts[0])
        for piece in run.generate(prompts[0], args.tokens, stream=True, **options):
            sys.stdout.write(piece)
            sys.stdout.flush()
        sys.stdout.write("\n")
        return 0
    texts = run.generate(prompts, args.tokens, **options)  # side by side, printed in turn
    sys.stdout.write("\n\n-----\n\n".join(texts) + "\n")
    return 0


def cmd_predict(args) -> int:
    from zoo import api

    texts = predict_texts(args.text, args.file)
    run = api.load(args.run_id, device=args.device)
    for group in batches_of_texts(texts):  # memory bounded by a group, not the whole input
        for text, prediction in zip(group, run.predict(group, beam=args.beam)):
            if args.json:  # strict JSON: NaN and infinities are null
                print_json({"text": text, **prediction_record(prediction)})
            else:  # the prediction's fields, then the text it answers
                print(f"{prediction_line(prediction)}\t{one_line(text)}")
    return 0


def one_line(text: str) -> str:
    """A text on one line of a tab-separated output: control characters (tabs, newlines,
    terminal escapes) written as escapes, so each text stays one line, one last column."""
    return "".join(
        char.encode("unicode_escape").decode("ascii")
        if unicodedata.category(char) == "Cc"
        else char
        for char in text
    )


def predict_texts(given: list[str], file: str | None) -> list[str]:
    """The texts of `zoo predict`: TEXT... as given, '-' (as TEXT or --file) for one text per
    line of the standard input, or --file FILE."""
    if bool(given) == (file is not None):
        raise ZooError(
            "give either TEXT or --file FILE (several texts, or one text per "
            "line; '-' reads the standard input)"
        )
    if given == ["-"]:
        file = "-"  # one text per line of the standard input, bounded as a file is
    return read_texts(file) if file is not None else list(given)


def cmd_eval(args) -> int:
    from zoo import api
    from zoo.cli.show_text import format_metrics

    result = api.evaluate(
        args.run_id,
        args.dataset,
        args.split,
        text_column=args.text_column,
        label_column=args.label_column,
        device=args.device,
    ).summary
    if args.json:
        print_json(result)
        return 0
    print(
        f"eval {result['run_id']}: run {result['parent_id']} ({result['model']}, trained on "
        f"{result['trained_on']}) scored on {result['dataset']} split {result['split']} "
        f"in {result['duration']:.1f} s"
    )
    print("\n".join(format_metrics(result["metrics"])))
    return 0


def cmd_export(args) -> int:
    from zoo import api

    done = api.export(
        args.run_id,
        args.folder,
        format=args.format,
        force=args.force,
        license=args.license,
        base_model=args.base_model,
    )
    if args.json:
        print_json(done.record())
        return 0
    print(
        f"exported run {done.run_id} to {done.folder} as {done.format}: "
        f"{done.summary}\nchecked on {done.compared} validation texts: the same "
        f"predictions as zoo, largest probability difference {done.max_difference:.2g}"
    )
    return 0


def add_generate_parser(commands) -> None:
    p = commands.add_parser(
        "generate",
        help="sample text from a trained language model",
        description="Reload a run's weights and tokenizer and stream text.",
    )
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument(
        "--prompt",
        action="append",
        default=None,
        help="text to continue (repeat for several, sampled as one batch)",
    )
    p.add_argument("--tokens", type=positive_int, default=300, help="tokens to generate")
    p.add_argument("--temperature", type=temperature, default=0.8, help="0 means greedy")
    p.add_argument("--top-k", type=positive_int, default=None, help="sample from the k likeliest")
    p.add_argument("--seed", type=seed_argument, default=0, help="sampling seed")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="recompute the whole context for every token (no key/value cache)",
    )
    p.add_argument("--device", default="auto", choices=DEVICES, help=RELOAD_DEVICE_HELP)
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per prompt (run_id, prompt, text), printed when each text is done",
    )
    p.set_defaults(handler=cmd_generate)


def add_predict_parser(commands) -> None:
    p = commands.add_parser(
        "predict",
        help="predict with a trained run whose task offers predict",
        description="Print the predicted label (or next item), its "
        "probability and the text, tab-separated, one line per text "
        "(--json: one object per text, with the text).",
    )
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument(
        "text",
        nargs="*",
        help="texts to classify, or items to continue (several "
        "are predicted as one batch); '-' reads one text per line from stdin",
    )
    p.add_argument("--file", help="read texts from FILE, one per line ('-': stdin)")
    p.add_argument("--device", default="auto", choices=DEVICES, help=RELOAD_DEVICE_HELP)
    p.add_argument(
        "--beam",
        type=int,
        metavar="N",
        help="beam size for a run that writes text (a translation; 1 is greedy); default: the "
        "beam the run itself decodes with",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=cmd_predict)


def add_eval_parser(commands) -> None:
    p = commands.add_parser(
        "eval",
        help="score a trained run on another dataset or split",
        description="Evaluate a trained run with its task's pipeline on a "
        "split of any dataset, and record it as an evaluation row linked to "
        "the run (zoo compare --evals shows them).",
    )
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("dataset", help="a catalogue alias, a Hub id, or a local folder or file")
    p.add_argument(
        "--split",
        default="test",
        help="split to score: train, validation, test "
        "or a split name of the dataset (default test)",
    )
    add_column_options(p)
    p.add_argument("--device", default="auto", choices=DEVICES, help=RELOAD_DEVICE_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=cmd_eval)


def add_export_parser(commands) -> None:
    p = commands.add_parser(
        "export",
        help="write a run as a folder that loads without zoo (transformers or ONNX)",
        description="Write a trained run as a folder that loads with no zoo installed: a "
        "transformers model (from_pretrained) where transformers has the same layout "
        "(decoder and numpy runs map onto GPT-2, encdec runs onto Pegasus; runs of "
        "transformers' own types, hf-* with gpt2, llama and bert, are saved as they are), otherwise an ONNX graph that onnxruntime runs (--format onnx for any run); "
        "the tokenizer as tokenizer.json, and a model card (README.md) in the Hugging Face "
        "Hub's layout. Before the folder is moved into place it is loaded as a user without "
        "zoo would, and its predictions on 32 validation texts are compared with zoo's: the "
        "same predictions (labels, tokens, translations) and probabilities within 1e-4, or "
        "nothing is written (exit 2).",
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
        help="the license the model card names, a Hub license identifier such as apache-2.0 "
        "or mit ('other' for one the Hub does not list; default: the base model's, else "
        "unknown)",
    )
    p.add_argument(
        "--base-model",
        help="the Hub id (or the zoo run id) of the checkpoint a fine-tuned run started from, "
        "where its folder names none",
    )
    p.add_argument("--force", action="store_true", help="replace an existing folder there, whole")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=cmd_export)


def add_commands(commands) -> None:
    add_generate_parser(commands)
    add_predict_parser(commands)
    add_eval_parser(commands)
    add_export_parser(commands)
