"""`zoo runs`, `zoo compare`, `zoo plot` and `zoo ensemble`: reading the store, and
combining finished runs into a row of their own."""

from __future__ import annotations

import dataclasses
import sys

from zoo.cli.options import RELOAD_DEVICE_HELP, print_json
from zoo.core.limits import DEVICES


def cmd_runs(args) -> int:
    from zoo import api
    from zoo.cli.options import emit_text
    from zoo.comparison.runs import render
    from zoo.home import zoo_home

    frame = api.runs(where=args.where, sort=args.sort, n=args.n)
    columns = [c.strip() for c in (args.columns or "").split(",") if c.strip()]
    fmt = "json" if args.json else args.format
    if frame.empty and fmt == "table":
        where = f" match --where {args.where!r}" if args.where else " yet"
        print(
            f"no runs{where} in {zoo_home()} (zoo run MODEL DATASET starts one; ZOO_HOME moves "
            "the store)"
        )
        return 0
    emit_text(render(frame, fmt, columns), args.output)
    return 0


def cmd_rm(args) -> int:
    """zoo rm RUN... / --where EXPR: runs out of the store, then their folders."""
    from zoo import api

    removal = api.rm(args.run_ids, where=args.where, dry_run=args.dry_run)
    if not removal.runs:
        print(f"no runs match --where {args.where!r}; nothing removed")
    for row in removal.runs:
        done = "would remove" if removal.dry_run else "removed"
        print(f"{done} {row['id']}  {row['model']} on {row['dataset']} ({row['status']})")
    return 0


def add_rm_parser(commands) -> None:
    p = commands.add_parser(
        "rm",
        help="remove runs from the store and their folders",
        description="Remove runs: their store rows (with the evaluation "
        "rows that score them) and their run folders.",
    )
    p.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="run ids (or unique prefixes)")
    p.add_argument(
        "--where",
        metavar="EXPR",
        help="also every run for which this condition "
        "holds (as zoo runs --where), e.g. \"status == 'failed'\"",
    )
    p.add_argument("--dry-run", action="store_true", help="list what would be removed")
    p.set_defaults(handler=cmd_rm)


def add_runs_parser(commands) -> None:
    from zoo.cli.options import positive_int
    from zoo.comparison.runs import FORMATS

    p = commands.add_parser(
        "runs",
        help="list recorded runs, filtered and sorted",
        description="List recorded runs: id, status, model, dataset, task, "
        "parameters, seed, duration and the task's primary metric (metric, "
        "value). Every metric and setting is a column for --where, --sort "
        "and --columns (a setting by its name, lr, or as "
        "section.name where a metric has that name, train.steps).",
    )
    p.add_argument(
        "-n",
        type=positive_int,
        metavar="N",
        help="only the newest N runs (the first N with --sort)",
    )
    p.add_argument(
        "--where",
        metavar="EXPR",
        help='a condition over metrics and settings, e.g. "lr < 1e-3 and batch_size == 32"',
    )
    p.add_argument(
        "--sort",
        metavar="KEYS",
        help="sort by these columns, comma-separated; "
        "write --sort=-val_bpc for descending (default: oldest first)",
    )
    p.add_argument(
        "--columns",
        metavar="KEYS",
        help="more columns to show, comma-separated (settings such as lr,batch_size or metrics)",
    )
    p.add_argument("--format", default="table", choices=FORMATS, help="output format")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument("--output", metavar="FILE", help="write the list to FILE instead of stdout")
    p.set_defaults(handler=cmd_runs)


def comparison_from_args(args):
    from zoo import api

    return api.compare(
        metric=args.metric,
        where=args.where,
        by=args.by,
        columns=args.columns,
        baseline=args.baseline,
        evals=args.evals,
        status=tuple(s.strip() for s in args.status.split(",") if s.strip()),
        better=args.better,
        pool=args.pool,
        examples=not args.seeds_only,
    )


def emit_comparison(comparison, fmt: str, output: str | None, plot: str | None) -> None:
    from zoo.cli.options import emit_text
    from zoo.comparison.render import render

    text = render(comparison, fmt)
    if fmt in ("csv", "json"):  # the table's notes, which these formats cannot hold
        for note in comparison.notes:
            print(f"zoo: note: {note}", file=sys.stderr)
    if plot:
        from zoo import api

        api.plot_comparison(comparison, plot)
        print(f"wrote {plot}", file=sys.stderr)
    emit_text(text, output)


def cmd_compare(args) -> int:
    fmt = "json" if args.json else args.format
    emit_comparison(comparison_from_args(args), fmt, args.output, args.plot)
    return 0


