"""What plugins register: an entry per name and kind (its target imported on first use), and the registry of each kind that holds them, with did-you-mean lookups."""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import importlib.metadata
import importlib.util
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from zoo.core.containment import PluginCodeFailed, call_plugin, contained, plugin_code
from zoo.errors import MissingModule, UnknownNameError, ZooDeprecationWarning, ZooError
from zoo.tasks import Task

KINDS = ("architecture", "tokenizer", "dataset", "pipeline", "command", "logger", "exporter")
EXPORTER_FUNCTIONS = ("unsupported", "write", "check")  # zoo.hookspecs.register_exporters


HOOK_FOR_KIND = {kind: f"register_{kind}s" for kind in KINDS}


KIND_OF_HOOK = {hook: kind for kind, hook in HOOK_FOR_KIND.items()}


# A name the command line takes as one word: never an option ('-x', '--help'), never two
# lines ('\Z', not '$', which also matches before a final newline), at most 128 characters
NAME_PATTERN = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
NAME_RULE = "letters, digits, '_', '.' or '-', starting with a letter, a digit or '_'"


COMMAND_PATTERN = re.compile(r"\A[a-z][a-z0-9-]*\Z")


COLUMN_ROLES = ("text", "label")  # what a dataset's columns are to the tasks


@dataclass(frozen=True)
class Entry:
    """One registered thing: its name, where its code lives, and which plugin added it (a
    tokenizer's or a tracker's whole registration; the other kinds add their own fields)."""

    kind: str
    name: str
    target: Any  # "module:attr" or the object itself
    plugin: str
    description: str = ""
    config: Any = None  # "module:Dataclass", the dataclass itself, or None

    def load(self):
        """Import and return the target (the heavy code), on first use; a target that cannot
        be what its kind needs is a ZooError naming the plugin."""
        target = resolve_target(self.target, f"{self.kind} {self.name!r}")
        if isinstance(self.target, str):  # objects were checked when they registered
            problem = target_problem(self.kind, target)
            if problem:
                raise ZooError(f"{self.kind} {self.name!r} from plugin {self.plugin!r}: {problem}")
        return target

    def config_class(self):
        if self.config is None:
            return None
        cls = resolve_target(self.config, f"config of {self.name!r}")
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise ZooError(
                f"config of {self.kind} {self.name!r} from plugin {self.plugin!r} is "
                f"a {type(cls).__name__}, not a dataclass"
            )
        return cls


@dataclass(frozen=True, kw_only=True)
class ArchitectureEntry(Entry):
    """A registered architecture (``register_architectures``)."""

    tasks: tuple[str, ...] = ()  # the registered tasks it has a head for
    # its memory(config, vocab_size) -> bytes to train, or "module:attr"
    memory: Any = None

    def memory_estimate(self, config, vocab_size: int | None = None) -> int | None:
        """Bytes a model of ``config`` needs to train with a vocabulary of ``vocab_size``
        tokens (None: not known yet), by the architecture's own estimate (None: it
        registered none)."""
        if self.memory is None:
            return None
        estimate = loaded_callable(self.memory, f"memory estimate of {self.name!r}", self.plugin)
        arguments = (config, vocab_size) if takes_two(estimate) else (config,)
        if len(arguments) == 1:  # API 1.0's memory(config)
            warnings.warn(
                f"memory estimate of {self.kind} {self.name!r} from plugin {self.plugin!r}: "
                "memory(config) is deprecated; take memory(config, vocab_size) (plugin API 2.0 "
                "calls only that)",
                ZooDeprecationWarning,
                stacklevel=2,
            )
        needed = call_plugin(
            estimate,
            *arguments,
            what=f"memory estimate of {self.kind} {self.name!r}",
            plugin=self.plugin,
        )
        if needed is not None and (isinstance(needed, bool) or not isinstance(needed, int)):
            raise ZooError(
                f"memory estimate of {self.kind} {self.name!r} from plugin "
                f"{self.plugin!r} returned {needed!r}, not a number of bytes"
            )
        return needed


@dataclass(frozen=True, kw_only=True)
class DatasetEntry(Entry):
    """A registered dataset (``register_datasets``)."""

    tasks: tuple[str, ...] = ()  # the registered tasks it serves, best first
    columns: tuple[tuple[str, str], ...] = ()  # its columns by role: (("text", "text"),)


@dataclass(frozen=True, kw_only=True)
class PipelineEntry(Entry):
    """A registered pipeline with its declaration of the task it serves (``register_pipelines``)."""

    task: Task


@dataclass(frozen=True, kw_only=True)
class ExporterEntry(Entry):
    """A registered export format (``register_exporters``)."""

    architectures: tuple[str, ...] = ()  # the architectures it exports ("*": any)


