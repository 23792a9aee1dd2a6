"""Plugin discovery and name lookups.

Built-in plugins, third-party entry points (group ``zoo``) and local modules listed in a
user's registry.toml all go through the same ``pm.register`` path. A plugin that fails to
import or raises in a hook is set aside with one warning line; ZOO_STRICT_PLUGINS=1 turns
that into an error.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from zoo import hookspecs
from zoo.core.catalogue import resolve_bases
from zoo.core.code_identity import (
    builtin_source_hash,
    editable_project,
    module_source_hash,
    top_package_hash,
)
from zoo.core.containment import (
    PluginCodeFailed,
    contained,
    describe,
    is_plugin_failure,
    plugin_code,
)
from zoo.core.kinds import (
    KIND_OF_HOOK,
    KINDS,
    ArchitectureEntry,
    Command,
    DatasetEntry,
    Entries,
    Entry,
    ExporterEntry,
    PipelineEntry,
    resolve_target,
)
from zoo.core.plugin_presets import (
    StagedPreset,
    add_presets,
    check_presets,
    preset_stager,
    remove_presets,
)
from zoo.core.staging import register_for
from zoo.errors import PluginError
from zoo.tasks import Task

# The built-ins, registered exactly like third-party plugins, in this order. The only place
# the core names them: it imports nothing else of them (tests/test_layering.py).
DEFAULT_PLUGINS = (
    "zoo.plugins.char",
    "zoo.plugins.bpe",
    "zoo.plugins.decoder",
    "zoo.plugins.encoder",
    "zoo.plugins.encdec",
    "zoo.plugins.numpy",
    "zoo.plugins.digits",
    "zoo.plugins.transformers",
    "zoo.plugins.fasttext",
    "zoo.plugins.trackers",
    "zoo.plugins.lstm",
    "zoo.plugins.mamba",
    "zoo.plugins.nbsvm",
    "zoo.plugins.export",
    "zoo.pipelines",
)
# zoo's own code, which identifies every built-in: the core and the built-ins' packages.
ZOO_PACKAGES = ("zoo", *sorted({".".join(m.split(".")[:2]) for m in DEFAULT_PLUGINS}))

log = logging.getLogger(__name__)


@dataclass
class PluginInfo:
    name: str
    source: str  # "builtin", "entry point" or "local file"
    distribution: str = ""
    version: str = ""
    location: str = ""  # module name, entry point value or file path
    hooks: list[str] = field(default_factory=list)
    error: str = ""
    source_sha256: str = ""  # of its source files, once known (code_identity)
    editable: str | None = None  # an editable install's project (PEP 610 url), else None
    hash_source: Callable[[], str] | None = field(default=None, repr=False)
    modules: list[str] = field(default_factory=list)  # the packages its code lives in

    @property
    def by_source(self) -> bool:
        """Whether the code is identified by its source (built-in, editable or local) rather
        than by a released distribution's version."""
        return self.source != "entry point" or self.editable is not None or not self.version

    @property
    def identity(self) -> str:
        """Which code this plugin is: a released distribution's version, otherwise a hash
        of its source (built-ins, editable installs, local modules). Part of every run's
        config hash, so a changed plugin never reuses an old run's results."""
        if not self.by_source:
            return self.version
        if not self.source_sha256 and self.hash_source is not None:
            self.source_sha256 = self.hash_source()
        return f"sha256:{self.source_sha256}" if self.source_sha256 else "unknown"

    def provenance(self) -> dict:
        identity = self.identity
        return {
            "distribution": self.distribution,
            "version": self.version,
            **({"source_sha256": self.source_sha256} if identity.startswith("sha256:") else {}),
            **({"editable": self.editable} if self.editable is not None else {}),
            "source": self.source,
        }


