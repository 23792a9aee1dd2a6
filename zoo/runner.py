"""From names to a finished run: resolve the model and dataset, choose the pipeline, build
the configs (failing before any training), run, and record the result in the store."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import random
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from zoo import data as zoo_data
from zoo import distributed
from zoo.config import build_config, split_overrides
from zoo.errors import UnknownNameError, ZooError
from zoo.files import save_error
from zoo.job import Job, RunFolder
from zoo.store import Store, home
from zoo.tasks import get_task, tasks_for


class ResumeRefused(ZooError):
    """A run cannot be resumed (finished, still running, changed since); nothing was touched."""


class RunDiverged(ZooError):
    """A run stopped on a non-finite loss or gradient; its row says 'diverged' and its last
    good checkpoint is kept. A sweep records the cell and goes on."""

    def __init__(self, run_id: str, exc):  # exc: zoo.trainer.Diverged
        kept = (f"; its last good checkpoint (step {exc.checkpoint_step}) is kept"
                if exc.checkpoint_step is not None else "")
        super().__init__(f"run {run_id} {exc}{kept}; lower the learning rate (--set lr=...)")
        self.run_id, self.step, self.checkpoint_step = run_id, exc.step, exc.checkpoint_step


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


def plan_run(model: str, dataset: str, *, overrides: dict | None = None, seed: int = 0,
             task: str | None = None, text_column: str | None = None,
             label_column: str | None = None, zoo=None) -> Plan:
    from zoo.registry import get_zoo

    zoo = zoo or get_zoo()
    spec = resolve_model(model, zoo)
    ref = zoo_data.resolve(dataset, zoo)
    tasks, loaded = zoo_data.tasks_of(ref, zoo), None
    if not tasks and ref.kind != "plugin":
        # A file, folder or Hub id the catalogue does not describe: load it to learn whether
        # it has a label column (tasks that need one come first).
        loaded = zoo_data.load(ref, zoo, text_column=text_column, label_column=label_column,
                               quiet=True)
        tasks = loaded.tasks
    # A plugin dataset that declares no task: whatever tasks need only text.
    tasks = tasks or tasks_for(None, {"text"}, zoo)
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


def git_dirty() -> bool | None:
    """Whether the working tree has uncommitted changes to tracked files (None: no git)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


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
            text_column: str | None = None, label_column: str | None = None, zoo=None,
            extra: dict | None = None) -> dict:
    """Load the data, train and evaluate through the pipeline, and record the run.

    ``extra`` is added to the run's provenance (``zoo reproduce`` names the original run).
    Under torchrun every rank runs this; rank 0 alone writes the run folder and the store
    row, the others work in a scratch folder that is removed at the end.
    """
    from zoo.registry import get_zoo

    zoo = zoo or get_zoo()
    ranks = _join_ranks(device)
    if plan.loaded is not None and plan.columns == (text_column, label_column):
        dataset = plan.loaded  # loaded before the task was known; the pipeline checks it below
    else:
        dataset = zoo_data.load(plan.dataset_ref, zoo, text_column=text_column,
                                label_column=label_column, quiet=quiet)
    pipeline = plan.pipeline.load()
    check = getattr(pipeline, "check_dataset", None)
    if check is not None:  # a dataset the pipeline cannot use fails before a run is recorded
        check(dataset)
    plan.spec.architecture.load(), plan.spec.tokenizer.load()  # a broken plugin fails here
    run_id = distributed.broadcast_object(new_run_id())
    run = _create_run_folder(home() if ranks.is_main else _scratch(), run_id)
    summary = {"run_id": run.id, "model": plan.spec.name,
               "architecture": plan.spec.architecture.name, "tokenizer": plan.spec.tokenizer.name,
               "dataset": plan.dataset_ref.name, "task": plan.task, "seed": plan.seed}
    provenance = {**summary, "config_hash": config_hash(plan),
                  "configs": {k: _asdict(v) for k, v in plan.configs.items()},
                  "dataset_id": plan.dataset_ref.source, "dataset_location": dataset.location,
                  "dataset_fingerprint": dataset.fingerprint, "versions": versions(zoo, plan),
                  "git_commit": git_commit(), "git_dirty": git_dirty(), "device": device,
                  "text_column": dataset.text_column, "label_column": dataset.label_column,
                  **(extra or {})}
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
              plan.seed, device, run, quiet or not ranks.is_main,
              identity=identity(plan, dataset, zoo), declared_task=plan.pipeline.task)
    return _train_and_record(plan, pipeline, job, store, summary, provenance, ranks)


