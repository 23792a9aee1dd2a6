"""The `zoo` command line. Thin: it parses, calls the library, and prints.

Errors the user can fix exit 2 with one line; unexpected failures exit 1 with a short
message (the traceback only with --debug).
"""
from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys

from zoo import __version__
from zoo.errors import ZooError

LIST_KINDS = ("architectures", "tokenizers", "datasets", "models", "plugins")


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line with a did-you-mean, and exit code 2."""

    def error(self, message):
        if "invalid choice" in message:
            bad = message.split("'")[1] if "'" in message else ""
            choices = message.split("choose from")[-1]
            names = [c.strip(" '),") for c in choices.split(",")]
            close = difflib.get_close_matches(bad, names, n=1)
            if close:
                message += f". Did you mean: {close[0]}?"
        raise ZooError(message if self.prog == "zoo" else f"{self.prog}: {message}")


# -- zoo list ------------------------------------------------------------------------
def cmd_list(args) -> int:
    from zoo import listing
    from zoo.registry import get_zoo

    zoo = get_zoo()
    if args.matrix:
        table = listing.matrix(zoo)
        print(json.dumps(table, indent=2) if args.json else listing.format_matrix(table))
        return 0
    kinds = [args.kind] if args.kind else [k for k in LIST_KINDS if k != "plugins"]
    sections = {kind: listing.rows(zoo, kind, args.pattern) for kind in kinds}
    if args.json:
        print(json.dumps(sections if len(kinds) > 1 else sections[kinds[0]], indent=2))
        return 0
    for kind, rows in sections.items():
        print(listing.format_section(kind, rows))
    return 0


def cmd_show(args) -> int:
    from zoo import listing
    from zoo.registry import get_zoo

    print(listing.show(get_zoo(), args.name))
    return 0


# -- zoo run -------------------------------------------------------------------------
def cmd_run(args) -> int:
    from zoo.config import parse_assignment
    from zoo.runner import execute, plan_run

    overrides = dict(parse_assignment(item) for item in args.set or [])
    if args.steps is not None:
        overrides["train.steps"] = args.steps
    if args.time is not None:
        overrides["train.time"] = args.time
    if args.device not in ("auto", "cpu", "cuda"):
        raise ZooError(f"--device must be auto, cpu or cuda, not {args.device!r}")
    if args.compile:
        overrides["train.compile"] = True
    plan = plan_run(args.model, args.dataset, overrides=overrides, seed=args.seed, task=args.task)
    from zoo import distributed

    try:
        result = execute(plan, device=args.device, quiet=args.quiet or args.json,
                         text_column=args.text_column, label_column=args.label_column)
    finally:
        distributed.teardown()  # under torchrun: leave the process group cleanly
    if result.get("rank", 0) == 0:  # under torchrun, rank 0 speaks for the run
        print_result(result, args.json)
    return 0


def print_result(result: dict, as_json: bool) -> None:
    keys = ("run_id", "model", "architecture", "tokenizer", "dataset", "task", "status",
            "params", "seed", "metrics")
    if as_json:
        print(json.dumps({k: result.get(k) for k in keys}, default=_json_default))
        return
    print(f"run {result['run_id']}  {result['model']} on {result['dataset']} ({result['task']})  "
          f"status {result['status']}  {result['params']:,} parameters  "
          f"{result['duration']:.1f} s")
    metrics = result["metrics"]
    shown = [k for k in metrics if not isinstance(metrics[k], (dict, list))]
    for key in shown:
        value = metrics[key]
        print(f"  {key:<16} {value:.4f}" if isinstance(value, float) else f"  {key:<16} {value}")
    for i, sample in enumerate(result.get("samples") or []):
        lines = sample.strip("\n").splitlines()[:8]
        print(f"--- sample {i + 1} ---")
        print("\n".join(lines))
    print(f"saved in {result['run_dir']}")


def _json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


# -- zoo runs ------------------------------------------------------------------------
def cmd_runs(args) -> int:
    from zoo.listing import runs_table

    table = runs_table()
    if args.json:
        print(table.to_json(orient="records"))
    elif table.empty:
        print("no runs yet (zoo run MODEL DATASET starts one)")
    else:
        print(table.to_string(index=False))
    return 0


# -- zoo generate --------------------------------------------------------------------
def cmd_generate(args) -> int:
    from zoo.runner import load_trained

    trained = load_trained(args.run_id)
    if trained.task != "language-modeling":
        raise ZooError(f"run {trained.run_id} is a {trained.task} run; generate needs a "
                       "language-modeling run")
    from zoo.pipelines.language_modeling import generate

    if args.prompt:
        sys.stdout.write(args.prompt)
    for piece in generate(trained.model, trained.tokenizer, args.prompt, args.tokens,
                          trained.block_size, temperature=args.temperature, top_k=args.top_k,
                          seed=args.seed):
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")
    return 0


# -- zoo predict ---------------------------------------------------------------------
def cmd_predict(args) -> int:
    from zoo.registry import get_zoo
    from zoo.runner import load_trained

    if (args.text is None) == (args.file is None):
        raise ZooError("give either TEXT or --file FILE (one text per line)")
    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as handle:
                texts = [line.rstrip("\n") for line in handle if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise ZooError(f"cannot read --file {args.file}: {exc}") from None
    else:
        texts = [args.text]
    trained = load_trained(args.run_id)
    pipeline = get_zoo().pipelines.get(trained.task).load()
    predict = getattr(pipeline, "predict", None)
    if predict is None:
        raise ZooError(f"run {trained.run_id} is a {trained.task} run; predict needs a "
                       "classification or next-item run")
    for text, prediction in zip(texts, predict(trained, texts)):
        if args.json:
            print(json.dumps({"text": text, **prediction}))
        else:
            print(f"{prediction['label']}\t{prediction['probability']:.3f}")
    return 0


# -- parser --------------------------------------------------------------------------
class VersionAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        from zoo.registry import get_zoo

        print(f"zoo {__version__}")
        for info in get_zoo().plugins.values():
            state = f"set aside: {info.error}" if info.error else "loaded"
            print(f"  {info.name} {info.version or ''} ({info.source}, {state})")
        parser.exit(0)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def build_parser() -> Parser:
    parser = Parser(prog="zoo", description="A model zoo for small transformers: train, "
                    "evaluate and compare any architecture x tokenizer on any dataset.")
    parser.add_argument("--version", action=VersionAction, nargs=0,
                        help="print the version and the loaded plugins")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = commands.add_parser("list", help="list architectures, tokenizers, datasets, models, plugins",
                            description="List what the zoo holds, with descriptions and the "
                            "plugin each comes from.")
    p.add_argument("kind", nargs="?", choices=LIST_KINDS, help="list only this kind")
    p.add_argument("pattern", nargs="?", default="*", help="wildcard filter, e.g. '*-char'")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--matrix", action="store_true",
                   help="for every architecture x dataset, the task that would run or why not")
    p.set_defaults(handler=cmd_list)

    p = commands.add_parser("show", help="details of a model, architecture, tokenizer, dataset or run",
                            description="Show config fields with types and defaults, tasks, "
                            "and for a run its metrics and provenance.")
    p.add_argument("name", help="a model, architecture, tokenizer, dataset or run id")
    p.set_defaults(handler=cmd_show)

    p = commands.add_parser("run", help="train and evaluate MODEL on DATASET",
                            description="Train and evaluate a model on a dataset, record the "
                            "run in the store, and print a summary.")
    p.add_argument("model", help="a preset (zoo list models) or ARCHITECTURE-TOKENIZER")
    p.add_argument("dataset", help="a catalogue alias, a Hub id, or a local folder or file")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=positive_int, help="number of optimizer steps")
    budget.add_argument("--time", type=positive_float, metavar="SECONDS",
                        help="wall-clock training budget in seconds")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field (repeatable); 'zoo show MODEL' lists them")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model for training (same as --set compile=true)")
    p.add_argument("--task", help="force a task instead of choosing it from model and dataset")
    p.add_argument("--text-column", help="text column (detected by default)")
    p.add_argument("--label-column", help="label column (detected by default)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(handler=cmd_run)

    p = commands.add_parser("runs", help="list recorded runs", description="List recorded runs.")
    p.add_argument("--json", action="store_true", help="print JSON records")
    p.set_defaults(handler=cmd_runs)

    p = commands.add_parser("generate", help="sample text from a trained language model",
                            description="Reload a run's weights and tokenizer and stream text.")
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("--prompt", default="", help="text to continue")
    p.add_argument("--tokens", type=positive_int, default=300, help="tokens to generate")
    p.add_argument("--temperature", type=float, default=0.8, help="0 means greedy")
    p.add_argument("--top-k", type=positive_int, default=None, help="sample from the k likeliest")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.set_defaults(handler=cmd_generate)

    p = commands.add_parser("predict", help="predict with a trained classifier or next-item model",
                            description="Print the predicted label (or next item) and its "
                            "probability, one line per text.")
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("text", nargs="?", help="the text to classify, or the items to continue")
    p.add_argument("--file", help="read texts from FILE, one per line")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=cmd_predict)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv or os.environ.get("ZOO_DEBUG") == "1"
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "handler", None):
            build_parser().print_help()
            return 0
        return args.handler(args) or 0
    except ZooError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"zoo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("zoo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"zoo: unexpected error: {type(exc).__name__}: {exc} (run with --debug for the "
              "traceback)", file=sys.stderr)
        return 1
