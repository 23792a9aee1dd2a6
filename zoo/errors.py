"""Errors the user can fix. The CLI prints them as one line and exits 2."""

from __future__ import annotations

import difflib


class ZooError(Exception):
    """A problem with the user's input: a name, an option, a file. Exit code 2.

    ``option`` names the argument at fault as the Python API spells it (``where``,
    ``stack_seeds``), and the message begins with that name; the command line writes the
    command's flag in its place (``--where``, ``--stack-seeds``). Below the command line
    nothing names a flag."""

    option: str | None = None
    """The argument at fault, as the Python API spells it (None: no one argument)."""

    def __init__(self, message: str = "", *, option: str | None = None):
        super().__init__(message)
        self.option = option

    def command_line(self) -> str:
        """The message as the command line (and `zoo ui`, beside it) writes it: the option
        it begins with as the command's flag, ``where ...`` -> ``--where ...``."""
        message = str(self)
        if not self.option or not message.startswith(self.option):
            return message
        return "--" + self.option.replace("_", "-") + message[len(self.option) :]

    def renamed(self, names: dict[str, str]) -> ZooError:
        """This error with its option as a command names it: a command whose flag for an
        argument is not the argument's own name (``cpus`` -> ``trial_cpus``) renames it."""
        message, option = str(self), self.option
        if option not in names:
            return self
        if message.startswith(option):
            message = names[option] + message[len(option) :]
        return type(self)(message, option=names[option])


MAX_SHOWN = 80  # characters of a value the user gave that a message echoes back


def shown(value, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters: a 100,000-character
    value is not echoed whole, and a functools.partial is named by its function."""
    func = getattr(value, "func", None)
    if func is not None and hasattr(value, "args"):  # functools.partial
        name = getattr(func, "__qualname__", type(func).__name__)
        return f"a partial of {name}"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 20]}...{text[-8:]} ({len(text):,} characters)"


def clip(message, limit: int = 2000) -> str:
    """A message cut to ``limit`` characters: whatever it echoes, it stays readable."""
    message = str(message)
    if len(message) <= limit:
        return message
    return f"{message[: limit - 200]} ... {message[-150:]} ({len(message):,} characters)"


def close_names(name: str, available, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The names in ``available`` closest to ``name``, best first: near spellings
    (difflib's ratio), and names that one starts with the other, an abbreviation or a
    longer spelling ('lrate' for 'lr'), which count as 0.8."""
    name = name[:200]
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(name)
    scored = []
    for candidate in available:
        matcher.set_seq1(candidate)
        score = matcher.ratio()
        shorter, longer = sorted((candidate.lower(), name.lower()), key=len)
        if len(shorter) >= 2 and longer.startswith(shorter) and shorter != longer:
            score = max(score, 0.8)
        if score >= cutoff:
            scored.append((score, candidate))
    scored.sort(key=lambda pair: -pair[0])
    return [candidate for _, candidate in scored[:n]]


class UnknownNameError(ZooError):
    """A name that matches nothing registered: the message names the ``kind`` and the
    ``name``, suggests the closest of ``available`` ("Did you mean: ...?"), and lists them
    or gives ``hint``. ``suggestions`` holds the close matches."""

    def __init__(self, kind: str, name: str, available, hint: str | None = None):
        available = sorted(available)
        close = close_names(str(name), available)
        message = f"Unknown {kind} {shown(name)}."
        if close:
            message += f" Did you mean: {', '.join(close)}?"
        if hint:
            message += f" ({hint})"
        elif available:
            listed = ", ".join(available[:12]) + (", ..." if len(available) > 12 else "")
            message += f" Available: {listed}"
        super().__init__(message)
        self.kind, self.name, self.suggestions = kind, name, close


class ZooDeprecationWarning(DeprecationWarning):
    """A name or signature of the plugin API or the Python API that still works but will
    leave: the message names its replacement. Shown by default (zoo.plugin turns it on), so
    a plugin's author sees it at ``zoo run``, not only under pytest."""


class ContractBroken(Exception):
    """zoo found plugin code breaking the contract it checks (a tokenizer's id outside its
    vocabulary, a validation without the score it promised). ``culprit`` is the object at
    fault (None: the plugin code that called zoo); zoo.core.culprits names its plugin."""

    def __init__(self, message: str, culprit=None):
        super().__init__(message)
        self.culprit = culprit


class PluginError(ZooError):
    """A plugin failed to load or register (raised only in strict mode)."""


class MissingModule(ZooError):
    """Plugin code that imports a module this environment lacks (an extra not installed)."""


class RunRefused(ZooError):
    """A mistake found once a run had started, before it trained a step (an ``--init`` run
    none of whose tensors fit the model): the run is removed, row and folder, not kept as
    failed, as if it had been refused before it started."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a recorded run: the run is marked interrupted and `zoo resume` continues
    it. A KeyboardInterrupt still, so whatever stops on Ctrl-C stops on this."""

    def __init__(self, run_id: str):
        super().__init__(run_id)
        self.run_id = run_id


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep whose cells run in workers: the driver stopped them and marked
    their runs interrupted; running the same sweep again continues them."""


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C during `zoo tune`: the trials cut off are marked interrupted (their runs) and
    lost (in the study, their settings queued again); the same command continues."""


class RunDiverged(ZooError):
    """A run stopped on a non-finite loss or gradient; its row says 'diverged' and its last
    good checkpoint is kept. A sweep records the cell and goes on."""

    def __init__(self, run_id: str, exc):  # exc: zoo.train.loop.Diverged
        kept = (
            f"; its last good checkpoint (step {exc.checkpoint_step}) is kept"
            if exc.checkpoint_step is not None
            else ""
        )
        super().__init__(f"run {run_id} {exc}{kept}; lower the learning rate (--set lr=...)")
        self.run_id, self.step, self.checkpoint_step = run_id, exc.step, exc.checkpoint_step


def require_extra(modules: tuple[str, ...], extra: str, what: str) -> None:
    """Refuse, in one line, ``what`` when a module of zoo's optional ``extra`` is missing."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ZooError(
            f"{what} needs {', '.join(missing)}, of zoo's optional extra {extra!r}: "
            f"pip install 'zoo[{extra}]'"
        )
