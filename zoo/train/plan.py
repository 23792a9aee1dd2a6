"""Planning a run: from a model name and a dataset to the task, pipeline and configs, all
decided (and checked) before anything trains; the config hash that names a plan."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from zoo.core.config import build_config, field_types, split_overrides
from zoo.core.limits import check_memory, check_seed, context_length, value_of
from zoo.core.loading import get_zoo
from zoo.core.names import ModelSpec, choose_task, resolve_model, tasks_for
from zoo.data import datasets as zoo_data
from zoo.data import sources
from zoo.errors import UnknownNameError, ZooError


@dataclass
class Plan:
    """Everything decided before training starts."""

    spec: ModelSpec
    dataset_ref: Any
    task: str
    pipeline: Any  # Entry
    configs: dict  # section -> config dataclass instance
    seed: int
    loaded: Any = None  # the LoadedDataset, when planning had to load it to learn its tasks
    columns: tuple = (None, None)  # the (text, label) column choices it was loaded with
    # section -> config keys a run recorded by an older zoo lacks: they hold the value that
    # reproduces its behaviour (the config class's LEGACY), and stay out of its record and hash
    legacy: dict = field(default_factory=dict)
    # split roles the run never reads ("test" while a search chooses settings): it trains
    # and reports on the others only
    held_out: tuple = ()
    init: Any = None  # zoo.train.transfer.InitSource: the run whose weights it starts from
    # trained together with other seeds as one batched model (zoo.train.seed_stack): the most
    # seeds in its stack; None when trained alone
    stacked: int | None = None

    def config_values(self) -> dict:
        """The configs as plain dicts (section -> values), as recorded in config.json."""
        values = {k: _asdict(v) for k, v in self.configs.items()}
        for section, keys in self.legacy.items():
            values[section] = {k: v for k, v in values[section].items() if k not in keys}
        return values

    def incidental(self) -> dict:
        """section -> the recorded fields that change nothing a run learns (checkpoint
        cadence, samples): left out of the config hash and of comparison rows."""
        from zoo.core.config import incidental_keys

        return incidental_keys(self.configs)

    def result_values(self) -> dict:
        """config_values() without the incidental fields: what the result depends on."""
        values, skip = self.config_values(), self.incidental()
        return {
            section: (
                {k: v for k, v in config.items() if k not in skip.get(section, ())}
                if isinstance(config, dict)
                else config
            )
            for section, config in values.items()
        }


@dataclass(frozen=True)
class PlanChoices:
    """What a user may choose of a run besides its model, dataset and settings; each is
    checked before anything is loaded. `zoo run`, its ensemble presets' members, a sweep's
    cells and a search's trials plan with them."""

    seed: int = 0
    task: str | None = None  # None: the first task both the model and the dataset serve
    text_column: str | None = None  # None: detected
    label_column: str | None = None  # None: detected
    held_out: tuple = ()  # split roles the run never reads ("test" while a search chooses)


