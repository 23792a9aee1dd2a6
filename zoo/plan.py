"""Planning a run: from a model name and a dataset to the task, pipeline and configs, all
decided (and checked) before anything trains; the config hash that names a plan."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field

from zoo import data as zoo_data
from zoo.config import build_config, split_overrides
from zoo.errors import UnknownNameError, ZooError
from zoo.registry import get_zoo


@dataclass
class ModelSpec:
    name: str
    architecture: object  # Entry
    tokenizer: object  # Entry
    overrides: dict = field(default_factory=dict)
    description: str = ""


def resolve_model(name: str, zoo) -> ModelSpec:
    """A preset from the catalogue, or any ARCHITECTURE-TOKENIZER pair of registered plugins."""
    preset = zoo.catalogue.models.get(name)
    if preset is not None:
        return ModelSpec(name, zoo.architectures.get(preset.architecture),
                         zoo.tokenizers.get(preset.tokenizer), dict(preset.overrides),
                         preset.description)
    arch, sep, tok = name.partition("-")
    if sep and arch in zoo.architectures and tok in zoo.tokenizers:
        entry = zoo.architectures.get(arch)
        return ModelSpec(name, entry, zoo.tokenizers.get(tok), {}, entry.description)
    raise UnknownNameError("model", name, model_names(zoo), hint="zoo list models shows all")


def model_names(zoo) -> list[str]:
    names = set(zoo.catalogue.models)
    names.update(f"{a}-{t}" for a in zoo.architectures.names() for t in zoo.tokenizers.names())
    return sorted(names)


def choose_task(architecture, dataset_tasks, wanted: str | None = None) -> str:
    """The first task the dataset serves that the architecture supports (or `wanted`)."""
    supported = architecture.tasks
    if wanted:
        if wanted not in dataset_tasks:
            raise ZooError(f"dataset does not serve task {wanted!r}; it serves: "
                           f"{', '.join(dataset_tasks) or 'nothing known'}")
        if wanted not in supported:
            raise ZooError(f"{architecture.name} has no {wanted} head; it supports: {', '.join(supported)}")
        return wanted
    for task in dataset_tasks:
        if task in supported:
            return task
    raise ZooError(task_mismatch(architecture, dataset_tasks))


def task_mismatch(architecture, dataset_tasks) -> str:
    wanted = dataset_tasks[0] if dataset_tasks else "?"
    return (f"{architecture.name} has no {wanted} head (it supports: "
            f"{', '.join(architecture.tasks) or 'no task'}; the dataset serves: "
            f"{', '.join(dataset_tasks) or 'no task'})")


@dataclass
class Plan:
    """Everything decided before training starts."""

    spec: ModelSpec
    dataset_ref: object
    task: str
    pipeline: object  # Entry
    configs: dict  # section -> config dataclass instance
    seed: int
    loaded: object = None  # the LoadedDataset, when planning had to load it to learn its tasks
    columns: tuple = (None, None)  # the (text, label) column choices it was loaded with
    # section -> config keys a run recorded by an older zoo lacks: they hold the value that
    # reproduces its behaviour (the config class's LEGACY), and stay out of its record and hash
    legacy: dict = field(default_factory=dict)

    def config_values(self) -> dict:
        """The configs as plain dicts (section -> values), as recorded in config.json."""
        values = {k: _asdict(v) for k, v in self.configs.items()}
        for section, keys in self.legacy.items():
            values[section] = {k: v for k, v in values[section].items() if k not in keys}
        return values


def plan_run(model: str, dataset: str, *, overrides: dict | None = None, seed: int = 0,
             task: str | None = None, text_column: str | None = None,
             label_column: str | None = None, zoo=None) -> Plan:
    zoo = zoo or get_zoo()
    spec = resolve_model(model, zoo)
    ref = zoo_data.resolve(dataset, zoo)
    tasks, loaded = zoo_data.tasks_of(ref, zoo), None
    if not tasks and ref.kind != "plugin":
        # A file, folder or Hub id the catalogue does not describe: load it to learn whether
        # it has a label column (then it serves classification first).
        loaded = zoo_data.load(ref, zoo, text_column=text_column, label_column=label_column,
                               quiet=True)
        tasks = loaded.tasks
    tasks = tasks or zoo_data.TASKS_SERVED["language-modeling"]
    chosen = choose_task(spec.architecture, tasks, task)
    if chosen not in zoo.pipelines:  # the same reason `zoo list --matrix` gives
        raise ZooError(f"no pipeline is registered for {chosen} ({spec.architecture.name} "
                       f"on {ref.name})")
    pipeline = zoo.pipelines.get(chosen)
    sections = {"model": spec.architecture.config_class(),
                "tokenizer": spec.tokenizer.config_class(),
                "train": pipeline.config_class()}
    merged = {**spec.overrides, **(overrides or {})}
    values = split_overrides(merged, sections)
    configs = {name: build_config(cls, values[name]) for name, cls in sections.items()}
    return Plan(spec, ref, chosen, pipeline, configs, seed, loaded, (text_column, label_column))


def config_hash(plan: Plan) -> str:
    payload = {"model": plan.spec.name, "architecture": plan.spec.architecture.name,
               "tokenizer": plan.spec.tokenizer.name, "dataset": plan.dataset_ref.source,
               "task": plan.task, "seed": plan.seed,
               "configs": plan.config_values()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _asdict(config):
    return dataclasses.asdict(config) if config is not None else None
