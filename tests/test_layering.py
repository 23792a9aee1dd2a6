"""The core (`zoo/`) knows no built-in plugin or pipeline: it reaches them only through the
registry, as it reaches third-party ones. The one list that names them is
`zoo.core.loading.DEFAULT_PLUGINS`, the modules registered at start-up (pytest's
`default_plugins`)."""

from __future__ import annotations

import ast
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