def plan_run(
    model: str,
    dataset: str,
    *,
    overrides: dict | None = None,
    choices: PlanChoices = PlanChoices(),
    init: str | None = None,
    zoo=None,
    loaded_cache: MutableMapping | None = None,
) -> Plan:
    """``choices``: seed, task, columns and held-out splits (``PlanChoices``). ``init``: a
    finished run whose tokenizer and matching weights the run starts from.
    ``loaded_cache``: datasets loaded so far, by name and columns (a sweep plans many cells
    on one dataset and loads it once)."""
    zoo = zoo or get_zoo()
    _check_choices(choices)
    held_out = _held_out(choices.held_out)
    spec = resolve_model(model, zoo)
    source = _init_source(init, spec) if init is not None else None  # '' is refused
    ref = zoo_data.resolve(dataset, zoo)
    columns = (choices.text_column, choices.label_column)
    tasks, loaded = _dataset_tasks(ref, zoo, columns, held_out, loaded_cache)
    task = choices.task
    chosen = choose_task(
        spec.architecture, tasks, task, dataset=ref.name, known=zoo.pipelines.names()
    )
    if chosen not in zoo.pipelines:  # the same reason `zoo list --matrix` gives
        raise ZooError(
            f"no pipeline is registered for {chosen} ({spec.architecture.name} on {ref.name})"
        )
    pipeline = zoo.pipelines.get(chosen)
    sections = {
        "model": spec.architecture.config_class(),
        "tokenizer": spec.tokenizer.config_class(),
        "train": pipeline.config_class(),
    }
    preset = spec.overrides if task is None else for_sections(spec.overrides, sections)
    merged = {**preset, **(overrides or {})}
    dataset_class = sources.config_class(ref, zoo)
    if dataset_class is not None:  # a plugin dataset's options: catalogue, then --set
        sections["dataset"] = dataset_class
        catalogue = {f"dataset.{k}": v for k, v in sources.catalogue_options(ref).items()}
        merged = {**catalogue, **merged}
    what = f"{chosen} with {spec.architecture.name} on {ref.name}"
    values = _section_values(merged, sections, spec, overrides or {}, what)
    if source is not None:  # the source run's tokenizer, as it was configured
        values["tokenizer"] = source.tokenizer_config
    configs = {name: build_config(cls, values[name]) for name, cls in sections.items()}
    check_context_length(spec.architecture, configs["model"])
    vocabulary = value_of(configs["tokenizer"], "vocabulary")  # its most, when it declares one
    check_memory(spec.architecture, configs["model"], f"invalid {spec.name}: ", vocabulary)
    if "dataset" in configs:
        ref = dataclasses.replace(ref, config=configs["dataset"])
    return Plan(
        spec,
        ref,
        chosen,
        pipeline,
        configs,
        choices.seed,
        loaded,
        columns,
        held_out=held_out,
        init=source,
    )


def _check_choices(choices: PlanChoices) -> None:
    """The seed and the named task and columns, before anything is loaded, written or
    recorded: an empty name is refused."""
    check_seed(choices.seed, "seed")
    for option, value in (("--task", choices.task), ("--text-column", choices.text_column)):
        if value is not None and not str(value).strip():
            raise ZooError(f"{option} is empty; name one, or leave the option out")
    if choices.label_column is not None and not str(choices.label_column).strip():
        raise ZooError(
            "label_column is empty; name one, or leave the option out", option="label_column"
        )


def _held_out(held_out) -> tuple:
    """The split roles a search holds out: validation or test only."""
    held_out = tuple(held_out)
    unknown = [role for role in held_out if role not in ("validation", "test")]
    if unknown:
        raise ZooError(f"only the validation or test split can be held out, not {unknown[0]!r}")
    return held_out


def _dataset_tasks(ref, zoo, columns: tuple, held_out: tuple, loaded_cache):
    """The tasks a dataset serves, and the dataset when that took loading it: a file, folder
    or Hub id the catalogue does not describe is loaded to learn whether it has a label
    column (tasks that need one come first); a plugin dataset that declares no task serves
    whatever tasks need only text. ``loaded_cache`` keeps what a sweep loaded before."""
    tasks, loaded = zoo_data.tasks_of(ref, zoo), None
    if not tasks and ref.kind != "plugin":
        text_column, label_column = columns
        key = (ref.name, ref.source, text_column, label_column, held_out)
        loaded = loaded_cache.get(key) if loaded_cache is not None else None
        if loaded is None:
            loaded = zoo_data.load(
                ref,
                zoo,
                text_column=text_column,
                label_column=label_column,
                quiet=True,
                held_out=held_out,
            )
            if loaded_cache is not None:
                loaded_cache[key] = loaded
        tasks = loaded.tasks
    return tasks or tasks_for(None, {"text"}, zoo), loaded


def _section_values(merged: dict, sections: dict, spec: ModelSpec, given: dict, what: str):
    """The settings split into their sections (model, tokenizer, train, dataset), min_lr
    following lr. A preset's key the sections lack says it is the preset's, not the user's."""
    try:
        values = split_overrides(merged, sections)
    except UnknownNameError as exc:
        named = {key.rpartition(".")[2] for key in given}
        from_preset = {key.rpartition(".")[2] for key in spec.overrides}
        if exc.name in from_preset and exc.name not in named:
            raise ZooError(
                f"preset {spec.name} sets {exc.name!r}, which {what} does not have: the "
                "preset is made for another task (choose the task, or a model without this "
                "preset)"
            ) from None
        raise
    _min_lr_follows_lr(values["train"], sections["train"], given)
    return values


