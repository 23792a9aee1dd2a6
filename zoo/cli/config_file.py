"""Config files for `zoo run`, `zoo sweep` and `zoo tune --config FILE`.

A file holds what the command line holds, under the options' names::

    model = "decoder-char"        # zoo sweep: models = [...], on = [...], seeds = 3
    dataset = "shakespeare"
    steps = 300
    seed = 1
    [set]                         # --set; a section's table is the same as "train.lr"
    n_layer = 2
    train.lr = 3e-3
    [grid]                        # zoo sweep --grid
    lr = [1e-3, 3e-3]

TOML (read with tomllib); YAML too where PyYAML is installed, without aliases and with
YAML 1.2's booleans (``on``, ``yes`` and ``no`` stay text; only true and false are booleans). A file is
plain, bounded data: at most 1 MiB is read (a pipe included), a device is refused, and
tables nest at most 32 deep. An option given on the command
line wins over the file; a --set or --grid key given on both takes the command line's
value. An unknown key is an error with a did-you-mean, before anything trains.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

from zoo.errors import UnknownNameError, ZooError
from zoo.io import check_depth, read_config_text

COMMON = {"steps", "time", "set", "task", "device", "log_to"}
KEYS = {
    "run": COMMON | {"model", "dataset", "seed", "text_column", "label_column", "compile", "init"},
    "sweep": COMMON
    | {
        "models",
        "on",
        "seeds",
        "max_seeds",
        "grid",
        "jobs",
        "executor",
        "address",
        "cell_cpus",
        "cell_gpus",
        "metric",
        "by",
        "columns",
        "baseline",
        "format",
        "pool",
    },
    # zoo tune: `time` is the search's budget per model, as --time is; [space] holds
    # key = "log(1e-4,1e-2)" (or space = "lr=log(1e-4,1e-2) ..." or a list of such texts)
    "tune": COMMON
    | {
        "models",
        "on",
        "space",
        "trials",
        "seeds",
        "pruner",
        "sampler",
        "sampler_seed",
        "metric",
        "storage",
        "study",
        "jobs",
        "executor",
        "address",
        "trial_cpus",
        "trial_gpus",
        "plot",
    },
}


def read(path: str | Path, command: str) -> dict:
    """The file's options for `command` ('run' or 'sweep'): keys checked, `set` flattened
    to 'section.key' -> value, `grid` to key -> list of values."""
    path = Path(path)
    data = _parse(path, read_config_text(path))
    check_depth(data, f"config file {path}")
    if not isinstance(data, dict):
        raise ZooError(f"{path}: a config file is a table of options, not a {type(data).__name__}")
    for key in data:
        if key not in KEYS[command]:
            raise UnknownNameError(
                f"zoo {command} config key (in {path})",
                key,
                KEYS[command],
                hint="valid keys: " + ", ".join(sorted(KEYS[command])),
            )
    values = dict(data)
    if "set" in values:
        values["set"] = _flatten(values["set"], path, "set")
    if isinstance(values.get("space"), dict):  # [space] lr = "log(1e-4,1e-2)"
        values["space"] = [
            f"{key}={value}" for key, value in _flatten(values["space"], path, "space").items()
        ]
    if "grid" in values:
        grid = _flatten(values["grid"], path, "grid")
        for key, choices in grid.items():
            if not isinstance(choices, list) or not choices:
                raise ZooError(f"{path}: grid.{key} must be a list of values, e.g. [1, 2]")
        values["grid"] = grid
    return values


def _parse(path: Path, text: str):
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ZooError(
                f"{path}: reading YAML needs PyYAML (pip install pyyaml); or write the file as TOML"
            ) from None
        try:
            return yaml.load(text, Loader=_loader()) or {}
        except yaml.YAMLError as exc:
            raise ZooError(f"{path}: malformed YAML: {str(exc).splitlines()[0]}") from None
        except RecursionError:
            raise ZooError(f"{path}: malformed YAML: nested too deeply") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ZooError(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise ZooError(f"{path}: malformed TOML: nested too deeply") from None


BOOL_TAG = "tag:yaml.org,2002:bool"
YAML_12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")  # YAML 1.2's core schema


def _loader():
    """PyYAML's safe loader without aliases, and with YAML 1.2's booleans.

    An alias (``*name``) repeats a node without writing it out, so nine levels of nine
    aliases are 9**9 values from a few lines (an "alias bomb"). A config file has no use for
    them; they are refused where they stand. PyYAML reads YAML 1.1, where ``on``, ``off``,
    ``yes``, ``no`` (and ``y``, ``n``) are booleans: ``on: [shakespeare]``, zoo sweep's own
    key, would be ``True``. Here only true and false are, as in YAML 1.2."""
    import yaml  # the caller found it installed

    class ConfigLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed in a config file", event.start_mark
                )
            return super().compose_node(parent, index)

    ConfigLoader.yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != BOOL_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    ConfigLoader.add_implicit_resolver(BOOL_TAG, YAML_12_BOOL, list("tTfF"))
    return ConfigLoader


def _flatten(table, path: Path, name: str, prefix: str = "") -> dict:
    """{"train": {"lr": 1}} and {"train.lr": 1} alike as {"train.lr": 1}."""
    if not isinstance(table, dict):
        raise ZooError(f"{path}: {name} must be a table of key = value")
    flat = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, path, name, full + "."))
        else:
            flat[full] = value
    return flat


def apply(args, parser, command: str) -> None:
    """Fill `args` from the file `args.config` names, where the command line left an option
    at its default; the file's --set and --grid go to `args.file_set` and `args.file_grid`,
    beneath the command line's."""
    args.file_set, args.file_grid = {}, {}
    if not getattr(args, "config", None):
        return
    values = read(args.config, command)
    args.file_set = values.pop("set", {})
    args.file_grid = values.pop("grid", {})
    # a budget given here wins (zoo tune's time is the search's budget, its steps each run's)
    for one, other in () if command == "tune" else (("steps", "time"), ("time", "steps")):
        if one in values and getattr(args, other, None) is not None:
            del values[one]
    if isinstance(values.get("log_to"), list):
        values["log_to"] = ",".join(map(str, values["log_to"]))
    actions = {action.dest: action for action in parser._actions}
    for key, value in values.items():
        action = actions.get(key)
        if action is None:  # log_to before trackers are wired in, say
            setattr(args, key, value)
            continue
        given = getattr(args, key)
        if given != parser.get_default(key) and given != []:
            continue  # given on the command line: it wins
        setattr(args, key, _as_option(value, action, key, args.config))


def _as_option(value, action, key: str, path):
    """A file value checked as the command line checks the option's text."""

    def one(item):
        if isinstance(item, (dict, list)):
            raise ZooError(f"{path}: {key} must be a single value, not {item!r}")
        text = _text(item)
        try:
            converted = action.type(text) if action.type else text
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            raise ZooError(f"{path}: {key}: {exc}") from None
        if action.choices is not None and converted not in action.choices:
            raise UnknownNameError(f"{key} (in {path})", str(converted), action.choices)
        return converted

    if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        return [one(item) for item in items]
    if action.const is True and action.nargs == 0:  # a flag such as --compile
        if not isinstance(value, bool):
            raise ZooError(f"{path}: {key} must be true or false, not {value!r}")
        return value
    return one(value)


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def grid_options(grid: dict) -> list[str]:
    """A file's grid as --grid KEY=V1,V2 options."""
    return [f"{key}={','.join(_text(v) for v in values)}" for key, values in grid.items()]
