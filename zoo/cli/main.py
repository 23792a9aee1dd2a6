"""The `zoo` command line. Thin: it parses, calls the Python API (zoo.api), and prints.

Errors the user can fix exit 2 with one line; unexpected failures exit 1 with a short
message (the traceback only with --debug). Each group of commands lives in its own module
with an ``add_commands(commands)``; plugins add theirs through ``register_commands``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import logging
import os
import signal
import sys
from typing import ClassVar

from zoo import __version__
from zoo.cli import browse, inference, runs, training, tune, ui
from zoo.cli.options import check_output_options, others_print_to_stderr
from zoo.core.process import freeze_gc_before_exit, tune_gc_for_training
from zoo.errors import PluginError, SearchInterrupted, SweepInterrupted, ZooError, clip, close_names


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line with a did-you-mean, and exit code 2, and an
    option is only ever its whole name (``--step 5`` is an error, never ``--steps 5``)."""

    # the last (sub)command parser that parsed: a typo is near its options
    innermost: ClassVar[Parser | None] = None

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        Parser.innermost = self
        return super().parse_known_args(args, namespace)

    def error(self, message):
        if "invalid choice" in message:
            bad = message.split("'")[1] if "'" in message else ""
            choices = message.split("choose from")[-1]
            names = [c.strip(" '),") for c in choices.split(",")]
            close = difflib.get_close_matches(bad, names, n=1)
            if close:
                message += f". Did you mean: {close[0]}?"
        if message.startswith("unrecognized arguments:") and Parser.innermost is not None:
            typed = [word for word in message.split()[2:] if word.startswith("--")]
            options = [o for a in Parser.innermost._actions for o in a.option_strings]
            close = close_names(typed[0].split("=")[0], options, n=1) if typed else []
            if close:
                message += f". Did you mean: {close[0]}?"
        raise ZooError(message if self.prog == "zoo" else f"{self.prog}: {message}")


class VersionAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        from zoo.core.loading import get_zoo

        print(f"zoo {__version__}")
        for info in get_zoo().plugins.values():
            state = f"set aside: {info.error}" if info.error else "loaded"
            print(f"  {info.name} {info.version or ''} ({info.source}, {state})")
        parser.exit(0)


def build_parser() -> Parser:
    from zoo.core.loading import get_zoo

    parser = Parser(
        prog="zoo",
        description="A model zoo for small transformers: train, "
        "evaluate and compare any architecture x tokenizer on any dataset.",
    )
    parser.add_argument(
        "--version", action=VersionAction, nargs=0, help="print the version and the loaded plugins"
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    for group in (browse, training, inference, runs, tune, ui):
        group.add_commands(commands)

    add_plugin_commands(commands, get_zoo())
    for name in THREADED_COMMANDS:
        add_thread_options(commands.choices[name])
    for command in commands.choices.values():  # `zoo run ... --debug` as well as `zoo --debug run`
        try:
            command.add_argument(
                "--debug",
                action="store_true",
                default=argparse.SUPPRESS,
                help="show full tracebacks",
            )
        except argparse.ArgumentError:  # a plugin's command has its own --debug
            pass
    return parser


# The commands that train or evaluate in this process: zoo chooses their threads before torch
# loads (zoo.core.threads). `zoo resume` trains on the count its run recorded.
THREADED_COMMANDS = ("run", "sweep", "tune", "reproduce", "ensemble", "eval")


def add_thread_options(parser) -> None:
    from zoo.cli.options import positive_int

    parser.add_argument(
        "--threads",
        type=positive_int,
        metavar="N",
        help="torch threads per training process (default: the idle CPUs among those this "
        "process may use; OMP_NUM_THREADS is honoured too)",
    )
    if not any("--verbose" in action.option_strings for action in parser._actions):
        parser.add_argument(
            "--verbose", action="store_true", help="say how many threads train, and why"
        )


def add_plugin_commands(commands, zoo) -> None:
    """The commands plugins registered (``register_commands``), after zoo's own. One whose
    name is taken or whose arguments cannot be added is set aside with a warning."""
    from zoo.core.containment import call_plugin
    from zoo.core.loading import strict_plugins

    for command in zoo.commands.entries():
        try:
            if command.name in commands.choices:
                raise ZooError("zoo already has a command of that name")
            call_plugin(
                command.add_arguments,
                Parser(prog=f"zoo {command.name}"),  # a dry run
                what=f"the arguments of command {command.name!r}",
                plugin=command.plugin,
            )
        except Exception as exc:
            message = (
                f"command {command.name!r} from plugin {command.plugin!r} set aside: "
                f"{type(exc).__name__}: {exc}"
            )
            if strict_plugins():
                raise PluginError(message + " [ZOO_STRICT_PLUGINS=1]") from None
            print(f"zoo: warning: {message}", file=sys.stderr)
            continue
        p = commands.add_parser(
            command.name,
            help=command.help,
            description=command.description or command.help,
            epilog=f"(added by plugin {command.plugin})",
        )
        command.add_arguments(p)
        p.set_defaults(handler=PluginHandler(command))


class PluginHandler:
    """A plugin's command: its handler, called with the plugin named should it fail."""

    def __init__(self, command):
        self.command = command

    def __call__(self, args):
        from zoo.core.containment import call_plugin

        command = self.command
        return call_plugin(
            command.load_handler(), args, what=f"command {command.name!r}", plugin=command.plugin
        )


def discard_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's final flush of what is left
    in its buffer does not fail a second time on the broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real descriptor (tests capture it)
        pass


def main(argv=None) -> int:
    """The `zoo` command. Called with no ``argv`` it is the program (the console script,
    ``python -m zoo``), about to exit when it returns, and tunes the garbage collector for
    that; a caller that passes ``argv`` (tests, notebooks) keeps its own settings."""
    if argv is not None:
        return run_command(argv)
    tune_gc_for_training()
    try:
        return run_command(sys.argv[1:])
    finally:
        freeze_gc_before_exit()


def run_command(argv: list[str]) -> int:
    """Run one command; what the core reports while it works (plugins set aside, progress,
    warnings) shows on stderr."""
    from zoo.messages import reporting_to

    with reporting_to(None), progress_lines_on_stdout():
        return _command(argv)


class _Stdout(logging.StreamHandler):
    """Writes to whatever ``sys.stdout`` is when a line comes (tests and --json swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stdout
        super().emit(record)


@contextlib.contextmanager
def progress_lines_on_stdout():
    """Training's progress lines (zoo.train.progress, written only when the output is not a
    terminal) on standard output, before the result: a redirected run's log holds them."""
    logger = logging.getLogger("zoo.train.progress")
    handler = _Stdout()
    saved = logger.handlers[:], logger.propagate, logger.level
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.handlers, logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])