class Zoo:
    """Everything that was registered, plus the catalogue of datasets and presets."""

    def __init__(self, catalogue):
        self.catalogue = catalogue
        self.entries_of: dict[str, Entries[Any]] = {kind: Entries(kind) for kind in KINDS}
        self.plugins: dict[str, PluginInfo] = {}
        self.loaded = False  # build_zoo has loaded every plugin and resolved presets' bases
        self.pm = pluggy.PluginManager("zoo")
        self.pm.add_hookspecs(hookspecs)

    @property
    def architectures(self) -> Entries[ArchitectureEntry]:
        return self.entries_of["architecture"]

    @property
    def tokenizers(self) -> Entries[Entry]:
        return self.entries_of["tokenizer"]

    @property
    def datasets(self) -> Entries[DatasetEntry]:
        return self.entries_of["dataset"]

    @property
    def pipelines(self) -> Entries[PipelineEntry]:
        return self.entries_of["pipeline"]

    @property
    def commands(self) -> Entries[Command]:
        return self.entries_of["command"]

    @property
    def loggers(self) -> Entries[Entry]:
        return self.entries_of["logger"]

    @property
    def exporters(self) -> Entries[ExporterEntry]:
        return self.entries_of["exporter"]

    # -- loading ---------------------------------------------------------------------
    def add_plugin(self, plugin: Any, info: PluginInfo, strict: bool = False) -> bool:
        """Register one plugin object and run its hooks; set it aside if anything fails
        (``sys.exit()`` and a KeyboardInterrupt it raises included: zoo.core.containment)."""
        if info.by_source and info.hash_source is None:
            info.hash_source = lambda: module_source_hash(plugin)
        with plugin_code():
            try:
                check_api(plugin)
                self._register(plugin, info)
            except BaseException as exc:  # a broken plugin must not break the zoo
                if not is_plugin_failure(exc):
                    raise
                info.error = _one_line(exc)
                self.plugins[info.name] = info
                self.set_aside(info, strict)
                return False
        self.plugins[info.name] = info
        info.modules.append(
            plugin.__name__ if isinstance(plugin, types.ModuleType) else _module_of(plugin)
        )
        return True

    def plugin_of(self, module: str) -> str | None:
        """The plugin whose code ``module`` is (a module of a package it was loaded from, or
        of one of its registered targets), or None: zoo's own code or a library's."""
        for info in self.plugins.values():
            if any(module == m or module.startswith(m + ".") for m in info.modules):
                return info.name
        for registry in self.entries_of.values():
            for entry in registry.entries_in_order():
                target = entry.handler if isinstance(entry, Command) else entry.target
                if module == _module_of(target):
                    return entry.plugin
        return None

    def _register(self, plugin: Any, info: PluginInfo) -> None:
        self.pm.register(plugin, name=info.name)
        try:
            self.pm.check_pending()
            staged, presets = self._collect(plugin, info)
            for entry in staged:
                if entry.name in self.entries_of[entry.kind]:
                    self.entries_of[entry.kind].add(entry)  # raises the clash error
            if presets:
                ours = {(entry.kind, entry.name) for entry in staged}

                def known(kind: str, name: str) -> bool:
                    return (kind, name) in ours or name in self.entries_of[kind]

                check_presets(self.catalogue, info.name, presets, known)
            for entry in staged:
                self.entries_of[entry.kind].add(entry)
            add_presets(self.catalogue, presets)
            if presets and self.loaded:  # registered in-process, after build_zoo
                resolve_bases(self.catalogue)
        except BaseException:
            self.pm.unregister(plugin)
            raise

    def _collect(
        self, plugin, info: PluginInfo
    ) -> tuple[list[Entry | Command], list[StagedPreset]]:
        staged: list[Entry | Command] = []
        presets: list[StagedPreset] = []
        for caller in self.pm.get_hookcallers(plugin) or []:
            info.hooks.append(caller.name)
            for impl in caller.get_hookimpls():
                if impl.plugin is not plugin:
                    continue
                if caller.name == "register_presets":
                    register = preset_stager(info.name, presets)
                else:
                    register = register_for(KIND_OF_HOOK[caller.name], info.name, staged)
                impl.function(**{arg: register for arg in impl.argnames})
        return staged, presets

    def remove_plugin(self, name: str) -> None:
        """Unregister a plugin and everything it registered (tests register in-process)."""
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        for registry in self.entries_of.values():
            for entry in registry.entries():
                if entry.plugin == name:
                    registry.remove(entry.name)
        remove_presets(self.catalogue, name)
        self.plugins.pop(name, None)

    def set_aside(self, info: PluginInfo, strict: bool) -> None:
        where = ", ".join(
            x
            for x in (info.distribution and f"{info.distribution} {info.version}", info.location)
            if x
        )
        message = f"plugin {info.name!r} ({where}) set aside: {info.error}"
        if strict:
            raise PluginError(message + " [ZOO_STRICT_PLUGINS=1]")
        log.warning(f"{message}")


