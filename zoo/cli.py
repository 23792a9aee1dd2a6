"""The `zoo` command line. Thin: it parses, calls the library, and prints.

Errors the user can fix exit 2 with one line; unexpected failures exit 1 with a short
message (the traceback only with --debug).
"""
from __future__ import annotations

import argparse
import difflib
import io
import json
import math
import os
import sys

from zoo import __version__, gc_tuning
from zoo.bounds import DEVICES, seed_argument
from zoo.errors import PluginError, SweepInterrupted, ZooError
from zoo.tasks import prediction_line, prediction_record

LIST_KINDS = ("architectures", "tokenizers", "datasets", "models", "pipelines", "plugins")


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
    from zoo.plan import plan_run
    from zoo.runner import execute

    overrides = dict(parse_assignment(item) for item in args.set or [])
    if args.steps is not None:
        overrides["train.steps"] = args.steps
    if args.time is not None:
        overrides["train.time"] = args.time
    if args.compile:
        overrides["train.compile"] = True
    plan = plan_run(args.model, args.dataset, overrides=overrides, seed=args.seed, task=args.task,
                    text_column=args.text_column, label_column=args.label_column, init=args.init)
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
    if result.get("curve"):
        print(f"training curve: {result['curve']}")
    elif result.get("curve_error"):
        print(f"training curve: not drawn ({result['curve_error']})")


def _json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


# -- zoo resume ----------------------------------------------------------------------
def cmd_resume(args) -> int:
    from zoo.resume import resume

    result = resume(args.run_id, quiet=args.quiet or args.json)
    print_result(result, args.json)
    return 0


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


RELOAD_DEVICE_HELP = ("where the reloaded run computes: auto (CUDA when present, as zoo run "
                      "picks; the default), cpu or cuda")


# -- zoo generate --------------------------------------------------------------------
def cmd_generate(args) -> int:
    from zoo.registry import get_zoo
    from zoo.trained import load_trained

    trained = load_trained(args.run_id, device=args.device)
    generate = getattr(get_zoo().pipelines.get(trained.task).load(), "generate", None)
    if generate is None:
        raise ZooError(f"run {trained.run_id} is a {trained.task} run, and the {trained.task} "
                       "pipeline offers no generation")
    prompts = args.prompt or [""]
    options = dict(temperature=args.temperature, top_k=args.top_k, seed=args.seed)
    if args.no_cache:  # only then: a pipeline's generate need not know the option
        options["cache"] = False
    if len(prompts) == 1:  # one text: print it as it comes
        sys.stdout.write(prompts[0])
        for piece in generate(trained, prompts[0], args.tokens, **options):
            sys.stdout.write(piece)
            sys.stdout.flush()
        sys.stdout.write("\n")
        return 0
    texts = list(prompts)  # several: sampled side by side, printed one after another
    for row, piece in generate(trained, prompts, args.tokens, **options):
        texts[row] += piece
    sys.stdout.write("\n\n-----\n\n".join(texts) + "\n")
    return 0


# -- zoo predict ---------------------------------------------------------------------
def cmd_predict(args) -> int:
    from zoo.registry import get_zoo
    from zoo.trained import load_trained

    if (args.text is None) == (args.file is None):
        raise ZooError("give either TEXT or --file FILE (one text per line)")
    if args.file is not None:
        texts = read_texts(args.file)
    else:
        texts = [args.text]
    trained = load_trained(args.run_id, device=args.device)
    pipeline = get_zoo().pipelines.get(trained.task).load()
    predict = getattr(pipeline, "predict", None)
    if predict is None:
        raise ZooError(f"run {trained.run_id} is a {trained.task} run, and the {trained.task} "
                       "pipeline offers no prediction")
    for text, prediction in zip(texts, predict(trained, texts)):
        if args.json:  # strict JSON: NaN and infinities are null
            print(json.dumps({"text": text, **prediction_record(prediction)}, allow_nan=False))
        else:
            print(prediction_line(prediction))
    return 0


