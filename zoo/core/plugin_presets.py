"""Presets a plugin ships (the ``register_presets`` hook): ``[models.NAME]`` tables of
registry.toml written as ``register(NAME, **table)``, checked like a file's, then added to
the catalogue beside the built-in ones.

Precedence, the same on every machine: a plugin's preset may not take a built-in preset's
name, nor one another plugin registered (either is a clash: the plugin is set aside, like
any plugin whose names clash); a preset of the user's own registry.toml of the same name
wins over a plugin's, as it wins over a built-in one. A plugin's preset builds on built-in
presets and on the plugin's own, never on a user's file, so it means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from zoo.core.catalogue import (
    Catalogue,
    EnsemblePreset,
    Preset,
    load_catalogue,
    parse_preset,
    resolve_bases,
)
from zoo.core.file_checks import FileParser
from zoo.core.kinds import NAME_PATTERN, NAME_RULE
from zoo.errors import UnknownNameError, ZooError, shown

StagedPreset = Preset | EnsemblePreset


def preset_stager(plugin: str, staged: list[StagedPreset]) -> Callable:
    """The ``register`` a plugin's ``register_presets`` hook is called with."""
    where = f"plugin {plugin!r}"
    parser = FileParser(where, "")
    names: set[str] = set()  # a set, not a scan of `staged`: 20,000 presets load linearly

    def register(name, **table):
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise ZooError(
                f"preset name {shown(name)} from plugin {plugin!r} must be {NAME_RULE}, "
                "a name the command line takes (like 'bow-small')"
            )
        if name in names:
            raise ZooError(f"preset {name!r} from plugin {plugin!r} is registered twice")
        names.add(name)
        staged.append(parse_preset(parser, name, table, where, plugin))

    return register


def check_presets(catalogue: Catalogue, plugin: str, presets: list[StagedPreset], known) -> None:
    """A plugin's presets, before anything of the plugin is added: no clash with a built-in
    or another plugin's preset; each builds on built-in presets or the plugin's own, names
    (itself or through its bases) an architecture and a tokenizer that ``known(kind, name)``
    finds, and an ensemble's members exist."""
    for preset in presets:
        if preset.name in catalogue.builtin_presets:
            raise ZooError(
                f"preset name {preset.name!r} from plugin {plugin!r} clashes with the "
                "built-in preset of that name"
            )
        other = catalogue.plugin_presets.get(preset.name)
        if other is not None:
            raise ZooError(
                f"preset name {preset.name!r} from plugin {plugin!r} clashes with the one "
                f"from plugin {other!r}"
            )
    # resolved against the built-in catalogue alone: what it means does not depend on a
    # user's registry.toml or on which other plugins are installed
    trial = load_catalogue([])
    own = {p.name: p for p in presets}
    for preset in presets:
        if isinstance(preset, EnsemblePreset):
            continue
        for base in preset.base:
            if base not in own and base not in trial.models and base not in trial.templates:
                raise UnknownNameError(
                    f"base preset of [models.{preset.name}] from plugin {plugin!r}",
                    base,
                    [*own, *trial.models, *trial.templates],
                )
        trial.models[preset.name] = _copy(preset)
    resolve_bases(trial)
    for preset in presets:
        if isinstance(preset, EnsemblePreset):
            for member in preset.members:
                if member not in own and member not in trial.models:
                    raise UnknownNameError(
                        f"member of [models.{preset.name}] from plugin {plugin!r}",
                        member,
                        [*own, *trial.models],
                    )
            continue
        resolved = trial.models.get(preset.name)
        if resolved is None:  # a template
            continue
        for kind in ("architecture", "tokenizer"):
            name = getattr(resolved, kind)
            if not known(kind, name):
                raise ZooError(
                    f"preset {preset.name!r} from plugin {plugin!r} names {kind} "
                    f"{name!r}, which no plugin registers"
                )


def add_presets(catalogue: Catalogue, presets: list[StagedPreset]) -> None:
    """Checked presets into the catalogue; one a user's registry.toml defines stays the
    user's. Bases resolve once every plugin is loaded (resolve_bases)."""
    for preset in presets:
        catalogue.plugin_presets[preset.name] = preset.plugin
        tables = (catalogue.models, catalogue.templates, catalogue.ensembles)
        if any(preset.name in table for table in tables):
            continue  # the user's own registry.toml defines it
        if isinstance(preset, EnsemblePreset):
            catalogue.ensembles[preset.name] = preset
        else:
            catalogue.models[preset.name] = preset


def remove_presets(catalogue: Catalogue, plugin: str) -> None:
    """Every preset a plugin registered (tests unregister plugins in-process)."""
    for table in (catalogue.models, catalogue.templates, catalogue.ensembles):
        for name in [name for name, preset in table.items() if preset.plugin == plugin]:
            del table[name]
    for name in [name for name, owner in catalogue.plugin_presets.items() if owner == plugin]:
        del catalogue.plugin_presets[name]


def _copy(preset: Preset) -> Preset:
    from dataclasses import replace

    return replace(preset, overrides=dict(preset.own), base=list(preset.base))
