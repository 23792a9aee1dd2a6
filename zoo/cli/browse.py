"""`zoo list` and `zoo show`: what the zoo holds."""
from __future__ import annotations

import json

LIST_KINDS = ("architectures", "tokenizers", "datasets", "models", "pipelines", "plugins")


def cmd_list(args) -> int:
    from zoo.cli import listing
    from zoo.core.registry import get_zoo

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
    from zoo.cli import listing
    from zoo.core.registry import get_zoo

    print(listing.show(get_zoo(), args.name))
    return 0


def add_commands(commands) -> None:
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
