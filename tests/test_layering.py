"""The core (`zoo/`) knows no built-in plugin or pipeline: it reaches them only through the
registry, as it reaches third-party ones. The one list that names them is
`zoo.core.loading.DEFAULT_PLUGINS`, the modules registered at start-up (pytest's
`default_plugins`)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from zoo.core import loading

CORE = Path(loading.__file__).parent.parent  # zoo/, every sub-package included
BUILT_INS = ("zoo.plugins", "zoo.pipelines")


def is_built_in(module: str) -> bool:
    return any(module == b or module.startswith(b + ".") for b in BUILT_INS)


def module_name(path: Path, core: Path) -> str:
    return ".".join(("zoo", *path.relative_to(core).with_suffix("").parts)).removesuffix(
        ".__init__"
    )


def imports(path: Path, core: Path = CORE) -> list[tuple[int, str]]:
    """Every module `path` imports, wherever the import stands (functions included): import
    statements, relative ones resolved, and importlib.import_module / __import__ calls and
    "module:attr" targets given as literal strings."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = module_name(path, core)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.partition(":")[0]
            if is_built_in(text):
                found.append((node.lineno, text))
    return found


def violations(core: Path) -> list[str]:
    """Imports of a built-in under `core`, except the registry's list of them."""
    bad = []
    for path in sorted(core.rglob("*.py")):
        allowed = set()
        if path == core / "core" / "loading.py":  # the list, and the prefix its plugin names drop
            allowed = {*loading.DEFAULT_PLUGINS, "zoo.plugins."}
        for line, module in imports(path, core):
            if is_built_in(module) and module not in allowed:
                bad.append(f"{path.relative_to(core.parent)}:{line} imports {module}")
    return bad


def test_the_core_imports_no_built_in_plugin_or_pipeline():
    assert len(list(CORE.rglob("*.py"))) > 20  # the core is where the test looks
    assert violations(CORE) == []


@pytest.mark.parametrize(
    "source",
    [
        "from zoo.plugins.decoder import DecoderConfig",
        "import zoo.pipelines.language_modeling as lm",
        "def f():\n    from zoo.plugins.numpy.model import NumpyDecoder",
        "from .plugins import decoder",
        "from . import pipelines",
        "import importlib\nimportlib.import_module('zoo.plugins.digits')",
        "TARGET = 'zoo.pipelines.classification:predict'",
    ],
)
def test_the_layering_check_catches_an_import_that_comes_back(tmp_path, source):
    core = tmp_path / "zoo"
    core.mkdir()
    (core / "cli.py").write_text(source + "\n", encoding="utf-8")
    (core / "core").mkdir()
    (core / "core" / "loading.py").write_text(f"DEFAULT_PLUGINS = {loading.DEFAULT_PLUGINS!r}\n")
    where = {line.split(" imports ")[0] for line in violations(core)}
    assert where == {f"zoo/cli.py:{source.count(chr(10)) + 1}"}, source


def test_only_the_registry_lists_the_built_ins_and_only_as_plugins_to_register():
    registry_file = Path(loading.__file__)
    listed = {module for _, module in imports(registry_file) if is_built_in(module)}
    assert listed == {*loading.DEFAULT_PLUGINS, "zoo.plugins."}


# -- one direction of flow -----------------------------------------------------------------
PYPROJECT = CORE.parent / "pyproject.toml"


def layers_contract() -> dict:
    import tomllib

    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    return next(c for c in config["contracts"] if c["type"] == "layers")


def test_each_layer_imports_only_from_the_layers_below_it():
    """import-linter's layers contract (pyproject.toml): storage imports nothing that
    trains, training nothing that compares, the core no dataset, and so on up to the CLI."""
    import importlinter.cli  # noqa: F401  (sets import-linter up, without its lint_imports
    from importlinter.application.use_cases import lint_imports  # that resets logging)

    assert lint_imports(str(PYPROJECT), cache_dir=None, no_logo=True) is True


def test_every_part_of_zoo_has_a_place_in_the_layers():
    """A new sub-package or module joins the contract, or the contract checks nothing of it."""
    named = {part.strip() for layer in layers_contract()["layers"] for part in layer.split("|")}
    parts = {
        p.stem if p.is_file() else p.name
        for p in CORE.iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").exists()) and not p.name.startswith("__")
    }
    assert parts - named == set()
    assert named - parts == set()