# -- zoo compare ---------------------------------------------------------------------
def _status_list(text: str) -> tuple[str, ...]:
    from zoo.store import STATUSES

    wanted = tuple(s.strip() for s in text.split(",") if s.strip())
    for status in wanted:
        if status != "all" and status not in STATUSES:
            raise ZooError(f"--status {status!r}: expected any of {', '.join(STATUSES)} or all")
    return wanted


def comparison_from_args(args, frame=None):
    from zoo.comparison import load_runs, summarize

    return summarize(load_runs() if frame is None else frame, metric=args.metric,
                     where=args.where, by=args.by, columns=args.columns, baseline=args.baseline,
                     evals=args.evals, status=_status_list(args.status), better=args.better,
                     pool=args.pool)


def emit_comparison(comparison, fmt: str, output: str | None, plot: str | None) -> None:
    from zoo.comparison import render

    text = render(comparison, fmt)
    if plot:
        from zoo.plots import comparison_bars, save

        save(comparison_bars(comparison), plot)
        print(f"wrote {plot}", file=sys.stderr)
    if output and output != "-":
        from zoo.outputs import write_output

        write_output(output, text)
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def cmd_compare(args) -> int:
    emit_comparison(comparison_from_args(args), args.format, args.output, args.plot)
    return 0


def add_compare_options(p, *, sweep: bool = False) -> None:
    from zoo.comparison import FORMATS

    p.add_argument("--metric", help="any recorded metric, or params, duration, tokens_per_s "
                   "(default: the task's primary metric, val_bpc or test_accuracy)")
    p.add_argument("--by", metavar="KEYS", help="run columns for the rows, comma-separated "
                   "(default model; with --evals model,trained_on)")
    p.add_argument("--columns", metavar="KEYS", help="run columns for the columns "
                   "(default dataset; with --evals dataset,split)")
    p.add_argument("--baseline", metavar="MODEL", help="add the difference to this row with "
                   "a 95%% confidence interval over seeds")
    p.add_argument("--format", default="table", choices=FORMATS, help="output format")
    p.add_argument("--output", metavar="FILE", help="write the table to FILE instead of stdout "
                   "(a symlink's target is written; a device or FIFO is streamed to)")
    p.add_argument("--plot", metavar="PNG", help="also draw grouped bars with error bars")
    p.add_argument("--better", choices=("lower", "higher"), help="which direction is best "
                   "(default: from the metric's name)")
    p.add_argument("--pool", action="store_true", help="pool runs whose settings differ "
                   "(by default they are separate rows, labelled by what differs)")
    if not sweep:
        p.add_argument("--where", metavar="EXPR", help="a condition over run columns, e.g. "
                       "\"architecture == 'decoder' and params < 1e6\"")
        p.add_argument("--evals", action="store_true", help="compare evaluation rows "
                       "(zoo eval) instead of training runs")
        p.add_argument("--status", default="finished", help="statuses to include, "
                       "comma-separated, or all (default finished)")


