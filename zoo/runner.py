"""From names to a finished run: resolve the model and dataset, choose the pipeline, build
the configs (failing before any training), run, and record the result in the store."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import random
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from zoo import data as zoo_data
from zoo import distributed
from zoo.config import build_config, split_overrides
from zoo.errors import UnknownNameError, ZooError
from zoo.job import Job, RunFolder
from zoo.store import Store, home
from zoo.trainer import Diverged


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


def plan_run(model: str, dataset: str, *, overrides: dict | None = None, seed: int = 0,
             task: str | None = None, zoo=None) -> Plan:
    from zoo.registry import get_zoo

    zoo = zoo or get_zoo()
    spec = resolve_model(model, zoo)
    ref = zoo_data.resolve(dataset, zoo)
    tasks = zoo_data.tasks_of(ref, zoo) or zoo_data.TASKS_SERVED["language-modeling"]
    chosen = choose_task(spec.architecture, tasks, task)
    pipeline = zoo.pipelines.get(chosen)
    sections = {"model": spec.architecture.config_class(),
                "tokenizer": spec.tokenizer.config_class(),
                "train": pipeline.config_class()}
    merged = {**spec.overrides, **(overrides or {})}
    values = split_overrides(merged, sections)
    configs = {name: build_config(cls, values[name]) for name, cls in sections.items()}
    return Plan(spec, ref, chosen, pipeline, configs, seed)


def config_hash(plan: Plan) -> str:
    payload = {"model": plan.spec.name, "architecture": plan.spec.architecture.name,
               "tokenizer": plan.spec.tokenizer.name, "dataset": plan.dataset_ref.source,
               "task": plan.task, "seed": plan.seed,
               "configs": {k: _asdict(v) for k, v in plan.configs.items()}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _asdict(config):
    return dataclasses.asdict(config) if config is not None else None


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def versions(zoo, plan: Plan) -> dict:
    from zoo import __version__

    found = {"zoo": __version__, "python": platform.python_version()}
    for package in ("torch", "numpy", "datasets", "tokenizers"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    for entry in (plan.spec.architecture, plan.spec.tokenizer, plan.pipeline):
        info = zoo.plugins.get(entry.plugin)
        found[f"plugin:{entry.plugin}"] = (info.version if info else "") or "unknown"
    return found


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def seed_everything(seed: int) -> None:
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


def execute(plan: Plan, *, device: str = "auto", quiet: bool = False,
            text_column: str | None = None, label_column: str | None = None, zoo=None) -> dict:
    """Load the data, train and evaluate through the pipeline, and record the run.

    Under torchrun every rank runs this; rank 0 alone writes the run folder and the store
    row, the others work in a scratch folder that is removed at the end."""
    from zoo.registry import get_zoo

    zoo = zoo or get_zoo()
    ranks = _join_ranks(device)
    dataset = zoo_data.load(plan.dataset_ref, zoo, text_column=text_column, label_column=label_column)
    pipeline = plan.pipeline.load()
    run_id = distributed.broadcast_object(new_run_id())
    run = RunFolder((home() if ranks.is_main else _scratch()) / run_id).create()
    summary = {"run_id": run.id, "model": plan.spec.name,
               "architecture": plan.spec.architecture.name, "tokenizer": plan.spec.tokenizer.name,
               "dataset": plan.dataset_ref.name, "task": plan.task, "seed": plan.seed}
    provenance = {**summary, "config_hash": config_hash(plan),
                  "configs": {k: _asdict(v) for k, v in plan.configs.items()},
                  "dataset_id": plan.dataset_ref.source, "dataset_location": dataset.location,
                  "dataset_fingerprint": dataset.fingerprint, "versions": versions(zoo, plan),
                  "git_commit": git_commit(), "device": device}
    if ranks.active:
        provenance["distributed"] = {"world_size": ranks.world_size, "backend": ranks.backend}
    run.write_json("config.json", provenance)
    store = Store() if ranks.is_main else _NoStore()
    store.insert(run.id, model=plan.spec.name, architecture=plan.spec.architecture.name,
                 tokenizer=plan.spec.tokenizer.name, dataset=plan.dataset_ref.name,
                 task=plan.task, seed=plan.seed, config_hash=provenance["config_hash"],
                 config=provenance)
    job = Job(plan.spec.name, plan.spec.architecture, plan.spec.tokenizer, plan.task,
              plan.configs["model"], plan.configs["tokenizer"], plan.configs["train"], dataset,
              plan.seed, device, run, quiet or not ranks.is_main)
    start = time.time()
    try:
        seed_everything(plan.seed)
        result = pipeline.run(job)
        if ranks.active:
            provenance["distributed"]["weight_sha256"] = _same_weights_on_all_ranks(run)
    except KeyboardInterrupt:
        store.update(run.id, status="interrupted", finished=time.time(),
                     duration=time.time() - start, error="interrupted (Ctrl-C)")
        store.close()
        raise
    except Diverged as exc:
        store.update(run.id, status="diverged", finished=time.time(),
                     duration=time.time() - start, error=str(exc))
        store.close()
        raise ZooError(f"run {run.id} {exc}; lower the learning rate (--set lr=...)") from None
    except BaseException as exc:
        store.update(run.id, status="failed", finished=time.time(), duration=time.time() - start,
                     error=f"{type(exc).__name__}: {exc}"[:2000])
        store.close()
        raise
    finally:
        if not ranks.is_main:
            shutil.rmtree(run.path.parent, ignore_errors=True)
    duration = time.time() - start
    if "spec" in result:  # what load_trained needs to rebuild the model
        provenance["spec"] = result["spec"]
    if ("spec" in result or ranks.active) and ranks.is_main:
        run.write_json("config.json", provenance)
    store.update(run.id, status=result.get("status", "finished"), finished=time.time(),
                 duration=duration, params=result.get("params"), metrics=result["metrics"])
    store.close()
    return {**summary, "status": result.get("status", "finished"), "params": result.get("params"),
            "metrics": result["metrics"], "samples": result.get("samples", []),
            "duration": duration, "run_dir": str(run.path), "rank": ranks.rank}


def _join_ranks(device: str):
    """The torchrun process group (gloo on the CPU, NCCL on CUDA), or the single process."""
    if not distributed.launched():
        return distributed.current()
    from zoo.engine import pick_device

    return distributed.setup(pick_device(device))


def _scratch() -> Path:
    """Where a rank other than 0 keeps the files a pipeline writes (removed at the end)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"zoo-rank{distributed.current().rank}-"))


