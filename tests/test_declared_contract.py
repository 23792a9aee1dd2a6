"""The contract is declared, not discovered: plugins declare their own sizes (with a role
the core reads instead of a field's name), a pipeline's and a model's optional methods are
named on the protocols, and no core module names a built-in plugin's config field."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

import zoo as zoo_package
from zoo.core.loading import get_zoo
from zoo.errors import ZooError

CORE = Path(zoo_package.__file__).parent  # zoo/
SNAKE_WORD = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


# Names a built-in's field shares with something else a core module reads by name.
UNRELATED = {"dtype": "a datasets Feature's dtype (zoo/data/datasets.py)"}
# (module, name): a field read by name only to keep a deprecated API working, with a warning
DEPRECATED_READS = {
    ("core/limits.py", "block_size"): "API 1.0's context field, read until plugin API 2.0",
    ("operations/reload.py", "block_size"): "API 1.0's Trained.block_size, until API 2.0",
}


def contract_names() -> set[str]:
    """Names zoo's own public contract declares: the fields, attributes and parameters of
    everything zoo and zoo.plugin export (a run's ``seed``, ``TaskSpec.vocab_size``,
    ``RunResult.samples``, ``generate(top_k=...)``), and the size roles. A plugin field
    of the same name is the plugin's business; the core reads its own."""
    import inspect

    import zoo
    import zoo.plugin
    from zoo.core.limits import ROLES

    names = set(ROLES)

    def parameters(function) -> set[str]:
        try:
            return set(inspect.signature(function).parameters)
        except (TypeError, ValueError):
            return set()

    for module in (zoo, zoo.plugin):
        for value in (getattr(module, name) for name in module.__all__):
            if inspect.isclass(value):
                if dataclasses.is_dataclass(value):
                    names |= {f.name for f in dataclasses.fields(value)}
                for attribute, member in vars(value).items():
                    if not attribute.startswith("_"):
                        names.add(attribute)
                        if callable(member):
                            names |= parameters(member)
            elif callable(value):
                names |= parameters(value)
    return names


def built_in_fields() -> set[str]:
    """Every field of every built-in registration's config dataclass (architectures,
    tokenizers, datasets, pipelines), less the names zoo's own contract declares."""
    from zoo.train.job import TrainConfig

    zoo = get_zoo()
    names = set()
    for kind in (zoo.architectures, zoo.tokenizers, zoo.datasets, zoo.pipelines):
        for entry in kind.entries():
            cls = entry.config_class()
            if cls is not None and cls.__module__.startswith(("zoo.plugins", "zoo.pipelines")):
                names |= {f.name for f in dataclasses.fields(cls)}
    return names - {f.name for f in dataclasses.fields(TrainConfig)} - contract_names()


