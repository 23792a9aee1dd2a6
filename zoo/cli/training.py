"""`zoo run`, `zoo resume`, `zoo sweep` and `zoo reproduce`: commands that train."""

from __future__ import annotations

import dataclasses
import json

from zoo.cli.options import (
    add_column_options,
    add_output_options,
    add_ray_options,
    count_or_auto,
    positive_float,
    positive_int,
    print_json,
)
from zoo.cli.runs import add_compare_options, emit_comparison
from zoo.cli.training_options import add_config_option
from zoo.core.limits import DEVICES, seed_argument
from zoo.errors import ZooError
from zoo.train.progress import log_every_argument
from zoo.train.tracking import tracker_lines


def cmd_run(args) -> int:
    from zoo import api
    from zoo.cli import training_options

    training_options.with_config_file(args, "run")
    settings = training_options.settings(args)
    if args.compile:
        settings["train.compile"] = True
    run = api.run(
        args.model,
        args.dataset,
        steps=args.steps,
        time=args.time,
        seed=args.seed,
        device=args.device,
        task=args.task,
        text_column=args.text_column,
        label_column=args.label_column,
        quiet=args.quiet or args.json,
        log_to=args.log_to,
        log_every=args.log_every,
        init=args.init,
        settings=settings,
    )
    if run.ensemble is not None:  # an ensemble preset: its members' runs, combined
        from zoo.cli.runs import print_ensemble

        print_ensemble(run.ensemble, args.json)
        return 0
    if run.summary.get("rank", 0) == 0:  # under torchrun, rank 0 speaks for the run
        print_result(run.summary, args.json, quiet=args.quiet)
    return 0


def figure(value) -> str:
    """A metric as a person reads it: four significant digits, thousands separated
    (tokens_per_s 156,370; val_bpc 2.113; train_time 0.06964)."""
    if not isinstance(value, float):
        return (
            f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
        )
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def print_result(result: dict, as_json: bool, *, quiet: bool = False) -> None:
    """A finished run: its figures, samples (not with --quiet), folder and curve."""
    keys = (
        "run_id",
        "model",
        "architecture",
        "tokenizer",
        "dataset",
        "task",
        "status",
        "params",
        "seed",
        "metrics",
        "trackers",
    )
    if as_json:
        print_json({k: result.get(k) for k in keys})
        return
    print(
        f"run {result['run_id']}  {result['model']} on {result['dataset']} ({result['task']})  "
        f"status {result['status']}  {result['params']:,} parameters  "
        f"{result['duration']:.1f} s"
    )
    metrics = result["metrics"]
    shown = [k for k in metrics if not isinstance(metrics[k], (dict, list))]
    for key in shown:
        value = metrics[key]
        print(f"  {key:<16} {figure(value)}")
    if result.get("eval_limit"):
        print(
            f"  evaluated on a sample: at most {result['eval_limit']:,} examples of each split "
            "(eval_limit); a smoke figure, never pooled with whole-split ones"
        )
    for i, sample in enumerate([] if quiet else result.get("samples") or []):
        lines = sample.strip("\n").splitlines()[:8]
        print(f"--- sample {i + 1} ---")
        print("\n".join(lines))
    print(f"saved in {result['run_dir']}")
    for line in tracker_lines(result.get("trackers")):
        print(line)
    if result.get("curve"):
        print(f"training curve: {result['curve']}")
    elif result.get("curve_error"):
        print(f"training curve: not drawn ({result['curve_error']})")


def cmd_resume(args) -> int:
    from zoo import api

    run = api.resume(args.run_id, quiet=args.quiet or args.json)
    print_result(run.summary, args.json, quiet=args.quiet)
    return 0


