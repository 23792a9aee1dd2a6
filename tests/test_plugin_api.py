"""The plugin API's version: API_VERSION, the range a plugin declares (ZOO_PLUGIN_API), and
API 1.0's names and signatures still working, each with a warning naming its replacement."""

import importlib
import re
import textwrap
import warnings
from pathlib import Path

import pytest
from conftest import REPO, run_cli

import zoo.plugin
from zoo.core import loading
from zoo.errors import ZooDeprecationWarning, ZooError
from zoo.hookspecs import hookimpl
from zoo.operations.reload import load_trained
from zoo.records.store import Store

MIGRATION = REPO / "docs" / "plugins" / "migration.md"


def test_the_api_version_is_semantic():
    from packaging.version import Version

    version = Version(zoo.plugin.API_VERSION)
    assert len(version.release) == 3 and str(version) == zoo.plugin.API_VERSION


@pytest.mark.parametrize("name", sorted(zoo.plugin.MOVED))
def test_a_moved_name_still_imports_flat_with_a_warning_naming_its_home(name):
    home = zoo.plugin.MOVED[name]
    with pytest.warns(ZooDeprecationWarning, match=rf"import it from {re.escape(home)}\b"):
        flat = getattr(zoo.plugin, name)
    assert flat is getattr(importlib.import_module(home), name)
    assert name not in vars(zoo.plugin)  # not cached: every import warns


def test_from_import_of_a_moved_name_warns_at_the_plugins_line(tmp_path):
    module = tmp_path / "old_plugin.py"
    module.write_text("from zoo.plugin import check_positive, hookimpl\n")
    with pytest.warns(ZooDeprecationWarning) as caught:
        loading._import_file(module)
    assert {Path(w.filename).name for w in caught} == {"old_plugin.py"}
    assert "zoo.plugin.config" in str(caught[0].message)


def test_the_migration_page_lists_every_moved_name():
    text = MIGRATION.read_text(encoding="utf-8")
    for name, home in zoo.plugin.MOVED.items():
        assert f"`{name}` | `{home}`" in text, name


def plugin_declaring(api):
    class Declaring:
        ZOO_PLUGIN_API = api

        @hookimpl
        def register_architectures(self, register):
            register("declared", "zoo.plugins.decoder.model:build")

    return Declaring()


@pytest.mark.parametrize("api", [">=1.1,<2", "~=1.0", "==1.*"])
def test_a_plugin_supporting_this_api_loads(api):
    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(plugin_declaring(api), loading.PluginInfo("ok", "test"))
    assert "declared" in zoo.architectures


@pytest.mark.parametrize(
    "api, problem",
    [
        (">=2", f"it supports zoo's plugin API >=2, and this zoo has API {zoo.plugin.API_VERSION}"),
        (
            "<1.1",
            f"it supports zoo's plugin API <1.1, and this zoo has API {zoo.plugin.API_VERSION}",
        ),
        ("one point one", "ZOO_PLUGIN_API = 'one point one' is not a version specifier"),
        (11, "ZOO_PLUGIN_API = 11 is not a version specifier"),
    ],
)
def test_a_plugin_outside_its_declared_api_is_set_aside_in_one_line_naming_it(api, problem, caplog):
    zoo = loading.build_zoo(entry_points=False)
    assert not zoo.add_plugin(plugin_declaring(api), loading.PluginInfo("future", "test"))
    assert "declared" not in zoo.architectures
    (line,) = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
    assert line.startswith("plugin 'future' (") and problem in line and "\n" not in line
    with pytest.raises(ZooError, match="plugin 'future'.*" + re.escape(problem)):
        zoo.add_plugin(plugin_declaring(api), loading.PluginInfo("future", "test"), strict=True)


