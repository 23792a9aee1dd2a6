"""registry.toml: named datasets, model presets, dataset mirrors and local plugin modules.

The built-in file ships with the package. A registry.toml in the current directory, or the
file named by ZOO_REGISTRY, extends and overrides it. Paths inside a file are relative to it.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from zoo.core.file_checks import FileParser
from zoo.errors import UnknownNameError, ZooError
from zoo.io import check_depth, read_config_text

BUILTIN_FILE = Path(__file__).resolve().parent.parent / "registry.toml"

DATASET_KEYS = {
    "hub",
    "path",
    "plugin",
    "task",
    "text_column",
    "label_column",
    "splits",
    "description",
    "config",
}
MODEL_KEYS = {"architecture", "tokenizer", "description", "set", "base", "template"}
ENSEMBLE_KEYS = {"members", "weights", "description"}  # a preset made of other presets
ENSEMBLE_WEIGHTS = ("equal", "fit")
TOP_KEYS = {"mirrors", "datasets", "models", "plugins"}
SPLIT_ROLES = {"train", "validation", "test"}


@dataclass
class DatasetEntry:
    name: str
    source: Path  # the registry.toml that defined it
    hub: str | None = None  # a Hub id, found in a mirror or on the Hub
    path: str | None = None  # a local folder or file
    plugin: str | None = None  # a dataset registered by a plugin
    task: str | None = None
    text_column: str | None = None
    label_column: str | None = None
    splits: dict[str, str] = field(default_factory=dict)  # role -> split name
    description: str = ""
    config: dict = field(default_factory=dict)  # options for a plugin dataset


@dataclass
class Preset:
    name: str
    architecture: str
    tokenizer: str
    source: Path | str  # the registry.toml that defined it, or the plugin that registered it
    description: str = ""
    overrides: dict = field(default_factory=dict)  # same meaning as --set key=value
    base: list[str] = field(default_factory=list)  # presets it builds on, in order
    own: dict = field(default_factory=dict)  # the overrides this preset writes itself
    template: bool = False  # values for other presets to build on, not a model to train
    plugin: str = ""  # the plugin that registered it (register_presets), "" for a file
    resolved: bool = False  # its bases applied (resolve_bases)
    depth: int = 0  # the longest chain of bases below it


@dataclass
class EnsemblePreset:
    """A preset whose runs are its member presets' runs, combined by ``zoo ensemble``."""

    name: str
    members: list[str]  # preset names, each trained (or reused) as its own run
    source: Path | str
    weights: str = "equal"  # "equal", or "fit" on the validation split
    description: str = ""
    plugin: str = ""  # the plugin that registered it (register_presets), "" for a file


@dataclass
class Catalogue:
    datasets: dict[str, DatasetEntry] = field(default_factory=dict)
    models: dict[str, Preset] = field(default_factory=dict)
    # presets without an architecture or tokenizer: values for other presets to build on
    templates: dict[str, Preset] = field(default_factory=dict)
    ensembles: dict[str, EnsemblePreset] = field(default_factory=dict)
    mirrors: list[Path] = field(default_factory=list)
    plugin_modules: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    builtin_presets: set[str] = field(default_factory=set)  # names the built-in file defines
    plugin_presets: dict[str, str] = field(default_factory=dict)  # name -> plugin registering it

    def dataset(self, name: str) -> DatasetEntry:
        try:
            return self.datasets[name]
        except KeyError:
            raise UnknownNameError("dataset", name, self.datasets) from None


def user_files() -> list[Path]:
    """The user's registry.toml files, in the order they override the built-in one."""
    files = []
    local = Path.cwd() / "registry.toml"
    if local.is_file() and local.resolve() != BUILTIN_FILE:
        files.append(local)
    env = os.environ.get("ZOO_REGISTRY")
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ZooError(f"ZOO_REGISTRY names {path}, which is not a file")
        files.append(path)
    return files


def load_catalogue(files: list[Path] | None = None, *, resolve: bool = True) -> Catalogue:
    """The built-in file, then ``files`` (the user's by default). ``resolve=False`` leaves
    the presets' bases to resolve once plugins have added their presets (build_zoo)."""
    catalogue = Catalogue()
    merge_file(catalogue, BUILTIN_FILE)
    catalogue.builtin_presets = {*catalogue.models, *catalogue.ensembles}
    for path in user_files() if files is None else files:
        merge_file(catalogue, path)
    if resolve:
        resolve_bases(catalogue)
    return catalogue


