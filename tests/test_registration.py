"""Each hook's ``register`` is its own, typed in zoo.hookspecs; API 1.1's one ``register``
for every kind still works, with a warning naming the replacement."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import typing
import warnings

import pytest
from conftest import REPO

from zoo import hookspecs
from zoo.core import loading
from zoo.core.kinds import HOOK_FOR_KIND, KINDS
from zoo.core.staging import REGISTERS, Stage
from zoo.errors import ZooDeprecationWarning
from zoo.hookspecs import hookimpl
from zoo.tasks import Metric, Task

EXAMPLES = [REPO / "examples" / "zoo-bow", REPO / "examples" / "zoo-regress", REPO / "examples"]

SCORE = Task(
    "scoring",
    loss="zoo.train.losses:mse",
    output="scores [B]",
    metrics=(Metric("mse", "lower"),),
    primary="test_mse",
    curve_metric="val_mse",
)


class Scoring:
    def run(self, job):
        raise NotImplementedError


def staged(kind: str, call) -> list:
    """What ``call(register)`` stages with the register of ``kind``, and the warnings said."""
    from zoo.core.staging import register_for

    entries: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(register_for(kind, "p", entries))
    said = [str(w.message) for w in caught if issubclass(w.category, ZooDeprecationWarning)]
    return [entries, said]


@pytest.mark.parametrize("kind", [k for k in KINDS])
def test_each_kinds_register_takes_what_its_protocol_in_hookspecs_declares(kind):
    """The hook's annotation names its kind's protocol, and the register zoo hands over
    has that protocol's parameters: names, kinds, defaults."""
    hook = getattr(hookspecs, HOOK_FOR_KIND[kind])
    protocol = getattr(hookspecs, typing.get_type_hints(hook)["register"].__name__)
    assert protocol.__name__ == "Register" + kind.capitalize()
    declared = list(inspect.signature(protocol.__call__).parameters.values())[1:]  # no self
    given = list(inspect.signature(REGISTERS[kind](Stage(kind, "p", []))).parameters.values())
    shape = [(p.name, p.kind, p.default) for p in declared]
    assert [(p.name, p.kind, p.default) for p in given] == shape


def test_every_hook_has_a_typed_register():
    hooks = [name for name in dir(hookspecs) if name.startswith("register_")]
    assert len(hooks) == len(KINDS) + 1  # every kind's, and the presets'
    for name in hooks:
        annotation = typing.get_type_hints(getattr(hookspecs, name))["register"]
        assert typing.Protocol in annotation.__mro__, name


def test_the_built_ins_and_the_examples_register_in_the_current_form(monkeypatch):
    for folder in EXAMPLES:
        monkeypatch.syspath_prepend(str(folder))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zoo = loading.build_zoo(entry_points=False)
        for example in ("zoo_regress", "zoo_bow", "meanbag"):
            module = importlib.import_module(example)
            assert zoo.add_plugin(module, loading.PluginInfo(example, "test")), example
    assert not [w for w in caught if issubclass(w.category, ZooDeprecationWarning)]
    assert not [info.error for info in zoo.plugins.values() if info.error]
    assert zoo.pipelines.get("regression").task.name == "regression"


OLD_AND_NEW = [
    (
        "pipeline",
        lambda r: r("scoring", Scoring, task=SCORE, config=None, tasks=()),
        lambda r: r(SCORE, Scoring),
        "call register(task, pipeline, *, config, description)",
    ),
    (
        "architecture",
        lambda r: r("bag", target="m:build", columns=None, task=None),
        lambda r: r("bag", "m:build"),
        "call register(name, build, *, config, tasks, memory, description)",
    ),
    (
        "tokenizer",
        lambda r: r("bytes", "m:Bytes", tasks=(), memory=None, architectures=()),
        lambda r: r("bytes", "m:Bytes"),
        "call register(name, tokenizer, *, config, description)",
    ),
    (
        "logger",
        lambda r: r("mine", "m:Tracker", config=None),
        lambda r: r("mine", "m:Tracker"),
        "call register(name, tracker, *, description)",
    ),
]


@pytest.mark.parametrize("kind, old, new, replacement", OLD_AND_NEW, ids=lambda x: str(x)[:12])
def test_api_1_1s_form_registers_the_same_with_a_warning_naming_the_replacement(
    kind, old, new, replacement
):
    (before, said), (now, quiet) = staged(kind, old), staged(kind, new)
    assert before == now and len(before) == 1
    assert quiet == [] and len(said) == 1
    assert "API 1.1's form, deprecated" in said[0] and replacement in said[0], said


@pytest.mark.parametrize(
    "kind, call, message",
    [
        ("tokenizer", lambda r: r("bytes", "m:Bytes", tasks=("x",)), "only architectures and"),
        ("architecture", lambda r: r("bag", "m:b", task=SCORE), "only pipelines declare task="),
        ("pipeline", lambda r: r("other", Scoring, task=SCORE), "declares task 'scoring'"),
        ("pipeline", lambda r: r("scoring", Scoring), "takes the zoo.plugin.Task(...)"),
        ("pipeline", lambda r: r("scoring", Scoring, task="scoring"), "zoo.plugin.Task(...)"),
        ("exporter", lambda r: r("fmt", "m:X", architectures=()), "architectures must name"),
        ("dataset", lambda r: r("d", "m:load", columns={"txt": "a"}), "columns must map"),
    ],
)
def test_what_a_kind_cannot_take_is_one_line_naming_it(kind, call, message):
    from zoo.errors import ZooError

    with pytest.raises(ZooError, match=re.escape(message)):
        staged(kind, call)


def test_an_old_form_plugin_loads_and_is_told_where_it_registers_the_old_way():
    class OldPipelines:
        @hookimpl
        def register_pipelines(self, register):
            register("scoring", Scoring, task=SCORE)

    zoo = loading.build_zoo(entry_points=False)
    with pytest.warns(ZooDeprecationWarning, match="register_pipelines of plugin 'old'"):
        assert zoo.add_plugin(OldPipelines(), loading.PluginInfo("old", "test"))
    entry = zoo.pipelines.get("scoring")
    assert entry.task is SCORE and entry.plugin == "old"
    assert dataclasses.fields(entry)[-1].name == "task"  # a pipeline's own entry