def _init_source(run_id: str, spec: ModelSpec):
    """The finished run to start from; its tokenizer must be the model's."""
    from zoo.core.loading import get_zoo
    from zoo.train.transfer import check_source_fits, source_run

    source = source_run(run_id)
    if source.tokenizer != spec.tokenizer.name:
        raise ZooError(
            f"init {source.run_id}: that run used the {source.tokenizer} "
            f"tokenizer and {spec.name} the {spec.tokenizer.name} one; the new run "
            f"takes its tokenizer from the run it starts from, so use a model with "
            f"the {source.tokenizer} tokenizer ({spec.architecture.name}-"
            f"{source.tokenizer})",
            option="init",
        )
    check_source_fits(source, get_zoo())  # its weights are what its config builds
    return source


def check_context_length(architecture, config) -> None:
    """Pipelines cut inputs to the context length the architecture's config declares
    (``sized(..., role="context")``): an architecture without one cannot run."""
    if context_length(config) is not None:
        return
    problem = (
        "registers no config dataclass"
        if config is None
        else f"has a config ({type(config).__name__}) with no positive context-length field"
    )
    raise ZooError(
        f"architecture {architecture.name!r} from plugin {architecture.plugin!r} "
        f"{problem}; pipelines need the longest input in tokens: declare it as a field "
        'of the config with sized(..., role="context") from zoo.plugin.config'
    )


def _min_lr_follows_lr(train: dict, cls, overrides: dict) -> None:
    """A min_lr the user did not set (the preset's, or the config's default) is lowered to lr
    when lr is below it, so `--set lr=1e-5` alone trains instead of being refused. Only
    configs that used to be refused change; a min_lr the user sets above lr is still refused."""
    if cls is None or any(key.rpartition(".")[2] == "min_lr" for key in overrides):
        return
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    lr, min_lr = train.get("lr", defaults.get("lr")), train.get("min_lr", defaults.get("min_lr"))
    if isinstance(lr, float) and isinstance(min_lr, float) and min_lr > lr > 0:
        train["min_lr"] = lr