def test_the_layers_contract_catches_an_import_that_runs_up(tmp_path, monkeypatch):
    """The same contract on a copy of zoo where the store imports the runner fails."""
    import shutil

    import importlinter.cli  # noqa: F401  (sets import-linter up, without its lint_imports
    from importlinter.application.use_cases import lint_imports  # that resets logging)

    copy = tmp_path / "zoo"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    store = copy / "records" / "store.py"
    store.write_text(store.read_text(encoding="utf-8") + "\nfrom zoo.train import runner\n")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.read_text(encoding="utf-8"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == "zoo" or m.startswith("zoo.")]:
        monkeypatch.delitem(sys.modules, name)
    assert lint_imports(str(tmp_path / "pyproject.toml"), cache_dir=None, no_logo=True) is False


# -- only the command line prints ----------------------------------------------------------
def prints(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    ]


def test_only_the_command_line_prints():
    """The core reports through logging (zoo.messages), which the CLI shows on stderr."""
    found = [
        f"{path.relative_to(CORE.parent)}:{line}"
        for path in sorted(CORE.rglob("*.py"))
        if "cli" not in path.relative_to(CORE).parts[:1]
        for line in prints(path)
    ]
    assert len(prints(CORE / "cli" / "main.py")) > 0  # the check sees a print where there is one
    assert found == []


def test_progress_goes_where_the_caller_says_and_warnings_read_as_warnings():
    import io
    import logging

    from zoo.messages import reporting_to

    log = logging.getLogger("zoo.sweeps.driver")
    stream = io.StringIO()
    with reporting_to(stream):
        log.info("[1/2] a cell")
        log.warning("a plugin failed")
    log.info("after the block: not on the stream")
    assert stream.getvalue() == "[1/2] a cell\nzoo: warning: a plugin failed\n"
    quiet = io.StringIO()
    with reporting_to(quiet, progress=False):
        log.info("progress")
        log.warning("kept")
    assert quiet.getvalue() == "zoo: warning: kept\n"


def lazy_sources() -> dict[str, str]:
    """Every name zoo.plugin and its sub-namespaces hand out by a string (imported on first
    use, invisible to import-linter), deprecated flat names included -> its module."""
    import importlib

    import zoo.plugin

    found = {  # (a flat name that moved into a sub-namespace comes from that one's table)
        f"zoo.plugin.{name}": home
        for name, home in zoo.plugin.MOVED.items()
        if not home.startswith("zoo.plugin.")
    }
    for namespace in ("zoo.plugin", *(f"zoo.plugin.{s}" for s in zoo.plugin._SUBMODULES)):
        module = importlib.import_module(namespace)
        found |= {f"{namespace}.{name}": source for name, source in module._LAZY.items()}
    return found


def layer_of(module: str, layers: list[str]) -> int:
    """The index (0: the top) of the layer holding ``module``, a zoo module."""
    part = module.split(".")[1]
    return next(i for i, layer in enumerate(layers) if part in layer.replace(" ", "").split("|"))


def test_the_contract_covers_where_zoo_plugin_names_really_come_from():
    """zoo.plugin sits in the layers above every module its lazy names come from (the
    contract sees no string), so the author's API never hands out a higher layer's name."""
    layers = layers_contract()["layers"]
    plugin = layer_of("zoo.plugin", layers)
    sources = lazy_sources()
    assert {"zoo.operations.reload", "zoo.train.loop", "zoo.data.encoded"} <= set(sources.values())
    above = {
        name: source
        for name, source in sources.items()
        if source != "zoo.errors" and layer_of(source, layers) <= plugin
    }
    assert not above, f"zoo.plugin hands out names of its own or higher layers: {above}"
    assert layer_of("zoo.comparison.table", layers) < plugin  # the check can fail


def test_every_lazy_name_of_zoo_plugin_is_where_its_table_says():
    """A string the linter cannot see still names a real module holding the name, so the
    layer check above judges where the name really comes from."""
    import importlib

    sources = lazy_sources()
    assert len(sources) > 40
    for qualified, source in sources.items():
        name = qualified.rpartition(".")[2]
        assert hasattr(importlib.import_module(source), name), f"{qualified} <- {source}"
