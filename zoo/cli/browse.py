"""`zoo list` and `zoo show`: what the zoo holds."""

from __future__ import annotations

from zoo.cli.options import print_json
from zoo.cli.show_text import show_text
from zoo.errors import ZooError
from zoo.results import Listing


def cmd_list(args) -> int:
    from zoo import api

    result = api.catalog(args.kind, args.pattern, all_pairs=args.all, matrix=args.matrix)
    if not args.json:
        print(format_matrix(result.matrix) if args.matrix else listing_text(result))
    elif args.matrix:
        print_json(result.matrix, indent=2)
    else:
        sections = result.sections
        print_json(sections if len(sections) > 1 else next(iter(sections.values())), indent=2)
    return 0


def listing_text(listing: Listing) -> str:
    """Each kind's section; under the presets, that any pair runs too."""
    texts = []
    for kind, rows in listing.sections.items():
        text = format_section(kind, rows)
        if kind == "models" and listing.presets_only:
            text = text.rstrip("\n") + (
                "\n  (presets; any ARCHITECTURE-TOKENIZER pair runs too: zoo list models --all)\n"
            )
        texts.append(text)
    return "\n".join(texts)


def format_section(kind: str, items: list[dict]) -> str:
    lines = [f"{kind} ({len(items)})"]
    if not items:
        return lines[0] + "\n  (none)\n"
    width = max(len(r["name"]) for r in items) + 2
    for r in items:
        if kind == "plugins":
            detail = f"{r['source']}"
            if r["distribution"]:
                detail += f", {r['distribution']} {r['version']}"
            detail += f", {r['location']}"
            if r["error"]:
                lines.append(f"  {r['name']:<{width}}SET ASIDE ({detail}): {r['error']}")
            else:
                lines.append(f"  {r['name']:<{width}}{detail}; hooks: {', '.join(r['hooks'])}")
            continue
        extra = ""
        if kind == "models":
            extra = " [preset]" if r["preset"] else ""
            if r["from"] not in (None, "zoo"):  # a plugin's preset, or the user's own
                extra = f" [preset from {r['from']}]"
        if kind == "datasets":
            extra = f" [{r['task']}; {r['source']}]"
        if kind == "architectures":
            extra = f" [{', '.join(r['tasks'])}]"
        if kind == "pipelines":
            extra = f" [primary {r['primary']}, {r['better']} is better]"
        lines.append(f"  {r['name']:<{width}}{r['description']}{extra}  ({r['plugin']})")
    return "\n".join(lines) + "\n"


MATRIX_WIDTH = 120


def format_matrix(table: list[dict]) -> str:
    import pandas as pd

    frame = pd.DataFrame(table)
    if frame.empty:
        return "(empty)"
    # a pair that cannot run shows a number; each distinct reason is written once, below
    reasons = list(dict.fromkeys(r for t, r in zip(frame["task"], frame["reason"]) if not t))
    number = {reason: i for i, reason in enumerate(reasons, 1)}
    frame["cell"] = [
        task or f"- ({number[reason]})" for task, reason in zip(frame["task"], frame["reason"])
    ]
    # wider than a terminal, the columns continue in a second block below (as pandas wraps)
    matrix = frame.pivot(index="architecture", columns="dataset", values="cell")
    text = matrix.to_string(line_width=MATRIX_WIDTH)
    notes = [
        f"({i}) {reason if len(reason) <= 100 else reason[:97] + '...'}"
        for reason, i in number.items()
    ]
    return (
        text
        + ("\n\n" + "\n".join(notes) if notes else "")
        + "\n(zoo list --matrix --json gives every reason in full)"
    )


def cmd_check_plugin(args) -> int:
    from zoo import api
    from zoo.core.config import parse_assignment

    if args.steps < 2:
        raise ZooError(
            f"--steps must be at least 2 (a checkpoint to resume from), not {args.steps}"
        )
    settings = dict(parse_assignment(item) for item in args.set or [])
    checks = api.check_plugin(args.plugin, settings, steps=args.steps, only=args.only)
    if args.json:
        print_json([c.record() for c in checks])
    else:
        for check in checks:
            print(check.line())
        if not checks:  # a plugin of commands or presets alone, or --only matching nothing
            matching = f" matching {args.only!r}" if args.only != "*" else ""
            print(
                f"plugin {args.plugin!r} registers no architecture, tokenizer, task, exporter "
                f"or tracker{matching}: nothing to check"
            )
    return 1 if any(c.status == "failed" for c in checks) else 0


def cmd_show(args) -> int:
    from zoo import api

    shown = api.show(args.name)
    if args.config:
        return show_run_config(shown, args.output)
    if args.json:
        print_json(shown.record)
    else:
        print(show_text(shown))
    return 0


def show_run_config(shown, output: str | None) -> int:
    """zoo show RUN --config: a config file that trains the run again."""
    from zoo.cli.options import emit_text
    from zoo.operations.reproduce import config_file

    if shown.type != "run":
        raise ZooError(f"{shown.name} is not a run; --config writes a run's config file")
    if shown.record.get("kind") != "train":
        raise ZooError(
            f"run {shown.name} is an {shown.record['kind']} row; --config reproduces training runs"
        )
    emit_text(config_file(shown.record), output)
    return 0


def add_commands(commands) -> None:
    from zoo.api.inspecting import KINDS

    p = commands.add_parser(
        "list",
        help="list architectures, tokenizers, datasets, models, pipelines (one per task), plugins",
        description="List what the zoo holds, with descriptions and the plugin each comes from.",
    )
    p.add_argument("kind", nargs="?", choices=KINDS, help="list only this kind")
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
    p = commands.add_parser(
        "check-plugin",
        help="run a plugin's architectures, tokenizers, tasks, exporters and trackers through "
        "the contract",
        description="Train each architecture of the plugin a few steps on each task it serves, "
        "each task it registers with an architecture that serves it, each tokenizer, "
        "exporter and tracker, in a ZOO_HOME of its own (removed afterwards), and check the "
        "contract: output shape, best step, a text alone predicted as in a batch, a "
        "bit-identical resume, an export checked at several lengths, ids inside the "
        "vocabulary, a tracker's calls. One line per check; exit 1 when one fails.",
    )
    p.add_argument("plugin", help="the plugin's name, as zoo list plugins shows it")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a config setting for every run (an architecture's small sizes keep it fast)",
    )
    p.add_argument("--steps", type=int, default=4, help="training steps of each run (at least 2)")
    p.add_argument(
        "--only",
        default="*",
        metavar="PATTERN",
        help="check only the plugin's architectures, tokenizers, tasks and exporters whose "
        "names match this wildcard (hf-gpt2, 'hf-*')",
    )
    p.add_argument("--json", action="store_true", help="print the checks as a JSON list")
    p.set_defaults(handler=cmd_check_plugin)
