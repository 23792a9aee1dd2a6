"""The benchmark scripts stay runnable: each imports as a module without running (no work
at import time, so no torch either), and every name a script imports from zoo or from a
sibling script, inside its functions too, exists. A renamed API then fails here rather than
when someone next measures (bench_train.py was once broken for weeks)."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import run_python

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))
SIBLINGS = {path.stem for path in SCRIPTS}


@pytest.fixture
def clean_imports(monkeypatch):
    """Scripts put benchmarks/ on sys.path and import each other as top-level modules:
    both are undone afterwards."""
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name in SIBLINGS or name.startswith("smoke_"):
            del sys.modules[name]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: path.stem)
def test_a_benchmark_script_imports_without_running(path, clean_imports):
    spec = importlib.util.spec_from_file_location(f"smoke_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if path.stem != "common":
        assert callable(getattr(module, "main", None)), f"{path.name} has no main()"


def test_no_benchmark_script_imports_torch_at_import_time():
    """In a fresh interpreter: in this one, an earlier test may have imported torch already."""
    probe = (
        f"import importlib.util, sys\nsys.path.insert(0, {str(BENCHMARKS)!r})\n"
        f"for path in {[str(p) for p in SCRIPTS]!r}:\n"
        "    spec = importlib.util.spec_from_file_location('smoke', path)\n"
        "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "    if 'torch' in sys.modules:\n"
        "        print(path)\n"
        "        break\n"
    )
    assert run_python(probe) == []


def imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every absolute import in the file, functions included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
    return found


@functools.cache
def top_level_names(source: Path) -> set[str]:
    names = set()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            while any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):  # a, b = ...
                targets = [e for t in targets for e in getattr(t, "elts", [t])]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


@functools.cache
def missing(module: str, name: str | None) -> str | None:
    """Why `from module import name` (or `import module`) would fail, or None. Modules are
    found, not imported (only their parent packages are), and names read from the source."""
    if module in SIBLINGS:
        source = BENCHMARKS / f"{module}.py"
    else:
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            return f"no module {module}"
        if name is None or (
            spec.submodule_search_locations
            and importlib.util.find_spec(f"{module}.{name}") is not None
        ):
            return None
        source = Path(spec.origin)
    names = top_level_names(source)
    if name in names:
        return None
    if "__getattr__" in names:  # a lazy public API (zoo's own __init__): its __all__
        if name in getattr(importlib.import_module(module), "__all__", ()):
            return None
    return f"{module} has no {name}"


def test_every_name_a_benchmark_imports_from_zoo_exists(clean_imports):
    problems = [
        f"{path.name}:{line}: {why}"
        for path in SCRIPTS
        for line, module, name in imports(path)
        if module.split(".")[0] == "zoo" or module in SIBLINGS
        if (why := missing(module, name))
    ]
    assert not problems, "\n".join(problems)


@functools.cache
def definition(module: str, name: str):
    """The arguments a call of `name` from `module` takes (a function's, or a class's
    __init__ without self), read from the source; None when they cannot be read so (a
    dataclass, a name from elsewhere)."""
    if module in SIBLINGS:
        source = BENCHMARKS / f"{module}.py"
    else:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            return None
        source = Path(spec.origin)
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node.args
        if isinstance(node, ast.ClassDef) and node.name == name:
            if any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                return None
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    return ast.arguments(
                        posonlyargs=args.posonlyargs,
                        args=args.args[1:],
                        vararg=args.vararg,
                        kwonlyargs=args.kwonlyargs,
                        kw_defaults=args.kw_defaults,
                        kwarg=args.kwarg,
                        defaults=args.defaults,
                    )
            return None
    return None


def call_problem(call: ast.Call, args: ast.arguments) -> str | None:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None  # *args / **kwargs: cannot tell
    positional = [a.arg for a in args.posonlyargs + args.args]
    given = {k.arg for k in call.keywords}
    required = positional[: len(positional) - len(args.defaults)]
    if len(call.args) > len(positional) and not args.vararg:
        return f"{len(call.args)} positional arguments, takes {len(positional)}"
    missing = [a for a in required[len(call.args) :] if a not in given]
    missing += [
        a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None and a.arg not in given
    ]
    if missing:
        return f"missing {', '.join(missing)}"
    known = set(positional) | {a.arg for a in args.kwonlyargs}
    unknown = sorted(given - known) if not args.kwarg else []
    return f"no argument {', '.join(unknown)}" if unknown else None


def test_benchmarks_call_zoo_functions_with_the_arguments_they_take(clean_imports):
    problems = []
    for path in SCRIPTS:
        sources: dict[str, set] = {}  # local name -> where it is imported from
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and not node.level
                and node.module
                and (node.module.split(".")[0] == "zoo" or node.module in SIBLINGS)
            ):
                for alias in node.names:
                    sources.setdefault(alias.asname or alias.name, set()).add(
                        (node.module, alias.name)
                    )
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and len(sources.get(node.func.id, ())) == 1
            ):
                ((module, name),) = sources[node.func.id]
                args = definition(module, name)
                why = args and call_problem(node, args)
                if why:
                    problems.append(f"{path.name}:{node.lineno}: {name}(): {why}")
    assert not problems, "\n".join(problems)


def test_the_sweep_benchmark_measures_a_baseline_only_when_given_one(clean_imports, capsys):
    """bench_sweep_jobs.py's baseline variant runs another interpreter's zoo side by side:
    asked for without one, it is refused; left out of the defaults when there is none."""
    bench = importlib.import_module("bench_sweep_jobs")
    assert "baseline" not in bench.parse([]).variants
    given = bench.parse(["--baseline", sys.executable, "--baseline-name", "commit abc"])
    assert "baseline" in given.variants
    assert bench.label("baseline", given) == "--jobs 2, commit abc"
    with pytest.raises(SystemExit) as refused:
        bench.parse(["--variants", "jobs1,baseline"])
    assert refused.value.code == 2 and "needs --baseline PYTHON" in capsys.readouterr().err


def test_no_rendered_interval_is_a_single_point():
    # a difference with no spread over seeds has no interval; "[-0.05, -0.05]" claims one
    import re

    point = re.compile(r"([+-]?\d+(?:\.\d+)?) \[\1, \1\]")
    repo = Path(__file__).resolve().parents[1]
    pages = [repo / "docs/benchmarks.md", *(repo / "benchmarks/results").glob("*.json")]
    found = [(p.name, m.group(0)) for p in pages for m in point.finditer(p.read_text())]
    assert not found, found
