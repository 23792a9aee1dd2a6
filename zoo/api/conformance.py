"""`zoo check-plugin NAME`: a plugin run through the contract, as zoo runs it.

Each architecture of the plugin is trained a few steps on every task it serves (with the
plugin's tokenizer, else ``char``), in a ZOO_HOME of its own that is removed afterwards;
each task it registers is trained with an architecture that serves it; each tokenizer is
trained and its ids checked; each exporter writes a trained run; each tracker is fed a run. The checks, each one
line naming the plugin when it fails:

- ``train``: builds at its declared sizes (with the settings given), trains, evaluates;
  the task's declared output shape, the score key and the tokenizer's ids are checked on
  the way (a failure names the plugin's function);
- ``output shape``: the network's output, for one input and for a batch, against the
  task's ``output_shape``;
- ``best step``: the validation picked a best step (``train(..., score_key=...)``);
- ``batch``: a text predicted alone equals the same text predicted among others;
- ``resume``: a run interrupted after a checkpoint, then resumed, ends with the same
  weights, byte for byte, as the run trained without a stop;
- ``export``: the run exports, checked at several input lengths and batch sizes;
- ``vocabulary``: a tokenizer's ids lie inside its vocabulary and survive a save and load;
- ``tracker``: a tracker (``register_loggers``) starts, takes a run's records and finishes,
  each call within its timeout, as zoo's run drives it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import math
import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from zoo.errors import ZooError

STEPS = 4  # training steps of each run: enough for a checkpoint, a validation and a resume
# keep_best off: the weights compared after a resume are the last step's, not a best
# validation's that may predate the stop
SETTINGS = {"eval_interval": 2, "checkpoint_every": 1, "batch_size": 4, "keep_best": False}
TOLERANCE = 2e-3  # largest difference between a text predicted alone and in a batch (kernels
# of another batch shape round otherwise; a model that reads its batch differs far more)
SAMPLE = [
    "the film was good",
    "the film was not good",
    "a dull and awful story",
    "great acting, a fine plot",
    "bad",
    "it was fine until the end, then it was awful",
] * 12


@dataclass
class Check:
    """One check of a plugin: what it checked, on what, and what it found."""

    plugin: str
    check: str
    subject: str  # the model and dataset, the tokenizer or the exporter checked
    status: str  # "ok", "failed" or "skipped"
    detail: str = ""

    def line(self) -> str:
        said = f": {self.detail}" if self.detail else ""
        return f"{self.status:7} plugin {self.plugin!r}, check {self.check} ({self.subject}){said}"

    def record(self) -> dict:
        return dict(vars(self))


def check_plugin(
    name: str, settings: dict | None = None, steps: int = STEPS, only: str = "*"
) -> list[Check]:
    """Every check of plugin ``name`` (see the module docstring); ``settings`` are config
    settings as ``--set`` takes them (an architecture's sizes, say); ``only``: a wildcard
    (``gpt2``, ``hf-*``) choosing which of its architectures, tokenizers, tasks and
    exporters to check."""
    from zoo.core.loading import get_zoo

    zoo = get_zoo()
    if name not in zoo.plugins:
        from zoo.errors import UnknownNameError

        raise UnknownNameError("plugin", name, zoo.plugins, hint="zoo list plugins shows all")
    if zoo.plugins[name].error:
        raise ZooError(f"plugin {name!r} is set aside: {zoo.plugins[name].error}")
    checks: list[Check] = []
    with own_home() as scratch:
        for tokenizer in _of(zoo, "tokenizer", name, only):
            checks.append(check_tokenizer(name, tokenizer))
        runs = {}
        tokenizer = trainable(_of(zoo, "tokenizer", name, only))
        for architecture, task in pairs(zoo, name, only):
            dataset = dataset_for(zoo, name, task, scratch)
            model = f"{architecture.name}-{tokenizer.name if tokenizer else 'char'}"
            if dataset is None:
                checks.append(Check(name, "train", model, "skipped", f"no dataset serves {task}"))
                continue
            subject = f"{model} on {Path(dataset).name}, {task}"
            given = applicable(settings or {}, zoo, architecture, tokenizer, task, dataset)
            found, run_id = check_model(name, model, dataset, task, given, steps)
            checks += [Check(name, c, subject, status, detail) for c, status, detail in found]
            if run_id:
                runs[architecture.name] = run_id
        for exporter in _of(zoo, "exporter", name, only):
            if not runs:  # an exporter's plugin with no architecture: a run of another's
                runs = exported_run(zoo, exporter, settings or {}, steps, scratch)
            checks.append(check_exporter(name, exporter, runs, scratch))
        for logger in _of(zoo, "logger", name, only):
            checks.append(check_logger(name, logger, zoo, scratch))
    return checks


def applicable(settings: dict, zoo, architecture, tokenizer, task: str, dataset: str) -> dict:
    """The settings (and the checks' own) that a config of this run has: a size given for
    every architecture of a plugin is left out where one has no such field."""
    import dataclasses

    entries = [architecture, tokenizer or zoo.tokenizers.get("char"), zoo.pipelines.get(task)]
    if dataset in zoo.datasets:
        entries.append(zoo.datasets.get(dataset))
    known = set()
    for entry in entries:
        cls = entry.config_class()
        known |= {f.name for f in dataclasses.fields(cls)} if cls is not None else set()
    given = {**SETTINGS, **settings}
    return {k: v for k, v in given.items() if k in known or "." in k}


def _of(zoo, kind: str, plugin: str, only: str = "*") -> list:
    return [
        e
        for e in zoo.entries_of[kind].entries_in_order()
        if e.plugin == plugin and fnmatch.fnmatchcase(e.name, only)
    ]


def trainable(tokenizers: list):
    """The first of a plugin's tokenizers that trains with its config's defaults (one that
    needs a setting, such as a pretrained vocabulary's location, is checked on its own),
    else None: the models train with ``char``."""
    from zoo.core.config import build_config

    for entry in tokenizers:
        try:
            cls = entry.config_class()
            if cls is None or build_config(cls, {}) is not None:
                return entry
        except ZooError:
            continue
    return None


def pairs(zoo, plugin: str, only: str = "*") -> list[tuple]:
    """(architecture, task) to train: the plugin's architectures on each task they serve
    that has a pipeline, and each task the plugin registers with the first architecture
    (its own first) that serves it."""
    found = [
        (a, t)
        for a in _of(zoo, "architecture", plugin, only)
        for t in a.tasks
        if t in zoo.pipelines
    ]
    for pipeline in _of(zoo, "pipeline", plugin, only):
        if any(t == pipeline.name for _, t in found):
            continue
        serving = [a for a in zoo.architectures.entries_in_order() if pipeline.name in a.tasks]
        if serving:
            found.append((serving[0], pipeline.name))
    return found


def dataset_for(zoo, plugin: str, task: str, scratch: Path) -> str | None:
    """A dataset for the task that needs no download: the plugin's own, another plugin's
    generated one, or a small file zoo's loaders read, by the columns the task declares
    (texts alone: a text file; texts and labels: a CSV of two classes)."""
    generated = [e for e in zoo.datasets.entries_in_order() if task in e.tasks]
    ours = [e for e in generated if e.plugin == plugin]
    if ours or generated:
        return (ours or generated)[0].name
    columns = set(zoo.pipelines.get(task).task.columns)
    if columns == {"text", "label"}:
        path = scratch / "sample.csv"
        labels = ["pos", "neg", "neg", "pos", "neg", "neg"]
        rows = [f'"{text}",{labels[i % 6]}' for i, text in enumerate(SAMPLE)]
        path.write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
        return str(path)
    if columns == {"text"}:
        path = scratch / "sample.txt"
        path.write_text("\n".join(SAMPLE * 4) + "\n", encoding="utf-8")
        return str(path)
    return None


@contextlib.contextmanager
def own_home():
    """A ZOO_HOME of its own for the checks' runs, removed afterwards."""
    previous = os.environ.get("ZOO_HOME")
    with tempfile.TemporaryDirectory(prefix="zoo-check-") as folder:
        os.environ["ZOO_HOME"] = str(Path(folder) / "runs")
        try:
            yield Path(folder)
        finally:
            if previous is None:
                os.environ.pop("ZOO_HOME", None)
            else:
                os.environ["ZOO_HOME"] = previous


def check_model(plugin, model, dataset, task, settings, steps):
    """The checks of one model on one dataset: [(check, status, detail)], and the id of its
    finished run (None when training failed)."""
    from zoo.api.training import run

    try:
        done = run(model, dataset, steps=steps, seed=0, quiet=True, settings=settings)
    except ZooError as exc:
        return [("train", "failed", str(exc))], None
    found = [("train", "ok", "")]
    found.append(check_output_shape(done.id))
    found.append(check_best_step(done))
    found.append(check_batch(done.id))
    found.append(check_resume(model, dataset, settings, steps, done))
    found.append(check_export(done.id))
    return found, done.id


def check_output_shape(run_id: str):
    from zoo.api.training import load

    trained = load(run_id, device="cpu")
    declared = getattr(trained.declared_task, "output_shape", None)
    network = trained.network
    if declared is None or network is None:
        why = "the task declares no output_shape" if declared is None else "not a torch model"
        return ("output shape", "skipped", why)
    import torch

    vocab = trained.config["spec"]["vocab_size"]
    for rows, length in ((1, 3), (3, 5)):
        ids = torch.randint(3, vocab, (rows, length))
        with torch.no_grad():
            out = network(ids, torch.ones_like(ids))
        shape = tuple(getattr(out, "shape", ()))
        sizes = {"B": rows, "T": length}
        if len(shape) != len(declared) or any(
            d in sizes and s != sizes[d] for d, s in zip(declared, shape)
        ):
            return (
                "output shape",
                "failed",
                f"{rows} input(s) of {length} tokens gave {list(shape)}; the task declares "
                f"[{', '.join(map(str, declared))}]",
            )
    return ("output shape", "ok", "")


def check_best_step(done):
    if done.metrics.get("best_step") is None:
        return (
            "best step",
            "failed",
            "the run reports no best_step: pass score_key (and higher_is_better) to "
            "zoo.plugin.train, so best weights and patience work, and report the result's "
            "best_step in the run's metrics",
        )
    return ("best step", "ok", "")


def check_batch(run_id: str):
    from zoo.api.training import load

    loaded = load(run_id, device="cpu")
    try:
        alone = loaded.predict([SAMPLE[0]])[0]
    except ZooError as exc:
        if "offers no prediction" in str(exc):
            return ("batch", "skipped", "the task's pipeline offers no prediction")
        return ("batch", "failed", str(exc))
    among = loaded.predict([SAMPLE[5], SAMPLE[0], SAMPLE[4]])[1]
    difference = _difference(alone.record(), among.record())
    if not difference <= TOLERANCE:
        return (
            "batch",
            "failed",
            f"{SAMPLE[0]!r} predicted alone and among other texts differs by "
            f"{difference:.3g} (a model whose output depends on the rest of its batch)",
        )
    return ("batch", "ok", "")


def _difference(a, b) -> float:
    """The largest difference between two predictions' records (inf where they differ in
    kind: a label, a key)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return math.inf
        return max((_difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return math.inf
        return max((_difference(x, y) for x, y in zip(a, b)), default=0.0)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b))
    return 0.0 if a == b else math.inf


def check_resume(model, dataset, settings, steps, reference):
    """A second run with the same settings and seed, stopped by a Ctrl-C right after its
    checkpoint halfway, then resumed: its weights must equal the reference run's."""
    from zoo.api.training import resume, run
    from zoo.errors import RunInterrupted

    stop = max(1, steps // 2)
    try:
        with ctrl_c_after_checkpoint(stop):
            run(model, dataset, steps=steps, seed=0, quiet=True, settings=settings)
    except RunInterrupted as exc:
        resumed = resume(exc.run_id, quiet=True)
    except ZooError as exc:
        return ("resume", "failed", str(exc))
    else:
        return ("resume", "skipped", "the model keeps no checkpoints (no optimizer_state)")
    assert resumed.folder is not None  # a trained run, never an ensemble's row
    ours = (resumed.folder / "model.safetensors").read_bytes()
    theirs = (reference.folder / "model.safetensors").read_bytes()
    if ours != theirs:
        return (
            "resume",
            "failed",
            f"interrupted after step {stop} and resumed, the weights differ from the run "
            "trained without a stop (state the checkpoint does not hold?)",
        )
    return ("resume", "ok", "")


@contextlib.contextmanager
def ctrl_c_after_checkpoint(step: int):
    """A Ctrl-C (SIGINT, as a terminal sends it) right after the checkpoint of ``step``."""
    from zoo.train.checkpoints import Checkpointer

    original = Checkpointer.save

    def save_then_stop(self, elapsed):
        original(self, elapsed)
        if self.result.steps == step:
            signal.raise_signal(signal.SIGINT)

    Checkpointer.save = save_then_stop  # type: ignore[method-assign]
    try:
        yield
    finally:
        Checkpointer.save = original  # type: ignore[method-assign]


def check_export(run_id: str, format: str | None = None, folder: Path | None = None):
    from zoo.api.sharing import export

    folder = folder or Path(tempfile.mkdtemp(prefix="zoo-check-export-")) / "export"
    try:
        export(run_id, folder, format=format)
    except ZooError as exc:
        text = str(exc)
        if format is None and ("cannot be exported" in text or "no installed format" in text):
            return ("export", "skipped", text)
        return ("export", "failed", text)
    return ("export", "ok", "")


def exported_run(zoo, exporter, settings: dict, steps: int, scratch: Path) -> dict:
    """{architecture: run id} of a run the exporter exports, trained for it (empty when no
    architecture it names serves a task with a dataset)."""
    from zoo.api.training import run

    names = exporter.architectures
    for architecture in zoo.architectures.entries_in_order():
        if not ({architecture.name, "*"} & set(names)):
            continue
        for task in architecture.tasks:
            dataset = dataset_for(zoo, exporter.plugin, task, scratch)
            if dataset is None or task not in zoo.pipelines:
                continue
            given = applicable(settings, zoo, architecture, None, task, dataset)
            model = f"{architecture.name}-char"
            done = run(model, dataset, steps=steps, seed=0, quiet=True, settings=given)
            return {architecture.name: done.id}
    return {}


def check_exporter(plugin: str, exporter, runs: dict, scratch: Path) -> Check:
    names = exporter.architectures
    run_id = next((r for a, r in runs.items() if a in names or "*" in names), None)
    if run_id is None:
        return Check(plugin, "export", exporter.name, "skipped", "no trained run it exports")
    check, status, detail = check_export(run_id, exporter.name, scratch / f"{exporter.name}")
    return Check(plugin, check, exporter.name, status, detail)


def check_tokenizer(plugin: str, entry) -> Check:
    """Train the tokenizer on sample texts; its ids lie in its vocabulary and a saved and
    loaded copy encodes the same."""
    import numpy as np

    from zoo.core.config import build_config
    from zoo.errors import ContractBroken
    from zoo.tokenizer import check_ids

    try:
        cls = entry.load()
        config_class = entry.config_class()
        config = build_config(config_class, {}) if config_class is not None else None
        tokenizer = cls.train(iter(SAMPLE), config)
        ids, offsets = tokenizer.encode_rows(SAMPLE)
        check_ids(tokenizer, ids)
        check_ids(tokenizer, tokenizer.encode_text("\n".join(SAMPLE)))
        with tempfile.TemporaryDirectory() as folder:
            tokenizer.save(Path(folder) / "tokenizer.json")
            again = cls.load(Path(folder) / "tokenizer.json")
        if not np.array_equal(again.encode_rows(SAMPLE)[0], ids):
            return Check(
                plugin, "vocabulary", entry.name, "failed", "a saved copy encodes otherwise"
            )
    except (ContractBroken, ZooError) as exc:
        return Check(plugin, "vocabulary", entry.name, "failed", str(exc))
    except Exception as exc:  # noqa: BLE001 - the plugin's code failing is what this reports
        return Check(plugin, "vocabulary", entry.name, "failed", f"{type(exc).__name__}: {exc}")
    return Check(plugin, "vocabulary", entry.name, "ok")


def check_logger(plugin: str, entry, zoo, scratch: Path) -> Check:
    """Drive the tracker as a run does (zoo.train.tracking: its own thread, each call within
    ZOO_TRACKER_TIMEOUT): start, where it writes, two records of a curve, finish. A call that
    fails or overruns is the warning zoo would print; a missing extra skips the check."""
    import logging

    from zoo.train.tracking import Trackers

    folder = scratch / f"tracker-{entry.name}"
    folder.mkdir()
    warned: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warned.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("zoo.train.tracking")
    logger.addHandler(handler)
    try:
        trackers = Trackers([entry.name], zoo)
        run = {"id": folder.name, "folder": folder, "model": "check", "dataset": "sample"}
        trackers.start({**run, "task": "check", "seed": 0, "settings": {}, "group": None})
        trackers.where()
        for step in (1, 2):
            trackers.log({"step": step, "train_loss": 1.0 / step, "lr": 1e-3})
        trackers.finish({"val_loss": 0.5, "test_loss": 0.5}, folder, "finished")
    except ZooError as exc:  # its module needs a package that is not installed
        return Check(plugin, "tracker", entry.name, "skipped", str(exc))
    finally:
        logger.removeHandler(handler)
    if warned:
        return Check(plugin, "tracker", entry.name, "failed", warned[0])
    return Check(plugin, "tracker", entry.name, "ok")