def add_compare_options(p, *, sweep: bool = False) -> None:
    from zoo.comparison.render import FORMATS

    p.add_argument(
        "--metric",
        help="any recorded metric, or params, duration, tokens_per_s "
        "(default: the task's primary metric, val_bpc or test_accuracy)",
    )
    p.add_argument(
        "--by",
        metavar="KEYS",
        help="run columns for the rows, comma-separated "
        "(default model; with --evals model,trained_on)",
    )
    p.add_argument(
        "--columns",
        metavar="KEYS",
        help="run columns for the columns (default dataset; with --evals dataset,split)",
    )
    p.add_argument(
        "--baseline",
        metavar="MODEL",
        help="add the difference to this row with a 95%% confidence interval over seeds",
    )
    p.add_argument("--format", default="table", choices=FORMATS, help="output format")
    p.add_argument(
        "--output",
        metavar="FILE",
        help="write the table to FILE instead of stdout "
        "(a symlink's target is written; a device or FIFO is streamed to)",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw grouped bars with error bars into a .png, .svg or .pdf file",
    )
    p.add_argument(
        "--better",
        choices=("lower", "higher"),
        help="which direction is best (default: from the metric's name)",
    )
    p.add_argument(
        "--pool",
        action="store_true",
        help="pool runs whose settings differ "
        "(by default they are separate rows, labelled by what differs)",
    )
    p.add_argument(
        "--seeds-only",
        action="store_true",
        help="count only the seeds' variance, not the evaluation set's sampling noise "
        "(by default counted where runs kept per-example scores)",
    )
    if not sweep:
        p.add_argument("--json", action="store_true", help="same as --format json")
        p.add_argument(
            "--where",
            metavar="EXPR",
            help="a condition over metrics and settings, "
            "e.g. \"architecture == 'decoder' and lr < 1e-3\"",
        )
        p.add_argument(
            "--evals",
            action="store_true",
            help="compare evaluation rows (zoo eval) instead of training runs",
        )
        p.add_argument(
            "--status",
            default="finished",
            help="statuses to include, comma-separated, or all (default finished)",
        )


def cmd_plot(args) -> int:
    from zoo import api

    api.plot(args.run_ids, args.plot, metric=args.metric, x=args.x)
    if args.plot != "-":
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def cmd_ensemble(args) -> int:
    from zoo import api

    print_ensemble(api.ensemble(args.run_ids, weights=args.weights, device=args.device), args.json)
    return 0


def print_ensemble(combined, as_json: bool) -> None:
    """What `zoo ensemble` (and `zoo run ENSEMBLE-PRESET`) prints: the runs with their
    weights and the ensemble's scalar figures, or one JSON object."""
    if as_json:
        record = dataclasses.asdict(combined)
        record["metrics"] = {
            k: v
            for k, v in combined.metrics.items()
            if not isinstance(v, (dict, list)) or k == "weights"
        }
        print_json(record)
        return
    print(
        f"ensemble {combined.id}  {combined.model} on {combined.dataset} ({combined.task})  "
        f"{combined.weighting} weights"
    )
    for part in combined.runs:
        print(f"  {part.weight:.2f}  {part.model}  (run {part.run_id})")
    for key, value in combined.metrics.items():
        if isinstance(value, float):
            print(f"  {key:<16} {value:.4f}")


def add_commands(commands) -> None:
    add_runs_parser(commands)
    add_rm_parser(commands)
    p = commands.add_parser(
        "compare",
        help="compare runs: models x datasets, mean ± std over seeds",
        description="A pivot of the recorded runs: by default rows are models, "
        "columns datasets, and each cell the task's primary metric (val_bpc, "
        "lower is better; test_accuracy, higher is better) as mean ± std over "
        "seeds with the count; the best in each column is marked. Only "
        "finished training runs count unless --status or --evals say "
        "otherwise. csv and json give one line per cell with numeric "
        "mean, std and n, and the ids of the runs behind each number.",
    )
    add_compare_options(p)
    p.set_defaults(handler=cmd_compare)
    p = commands.add_parser(
        "plot",
        help="draw training and validation curves of runs",
        description="Overlay the training (raw and smoothed) and validation "
        "curves of one or more runs from their metrics.jsonl.",
    )
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="run ids (or unique prefixes)")
    p.add_argument(
        "--metric",
        default="loss",
        help="curve to draw: loss (train_loss and "
        "val_loss), lr, or any key of metrics.jsonl (default loss)",
    )
    p.add_argument(
        "--x",
        default="step",
        choices=("step", "elapsed"),
        help="x axis: optimizer step or training time in seconds",
    )
    p.add_argument(
        "--plot", required=True, metavar="FILE", help="the chart: a .png, .svg or .pdf file"
    )
    p.set_defaults(handler=cmd_plot)
    p = commands.add_parser(
        "ensemble",
        help="combine finished runs: average their probabilities",
        description="Average the class probabilities of finished runs of one "
        "task on one dataset (equal weights, or weights fitted on the "
        "validation split), score validation and test, and record the "
        "ensemble as its own row (zoo runs, zoo compare show it).",
    )
    p.add_argument("run_ids", nargs="+", metavar="RUN", help="run ids (or unique prefixes)")
    p.add_argument(
        "--weights",
        choices=("equal", "fit"),
        default="equal",
        help="equal (the default), or fit: the weights of the lowest validation log loss, "
        "shrunk toward equal weights by 5-fold cross-fitting",
    )
    p.add_argument("--device", default="auto", choices=DEVICES, help=RELOAD_DEVICE_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=cmd_ensemble)