def _create_run_folder(parent: Path, run_id: str) -> RunFolder:
    path = parent / run_id
    try:
        return RunFolder(path).create()
    except OSError as exc:
        raise save_error(path, exc) from None


def _train_and_record(plan: Plan, pipeline, job: Job, store: Store, summary: dict,
                      provenance: dict, ranks=None) -> dict:
    """Run the pipeline on a prepared job and record the outcome in its store row."""
    from zoo import checkpoint
    from zoo.trainer import Diverged

    run = job.run
    ranks = ranks or distributed.current()
    start = time.time()
    try:
        seed_everything(plan.seed)
        result = pipeline.run(job)
        if ranks.active:
            provenance["distributed"]["weight_sha256"] = _same_weights_on_all_ranks(run)
        if "spec" in result:  # what load_trained needs to rebuild the model
            provenance["spec"] = result["spec"]
        if ("spec" in result or ranks.active) and ranks.is_main:
            run.write_json("config.json", provenance)
    except KeyboardInterrupt:
        store.update(run.id, status="interrupted", finished=time.time(),
                     duration=time.time() - start, error="interrupted (Ctrl-C)")
        store.close()
        raise
    except Diverged as exc:
        store.update(run.id, status="diverged", finished=time.time(),
                     duration=time.time() - start, error=str(exc),
                     metrics={"diverged_step": exc.step, "checkpoint_step": exc.checkpoint_step})
        store.close()
        raise RunDiverged(run.id, exc) from None
    except BaseException as exc:
        store.update(run.id, status="failed", finished=time.time(), duration=time.time() - start,
                     error=f"{type(exc).__name__}: {exc}"[:2000])
        store.close()
        raise
    finally:
        if not ranks.is_main:
            shutil.rmtree(run.path.parent, ignore_errors=True)
    duration = time.time() - start
    store.update(run.id, status=result.get("status", "finished"), finished=time.time(),
                 duration=duration, params=result.get("params"), metrics=result["metrics"])
    store.close()
    curve, curve_error = None, None
    if ranks.is_main:  # other ranks' scratch folders are gone already
        checkpoint.remove_all(run.path)  # the run is recorded; its weights are in model.safetensors
        curve, curve_error = save_curve(run, summary)
    return {**summary, "status": result.get("status", "finished"), "params": result.get("params"),
            "metrics": result["metrics"], "samples": result.get("samples", []),
            "duration": duration, "run_dir": str(run.path), "curve": curve,
            "curve_error": curve_error, "rank": ranks.rank}


def save_curve(run: RunFolder, summary: dict) -> tuple[str | None, str | None]:
    """curve.png in the run folder. A plotting failure never fails a recorded run, but it
    is reported (on stderr and in the result), never passed over in silence."""
    try:
        from zoo.plots import save_run_curve

        path = save_run_curve(run.path, {**summary, "id": run.id})
    except Exception as exc:  # matplotlib missing, a font cache problem, a full disk...
        message = f"{type(exc).__name__}: {exc}"
        print(f"zoo: warning: no training-curve plot for run {run.id}: {message}", file=sys.stderr)
        return None, message
    if path is None:
        return None, "the run logged no training curve (metrics.jsonl is empty)"
    return str(path), None


# -- resume --------------------------------------------------------------------------
RESUMABLE = ("interrupted", "failed")


def identity(plan: Plan, dataset, zoo) -> dict:
    """What must not change for a run to be resumed: config, dataset, zoo and plugin versions
    (the tokenizer file's checksum is added by each checkpoint)."""
    found = versions(zoo, plan)
    return {"config_hash": config_hash(plan),
            "configs": {k: _asdict(v) for k, v in plan.configs.items()},
            "dataset_fingerprint": dataset.fingerprint,
            "versions": {k: v for k, v in found.items() if k == "zoo" or k.startswith("plugin:")}}


