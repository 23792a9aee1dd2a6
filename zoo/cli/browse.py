"""`zoo list` and `zoo show`: what the zoo holds."""

from __future__ import annotations

from zoo.cli.options import print_json
from zoo.errors import ZooError

LIST_KINDS = (
    "architectures",
    "tokenizers",
    "datasets",
    "models",
    "pipelines",
    "loggers",
    "plugins",
)


def cmd_list(args) -> int:
    from zoo.cli import listing
    from zoo.core.loading import get_zoo

    zoo = get_zoo()
    if args.matrix:
        table = listing.matrix(zoo)
        print_json(table, indent=2) if args.json else print(listing.format_matrix(table))
        return 0
    kinds = [args.kind] if args.kind else [k for k in LIST_KINDS if k != "plugins"]
    sections = {kind: listing.rows(zoo, kind, args.pattern, all_pairs=args.all) for kind in kinds}
    if args.json:
        print_json(sections if len(kinds) > 1 else sections[kinds[0]], indent=2)
        return 0
    for kind, rows in sections.items():
        text = listing.format_section(kind, rows)
        if kind == "models" and not args.all and args.pattern == "*":
            text = text.rstrip("\n") + (
                "\n  (presets; any ARCHITECTURE-TOKENIZER pair runs too: zoo list models --all)\n"
            )
        print(text)
    return 0


def cmd_show(args) -> int:
    from zoo.cli import showing
    from zoo.core.loading import get_zoo

    if args.config:
        return show_run_config(args)
    if args.json:
        print_json(show_record(get_zoo(), args.name))
        return 0
    print(showing.show(get_zoo(), args.name))
    return 0


def show_record(zoo, name: str) -> dict:
    """What `zoo show NAME --json` prints: a model preset or pair (its architecture,
    tokenizer and settings), a run (its store row: status, metrics, config) or, for other
    names, the text `zoo show` prints."""
    from zoo.cli import showing
    from zoo.core.names import model_names, resolve_model
    from zoo.records.store import Store

    if name in model_names(zoo):
        spec = resolve_model(name, zoo)
        return {
            "type": "model",
            "name": name,
            "architecture": spec.architecture.name,
            "tokenizer": spec.tokenizer.name,
            "description": spec.description,
            "preset": name in zoo.catalogue.models,
            "settings": spec.overrides,
        }
    text = showing.show(zoo, name)  # an unknown name fails here, with a did-you-mean
    try:
        with Store() as store:
            return {"type": "run", **store.get(name)}
    except ZooError:
        return {"type": "entry", "name": name, "text": text}


def show_run_config(args) -> int:
    """zoo show RUN --config: a config file that trains the run again."""
    from zoo.cli.config_file import for_run
    from zoo.cli.options import emit_text
    from zoo.records.store import Store

    with Store() as store:
        record = store.get(args.name)
    if record.get("kind") != "train":
        raise ZooError(
            f"run {record['id']} is an {record['kind']} row; --config reproduces training runs"
        )
    emit_text(for_run(record), args.output)
    return 0


def add_commands(commands) -> None:
    p = commands.add_parser(
        "list",
        help="list architectures, tokenizers, datasets, models, pipelines (one per task), plugins",
        description="List what the zoo holds, with descriptions and the plugin each comes from.",
    )
    p.add_argument("kind", nargs="?", choices=LIST_KINDS, help="list only this kind")
    p.add_argument(
        "pattern",
        nargs="?",
        default="*",
        help="a part of the name ('char') or a wildcard filter ('*-char')",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--all",
        action="store_true",
        help="models: every ARCHITECTURE-TOKENIZER pair, not only the presets",
    )
    p.add_argument(
        "--matrix",
        action="store_true",
        help="for every architecture x dataset, the task that would run or why not",
    )
    p.set_defaults(handler=cmd_list)
    p = commands.add_parser(
        "show",
        help="details of a model, architecture, tokenizer, dataset or run",
        description="Show config fields with types and defaults, tasks, "
        "and for a run its metrics and provenance.",
    )
    p.add_argument("name", help="a model, architecture, tokenizer, dataset or run id")
    p.add_argument(
        "--config",
        action="store_true",
        help="for a run: print a config file "
        "(TOML) that trains it again with zoo run --config FILE",
    )
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: a model's "
        "architecture, tokenizer and settings, or a run's row, metrics and config",
    )
    p.set_defaults(handler=cmd_show)