# A plugin written for API 1.0: flat helper imports, a plain block_size, memory(config), a
# pipeline reading Trained.block_size, and API 1.1's one register for every kind.
OLD_PLUGIN = """
    from dataclasses import dataclass

    from zoo.plugin import check_positive, hookimpl

    @dataclass
    class OldConfig:
        n_embd: int = 16
        block_size: int = 32

        def __post_init__(self):
            check_positive(self, "n_embd", "block_size")

    def build(config, spec):
        from torch import nn

        class OldBag(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.EmbeddingBag(spec.vocab_size, config.n_embd)
                self.head = nn.Linear(config.n_embd, spec.num_classes)

            def forward(self, input_ids, attention_mask):  # [B, T] -> [B, classes]
                return self.head(self.embed(input_ids, per_sample_weights=None))

        return OldBag()

    def memory(config):
        return 1000 * config.n_embd

    @hookimpl
    def register_architectures(register):
        register("oldbag", build, config=OldConfig, tasks=("classification",), memory=memory)

    class Tracker:
        def start(self, run):
            return None

        def log(self, record):
            pass

        def finish(self, metrics, folder, status):
            pass

    @hookimpl
    def register_loggers(register):  # API 1.1's one register, every kind's keywords
        register("oldlog", target=Tracker, config=None, description="records nothing")
"""


def test_a_plugin_written_for_api_1_0_runs_and_is_told_each_replacement(tmp_path, negated_reviews):
    module = tmp_path / "oldbag.py"
    module.write_text(textwrap.dedent(OLD_PLUGIN))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zoo = loading.build_zoo(entry_points=False)
        assert zoo.add_plugin(loading._import_file(module), loading.PluginInfo("old", "test"))
        loading.reset_zoo(zoo)
        result = run_cli(
            "run", "oldbag-char", negated_reviews, "--steps", 3, "--quiet", "--log-to", "oldlog"
        )
        assert result.code == 0, result
        with Store() as store:
            (row,) = store.rows()
        trained = load_trained(row["id"], zoo)
        assert trained.block_size == trained.context_length == 32
    said = {str(w.message) for w in caught if issubclass(w.category, ZooDeprecationWarning)}
    expected = (
        "import it from zoo.plugin.config",
        'declare it block_size: int = sized(128, role="context")',
        "take memory(config, vocab_size)",
        "use LoadedRun.context_length",
        "call register(name, tracker, *, description)",
    )
    for replacement in expected:
        assert any(replacement in message for message in said), (replacement, said)


def documented_fields(cls) -> set[str]:
    """The fields of ``cls`` its source documents: an annotated name with a docstring below."""
    import ast
    import inspect

    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    return {
        node.target.id
        for node, after in zip(body, body[1:], strict=False)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }


def test_the_job_a_pipeline_receives_holds_only_its_documented_fields(tmp_path):
    """The runner's own state (the checkpoint it resumes, its progress label, the seed stack)
    is kept apart from the Job: a plugin sees only what the contract documents."""
    import dataclasses
    from types import SimpleNamespace

    from zoo.train.job import Job, RunFolder, RunnerState, RunOptions, runner_state
    from zoo.train.starting import plan_job

    declared = {f.name for f in dataclasses.fields(Job)}
    assert declared == documented_fields(Job) and len(declared) >= 15
    plan = SimpleNamespace(
        spec=SimpleNamespace(name="a-b", architecture=None, tokenizer=None),
        task="t",
        configs={"model": None, "tokenizer": None, "train": None},
        seed=0,
        init=None,
        pipeline=SimpleNamespace(task=None),
    )
    run = RunFolder(tmp_path)
    options = RunOptions(device="cpu", quiet=True, label="member 1/2")
    job = plan_job(plan, None, run, options, state=RunnerState(resume_from="ckpt"))
    assert set(vars(job)) == declared  # nothing else rides on the instance
    assert runner_state(job).resume_from == "ckpt" and runner_state(job).label == "member 1/2"
    other = plan_job(plan, None, run, RunOptions(device="cpu", quiet=True))
    assert runner_state(other).resume_from is None  # each job its own state


def test_what_zoo_load_returns_is_what_a_pipeline_receives_and_the_old_name_warns():
    import zoo
    import zoo.plugin
    from zoo.errors import ZooDeprecationWarning

    assert zoo.LoadedRun is zoo.plugin.LoadedRun
    with pytest.warns(ZooDeprecationWarning, match="zoo.plugin.LoadedRun"):
        assert zoo.plugin.Trained is zoo.LoadedRun
    with pytest.warns(ZooDeprecationWarning, match="zoo.plugin.TrainingOutcome"):
        assert zoo.plugin.TrainResult is zoo.plugin.TrainingOutcome