def resume(run_id: str, *, quiet: bool = False, zoo=None) -> dict:
    """Continue an interrupted (or failed) run from its newest good checkpoint, or from the
    start if it has none, in its own folder and store row. Returns what ``execute`` returns.

    This is what `zoo resume` calls, and what a sweep calls for its interrupted cells. It
    refuses (ZooError) if the config, dataset, tokenizer file, zoo or plugin versions differ
    from the run's, or if the run is not resumable (finished, diverged, still running)."""
    from zoo import checkpoint
    from zoo.registry import get_zoo

    zoo = zoo or get_zoo()
    with Store() as store:
        row = store.get(run_id)
    _check_resumable(row)
    if distributed.launched():
        raise ResumeRefused("zoo resume runs in a single process; start it without torchrun")
    run = RunFolder(home() / row["id"])
    if not run.file("config.json").is_file():
        raise ResumeRefused(f"cannot resume run {row['id']}: {run.path} has no config.json")
    provenance = run.read_json("config.json")
    if (provenance.get("distributed") or {}).get("world_size", 1) > 1:
        raise ResumeRefused(f"cannot resume run {row['id']}: it trained under torchrun on "
                            f"{provenance['distributed']['world_size']} processes, whose other "
                            "ranks' random states were not checkpointed; start a new run")
    plan = plan_from_provenance(provenance, zoo)
    dataset = zoo_data.load(plan.dataset_ref, zoo, text_column=provenance.get("text_column"),
                            label_column=provenance.get("label_column"), quiet=quiet)
    warn = None if quiet else (lambda m: print(f"zoo: warning: {m}", file=sys.stderr))
    ckpt = checkpoint.latest(run.path, warn=warn)
    current = identity(plan, dataset, zoo)
    problems = resume_problems(provenance, ckpt, current, run)
    if problems:
        raise ResumeRefused(f"cannot resume run {row['id']}: " + "; ".join(problems)
                       + ". Start a new run instead (zoo run)")
    pipeline = plan.pipeline.load()
    store = Store()
    if not store.claim(row["id"], RESUMABLE, error=None, finished=None,
                       resumed=int(row.get("resumed") or 0) + 1):
        store.close()
        raise ResumeRefused(f"run {row['id']} was claimed by another process; nothing to resume")
    _rewind_curve(run, ckpt)
    if not quiet:
        where = f"step {ckpt.step}" if ckpt else "the start (no checkpoint was written)"
        print(f"zoo: resuming run {row['id']} from {where}", file=sys.stderr)
    job = Job(plan.spec.name, plan.spec.architecture, plan.spec.tokenizer, plan.task,
              plan.configs["model"], plan.configs["tokenizer"], plan.configs["train"], dataset,
              plan.seed, provenance.get("device", "auto"), run, quiet, resuming=True,
              resume_from=ckpt, identity=current, declared_task=plan.pipeline.task)
    summary = {k: provenance[k] for k in ("run_id", "model", "architecture", "tokenizer",
                                          "dataset", "task", "seed")}
    return _train_and_record(plan, pipeline, job, store, summary, provenance)


def _check_resumable(row: dict) -> None:
    status = row["status"]
    if row.get("kind", "train") != "train":
        raise ResumeRefused(f"run {row['id']} is an {row['kind']} row; only training runs resume")
    if status == "finished":
        raise ResumeRefused(f"run {row['id']} already finished; nothing to resume")
    if status == "running":
        raise ResumeRefused(f"run {row['id']} is still running (pid {row['pid']} on {row['host']}); "
                       "resume it once that process has ended")
    if status == "diverged":
        raise ResumeRefused(f"run {row['id']} diverged ({row['error']}); resuming would diverge "
                       "again: start a new run with a lower learning rate")
    if status not in RESUMABLE:
        raise ResumeRefused(f"run {row['id']} has status {status!r}; only "
                       f"{' or '.join(RESUMABLE)} runs can be resumed")