def _same_weights_on_all_ranks(run: RunFolder) -> list[str]:
    """The SHA-256 of every rank's saved weights; DDP keeps them equal, and a run whose
    ranks disagree is not recorded as finished."""
    path = run.file("model.safetensors")
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    digests = distributed.all_gather_object(digest)
    if len(set(digests)) != 1:
        raise ZooError(f"ranks ended with different weights: {digests}")
    return digests


class _NoStore:
    """The store as seen by ranks other than 0: they record nothing."""

    def insert(self, *args, **kwargs):
        pass

    def update(self, *args, **kwargs):
        pass

    def close(self):
        pass


@dataclass
class Trained:
    """A finished run, reloaded from its folder: weights from safetensors, no pickle."""

    run_id: str
    task: str
    row: dict
    config: dict
    tokenizer: object
    model: object  # zoo.model.Model
    block_size: int | None


def load_trained(run_id: str, zoo=None, device: str = "cpu") -> Trained:
    from zoo.config import build_config
    from zoo.engine import as_model
    from zoo.model import TaskSpec
    from zoo.registry import get_zoo

    zoo = zoo or get_zoo()
    with Store() as store:
        row = store.get(run_id)
    folder = RunFolder(home() / row["id"])
    if not folder.file("config.json").is_file():
        raise ZooError(f"run {row['id']} has no config.json in {folder.path}")
    config = folder.read_json("config.json")
    if "spec" not in config or not folder.file("model.safetensors").is_file():
        raise ZooError(f"run {row['id']} has no saved model (status: {row['status']})")
    architecture = zoo.architectures.get(config["architecture"])
    tokenizer_entry = zoo.tokenizers.get(config["tokenizer"])
    model_config = build_config(architecture.config_class(), config["configs"]["model"] or {})
    tokenizer = tokenizer_entry.load().load(folder.file("tokenizer.json"))
    model = as_model(architecture.load()(model_config, TaskSpec(**config["spec"])), device)
    model.load_state_dict(folder.load_weights())
    return Trained(row["id"], config["task"], row, config, tokenizer, model,
                   getattr(model_config, "block_size", None))
