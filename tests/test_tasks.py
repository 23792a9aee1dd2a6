"""Task registrations: a pipeline declares its task, and the core reads only that.

A task the core has never heard of, registered in-process, gets its datasets, metric
directions, primary metric and loss from its declaration; the built-in tasks register
through the same path; and no core module names a built-in task."""

import os
import re
from pathlib import Path

import pytest
from conftest import REPO

import zoo
import zoo.plugin
from zoo.core import loading
from zoo.core.names import get_task, tasks_for
from zoo.errors import ZooError
from zoo.plugin import Metric, Task, hookimpl
from zoo.tasks import metric_info

SCORE = Task(
    name="scoring",
    loss="zoo.train.losses:mse",
    output="scores [B]",
    metrics=(
        Metric("mse", "lower", "squared units"),
        Metric("r2", "higher", "fraction of variance"),
    ),
    primary="test_r2",
    curve_metric="val_mse",
    columns=("text", "label"),
)


class Scoring:
    @staticmethod
    def run(job):
        raise AssertionError("not trained here")


class ScoringPlugin:
    @hookimpl
    def register_pipelines(self, register):
        register(SCORE, Scoring)


@pytest.fixture
def with_scoring():
    zoo_ = loading.build_zoo(entry_points=False)
    assert zoo_.add_plugin(ScoringPlugin(), loading.PluginInfo("scoring", "test"))
    loading.reset_zoo(zoo_)
    return zoo_


def test_a_new_task_is_known_only_through_its_registration(with_scoring):
    from zoo.comparison.table import describe, direction, primary_metric

    assert get_task("scoring") is SCORE
    assert primary_metric("scoring") == "test_r2" and primary_metric("scoring", "eval") == "r2"
    assert (
        direction("val_mse", "scoring") == "lower" and direction("test_r2", "scoring") == "higher"
    )
    assert describe("test_r2", task="scoring") == "test_r2 (fraction of variance, higher is better)"
    assert direction("test_accuracy", "scoring") is None  # not one of its metrics
    # it needs a label column: a text-and-label dataset now serves it after classification
    # and seq2seq (registered before it)
    assert tasks_for(None, {"text", "label"}) == (
        "classification",
        "seq2seq",
        "scoring",
        "language-modeling",
        "next-item",
        "masked-language-modeling",
    )
    assert "scoring" not in tasks_for(None, {"text"})
    assert tasks_for("scoring", set()) == ("scoring",)


def test_the_builtin_tasks_register_through_the_same_hook():
    zoo_ = loading.get_zoo()
    for entry in zoo_.pipelines.entries():
        assert isinstance(entry.task, Task) and entry.task.name == entry.name
        assert entry.plugin == "zoo.pipelines"
        assert entry.task.metric(entry.task.primary) is not None
    assert tasks_for(None, {"text"}) == (
        "language-modeling",
        "next-item",
        "masked-language-modeling",
    )
    assert tasks_for(None, {"text", "label"})[0] == "classification"


@pytest.mark.filterwarnings("ignore::zoo.errors.ZooDeprecationWarning")  # API 1.1's form
@pytest.mark.parametrize(
    "register_args, message",
    [
        ({}, "takes the zoo.plugin.Task(...) it serves"),
        ({"task": "scoring"}, "takes the zoo.plugin.Task(...) it serves"),
        ({"task": SCORE, "name": "other"}, "declares task 'scoring'"),
    ],
)
def test_a_pipeline_must_declare_the_task_it_serves(register_args, message):
    name = register_args.pop("name", "scoring")

    class Undeclared:
        @hookimpl
        def register_pipelines(self, register):
            register(name, Scoring, **register_args)

    zoo_ = loading.build_zoo(entry_points=False)
    assert not zoo_.add_plugin(Undeclared(), loading.PluginInfo("undeclared", "test"))
    assert message in zoo_.plugins["undeclared"].error


def test_a_task_declaration_is_checked_when_it_is_made():
    with pytest.raises(ZooError, match="better must be 'lower' or 'higher'"):
        Metric("mse", "smaller")
    with pytest.raises(ZooError, match="'test_mae' is not one of its metrics"):
        Task(
            "t",
            "zoo.train.losses:mse",
            "scores [B]",
            (Metric("mse", "lower"),),
            primary="test_mae",
            curve_metric="val_mse",
        )
    with pytest.raises(ZooError, match="must look like 'module:attr'"):
        Task("t", "mse", "scores [B]", (Metric("mse", "lower"),), primary="mse", curve_metric="mse")


def test_the_engine_trains_with_the_declared_loss():
    torch = pytest.importorskip("torch")
    import numpy as np

    from zoo.train.torch_model import TorchModel

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(3))

        def forward(self, x, mask=None):
            return x.float() @ self.weight  # scores [B]

    model = TorchModel(Linear(), loss=loading.task_loss(SCORE))
    model.configure_optimizer(0.1, 0.0)
    x = np.eye(3, dtype=np.float32)
    y = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    first = model.train_step(x, y, lr=0.1)
    assert first == pytest.approx(np.mean(y**2))  # mean squared error at zero weights
    for _ in range(200):
        last = model.train_step(x, y, lr=0.1)
    assert last < 1e-3
    total, count = model.loss_sum(x, y)
    assert count == 3 and total == pytest.approx(last * 3, abs=1e-2)


