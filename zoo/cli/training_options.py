"""`--config FILE` for `zoo run`, `zoo sweep` and `zoo tune` (zoo.cli.config_file): the file's options
where the command line gave none, its [set] and [grid] beneath the command line's."""

from __future__ import annotations

from zoo.errors import ZooError


def add_config_option(p, command: str) -> None:
    p.add_argument(
        "--log-to",
        metavar="NAMES",
        help="also send the run's config, curves, "
        "final metrics and folder to these trackers, comma-separated: tensorboard, "
        "mlflow, or a plugin's (default: ZOO_LOG_TO)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="read options from a TOML (or YAML) file "
        f"holding what the command line holds ({command} options by name, [set]"
        + (", [grid]" if command == "sweep" else "")
        + "); options given here win",
    )
    p.set_defaults(parser=p)


def with_config_file(args, command: str) -> None:
    """Fill `args` from --config; then the names the command needs must be there."""
    from zoo.cli import config_file

    config_file.apply(args, args.parser, command)
    if command == "run":
        missing = [name for name in ("model", "dataset") if not getattr(args, name)]
        if missing:
            raise ZooError(
                f"zoo run: the {' and '.join(missing)} arguments are required (on "
                "the command line or in --config FILE)"
            )
    elif not args.models or not args.on:
        raise ZooError(
            f"zoo {command}: MODEL... and --on DATASET... are required (on the "
            "command line or as models and on in --config FILE)"
        )


def settings(args) -> dict:
    """--set values over the config file's [set]: a key the command line gives replaces the
    file's, whether or not either names its section."""
    from zoo.core.config import parse_assignment

    merged = dict(getattr(args, "file_set", None) or {})
    given = dict(parse_assignment(item) for item in args.set or [])
    for key in given:
        for old in [k for k in merged if _bare(k) == _bare(key)]:
            del merged[old]
    merged.update(given)
    # bare steps and time are the training budget: named by section, they never clash with
    # the API's steps= and time= arguments (which --steps and --time fill)
    return {f"train.{k}" if k in ("steps", "time") else k: v for k, v in merged.items()}


def grid(args) -> list[str]:
    """--grid options after the config file's [grid], a key given on both taken from here."""
    from zoo.cli.config_file import grid_options

    given = args.grid or []
    keys = {_bare(item.partition("=")[0].strip()) for item in given}
    file_grid = {
        k: v for k, v in (getattr(args, "file_grid", None) or {}).items() if _bare(k) not in keys
    }
    return grid_options(file_grid) + given


def _bare(key: str) -> str:
    return key.rpartition(".")[2]