def check_api(plugin: Any) -> None:
    """Refuse a plugin whose ``ZOO_PLUGIN_API`` (a version specifier, ``">=1.1,<2"``) does
    not include this zoo's ``zoo.plugin.API_VERSION``: it is set aside like a broken one."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from zoo.hookspecs import API_VERSION

    declared = getattr(plugin, "ZOO_PLUGIN_API", None)
    if declared is None:
        return
    try:
        supported = SpecifierSet(declared) if isinstance(declared, str) else None
    except InvalidSpecifier:
        supported = None
    if supported is None:
        raise PluginError(
            f"ZOO_PLUGIN_API = {declared!r:.60} is not a version specifier like '>=1.1,<2'"
        )
    if API_VERSION not in supported:
        raise PluginError(
            f"it supports zoo's plugin API {declared}, and this zoo has API {API_VERSION}"
        )


def _one_line(exc: BaseException) -> str:
    """An error as one line (pluggy's validation errors span several)."""
    if isinstance(exc, PluginCodeFailed) or not isinstance(exc, Exception):
        return describe(exc.__cause__ or exc)[:500]
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:500]


def _module_of(target) -> str:
    """The module a registered target (or a plugin object) lives in."""
    if isinstance(target, str):
        return target.partition(":")[0]
    if isinstance(target, type) or callable(target) and hasattr(target, "__module__"):
        return target.__module__
    return type(target).__module__


def _wanted(names: Iterable[str]) -> bool:
    allowed = os.environ.get("ZOO_LOAD_PLUGINS")
    if allowed is None:
        return True
    allowed_set = {n.strip() for n in allowed.split(",") if n.strip()}
    return any(n in allowed_set for n in names)


def strict_plugins() -> bool:
    """ZOO_STRICT_PLUGINS=1: a broken plugin is an error instead of a warning."""
    return os.environ.get("ZOO_STRICT_PLUGINS", "").lower() in ("1", "true", "yes")


def build_zoo(
    catalogue=None, *, builtins: Iterable[str] = DEFAULT_PLUGINS, entry_points: bool = True
) -> Zoo:
    """Load the catalogue and every plugin: built-ins, entry points, local modules."""
    from zoo.core.catalogue import load_catalogue

    # bases resolve once plugins have added their presets: a user's may build on them
    catalogue = catalogue if catalogue is not None else load_catalogue(resolve=False)
    zoo = Zoo(catalogue)
    strict = strict_plugins()
    for module_name in builtins:
        module = importlib.import_module(module_name)
        zoo.add_plugin(
            module,
            PluginInfo(
                module_name.removeprefix("zoo.plugins."),
                "builtin",
                "zoo",
                _zoo_version(),
                module_name,
                hash_source=functools.partial(builtin_source_hash, ZOO_PACKAGES),
            ),
            strict,
        )
    if entry_points:
        for ep in importlib.metadata.entry_points(group="zoo"):
            dist = getattr(ep, "dist", None)
            dist_name = dist.metadata["Name"] if dist is not None else ""
            if not _wanted([ep.name, dist_name]):
                continue
            info = PluginInfo(
                ep.name,
                "entry point",
                dist_name,
                dist.version if dist is not None else "",
                f"{ep.name} = {ep.value}",
                editable=editable_project(dist),
                hash_source=functools.partial(top_package_hash, ep.module),
                modules=[ep.module.partition(".")[0]],
            )
            try:
                with plugin_code():
                    plugin = contained(ep.load)
            except PluginCodeFailed as exc:
                info.error = _one_line(exc)
                zoo.plugins[info.name] = info
                zoo.set_aside(info, strict)
                continue
            zoo.add_plugin(plugin, info, strict)
    for path in catalogue.plugin_modules:
        if not _wanted([path.stem, str(path)]):
            continue
        info = PluginInfo(path.stem, "local file", location=str(path))
        try:
            with plugin_code():
                plugin = contained(_import_file, path)
        except PluginCodeFailed as exc:
            info.error = _one_line(exc)
            zoo.plugins[info.name] = info
            zoo.set_aside(info, strict)
            continue
        zoo.add_plugin(plugin, info, strict)
    resolve_bases(catalogue)
    zoo.loaded = True
    return zoo


def _import_file(path: Path):
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    module_name = f"zoo_local_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)  # no half-imported module left behind
        raise
    return module


def task_loss(task: Task) -> Callable:
    """A task's loss function, imported (as plugin code, contained) on first use."""
    return resolve_target(task.loss, f"loss of task {task.name!r}")


def _zoo_version() -> str:
    from zoo import __version__

    return __version__


_current: Zoo | None = None


def get_zoo() -> Zoo:
    """The process-wide zoo, built on first use."""
    global _current
    if _current is None:
        _current = build_zoo()
    return _current


def reset_zoo(zoo: Zoo | None = None) -> None:
    """Replace (or forget) the process-wide zoo; tests use this."""
    global _current
    _current = zoo