# -- zoo sweep -----------------------------------------------------------------------
def cmd_sweep(args) -> int:
    from zoo.config import parse_assignment
    from zoo import sweeps
    from zoo.executors import make_executor

    log = io.StringIO() if args.quiet or args.json else sys.stderr  # plan, progress, summary
    overrides = dict(parse_assignment(item) for item in args.set or [])
    if args.steps is not None:
        overrides["train.steps"] = args.steps
    if args.time is not None:
        overrides["train.time"] = args.time
    executor = make_executor(args.jobs, args.executor, args.address, args.cell_cpus,
                             args.cell_gpus, args.device)  # before planning: no Ray fails now
    plan = sweeps.plan_sweep(args.models, args.on, seeds=args.seeds, overrides=overrides,
                             task=args.task, grid=sweeps.parse_grid(args.grid))
    for line in sweeps.describe_plan(plan):
        print(line, file=log)
    if args.baseline is not None and args.baseline.split(" (")[0] not in plan.models:
        from zoo.errors import UnknownNameError

        raise UnknownNameError("baseline model", args.baseline, plan.models,
                               hint="it must be one of the sweep's models")
    if not plan.todo and not plan.finished_before:
        reasons = "; ".join(line.strip() for line in sweeps.describe_plan(plan)[1:])
        raise ZooError(f"no cell of the sweep can run ({reasons})")
    if args.dry_run:
        if args.json:
            print(json.dumps({"cells": sweeps.records(plan)}, default=_json_default))
            return 0
        for cell in plan.cells:
            state = (f"skip: {cell.skip}" if cell.skip else f"done: run {cell.done}" if cell.done
                     else "to run")
            print(f"{cell.name}\t{state}")
        return 0
    sweeps.run_sweep(plan, device=args.device, quiet=not args.verbose or args.json, out=log,
                     executor=executor)
    print(sweeps.summary(plan), file=log)
    comparison = None
    if any(c.status == "finished" or c.done for c in plan.cells):
        args.where, args.evals, args.status = None, False, "finished"
        from zoo.comparison import load_runs

        frame = load_runs()
        frame = frame[frame["config_hash"].isin(plan.hashes)]
        comparison = comparison_from_args(args, frame)
    if args.json:
        from zoo.comparison import render

        table = json.loads(render(comparison, "json")) if comparison is not None else []
        print(json.dumps({"cells": sweeps.records(plan), "comparison": table},
                         default=_json_default))
    elif comparison is not None:
        emit_comparison(comparison, args.format, args.output, args.plot)
    return 1 if plan.failed else 0


# -- zoo eval ------------------------------------------------------------------------
def cmd_eval(args) -> int:
    from zoo.evaluation import evaluate_run

    result = evaluate_run(args.run_id, args.dataset, args.split, text_column=args.text_column,
                          label_column=args.label_column, device=args.device)
    if args.json:
        print(json.dumps(result, default=_json_default))
        return 0
    print(f"eval {result['run_id']}: run {result['parent_id']} ({result['model']}, trained on "
          f"{result['trained_on']}) scored on {result['dataset']} split {result['split']} "
          f"in {result['duration']:.1f} s")
    from zoo.listing import format_metrics

    print("\n".join(format_metrics(result["metrics"])))
    return 0


# -- zoo plot ------------------------------------------------------------------------
def cmd_plot(args) -> int:
    from zoo.job import RunFolder
    from zoo.plots import run_labels, save, training_curves
    from zoo.store import Store, home

    with Store() as store:
        rows = [store.get(run_id) for run_id in args.run_ids]
    runs = []
    for row, label in zip(rows, run_labels(rows)):
        records = RunFolder(home() / row["id"]).curve()
        if not records:
            raise ZooError(f"run {row['id']} has no training curve (no metrics.jsonl in "
                           f"{home() / row['id']})")
        runs.append({"label": label, "records": records})
    tasks = {row["task"] for row in rows}  # units and validation metric: the task's declaration
    save(training_curves(runs, args.metric, args.x, task=tasks.pop() if len(tasks) == 1 else None),
         args.output)
    if args.output != "-":
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


# -- zoo reproduce -------------------------------------------------------------------
def cmd_reproduce(args) -> int:
    from zoo.reproduce import reproduce

    report = reproduce(args.run_id, device=args.device, quiet=args.quiet or args.json)
    if args.json:
        print(json.dumps(report, default=_json_default))
        return 0 if report["match"] else 1
    print(f"reproduced run {report['run_id']} as run {report['rerun_id']}")
    width = max([len(line["metric"]) for line in report["metrics"]] + [6])
    for line in report["metrics"]:
        mark = "same" if line["same"] else "DIFFERENT"
        print(f"  {line['metric']:<{width}}  {line['original']!s:<22} {line['rerun']!s:<22} {mark}")
    if report["excluded"]:
        print(f"  (timing, not compared: {', '.join(report['excluded'])})")
    for note in report["notes"]:
        print(f"  note: {note}")
    print("metrics match exactly" if report["match"] else "metrics DIFFER")
    return 0 if report["match"] else 1