def core_names(path: Path) -> list[tuple[int, str]]:
    """Field names a module could read a config by: string constants (docstrings, and the
    docstrings of attributes, aside) and attributes read from something called a config."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {  # a string standing alone as a statement reads nothing
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                found.append((node.lineno, node.value))
                # a message that names a field ("exceeds block_size 64"): every word with an _
                found += [(node.lineno, word) for word in SNAKE_WORD.findall(node.value)]
        elif isinstance(node, ast.Attribute) and "config" in ast.unparse(node.value).lower():
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.arg) and "_" in node.arg:  # a parameter named like a field
            found.append((node.lineno, node.arg))
    return found


def test_no_core_module_names_a_built_in_plugins_field():
    fields = built_in_fields()
    assert {"block_size", "n_embd", "n_layer", "buckets", "ff_ratio", "blocks", "dim"} <= fields
    named = [
        f"{path.relative_to(CORE)}:{line}: {name}"
        for path in sorted(CORE.rglob("*.py"))
        for line, name in core_names(path)
        if name in fields
        and name not in UNRELATED
        and (str(path.relative_to(CORE)), name) not in DEPRECATED_READS
    ]
    assert not named, "core modules name plugin fields:\n" + "\n".join(named)


def test_the_grep_finds_a_field_named_in_the_core(tmp_path):
    """The check above can fail: a module that reads block_size by name is caught."""
    module = tmp_path / "bad.py"
    module.write_text('"""Docs may say block_size."""\nx = getattr(cfg, "block_size")\n')
    other = tmp_path / "worse.py"
    other.write_text("def f(model_config):\n    return model_config.n_embd\n")
    said = tmp_path / "said.py"
    said.write_text(
        'def check(ids, block_size):\n    raise ValueError(f"exceeds block_size {n}")\n'
    )
    assert (2, "block_size") in core_names(module)
    assert (2, "n_embd") in core_names(other)
    assert (1, "block_size") in core_names(said) and (2, "block_size") in core_names(said)
    assert (1, "Docs may say block_size.") not in core_names(module)


def test_every_built_in_architecture_declares_its_context_length():
    from zoo.core.limits import context_length, field_for

    zoo = get_zoo()
    for entry in zoo.architectures.entries():
        if entry.plugin == "transformers" and entry.name not in ("gpt2", "hf-mamba"):
            continue  # one config class for them all (configs.py), made from transformers'
        cls = entry.config_class()
        assert field_for(cls, "context"), entry.name
        if entry.plugin != "transformers":  # transformers' configs import torch
            assert context_length(cls()) > 0, entry.name


def test_sizes_are_read_by_role_and_bounded_by_declaration():
    from zoo.core.config import build_config
    from zoo.core.limits import context_length, estimated_parameters
    from zoo.plugin.config import sized

    @dataclasses.dataclass
    class Tiny:
        depth_of_it: int = sized(2, role="depth")
        wide: int = sized(8, role="width")
        longest: int = sized(16, role="context")
        rows: int = sized(10, at_most=100)

    @dataclasses.dataclass
    class Bigger(Tiny):
        longest: int = 32  # a new default keeps the base's declaration

    assert context_length(Tiny()) == 16 and context_length(Bigger()) == 32
    # 2 layers of 4 x 8^2 + 2 x 8 x 32 (an MLP 4 x as wide), 16 positions and 10 tokens of 8
    assert estimated_parameters(Tiny(), vocab_size=10) == 2 * (256 + 512) + (16 + 10) * 8
    with pytest.raises(ZooError, match=r"rows = 101 is more than zoo can allocate \(at most 100\)"):
        build_config(Tiny, {"rows": "101"})
    with pytest.raises(ZooError, match="longest = 65,537"):
        build_config(Bigger, {"longest": 2**16 + 1})
    with pytest.raises(ValueError, match="role or at_most"):
        sized(3)
    with pytest.raises(ValueError, match="unknown size role"):
        sized(3, role="length")


def test_optional_methods_are_declared_on_the_protocols():
    from zoo.pipeline import OPTIONAL_METHODS, Pipeline, optional_method
    from zoo.train.model import OPTIONAL_MEMBERS, Model, optional_member

    for name in ("run", *OPTIONAL_METHODS):
        assert getattr(Pipeline, name).__doc__, name
    for name in OPTIONAL_MEMBERS:
        assert name in Model.__annotations__ or getattr(Model, name).__doc__, name

    class Runs:
        def run(self, job):
            return None

        def evaluate(self, trained, dataset, split):
            return {}

    assert optional_method(Runs(), "evaluate") is not None
    assert optional_method(Runs(), "predict") is None
    with pytest.raises(ValueError, match="not an optional pipeline method"):
        optional_method(Runs(), "train")
    assert optional_member(Runs(), "fits_training_split") is False
    with pytest.raises(ValueError, match="not an optional Model member"):
        optional_member(Runs(), "run")


def test_set_parses_tuples_as_it_parses_lists():
    from zoo.core.config import coerce

    assert coerce("2, 3", tuple[int, ...], "sizes") == (2, 3)
    assert coerce([1, 2], tuple[int, ...], "sizes") == (1, 2)
    assert coerce("4,x", tuple[int, str], "pair") == (4, "x")
    assert coerce("2,3", list[int], "periods") == [2, 3]
    with pytest.raises(ZooError, match="pair takes 2 comma-separated values"):
        coerce("1,2,3", tuple[int, str], "pair")
    with pytest.raises(ZooError, match="sizes must be an integer"):
        coerce("2,b", tuple[int, ...], "sizes")


def test_the_public_names_are_spelled_out_and_fit_on_a_page():
    """zoo and zoo.plugin list their names literally (the reference reads the source); each
    lazily imported name is listed, and the author's API holds at most 35 names."""
    import zoo
    import zoo.plugin

    eager = {"hookimpl", "ZooError", "Task", "Metric", "Prediction", "SplitProbabilities"}
    versioning = {"API_VERSION", "ZooDeprecationWarning"}
    assert set(zoo.plugin.__all__) == eager | versioning | {"Pipeline"} | set(zoo.plugin._LAZY)
    assert set(zoo.__all__) == {"ZooError", "UnknownNameError"} | set(zoo._LAZY)
    assert len(zoo.plugin.__all__) <= 35 and len(set(zoo.plugin.__all__)) == len(zoo.plugin.__all__)
    for name in zoo.plugin.__all__:
        assert getattr(zoo.plugin, name) is not None
    for sub in ("config", "layers", "data", "io", "losses"):
        module = getattr(zoo.plugin, sub)
        assert module.__doc__ and all(getattr(module, name) is not None for name in module.__all__)
        assert sorted(module.__all__) == sorted(module._LAZY), sub  # each lazy name listed


def test_a_helper_has_one_name_in_its_sub_namespace():
    """One way to reach each helper: zoo.plugin.config.check_positive; the flat
    zoo.plugin.check_positive of API 1.0 still answers, with a warning saying where it
    lives (tests/test_plugin_api.py), and a helper 1.0 never had flat says where it is."""
    import zoo.plugin

    assert zoo.plugin.config.check_positive is not None
    assert "sized" not in zoo.plugin.MOVED
    with pytest.raises(AttributeError, match="it is zoo.plugin.config.sized"):
        zoo.plugin.sized  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'$"):
        zoo.plugin.nothing_here  # noqa: B018
    for sub in ("config", "layers", "data", "io", "losses"):
        assert not set(getattr(zoo.plugin, sub).__all__) & set(zoo.plugin.__all__), sub