@dataclass(frozen=True)
class Command:
    """A `zoo` subcommand added by a plugin (the ``register_commands`` hook)."""

    name: str
    handler: Any  # "module:function" or the function; called with the parsed arguments
    plugin: str
    help: str = ""  # one line, shown by `zoo --help`
    description: str = ""  # shown by `zoo NAME --help`
    arguments: Any = None  # "module:function", or function(parser) adding the options
    kind: str = "command"

    def load_handler(self) -> Callable:
        return loaded_callable(self.handler, f"handler of command {self.name!r}", self.plugin)

    def add_arguments(self, parser) -> None:
        if self.arguments is not None:
            loaded_callable(self.arguments, f"arguments of command {self.name!r}", self.plugin)(
                parser
            )


def takes_two(function: Callable) -> bool:
    """Whether ``function`` can be called with two positional arguments (a signature it
    does not show counts as yes)."""
    import inspect

    try:
        inspect.signature(function).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to inspect
        return True
    return True


def loaded_callable(target, what: str, plugin: str) -> Callable:
    obj = resolve_target(target, what)
    if not callable(obj):
        raise ZooError(f"{what} from plugin {plugin!r} is {describe_target(obj)}, not a function")
    return obj


def target_problem(kind: str, target) -> str | None:
    """What is wrong with a registered target for its kind, or None (see zoo.hookspecs)."""
    import inspect

    if kind == "tokenizer":
        from zoo.tokenizer import Tokenizer

        if not (isinstance(target, type) and issubclass(target, Tokenizer)):
            return f"target is {describe_target(target)}, not a subclass of zoo.plugin.Tokenizer"
        return None
    if kind == "exporter":
        missing = [f for f in EXPORTER_FUNCTIONS if not callable(getattr(target, f, None))]
        if missing:
            return f"target is {describe_target(target)} without {', '.join(missing)}()"
        return None
    if kind == "pipeline":
        if not callable(getattr(target, "run", None)):
            return f"target is {describe_target(target)} without a run(job) method"
        return None
    if not callable(target):
        return f"target is {describe_target(target)}, not a class or function"
    if kind == "architecture":
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):  # no signature to inspect: let the call decide
            return None
        try:
            signature.bind(None, None)
        except TypeError:
            return f"target must be build(config, spec), but it takes {signature}"
    return None


def describe_target(target) -> str:
    from zoo.errors import shown

    name = getattr(target, "__qualname__", None)
    if name:
        return f"{type(target).__name__} {name}"
    if getattr(target, "func", None) is not None:  # functools.partial: name its function
        return shown(target)
    return f"a {type(target).__name__} ({shown(target, 60)})"


def resolve_target(target, what: str):
    if not isinstance(target, str):
        return target
    module_name, _, attr = target.partition(":")
    try:
        with plugin_code():
            obj = contained(importlib.import_module, module_name)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except PluginCodeFailed as exc:
        missing = exc.__cause__
        if isinstance(missing, ModuleNotFoundError) and missing.name:
            raise MissingModule(
                f"Cannot load {what} from {target!r}: it needs {missing.name}, which is not "
                "installed"
            ) from None
        raise ZooError(f"Cannot load {what} from {target!r}: {exc}") from None
    except AttributeError as exc:
        raise ZooError(f"Cannot load {what} from {target!r}: {exc}") from None
    return obj


UNLISTED = ("exporter", "command")  # kinds `zoo list` has no section for


E = TypeVar("E", bound="Entry | Command")


class Entries(Generic[E]):
    """Names of one kind: clashes are errors, unknown names get a did-you-mean."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, E] = {}

    def add(self, entry: E) -> None:
        existing = self._entries.get(entry.name)
        if existing is not None:
            raise ZooError(
                f"{self.kind} name {entry.name!r} from plugin {entry.plugin!r} clashes with "
                f"the one from plugin {existing.plugin!r}"
            )
        self._entries[entry.name] = entry

    def get(self, name: str) -> E:
        try:
            return self._entries[name]
        except KeyError:
            listed = self.kind not in UNLISTED  # else the error lists the names itself
            raise UnknownNameError(
                self.kind,
                name,
                self._entries,
                hint=f"zoo list {self.kind}s shows all" if listed else None,
            ) from None

    def remove(self, name: str) -> E:
        return self._entries.pop(name)

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def names(self, pattern: str = "*") -> list[str]:
        """Names matching a shell-style wildcard, in natural order (model2 before model10)."""
        return sorted(fnmatch.filter(self._entries, pattern), key=natural_key)

    def entries(self, pattern: str = "*") -> list[E]:
        return [self._entries[n] for n in self.names(pattern)]

    def entries_in_order(self) -> list[E]:
        """Every entry in the order it was registered (built-ins first)."""
        return list(self._entries.values())


def natural_key(text: str):
    """A sort key that orders numbers in names by value: ``step-9`` before ``step-10``."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]