MAX_BASE_DEPTH = 32  # presets in one chain of bases: deeper is a mistake, not a design


def too_deep(preset: Preset, first: str, link: str):
    raise ZooError(
        f"{preset.source}: [models.{first}] builds on more than {MAX_BASE_DEPTH} presets in "
        f"a chain (through {link}); at most {MAX_BASE_DEPTH}"
    )


def resolve_bases(catalogue: Catalogue) -> None:
    """A preset with `base = "NAME"` (or a list of names) takes those presets' architecture,
    tokenizer and settings, in order, then its own (which win). Bases resolve after every
    file is read and every plugin has registered its presets, so a user's preset may build
    on a built-in or a plugin's one; an unknown base or a cycle is an error naming the file.
    A preset marked `template = true` holds values for others to build on and is not a
    model; any other preset needs an architecture and a tokenizer, its own or its bases'.
    A preset's description is its own: one that writes none is described by what it builds
    on ("built on deep-char + bpe-512"), never by a base's words, which describe another
    model. Presets already resolved are left as they are, so resolving again adds only
    what was added since."""
    presets = {**catalogue.templates, **catalogue.models}

    def resolve(name: str, chain: tuple[str, ...]) -> Preset:
        preset = presets[name]
        if preset.resolved:
            return preset
        if len(chain) >= MAX_BASE_DEPTH:  # before going deeper: no chain overflows the stack
            too_deep(preset, chain[0], f"{chain[-1]} -> {name}")
        architecture, tokenizer, values = "", "", {}
        for base in preset.base:
            if base in chain + (name,):
                cycle = " -> ".join(chain + (name, base))
                raise ZooError(f"{preset.source}: [models.{name}] base makes a cycle ({cycle})")
            if base not in presets:
                raise UnknownNameError(
                    f"base preset of [models.{name}] in {preset.source}", base, presets
                )
            parent = resolve(base, chain + (name,))
            preset.depth = max(preset.depth, parent.depth + 1)
            if preset.depth + len(chain) > MAX_BASE_DEPTH:
                too_deep(preset, (chain or (name,))[0], f"{name} -> {base}")
            architecture = parent.architecture or architecture
            tokenizer = parent.tokenizer or tokenizer
            values.update(parent.overrides)
        preset.architecture = preset.architecture or architecture
        preset.tokenizer = preset.tokenizer or tokenizer
        if not preset.description and preset.base:
            preset.description = "built on " + " + ".join(preset.base)
        preset.overrides = {**values, **preset.own}
        preset.resolved = True
        return preset

    for name in presets:
        resolve(name, ())
    for name, preset in list(catalogue.models.items()):
        if preset.template:
            catalogue.templates[name] = catalogue.models.pop(name)
            continue
        for key in ("architecture", "tokenizer"):
            if not getattr(preset, key):
                _parser_for(preset.source).fail(
                    f"[models.{name}] needs {key!r} (or a base preset that gives one; "
                    "template = true marks values for other presets to build on)",
                    name,
                )


def _parser_for(source: Path | str) -> FileParser:
    """The parser of a preset's file, to name its line; a plugin's preset has no file."""
    if isinstance(source, Path):
        return FileParser(source, source.read_text(encoding="utf-8"))
    return FileParser(source, "")


HUB_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def is_hub_id(text: str) -> bool:
    """A Hub dataset id, which never climbs out of a mirror folder ('../../etc' is none)."""
    return bool(HUB_ID.match(text)) and ".." not in text