def cmd_sweep(args) -> int:
    from zoo import ComparisonSpec, Workers, api
    from zoo.cli import training_options

    training_options.with_config_file(args, "sweep")
    settings = training_options.settings(args)
    try:
        result = api.sweep(
            args.models,
            args.on,
            seeds=args.seeds,
            max_seeds=args.max_seeds,
            steps=args.steps,
            time=args.time,
            task=args.task,
            device=args.device,
            grid=training_options.grid(args),
            progress=not (args.quiet or args.json),  # plan, progress, summary
            quiet=not args.verbose or args.json,
            workers=Workers(args.jobs, args.executor, args.address, args.cell_cpus, args.cell_gpus),
            compare=ComparisonSpec(
                metric=args.metric,
                by=args.by,
                columns=args.columns,
                baseline=args.baseline,
                better=args.better,
                pool=args.pool,
                examples=not args.seeds_only,
            ),
            dry_run=args.dry_run,
            stack_seeds=args.stack_seeds,
            log_to=args.log_to,
            settings=settings,
        )
    except ZooError as error:  # zoo.Workers' cpus and gpus are --cell-cpus and --cell-gpus
        raise error.renamed({"cpus": "cell_cpus", "gpus": "cell_gpus"}) from None
    if args.dry_run:
        if args.json:
            print_json({"cells": result.cells})
            return 0
        for cell in result.cells:
            state = (
                f"skip: {cell['reason']}"
                if cell["state"] == "skipped"
                else f"done: run {cell['run_id']}"
                if cell["state"] == "reused"
                else f"to run: {cell['reason']}"
                if cell["reason"]
                else "to run"
            )
            print(f"{cell['name']}\t{state}")
        return 0
    if args.json:
        from zoo.comparison.render import render

        table = (
            json.loads(render(result.comparison, "json")) if result.comparison is not None else []
        )
        print_json({"cells": result.cells, "comparison": table})
    elif result.comparison is not None:
        emit_comparison(result.comparison, args.format, args.output, args.plot)
    return 1 if result.failed else 0


def cmd_reproduce(args) -> int:
    from zoo import api

    report = api.reproduce(args.run_id, device=args.device, quiet=args.quiet or args.json)
    if args.json:
        print_json(dataclasses.asdict(report))
        return 0 if report.match else 1
    print(f"reproduced run {report.run_id} as run {report.rerun_id}")
    width = max([len(line["metric"]) for line in report.metrics] + [6])
    for line in report.metrics:
        mark = "same" if line["same"] else "DIFFERENT"
        print(f"  {line['metric']:<{width}}  {line['original']!s:<22} {line['rerun']!s:<22} {mark}")
    if report.excluded:
        print(f"  (timing, not compared: {', '.join(report.excluded)})")
    for note in report.notes:
        print(f"  note: {note}")
    print("metrics match exactly" if report.match else "metrics DIFFER")
    return 0 if report.match else 1


def add_run_parser(commands) -> None:
    p = commands.add_parser(
        "run",
        help="train and evaluate MODEL on DATASET",
        description="Train and evaluate a model on a dataset, record the "
        "run in the store, and print a summary.",
    )
    p.add_argument("model", nargs="?", help="a preset (zoo list models) or ARCHITECTURE-TOKENIZER")
    p.add_argument(
        "dataset", nargs="?", help="a catalogue alias, a Hub id, or a local folder or file"
    )
    add_config_option(p, "run")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=positive_int, help="number of optimizer steps")
    budget.add_argument(
        "--time",
        type=positive_float,
        metavar="SECONDS",
        help="wall-clock training budget in seconds",
    )
    p.add_argument("--seed", type=seed_argument, default=0, help="random seed (default 0)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config field (repeatable; an ensemble preset's members that have it); "
        "'zoo show MODEL' lists them",
    )
    p.add_argument(
        "--device",
        default="auto",
        choices=DEVICES,
        help="auto (CUDA when present, the default), cpu or cuda",
    )
    p.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the model for training (same as --set compile=true)",
    )
    p.add_argument("--task", help="force a task instead of choosing it from model and dataset")
    add_column_options(p)
    p.add_argument(
        "--log-every",
        type=log_every_argument,
        metavar="N|Ns",
        help="when the output is not a terminal, a progress line every N steps or N "
        "seconds (30s); default: about ten a run, at least every 30 s, and each validation",
    )
    p.add_argument(
        "--init",
        metavar="RUN_ID",
        help="start from a finished run: its tokenizer and every weight whose name "
        "and shape match (other tasks and datasets too); new heads start fresh",
    )
    add_output_options(p)
    p.set_defaults(handler=cmd_run)