def test_run_figures_are_declared_by_the_core():
    assert metric_info(None, "tokens_per_s").better == "higher"
    assert metric_info(None, "train_time").better == "lower"


def test_no_core_module_names_a_builtin_task():
    """As `grep -rn` of zoo/ sees it: every file of the core (not following links: the
    catalogue, registry.toml, is data linked in from the repository's root)."""
    names = [entry.name for entry in loading.get_zoo().pipelines.entries()]
    pattern = re.compile("|".join(re.escape(n) for n in names))
    found = []
    for folder, dirs, files in os.walk(REPO / "zoo"):
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink() and d != "__pycache__"]
        for name in files:
            path = Path(folder) / name
            if path.is_symlink():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def test_the_author_api_lists_what_a_plugin_needs_and_the_user_api_only_the_users():
    for name in (
        "hookimpl",
        "Task",
        "Metric",
        "TaskSpec",
        "Model",
        "Tokenizer",
        "TokenizersTokenizer",
        "TrainConfig",
        "Job",
        "Batch",
        "train",
        "LoadedRun",
        "ZooError",
    ):
        assert name in zoo.plugin.__all__ and getattr(zoo.plugin, name) is not None


def test_curves_name_the_declared_units_and_draw_the_task_validation_metric():
    from zoo.train.curves import training_curves

    records = [
        {
            "step": s,
            "train_loss": 2.0 - s / 10,
            "elapsed": s / 10,
            **({"val_loss": 2.1 - s / 10, "val_accuracy": s / 10} if s % 2 == 0 else {}),
        }
        for s in range(1, 9)
    ]
    figure = training_curves([{"label": "enc", "records": records}], "loss", task="classification")
    loss_axis, accuracy_axis = figure.axes
    assert loss_axis.get_ylabel() == "loss (nats per example, lower is better)"
    assert accuracy_axis.get_ylabel() == "val_accuracy (fraction correct, higher is better)"
    assert [list(line.get_ydata()) for line in accuracy_axis.get_lines()] == [[0.2, 0.4, 0.6, 0.8]]
    lm = training_curves([{"label": "dec", "records": records}], "loss", task="language-modeling")
    assert [a.get_ylabel() for a in lm.axes] == ["loss (nats per token, lower is better)"]


def test_a_validation_figure_is_a_validation_curve_never_a_training_one():
    from zoo.train.curves import curve_keys

    records = [{"step": 1, "train_loss": 2.0}, {"step": 2, "val_loss": 1.9, "val_accuracy": 0.4}]
    assert curve_keys(records, "val_accuracy") == (None, "val_accuracy")
    assert curve_keys(records, "loss") == ("train_loss", "val_loss")
    assert curve_keys(records, "accuracy") == (None, "val_accuracy")


def test_predict_json_is_strict_json_for_any_prediction_type():
    import dataclasses
    import json

    from zoo.tasks import prediction_line, prediction_record

    @dataclasses.dataclass(frozen=True)
    class Scores(zoo.plugin.Prediction):
        value: float
        spread: dict

    odd = Scores(float("nan"), {"low": float("-inf"), "high": 1.5})
    text = json.dumps(prediction_record(odd), allow_nan=False)
    assert json.loads(text) == {"value": None, "spread": {"low": None, "high": 1.5}}
    assert prediction_line(odd) == "nan"
    assert prediction_line({"label": "x", "score": 0.25}) == "x\t0.250"


def test_builtins_and_examples_import_only_the_public_api():
    """Built-in plugins and pipelines, and the example packages, use zoo as a third party
    would: `from zoo.plugin import ...`, never the core's internal modules. Their own modules
    (zoo.plugins.*, zoo.pipelines.*) are theirs."""
    import ast

    allowed = ("zoo.plugin", "zoo.pipelines", "zoo.errors")  # "zoo.plugin" covers zoo.plugins.*
    files = [
        p
        for folder in ("plugins", "pipelines", "examples")
        for p in (REPO / folder).rglob("*.py")
        if "build" not in p.relative_to(REPO).parts
    ]
    assert len(files) > 15
    internal = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("zoo.") and not name.startswith(allowed):
                    internal.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
    assert internal == []


def test_a_task_whose_loss_cannot_be_imported_fails_before_a_run_is_recorded(tiny_text):
    from conftest import TINY_DECODER, run_cli

    from zoo.records.store import Store

    broken = Task(
        "broken-task",
        "no_such_module:loss",
        "logits [B, T, V]",
        (Metric("loss", "lower"),),
        primary="val_loss",
        columns=("text",),
    )

    class Broken:
        @hookimpl
        def register_architectures(self, register):
            register(
                "brokendec",
                "zoo.plugins.decoder.model:build",
                config="zoo.plugins.decoder:DecoderConfig",
                tasks=("broken-task",),
            )

        @hookimpl
        def register_pipelines(self, register):
            register(
                broken,
                "zoo.pipelines.language_modeling:LanguageModeling",
                config="zoo.pipelines.language_modeling:LanguageModelingConfig",
            )

    zoo_ = loading.build_zoo(entry_points=False)
    assert zoo_.add_plugin(Broken(), loading.PluginInfo("broken", "test"))
    loading.reset_zoo(zoo_)
    result = run_cli("run", "brokendec-char", tiny_text, "--steps", 2, *TINY_DECODER)
    assert result.code == 2 and "Cannot load loss of task 'broken-task'" in result.err, result
    with Store() as store:
        assert store.rows() == []
