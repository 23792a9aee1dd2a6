"""Render the command reference (docs/reference/commands.md) from zoo's argparse parser:
every command, the built-in plugins' included, with every option and its help.

    python scripts/render_commands.py            # rewrite the generated part of the page
    python scripts/render_commands.py --check    # exit 1 if it differs from the parser

Only the part between the page's markers is generated; the text around it (exit codes,
environment variables) is written by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "reference" / "commands.md"
START = "<!-- commands: rendered by scripts/render_commands.py from zoo's parser -->"
END = "<!-- end of commands -->"
SKIPPED = ("help", "debug")  # every command has them; the page says so once


def parser() -> argparse.ArgumentParser:
    """zoo's parser with the built-in plugins only (third-party ones installed here would
    add their commands)."""
    os.environ["ZOO_LOAD_PLUGINS"] = ""  # read when zoo first loads its plugins
    from zoo.cli.main import build_parser

    return build_parser()


def subcommands(root: argparse.ArgumentParser):
    """(name, one-line help, parser) of every command, in the order `zoo --help` lists them."""
    action = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in action._choices_actions}
    return [(name, helps.get(name) or "", p) for name, p in action.choices.items()]


def metavar(action: argparse.Action) -> str:
    if action.choices is not None and action.metavar is None:
        name = "|".join(map(str, action.choices))
    else:
        name = action.metavar or action.dest.upper()
    if isinstance(name, tuple):
        return " ".join(name)
    nargs = action.nargs
    if nargs == 0:
        return ""
    if nargs == "?":
        return f"[{name}]"
    if nargs == "*":
        return f"[{name} ...]"
    if nargs == "+":
        return f"{name} [{name} ...]"
    if isinstance(nargs, int) and nargs > 1:
        return " ".join([name] * nargs)
    return name


def spelled(action: argparse.Action) -> str:
    """An argument as a user types it: ``--steps N``, ``-n N, --limit N``, ``MODEL``."""
    value = metavar(action)
    if not action.option_strings:
        return value
    return ", ".join(f"{option} {value}".strip() for option in action.option_strings)


def help_text(action: argparse.Action, prog: str) -> str:
    """The option's help with argparse's %-placeholders filled in, as --help shows it."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return action.help % params


def exclusions(p: argparse.ArgumentParser) -> dict[argparse.Action, list[str]]:
    """For each option in a mutually exclusive group, the options it excludes."""
    others: dict[argparse.Action, list[str]] = {}
    for group in p._mutually_exclusive_groups:
        for action in group._group_actions:
            others[action] = [a.option_strings[-1] for a in group._group_actions if a is not action]
    return others


def usage(name: str, p: argparse.ArgumentParser) -> str:
    positionals = [metavar(a) for a in p._actions if not a.option_strings]
    has_options = any(a.option_strings and a.dest not in SKIPPED for a in p._actions)
    return " ".join(["zoo", name, *(["[OPTIONS]"] if has_options else []), *positionals])


def command_section(name: str, summary: str, p: argparse.ArgumentParser) -> list[str]:
    lines = [f"## zoo {name}", "", (p.description or summary).strip(), ""]
    lines += ["```text", usage(name, p), "```", ""]
    excluded = exclusions(p)
    for action in p._actions:
        if action.dest in SKIPPED:
            continue
        text = help_text(action, p.prog)
        if excluded.get(action):
            others = ", ".join(f"`{o}`" for o in excluded[action])
            text = f"{text} (not with {others})" if text else f"not with {others}"
        lines.append(f"- `{spelled(action)}`" + (f": {text}" if text else ""))
    if p.epilog:
        lines += ["", p.epilog.strip()]
    return lines + [""]


def render_section(root: argparse.ArgumentParser) -> str:
    commands = subcommands(root)
    lines = [START, "", "| command | what it does |", "| --- | --- |"]
    for name, summary, _ in commands:
        lines.append(f"| [`zoo {name}`](#zoo-{name}) | {summary.replace('|', '&#124;')} |")
    lines += ["", "Options of `zoo` itself:", ""]
    for action in root._actions:
        if action.dest != "help" and action.option_strings:
            lines.append(f"- `{spelled(action)}`: {help_text(action, root.prog)}")
    lines.append("")
    for name, summary, p in commands:
        lines += command_section(name, summary, p)
    return "\n".join(lines + [END])


def page_with(text: str, section: str) -> str:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{PAGE} has no section marked {START!r} ... {END!r}")
    return text[:start] + section + text[end + len(END) :]


def rendered() -> str:
    """What the page should hold."""
    return page_with(PAGE.read_text(encoding="utf-8"), render_section(parser()))


def main(argv=None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    cli.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = cli.parse_args(argv)
    text = rendered()
    if PAGE.read_text(encoding="utf-8") == text:
        return 0
    print(f"{'out of date' if args.check else 'rendered'}: {PAGE.relative_to(REPO)}")
    if not args.check:
        PAGE.write_text(text, encoding="utf-8")
    return 1 if args.check else 0


if __name__ == "__main__":
    sys.exit(main())