def _command(argv: list[str]) -> int:
    debug = "--debug" in argv or os.environ.get("ZOO_DEBUG") == "1"
    try:
        with others_print_to_stderr("--json" in argv):  # a plugin printing as it loads
            args = build_parser().parse_args(argv)
        if not getattr(args, "handler", None):
            build_parser().print_help()
            return 0
        if sys.stdout is None:  # started with standard output closed (`zoo runs >&-`)
            raise ZooError("standard output is closed; nothing zoo prints could be read")
        if args.command in THREADED_COMMANDS:  # before torch starts its thread pools
            from zoo.core.threads import check_thread_count, settle_threads

            check_thread_count(args.threads)
            choice = settle_threads(args.threads)
            if args.verbose:
                print(f"zoo: {choice.describe()}", file=sys.stderr)
        own = not isinstance(args.handler, PluginHandler)  # a plugin's prints its own
        if own:
            check_output_options(args)
        with others_print_to_stderr(own and getattr(args, "json", False) is True):
            code = args.handler(args) or 0
        sys.stdout.flush()  # a write that fails (closed or full output) is an error, not 0
        return code
    except ZooError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"zoo: error: {clip(exc.command_line())}", file=sys.stderr)  # one line, however long
        return 2
    except KeyboardInterrupt as exc:
        print(f"zoo: {interrupted(exc)}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`zoo runs | head`): stop quietly, but not with 0, for the
        # output is incomplete; 141 is what a program killed by SIGPIPE reports
        discard_stdout()
        return 128 + signal.SIGPIPE
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            return unexpected(exc, debug)
        discard_stdout()  # standard output on a full disk: the user's to fix, not a crash
        print(f"zoo: error: cannot write: {exc.strerror} (is the disk full?)", file=sys.stderr)
        return 2
    except Exception as exc:
        return unexpected(exc, debug)


def interrupted(exc: KeyboardInterrupt) -> str:
    """What Ctrl-C left, and how to go on."""
    run_id = getattr(exc, "run_id", None)  # zoo.errors.RunInterrupted: a recorded run
    if run_id:
        return f"interrupted; run {run_id} is kept; continue it with: zoo resume {run_id}"
    if isinstance(exc, SearchInterrupted):
        return (
            "interrupted; the studies and trials are kept; run the same zoo tune again to continue"
        )
    if isinstance(exc, SweepInterrupted):
        return (
            "interrupted; the sweep's runs are kept; run the same zoo sweep again to continue them"
        )
    return "interrupted"


def unexpected(exc: BaseException, debug: bool) -> int:
    if debug:
        import traceback

        traceback.print_exception(exc)
    print(
        f"zoo: unexpected error: {type(exc).__name__}: {clip(exc)} (run with --debug for the "
        "traceback)",
        file=sys.stderr,
    )
    return 1
