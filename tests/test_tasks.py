"""Task registrations: a pipeline declares its task, and the core reads only that.

A task the core has never heard of, registered in-process, gets its datasets, metric
directions, primary metric and loss from its declaration; the built-in tasks register
through the same path; and no core module names a built-in task."""
import re

import pytest

import zoo
from conftest import REPO
from zoo import Metric, Task, hookimpl, registry
from zoo.errors import ZooError
from zoo.tasks import get_task, metric_info, tasks_for

SCORE = Task(
    name="scoring",
    loss="zoo.losses:mse",
    output="scores [B]",
    metrics=(Metric("mse", "lower", "squared units"), Metric("r2", "higher", "fraction of variance")),
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
        register("scoring", Scoring, task=SCORE)


@pytest.fixture
def with_scoring():
    zoo_ = registry.build_zoo(entry_points=False)
    assert zoo_.add_plugin(ScoringPlugin(), registry.PluginInfo("scoring", "test"))
    registry.reset_zoo(zoo_)
    return zoo_


def test_a_new_task_is_known_only_through_its_registration(with_scoring):
    from zoo.comparison import describe, direction, primary_metric

    assert get_task("scoring") is SCORE
    assert primary_metric("scoring") == "test_r2" and primary_metric("scoring", "eval") == "r2"
    assert direction("val_mse", "scoring") == "lower" and direction("test_r2", "scoring") == "higher"
    assert describe("test_r2", task="scoring") == "test_r2 (fraction of variance, higher is better)"
    assert direction("test_accuracy", "scoring") is None  # not one of its metrics
    # it needs a label column: a text-and-label dataset now serves it after classification
    assert tasks_for(None, {"text", "label"}) == ("classification", "scoring", "language-modeling",
                                                  "next-item")
    assert "scoring" not in tasks_for(None, {"text"})
    assert tasks_for("scoring", set()) == ("scoring",)


def test_the_builtin_tasks_register_through_the_same_hook():
    zoo_ = registry.get_zoo()
    for entry in zoo_.pipelines.entries():
        assert isinstance(entry.task, Task) and entry.task.name == entry.name
        assert entry.plugin == "zoo.pipelines"
        assert entry.task.metric(entry.task.primary) is not None
    assert tasks_for(None, {"text"}) == ("language-modeling", "next-item")
    assert tasks_for(None, {"text", "label"})[0] == "classification"


@pytest.mark.parametrize("register_args, message", [
    ({}, "task=zoo.Task"),
    ({"task": "scoring"}, "task=zoo.Task"),
    ({"task": SCORE, "name": "other"}, "declares task 'scoring'"),
])
def test_a_pipeline_must_declare_the_task_it_serves(register_args, message):
    name = register_args.pop("name", "scoring")

    class Undeclared:
        @hookimpl
        def register_pipelines(self, register):
            register(name, Scoring, **register_args)

    zoo_ = registry.build_zoo(entry_points=False)
    assert not zoo_.add_plugin(Undeclared(), registry.PluginInfo("undeclared", "test"))
    assert message in zoo_.plugins["undeclared"].error


def test_a_task_declaration_is_checked_when_it_is_made():
    with pytest.raises(ZooError, match="better must be 'lower' or 'higher'"):
        Metric("mse", "smaller")
    with pytest.raises(ZooError, match="'test_mae' is not one of its metrics"):
        Task("t", "zoo.losses:mse", "scores [B]", (Metric("mse", "lower"),), primary="test_mae",
             curve_metric="val_mse")
    with pytest.raises(ZooError, match="must look like 'module:attr'"):
        Task("t", "mse", "scores [B]", (Metric("mse", "lower"),), primary="mse", curve_metric="mse")


def test_the_engine_trains_with_the_declared_loss():
    torch = pytest.importorskip("torch")
    import numpy as np

    from zoo.engine import TorchModel

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(3))

        def forward(self, x, mask=None):
            return x.float() @ self.weight  # scores [B]

    model = TorchModel(Linear(), loss=SCORE.loss_function())
    model.configure_optimizer(0.1, 0.0)
    x = np.eye(3, dtype=np.float32)
    y = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    first = model.train_step(x, y, lr=0.1)
    assert first == pytest.approx(np.mean(y ** 2))  # mean squared error at zero weights
    for _ in range(200):
        last = model.train_step(x, y, lr=0.1)
    assert last < 1e-3
    total, count = model.loss_sum(x, y)
    assert count == 3 and total == pytest.approx(last * 3, abs=1e-2)


def test_run_figures_are_declared_by_the_core():
    assert metric_info(None, "tokens_per_s").better == "higher"
    assert metric_info(None, "train_time").better == "lower"


def test_no_core_module_names_a_builtin_task():
    names = [entry.name for entry in registry.get_zoo().pipelines.entries()]
    pattern = re.compile("|".join(re.escape(n) for n in names))
    found = [f"{path.relative_to(REPO)}:{n}" for path in sorted((REPO / "zoo").rglob("*"))
             if path.is_file() and path.suffix in (".py", ".toml")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line)]
    assert found == []


def test_the_public_api_lists_what_a_plugin_needs():
    for name in ("hookimpl", "Task", "Metric", "TaskSpec", "Model", "Tokenizer",
                 "TokenizersTokenizer", "TrainConfig", "Job", "Batch", "train", "Trained",
                 "ZooError"):
        assert name in zoo.__all__ and getattr(zoo, name) is not None