def add_resume_parser(commands) -> None:
    p = commands.add_parser(
        "resume",
        help="continue an interrupted run from its last checkpoint",
        description="Continue an interrupted or failed run from its newest "
        "good checkpoint, in the same folder and store row; ends with the "
        "same summary as zoo run. Refuses if the config, dataset, tokenizer "
        "or zoo version changed.",
    )
    p.add_argument("run_id", help="run id (or a unique prefix)")
    add_output_options(p)
    p.set_defaults(handler=cmd_resume)


def add_sweep_parser(commands) -> None:
    p = commands.add_parser(
        "sweep",
        help="train every model x dataset x seed, then compare",
        description="Train every possible cell (in this process, in "
        "--jobs worker processes or as Ray tasks), skip "
        "impossible ones with their reason and cells already finished with "
        "the same config (so a second run resumes), record failures and go "
        "on, then print the comparison of the sweep's runs.",
    )
    p.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="model names; wildcards such as '*-char' match the registry",
    )
    p.add_argument("--on", nargs="+", metavar="DATASET", help="datasets")
    add_config_option(p, "sweep")
    p.add_argument(
        "--seeds",
        type=count_or_auto,
        default=1,
        metavar="N|auto",
        help="seeds 0..N-1 (default 1); auto: 2 seeds a row, then one more at a time for "
        "the rows still tied with their column's leader, until it is told apart or they "
        "have --max-seeds (the error rate split over the looks)",
    )
    p.add_argument(
        "--max-seeds",
        type=positive_int,
        metavar="N",
        help="with --seeds auto: the most seeds a row gets (default 10)",
    )
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=positive_int, help="optimizer steps per cell")
    budget.add_argument(
        "--time", type=positive_float, metavar="SECONDS", help="wall-clock training budget per cell"
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config field in every cell (repeatable)",
    )
    p.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2",
        help="sweep a config field over these values too: every combination of "
        "grid values is its own cell and row (repeatable)",
    )
    p.add_argument("--task", help="force a task instead of choosing it per cell")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--dry-run", action="store_true", help="print the plan and train nothing")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("--verbose", action="store_true", help="each run's own progress output")
    add_output_options(
        p,
        quiet_to=talk,
        quiet_help="no plan, progress or summary on stderr: only the comparison",
        json_help="print one JSON object: every cell "
        "(state, run id, reason) and the comparison's cells (as --format json)",
    )
    add_cell_options(p)
    add_compare_options(p, sweep=True)
    p.set_defaults(handler=cmd_sweep)


def add_cell_options(p) -> None:
    """How a sweep's cells train: how many at a time, seeds stacked, on Ray."""
    p.add_argument(
        "--jobs",
        type=count_or_auto,
        default=1,
        metavar="N",
        help="train N cells at a time in worker processes, each with cores/N "
        "threads (default 1: one after another in this process); auto: as many as "
        "one cell's measured GPU memory and use allow on a GPU, one per idle core on a CPU",
    )
    p.add_argument(
        "--stack-seeds",
        type=positive_int,
        nargs="?",
        const=True,
        default=False,
        metavar="K",
        help="train up to K seeds of a cell together as one batched model (default: all "
        "of them), each recorded as its own run; a configuration of its own (stacked=K)",
    )
    add_ray_options(
        p,
        unit="cell",
        executor_help='ray: cells as tasks on a Ray cluster (pip install -e ".[ray]")',
        gpus_help="GPUs each Ray cell asks for (default 1 with --device cuda, else 0)",
    )


def add_reproduce_parser(commands) -> None:
    p = commands.add_parser(
        "reproduce",
        help="rerun a run's exact config and compare metrics",
        description="Rebuild a run's plan from its config.json, train it "
        "again, and report whether every metric matches exactly (timing "
        "figures excluded). Exit code 0 when they match, 1 when not.",
    )
    p.add_argument("run_id", help="run id (or a unique prefix)")
    p.add_argument("--device", choices=DEVICES, help="device (default: the one the run recorded)")
    add_output_options(p)
    p.set_defaults(handler=cmd_reproduce)


def add_commands(commands) -> None:
    add_run_parser(commands)
    add_resume_parser(commands)
    add_sweep_parser(commands)
    add_reproduce_parser(commands)
