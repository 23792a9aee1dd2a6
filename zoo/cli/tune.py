"""`zoo tune`: the command's parser and handler, over ``zoo.api.tune``."""

from __future__ import annotations

import io
import sys

from zoo.cli.options import add_ray_options, positive_float, positive_int, print_json
from zoo.cli.training_options import add_config_option
from zoo.core.limits import DEVICES

DESCRIPTION = (
    "Search each model's settings with Optuna under the same budget (--trials or --time per "
    "model and dataset), choosing on the validation split only; then score each best trial "
    "on test once, re-run the winners and the untuned presets over --seeds, and print the "
    "equal-budget table and the winners as registry.toml presets. Trials are ordinary runs; "
    "the study is kept (SQLite under ZOO_HOME by default), so the same command continues it."
)


def add_tune_parser(commands) -> None:
    p = commands.add_parser(
        "tune", help="search each model's settings under an equal budget", description=DESCRIPTION
    )
    p.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="model names; wildcards such as '*-bpe' match the registry",
    )
    p.add_argument("--on", nargs="+", metavar="DATASET", help="datasets")
    p.add_argument(
        "--space",
        action="append",
        metavar="SPACE",
        help="settings to search: key=log(lo,hi), key=float(lo,hi), key=int(lo,hi) "
        "or key=choice(a,b,...), several per option (space-separated) or repeated",
    )
    budget = p.add_mutually_exclusive_group()
    budget.add_argument(
        "--trials", type=positive_int, metavar="N", help="trials per model and dataset"
    )
    budget.add_argument(
        "--time",
        type=positive_float,
        metavar="SECONDS",
        help="seconds of trial time per model and dataset (no trial starts after)",
    )
    p.add_argument(
        "--seeds",
        type=positive_int,
        default=3,
        help="re-run each winner and each preset over seeds 1..N, never the trials' seed 0 "
        "(default 3)",
    )
    p.add_argument("--steps", type=positive_int, help="optimizer steps of every trial and re-run")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="fix a config field in every trial and re-run (repeatable)",
    )
    add_search_options(p)
    p.add_argument("--task", help="force a task instead of choosing it per model")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help="run N trials at a time in worker processes, each with cores/N threads",
    )
    add_ray_options(
        p,
        unit="trial",
        executor_help="ray: trials as Ray tasks reporting to the shared study storage",
        gpus_help="GPUs each Ray trial asks for, fractions share one (default 1 with "
        "--device cuda, else 0)",
    )
    p.add_argument(
        "--plot",
        metavar="DIR",
        help="folder for the optimisation-history and "
        "parameter-importance plots (default ZOO_HOME/tune)",
    )
    p.set_defaults(plot_folder=True)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: every study's best trial, settings, test figures and plots",
    )
    add_config_option(p, "tune")
    p.set_defaults(handler=cmd_tune)


def add_search_options(p) -> None:
    """How each study searches: its pruner, sampler, metric and storage."""
    p.add_argument(
        "--pruner",
        choices=("median", "halving", "none"),
        default="median",
        help="stop unpromising trials at a validation: median (default), "
        "successive halving, or none",
    )
    p.add_argument(
        "--sampler",
        choices=("tpe", "random"),
        default="tpe",
        help="how settings are drawn (default tpe)",
    )
    p.add_argument(
        "--sampler-seed",
        type=int,
        metavar="N",
        help="seed the sampler, so the same search draws the same settings",
    )
    p.add_argument(
        "--metric",
        help="the validation figure to choose on (default: the task's "
        "headline metric on validation, e.g. val_accuracy)",
    )
    p.add_argument(
        "--storage",
        metavar="URL",
        help="SQLAlchemy URL of the study storage "
        "(default sqlite under ZOO_HOME/tune); share one across machines with Ray",
    )
    p.add_argument("--study", metavar="NAME", help="prefix of the study names (default tune)")


def add_commands(commands) -> None:
    add_tune_parser(commands)


def cmd_tune(args) -> int:
    from zoo.cli import training_options
    from zoo.errors import ZooError

    training_options.with_config_file(args, "tune")
    if not args.space:
        raise ZooError(
            "zoo tune: --space is required (on the command line or as space in --config FILE)"
        )
    if (args.trials is None) == (args.time is None):
        raise ZooError(
            "zoo tune: give one budget per model, --trials N or --time SECONDS "
            "(on the command line or in --config FILE)"
        )
    # --set time=60 is each run's training time (train.time); --time is the search's budget
    settings = training_options.settings(args)
    try:
        result = _tune(args, settings)
    except ZooError as error:  # zoo.Workers' cpus and gpus are --trial-cpus and --trial-gpus
        raise error.renamed({"cpus": "trial_cpus", "gpus": "trial_gpus"}) from None
    return _print(args, result)


def _tune(args, settings: dict):
    import zoo.api
    from zoo import Workers

    return zoo.api.tune(
        args.models,
        args.on,
        space=args.space,
        trials=args.trials,
        time=args.time,
        seeds=args.seeds,
        steps=args.steps,
        pruner=args.pruner,
        sampler=args.sampler,
        sampler_seed=args.sampler_seed,
        storage=args.storage,
        study=args.study,
        metric=args.metric,
        task=args.task,
        device=args.device,
        workers=Workers(args.jobs, args.executor, args.address, args.trial_cpus, args.trial_gpus),
        plot=args.plot,
        progress=not (args.quiet or args.json),
        log_to=args.log_to,
        **settings,
    )


def _print(args, result) -> int:
    if args.json:
        print_json({"studies": result.studies})
        return 0
    out = io.StringIO()
    print(result.table, file=out)
    if result.presets:
        print("\n# the winners as registry.toml presets\n" + result.presets, file=out)
    plots = [p for study in result.studies for p in study["plots"]]
    if plots:
        print("\nplots: " + ", ".join(plots), file=out)
    sys.stdout.write(out.getvalue())
    return 0