def plan_from_record(record: dict, zoo, *, dataset_ref=None) -> Plan:
    """The plan a recorded run was trained with, rebuilt from its provenance (config.json)
    with today's plugins: the recorded resolved configs, not today's presets. `resume`,
    `reproduce` and `eval` (which passes the dataset it scores on as `dataset_ref`) use it.
    A record that no longer fits this zoo is a ZooError saying why."""
    try:
        architecture = zoo.architectures.get(record["architecture"])
        spec = ModelSpec(
            record["model"],
            architecture,
            zoo.tokenizers.get(record["tokenizer"]),
            {},
            architecture.description,
        )
        ref = dataset_ref or recorded_dataset(record["dataset"], record.get("dataset_id"), zoo)
        pipeline = zoo.pipelines.get(record["task"])
        classes = {
            "model": architecture.config_class(),
            "tokenizer": spec.tokenizer.config_class(),
            "train": pipeline.config_class(),
        }
        recorded = record["configs"]
        if "dataset" in recorded and dataset_ref is None:  # the options it was generated with
            classes["dataset"] = sources.config_class(ref, zoo)
        configs, legacy = {}, {}
        for section, cls in classes.items():
            values = dict(recorded.get(section) or {})
            # Fields added since the run was recorded take the value that means what the
            # older zoo did (a config class's LEGACY: keep_best, patience), and stay out of
            # its record and config hash.
            missing = {k: v for k, v in getattr(cls, "LEGACY", {}).items() if k not in values}
            if missing:
                legacy[section] = tuple(missing)
            try:
                configs[section] = build_config(cls, {**missing, **values})
            except ZooError as exc:
                raise ZooError(
                    f"the recorded {section} config no longer fits this zoo ({exc})"
                ) from None
        if "dataset" in configs:
            ref = dataclasses.replace(ref, config=configs["dataset"])
        init = None
        if record.get("init"):  # it started from another run: from the same one again
            from zoo.train.transfer import source_run

            init = source_run(record["init"]["run_id"], used_by=record.get("run_id"))
        return Plan(
            spec,
            ref,
            record["task"],
            pipeline,
            configs,
            int(record["seed"]),
            legacy=legacy,
            columns=tuple(record.get("columns") or (None, None)),
            held_out=tuple(record.get("held_out") or ()),
            init=init,
            stacked=record.get("stacked"),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ZooError(
            f"the record of run {record.get('run_id', '?')} is incomplete "
            f"({type(exc).__name__}: {exc})"
        ) from None


def recorded_dataset(name: str, source: str | None, zoo):
    """The dataset a run used: by its name if that still points at the same source, else by
    the source (an absolute path or Hub id, independent of the working folder), under the
    recorded name."""
    try:
        ref = zoo_data.resolve(name, zoo)
        if not source or ref.source == source:
            return ref
    except ZooError:
        if not source:
            raise ZooError(f"dataset {name!r} of the run cannot be found any more") from None
    found = zoo_data.resolve(source, zoo)
    return sources.DatasetRef(name, found.kind, found.source, found.entry)


def plugin_entries(plan: Plan, zoo=None) -> list:
    """The registrations a run's code comes from: architecture, tokenizer, pipeline, and the
    dataset's plugin when a plugin generates the dataset."""
    entries = [plan.spec.architecture, plan.spec.tokenizer, plan.pipeline]
    if plan.dataset_ref.kind == "plugin":
        datasets = (zoo or get_zoo()).datasets
        if plan.dataset_ref.source in datasets:
            entries.append(datasets.get(plan.dataset_ref.source))
    return entries


def plugin_identities(plan: Plan, zoo=None) -> dict[str, str]:
    """Which code each of a run's plugins is (``PluginInfo.identity``)."""
    plugins = (zoo or get_zoo()).plugins
    return {
        e.plugin: plugins[e.plugin].identity if e.plugin in plugins else "unknown"
        for e in plugin_entries(plan, zoo)
    }


def config_hash(plan: Plan, zoo=None, plugins: dict[str, str] | None = None) -> str:
    """Everything a run's result depends on: names, seed, every resolved config value that
    changes the result (not checkpoint cadence or samples: ``Plan.incidental``), and
    which code each plugin is (its version, or its source's hash: ``PluginInfo.identity``),
    so a sweep never reuses a run made by other plugin code. ``plugins`` replaces the
    identities of the code installed now (to recognise a run made by other code)."""
    payload = {
        "model": plan.spec.name,
        "architecture": plan.spec.architecture.name,
        "tokenizer": plan.spec.tokenizer.name,
        "dataset": plan.dataset_ref.source,
        "task": plan.task,
        "seed": plan.seed,
        "configs": plan.result_values(),
        "plugins": plugins if plugins is not None else plugin_identities(plan, zoo),
    }
    if plan.held_out:  # a run that never read its test split reports other figures
        payload["held_out"] = sorted(plan.held_out)
    if plan.init is not None:  # absent otherwise, so the hashes of other runs stay as they were
        payload["init"] = plan.init.run_id
    if plan.stacked:  # seeds trained together are a configuration of their own
        payload["stacked"] = plan.stacked
    from zoo.train.reuse import data_choices

    chosen = data_choices(plan)
    if chosen:  # which columns and splits of the data it read, where chosen
        payload["data"] = chosen
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[
        :16
    ]


def _asdict(config):
    return dataclasses.asdict(config) if config is not None else None


def for_sections(settings: dict, sections: dict) -> dict:
    """The settings some section has a field for. A preset's recipe for its usual task (a
    classifier's epochs, say) leaves out what another task's pipeline lacks when the user
    chooses that task with --task; what the user sets is never left out."""
    fields = {name for cls in sections.values() if cls for name in field_types(cls)}
    return {key: value for key, value in settings.items() if key.rpartition(".")[2] in fields}
