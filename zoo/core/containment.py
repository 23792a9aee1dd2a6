"""Plugin code runs contained: whatever it raises, ``BaseException`` included, sets the plugin
aside, except a real Ctrl-C from the user.

``sys.exit()`` in a plugin module raises ``SystemExit``, which ``except Exception`` does
not catch: ``zoo run`` then ended with exit 0, no output and no training. A plugin may also
raise ``KeyboardInterrupt`` itself. To tell that from the user pressing Ctrl-C, plugin code
runs under a SIGINT handler that notes the signal before raising ``KeyboardInterrupt``:
an interrupt with the note is the user's and goes on up; one without it is the plugin's.
A run's training and a sweep's cells run the same way (``own_interrupts_fail``): a
KeyboardInterrupt that no SIGINT caused fails that run or cell like any other error.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from collections.abc import Callable
from contextlib import contextmanager

from zoo.errors import ZooError

_watch: dict | None = None  # the active watch: {"sigint": bool}; None outside plugin code
_no_ctrl_c = False  # inside no_ctrl_c(): no Ctrl-C from the user can reach this code


@contextmanager
def no_ctrl_c():
    """Run code that no Ctrl-C from the user reaches: a sweep's cell in a worker (SIGINT is
    the driver's, which stops the workers itself). A KeyboardInterrupt raised there is the
    code's own, a failure like any exception."""
    global _no_ctrl_c
    previous, _no_ctrl_c = _no_ctrl_c, True
    try:
        yield
    finally:
        _no_ctrl_c = previous


class InterruptRaisedByCode(ZooError):
    """A KeyboardInterrupt that code raised itself (a model's forward, say), with no Ctrl-C
    from the user: a failure of the run or cell, recorded as such; the sweep goes on."""


@contextmanager
def plugin_code():
    """Run plugin code (imports, hooks) while watching for a Ctrl-C from the user."""
    global _watch
    if _watch is not None:  # nested: the outer watch is still listening
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        yield  # no signal handlers here: every KeyboardInterrupt counts as the user's
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # started so (nohup, a background job): no Ctrl-C arrives
        with no_ctrl_c():
            yield
        return
    if previous is not signal.default_int_handler:
        yield  # someone else handles SIGINT (torchrun, a host program): leave it alone
        return
    watch: dict = {"sigint": False, "raised": None}

    def note_and_interrupt(signum, frame):
        watch["sigint"] = True
        watch["raised"] = interrupt = KeyboardInterrupt()
        raise interrupt

    signal.signal(signal.SIGINT, note_and_interrupt)
    hook = sys.unraisablehook
    sys.unraisablehook = _ctrl_c_not_lost(watch, hook)
    _watch = watch
    try:
        yield
    finally:
        _watch = None
        sys.unraisablehook = hook
        signal.signal(signal.SIGINT, previous)


REDELIVER_SECONDS = 0.01  # long enough for the finalizers under way to end


def _ctrl_c_not_lost(watch: dict, hook: Callable) -> Callable:
    """An unraisablehook for the user's Ctrl-C landing in a finalizer (a weakref callback,
    a ``__del__``, as a garbage collection runs them), where Python prints what is raised
    and drops it, so the code went on: the Ctrl-C is delivered again a moment later, to
    the code that runs then (again, if it lands in a finalizer again)."""

    def hook_or_redeliver(unraisable) -> None:
        if unraisable.exc_value is None or unraisable.exc_value is not watch["raised"]:
            hook(unraisable)
            return
        # from another thread: here, in the finalizer still, it would be lost again
        again = threading.Timer(REDELIVER_SECONDS, _thread.interrupt_main)
        again.daemon = True
        again.start()

    return hook_or_redeliver


@contextmanager
def own_interrupts_fail(what: str = "the run's code"):
    """Run code in which a KeyboardInterrupt without a Ctrl-C from the user behind it (no
    SIGINT arrived, or none can reach this code: no_ctrl_c()) is that code's failure:
    InterruptRaisedByCode. The user's Ctrl-C goes on up as it was."""
    with plugin_code():
        try:
            yield
        except KeyboardInterrupt as exc:
            if not is_plugin_failure(exc):
                raise
            raise InterruptRaisedByCode(
                f"{what} raised KeyboardInterrupt itself (no Ctrl-C from the user)"
            ) from None


def is_plugin_failure(exc: BaseException) -> bool:
    """Whether ``exc``, caught from plugin code, is the plugin's fault (set it aside) rather
    than the user's Ctrl-C (let it stop zoo). Call it inside ``plugin_code()``."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, KeyboardInterrupt):
        return _no_ctrl_c or (_watch is not None and not _watch["sigint"])
    return True  # SystemExit, GeneratorExit, and any other BaseException


def describe(exc: BaseException) -> str:
    """One line for a plugin's failure, without object reprs."""
    if isinstance(exc, SystemExit):
        return (
            f"it called sys.exit({exc.code!r})" if exc.code is not None else "it called sys.exit()"
        )
    if isinstance(exc, KeyboardInterrupt):
        return "it raised KeyboardInterrupt (not a Ctrl-C from the user)"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class PluginCodeFailed(Exception):
    """Plugin code raised something (BaseException included) that is the plugin's fault."""

    def __init__(self, exc: BaseException):
        super().__init__(describe(exc))


def contained(function, *args):
    """Call plugin code inside ``plugin_code()``; its failures become PluginCodeFailed, and a
    real Ctrl-C from the user goes on up."""
    try:
        return function(*args)
    except BaseException as exc:
        if not is_plugin_failure(exc):
            raise
        raise PluginCodeFailed(exc) from exc


def call_plugin(function: Callable, *args, what: str, plugin: str):
    """Call plugin code that runs after loading (a command's handler, an architecture's
    build). What it raises, its ``sys.exit()`` or a KeyboardInterrupt it raises itself, is
    that plugin's failure: one line naming it (a ZooError, exit 2), not a traceback, a
    silent exit 0 or an "interrupted". A ZooError it raises says what it means already; a
    real Ctrl-C from the user goes on up (130)."""
    with plugin_code():
        try:
            return function(*args)
        except ZooError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and not is_plugin_failure(exc):
                raise
            # --debug shows the plugin's traceback through the cause
            raise ZooError(f"{what} from plugin {plugin!r} failed: {describe(exc)}") from exc