def merge_file(catalogue: Catalogue, path: Path) -> None:
    path = Path(path)
    text = read_config_text(path, "registry file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ZooError(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise ZooError(f"{path}: malformed TOML: nested too deeply") from None
    check_depth(data, str(path))
    parser = FileParser(path, text)
    parser.check_keys(data, TOP_KEYS, "top level")
    base = path.resolve().parent
    catalogue.files.append(path)

    mirrors = parser.expect(data.get("mirrors", []), list, "mirrors")
    # A later file's mirrors are searched first.
    catalogue.mirrors[:0] = [parser.resolve_path(base, m, "mirrors entry") for m in mirrors]

    plugins = parser.expect(data.get("plugins", {}), dict, "[plugins]")
    parser.check_keys(plugins, {"modules"}, "[plugins]")
    for module in parser.expect(plugins.get("modules", []), list, "plugins.modules"):
        catalogue.plugin_modules.append(parser.resolve_path(base, module, "plugins.modules entry"))

    for name, body in parser.expect(data.get("datasets", {}), dict, "[datasets]").items():
        where = f"[datasets.{name}]"
        parser.expect(body, dict, where)
        parser.check_keys(body, DATASET_KEYS, where)
        sources = [k for k in ("hub", "path", "plugin") if k in body]
        if len(sources) != 1:
            parser.fail(f"{where} needs exactly one of hub, path or plugin", name)
        splits = parser.expect(body.get("splits", {}), dict, f"{where} splits")
        parser.check_keys(splits, SPLIT_ROLES, f"{where} splits")
        for role, split in splits.items():
            parser.expect(split, str, f"{where} splits.{role}")
        entry = DatasetEntry(
            name=name,
            source=path,
            splits=dict(splits),
            config=dict(parser.expect(body.get("config", {}), dict, f"{where} config")),
        )
        for key in ("hub", "plugin", "task", "text_column", "label_column", "description"):
            if key in body:
                setattr(entry, key, parser.expect(body[key], str, f"{where} {key}"))
        if entry.hub is not None and not is_hub_id(entry.hub):
            parser.fail(
                f"{where} hub {entry.hub!r} is not a Hub dataset id (NAME or "
                "OWNER/NAME: letters, digits, '-', '_', '.'; no '..')",
                name,
            )
        if "path" in body:
            entry.path = str(parser.resolve_path(base, body["path"], f"{where} path"))
        catalogue.datasets[name] = entry

    for name, body in parser.expect(data.get("models", {}), dict, "[models]").items():
        preset = parse_preset(parser, name, body, path)
        if isinstance(preset, EnsemblePreset):
            catalogue.ensembles[name] = preset
            catalogue.models.pop(name, None)
        else:
            catalogue.models[name] = preset
            catalogue.ensembles.pop(name, None)


def parse_preset(
    parser: FileParser, name: str, body, source: Path | str, plugin: str = ""
) -> Preset | EnsemblePreset:
    """One ``[models.NAME]`` table: a preset, or a preset of presets (``members``)."""
    where = f"[models.{name}]"
    parser.expect(body, dict, where)
    if "members" in body:
        ensemble = _ensemble_preset(parser, name, body, source)
        ensemble.plugin = plugin
        return ensemble
    parser.check_keys(body, MODEL_KEYS, where)
    given = body.get("base", [])
    bases = [given] if isinstance(given, str) else parser.expect(given, list, f"{where} base")
    for item in bases:
        parser.expect(item, str, f"{where} base")
    own = dict(parser.expect(body.get("set", {}), dict, f"{where} set"))
    return Preset(
        name=name,
        architecture=parser.expect(body.get("architecture", ""), str, f"{where} architecture"),
        tokenizer=parser.expect(body.get("tokenizer", ""), str, f"{where} tokenizer"),
        source=source,
        description=parser.expect(body.get("description", ""), str, f"{where} description"),
        overrides=own,
        base=list(bases),
        own=own,
        template=parser.expect(body.get("template", False), bool, f"{where} template"),
        plugin=plugin,
    )


def _ensemble_preset(parser, name: str, body: dict, path: Path | str) -> EnsemblePreset:
    where = f"[models.{name}]"
    parser.check_keys(body, ENSEMBLE_KEYS, where)
    members = parser.expect(body["members"], list, f"{where} members")
    if len(members) < 2 or not all(isinstance(m, str) and m for m in members):
        parser.fail(f"{where} members must list at least two preset names", name)
    if name in members:
        parser.fail(
            f"{where} members lists {name!r} itself; an ensemble's members are other presets", name
        )
    weights = parser.expect(body.get("weights", "equal"), str, f"{where} weights")
    if weights not in ENSEMBLE_WEIGHTS:
        parser.fail(
            f"{where} weights must be {' or '.join(ENSEMBLE_WEIGHTS)}, not {weights!r}", "weights"
        )
    return EnsemblePreset(
        name,
        list(members),
        path,
        weights,
        parser.expect(body.get("description", ""), str, f"{where} description"),
    )