def plan_from_provenance(provenance: dict, zoo) -> Plan:
    """The plan of a recorded run, rebuilt from its config.json with today's plugins."""
    try:
        spec = ModelSpec(provenance["model"], zoo.architectures.get(provenance["architecture"]),
                         zoo.tokenizers.get(provenance["tokenizer"]))
        ref = _dataset_ref(provenance["dataset"], provenance["dataset_id"], zoo)
        pipeline = zoo.pipelines.get(provenance["task"])
        saved = provenance["configs"]
        classes = {"model": spec.architecture.config_class(),
                   "tokenizer": spec.tokenizer.config_class(), "train": pipeline.config_class()}
        configs = {}
        for section, cls in classes.items():
            try:
                configs[section] = build_config(cls, dict(saved.get(section) or {}))
            except ZooError as exc:
                raise ResumeRefused(f"cannot resume: the saved {section} config no longer "
                                    f"fits this zoo ({exc})") from None
        return Plan(spec, ref, provenance["task"], pipeline, configs, int(provenance["seed"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ResumeRefused(f"cannot resume: config.json of run {provenance.get('run_id', '?')} is incomplete "
                       f"({type(exc).__name__}: {exc})") from None


def _dataset_ref(name: str, source: str, zoo):
    """The dataset a run used: by its name if that still points at the same source, else by
    the source (an absolute path or Hub id), which does not depend on the working folder."""
    try:
        ref = zoo_data.resolve(name, zoo)
        if ref.source == source:
            return ref
    except ZooError:
        pass
    ref = zoo_data.resolve(source, zoo)
    ref.name = name
    return ref


def resume_problems(provenance: dict, ckpt, current: dict, run: RunFolder) -> list[str]:
    """Why a run cannot be resumed with what is installed now (empty: it can)."""
    from zoo import checkpoint

    saved = ckpt.meta.get("identity", {}) if ckpt is not None else {
        "config_hash": provenance.get("config_hash"), "configs": provenance.get("configs"),
        "dataset_fingerprint": provenance.get("dataset_fingerprint"),
        "versions": provenance.get("versions", {})}
    problems = []
    if ckpt is not None and ckpt.meta.get("format") != checkpoint.FORMAT:
        problems.append(f"its checkpoint has format {ckpt.meta.get('format')}, this zoo reads "
                        f"format {checkpoint.FORMAT}")
    hashes = {saved.get("config_hash"), provenance.get("config_hash")}
    if hashes != {current["config_hash"]}:
        changed = _changed_keys(saved.get("configs") or {}, current["configs"])
        problems.append("the config differs from the run's (" + (", ".join(changed[:6])
                        or "model, dataset, task or seed") + ")")
    if saved.get("dataset_fingerprint") != current["dataset_fingerprint"]:
        problems.append(f"the dataset changed (fingerprint {saved.get('dataset_fingerprint')} "
                        f"then, {current['dataset_fingerprint']} now)")
    then = saved.get("versions") or {}
    for key in sorted(set(then) | set(current["versions"])):
        if key == "zoo" or key.startswith("plugin:"):
            if then.get(key) != current["versions"].get(key):
                problems.append(f"{key} version differs ({then.get(key)} then, "
                                f"{current['versions'].get(key)} now)")
    if ckpt is not None:
        recorded = saved.get("tokenizer_sha256")
        if recorded and checkpoint.file_sha256(run.file("tokenizer.json")) != recorded:
            problems.append("the run's tokenizer.json differs from the one its checkpoint "
                            "was trained with")
    return problems


def _changed_keys(then: dict, now: dict) -> list[str]:
    changed = []
    for section in sorted(set(then) | set(now)):
        old, new = then.get(section) or {}, now.get(section) or {}
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
            if json.dumps(a, default=str) != json.dumps(b, default=str):
                changed.append(f"{section}.{key}: {a!r} then, {b!r} now")
    return changed


def _rewind_curve(run: RunFolder, ckpt) -> None:
    """Cut metrics.jsonl back to what it held at the checkpoint; the loop logs the rest again."""
    path = run.file("metrics.jsonl")
    if not path.exists():
        return
    size = ckpt.meta.get("metrics_bytes", 0) if ckpt is not None else 0
    try:
        if path.stat().st_size > size:
            os.truncate(path, size)
    except OSError as exc:
        raise save_error(path, exc) from None


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


def load_trained(run_id: str, zoo=None, device: str = "cpu", precision: str | None = None) -> Trained:
    """A finished run's model and tokenizer. It evaluates at the precision the run trained
    with (its `precision` setting) unless `precision` says otherwise."""
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
    from zoo.safeload import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_entry.load(), folder.file("tokenizer.json"))
    task = get_task(config["task"], zoo)
    if task is None:
        raise ZooError(f"run {row['id']} is a {config['task']} run, and no installed plugin "
                       f"registers that task (zoo list pipelines shows the tasks)")
    model = as_model(architecture.load()(model_config, TaskSpec(**config["spec"])), device,
                     loss=task.loss_function())
    model.load_state_dict(folder.load_weights())
    if hasattr(model, "configure_engine"):
        trained_with = (config["configs"].get("train") or {}).get("precision", "auto")
        model.configure_engine(precision=precision or trained_with)
    return Trained(row["id"], config["task"], row, config, tokenizer, model,
                   getattr(model_config, "block_size", None))