# -- parser --------------------------------------------------------------------------
class VersionAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        from zoo.registry import get_zoo

        print(f"zoo {__version__}")
        for info in get_zoo().plugins.values():
            state = f"set aside: {info.error}" if info.error else "loaded"
            print(f"  {info.name} {info.version or ''} ({info.source}, {state})")
        parser.exit(0)


def add_output_options(p, *, quiet_to=None, quiet_help: str = "no progress output",
                       json_help: str = "print one JSON object on stdout") -> None:
    """--quiet and --json, alike on every command that trains (run, resume, sweep, reproduce)."""
    (quiet_to or p).add_argument("--quiet", action="store_true", help=quiet_help)
    p.add_argument("--json", action="store_true", help=json_help)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def temperature(text: str) -> float:
    """--temperature: zero (greedy) or a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected 0 (greedy) or a positive number, got "
                                         f"{text!r}")
    return value


def read_texts(path: str) -> list[str]:
    """predict --file: one text per line; blank lines skipped, size bounded."""
    from zoo.bounds import MAX_PREDICT_BYTES, MAX_PREDICT_LINES, check_file_size

    check_file_size(path, MAX_PREDICT_BYTES, "--file")
    try:
        with open(path, encoding="utf-8") as handle:
            texts = [line.rstrip("\n") for line in handle if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise ZooError(f"cannot read --file {path}: {reason}") from None
    if not texts:
        raise ZooError(f"--file {path} has no texts (every line is blank); put one text "
                       "per line")
    if len(texts) > MAX_PREDICT_LINES:
        raise ZooError(f"--file {path} has {len(texts):,} texts; at most "
                       f"{MAX_PREDICT_LINES:,}")
    return texts


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def build_parser() -> Parser:
    from zoo.registry import get_zoo

    parser = Parser(prog="zoo", description="A model zoo for small transformers: train, "
                    "evaluate and compare any architecture x tokenizer on any dataset.")
    parser.add_argument("--version", action=VersionAction, nargs=0,
                        help="print the version and the loaded plugins")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = commands.add_parser("list", help="list architectures, tokenizers, datasets, models, "
                            "pipelines (one per task), plugins",
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
    p.add_argument("--seed", type=seed_argument, default=0, help="random seed (default 0)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field (repeatable); 'zoo show MODEL' lists them")
    p.add_argument("--device", default="auto", choices=DEVICES,
                   help="auto (CUDA when present, the default), cpu or cuda")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model for training (same as --set compile=true)")
    p.add_argument("--task", help="force a task instead of choosing it from model and dataset")
    p.add_argument("--text-column", help="text column (detected by default)")
    p.add_argument("--label-column", help="label column (detected by default)")
    p.add_argument("--init", metavar="RUN_ID",
                   help="start from a finished run: its tokenizer and every weight whose name "
                   "and shape match (other tasks and datasets too); new heads start fresh")
    add_output_options(p)
    p.set_defaults(handler=cmd_run)

    p = commands.add_parser("resume", help="continue an interrupted run from its last checkpoint",
                            description="Continue an interrupted or failed run from its newest "
                            "good checkpoint, in the same folder and store row; ends with the "
                            "same summary as zoo run. Refuses if the config, dataset, tokenizer "
                            "or zoo version changed.")
    p.add_argument("run_id", help="run id (or a unique prefix)")
    add_output_options(p)
    p.set_defaults(handler=cmd_resume)

    p = commands.add_parser("runs", help="list recorded runs", description="List recorded runs.")
    p.add_argument("--json", action="store_true", help="print JSON records")
    p.set_defaults(handler=cmd_runs)

    p = commands.add_parser("generate", help="sample text from a trained language model",
                            description="Reload a run's weights and tokenizer and stream text.")
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("--prompt", action="append", default=None,
                   help="text to continue (repeat for several, sampled as one batch)")
    p.add_argument("--tokens", type=positive_int, default=300, help="tokens to generate")
    p.add_argument("--temperature", type=temperature, default=0.8, help="0 means greedy")
    p.add_argument("--top-k", type=positive_int, default=None, help="sample from the k likeliest")
    p.add_argument("--seed", type=seed_argument, default=0, help="sampling seed")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute the whole context for every token (no key/value cache)")
    p.add_argument("--device", default="auto", choices=DEVICES, help=RELOAD_DEVICE_HELP)
    p.set_defaults(handler=cmd_generate)

    p = commands.add_parser("predict", help="predict with a trained run whose task offers predict",
                            description="Print the predicted label (or next item) and its "
                            "probability, one line per text.")
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("text", nargs="?", help="the text to classify, or the items to continue")
    p.add_argument("--file", help="read texts from FILE, one per line")
    p.add_argument("--device", default="auto", choices=DEVICES, help=RELOAD_DEVICE_HELP)
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=cmd_predict)


    p = commands.add_parser("compare", help="compare runs: models x datasets, mean ± std over seeds",
                            description="A pivot of the recorded runs: by default rows are models, "
                            "columns datasets, and each cell the task's primary metric (val_bpc, "
                            "lower is better; test_accuracy, higher is better) as mean ± std over "
                            "seeds with the count; the best in each column is marked. Only "
                            "finished training runs count unless --status or --evals say "
                            "otherwise. csv and json give one line per cell with numeric "
                            "mean, std and n, and the ids of the runs behind each number.")
    add_compare_options(p)
    p.set_defaults(handler=cmd_compare)

    p = commands.add_parser("sweep", help="train every model x dataset x seed, then compare",
                            description="Train every possible cell (in this process, in "
                            "--jobs worker processes or as Ray tasks), skip "
                            "impossible ones with their reason and cells already finished with "
                            "the same config (so a second run resumes), record failures and go "
                            "on, then print the comparison of the sweep's runs.")
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help="model names; wildcards such as '*-char' match the registry")
    p.add_argument("--on", nargs="+", required=True, metavar="DATASET", help="datasets")
    p.add_argument("--seeds", type=positive_int, default=1, help="seeds 0..N-1 (default 1)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=positive_int, help="optimizer steps per cell")
    budget.add_argument("--time", type=positive_float, metavar="SECONDS",
                        help="wall-clock training budget per cell")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field in every cell (repeatable)")
    p.add_argument("--grid", action="append", metavar="KEY=V1,V2",
                   help="sweep a config field over these values too: every combination of "
                   "grid values is its own cell and row (repeatable)")
    p.add_argument("--task", help="force a task instead of choosing it per cell")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--dry-run", action="store_true", help="print the plan and train nothing")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("--verbose", action="store_true", help="each run's own progress output")
    add_output_options(p, quiet_to=talk, quiet_help="no plan, progress or summary on stderr: "
                       "only the comparison", json_help="print one JSON object: every cell "
                       "(state, run id, reason) and the comparison's cells (as --format json)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="train N cells at a time in worker processes, each with cores/N "
                   "threads (default 1: one after another in this process)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="ray: cells as tasks on a Ray cluster (pip install -e \".[ray]\")")
    p.add_argument("--address", help="the Ray cluster to use (default: a local one)")
    p.add_argument("--cell-cpus", type=positive_int, metavar="N",
                   help="CPUs (threads) each Ray task asks for (default 1)")
    p.add_argument("--cell-gpus", type=positive_float, metavar="N",
                   help="GPUs each Ray task asks for (default 1 with --device cuda, else 0)")
    add_compare_options(p, sweep=True)
    p.set_defaults(handler=cmd_sweep)

    p = commands.add_parser("eval", help="score a trained run on another dataset or split",
                            description="Evaluate a trained run with its task's pipeline on a "
                            "split of any dataset, and record it as an evaluation row linked to "
                            "the run (zoo compare --evals shows them).")
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("dataset", help="a catalogue alias, a Hub id, or a local folder or file")
    p.add_argument("--split", default="test", help="split to score: train, validation, test "
                   "or a split name of the dataset (default test)")
    p.add_argument("--text-column", help="text column (detected by default)")
    p.add_argument("--label-column", help="label column (detected by default)")
    p.add_argument("--device", default="auto", choices=DEVICES, help=RELOAD_DEVICE_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=cmd_eval)

    p = commands.add_parser("plot", help="draw training and validation curves of runs",
                            description="Overlay the training (raw and smoothed) and validation "
                            "curves of one or more runs from their metrics.jsonl.")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="run ids (or unique prefixes)")
    p.add_argument("--metric", default="loss", help="curve to draw: loss (train_loss and "
                   "val_loss), lr, or any key of metrics.jsonl (default loss)")
    p.add_argument("--x", default="step", choices=("step", "elapsed"),
                   help="x axis: optimizer step or training time in seconds")
    p.add_argument("--output", required=True, metavar="FILE", help="a .png, .svg or .pdf file")
    p.set_defaults(handler=cmd_plot)

    p = commands.add_parser("reproduce", help="rerun a run's exact config and compare metrics",
                            description="Rebuild a run's plan from its config.json, train it "
                            "again, and report whether every metric matches exactly (timing "
                            "figures excluded). Exit code 0 when they match, 1 when not.")
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("--device", choices=DEVICES,
                   help="device (default: the one the run recorded)")
    add_output_options(p)
    p.set_defaults(handler=cmd_reproduce)

    add_plugin_commands(commands, get_zoo())
    for command in commands.choices.values():  # `zoo run ... --debug` as well as `zoo --debug run`
        try:
            command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                 help="show full tracebacks")
        except argparse.ArgumentError:  # a plugin's command has its own --debug
            pass
    return parser


def add_plugin_commands(commands, zoo) -> None:
    """The commands plugins registered (``register_commands``), after zoo's own. One whose
    name is taken or whose arguments cannot be added is set aside with a warning."""
    from zoo.registry import call_plugin, strict_plugins

    for command in zoo.commands.entries():
        try:
            if command.name in commands.choices:
                raise ZooError("zoo already has a command of that name")
            call_plugin(command.add_arguments, Parser(prog=f"zoo {command.name}"),  # a dry run
                        what=f"the arguments of command {command.name!r}", plugin=command.plugin)
        except Exception as exc:
            message = (f"command {command.name!r} from plugin {command.plugin!r} set aside: "
                       f"{type(exc).__name__}: {exc}")
            if strict_plugins():
                raise PluginError(message + " [ZOO_STRICT_PLUGINS=1]") from None
            print(f"zoo: warning: {message}", file=sys.stderr)
            continue
        p = commands.add_parser(command.name, help=command.help,
                                description=command.description or command.help,
                                epilog=f"(added by plugin {command.plugin})")
        command.add_arguments(p)
        p.set_defaults(handler=_plugin_handler(command))


def _plugin_handler(command):
    def handler(args):
        from zoo.registry import call_plugin

        return call_plugin(command.load_handler(), args, what=f"command {command.name!r}",
                           plugin=command.plugin)

    return handler


def main(argv=None) -> int:
    """The `zoo` command. Called with no ``argv`` it is the program (the console script,
    ``python -m zoo``), about to exit when it returns, and tunes the garbage collector for
    that; a caller that passes ``argv`` (tests, notebooks) keeps its own settings."""
    if argv is not None:
        return run_command(argv)
    gc_tuning.tune_for_training()
    try:
        return run_command(sys.argv[1:])
    finally:
        gc_tuning.before_exit()


def run_command(argv: list[str]) -> int:
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
    except KeyboardInterrupt as exc:
        run_id = getattr(exc, "run_id", None)  # zoo.errors.RunInterrupted: a recorded run
        if run_id:
            print(f"zoo: interrupted; run {run_id} is kept; continue it with: zoo resume {run_id}",
                  file=sys.stderr)
        elif isinstance(exc, SweepInterrupted):
            print("zoo: interrupted; the sweep's runs are kept; run the same zoo sweep again to "
                  "continue them", file=sys.stderr)
        else:
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
