"""The docs stay a guide that matches the code: the README is short, every command and
every public name appears in the documentation, the README's plugin is the example file
and trains, the benchmark pages show exactly what benchmarks/results holds, and the site
builds with warnings as errors."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli

DOCS = REPO / "docs"
README = REPO / "README.md"
# every namespace the reference renders: the user's API, the author's and its helpers
SUB_NAMESPACES = ("config", "layers", "data", "io", "losses")
PUBLIC_MODULES = ["zoo", "zoo.plugin", *(f"zoo.plugin.{name}" for name in SUB_NAMESPACES)]


def docs_text() -> str:
    """The README and every page of the site, as one text."""
    pages = sorted(DOCS.rglob("*.md"))
    return "\n".join(path.read_text(encoding="utf-8") for path in [README, *pages])


def commands() -> list[str]:
    """Every `zoo` subcommand, plugins' included, as the parser lists them for a bad one."""
    result = run_cli("no-such-command")
    assert result.code == 2, result
    listed = re.search(r"choose from (.*)\)", result.err)
    assert listed, result.err
    return re.findall(r"'([\w-]+)'", listed.group(1))


def test_the_readme_is_at_most_300_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail into docs/"


def test_every_command_is_documented():
    text = docs_text()
    found = commands()
    assert {"run", "sweep", "compare"} <= set(found)
    missing = [name for name in found if f"zoo {name}" not in text]
    assert not missing, f"commands missing from README.md and docs/: {missing}"


@pytest.mark.parametrize("module", ["zoo", "zoo.plugin"])
def test_every_public_name_is_documented(module):
    names = importlib.import_module(module).__all__
    text = docs_text()
    missing = [
        name
        for name in names
        if not re.search(rf"(?<![\w.]){re.escape(name)}\b", text)
        and not re.search(rf"\.{re.escape(name)}\b", text)
    ]
    assert not missing, f"names of {module}.__all__ missing from README.md and docs/: {missing}"


def readme_plugin() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## A plugin in under 50 lines", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_plugin_is_the_example_file_and_under_50_lines():
    example = (REPO / "examples" / "meanbag.py").read_text(encoding="utf-8")
    assert readme_plugin() == example
    assert len(example.splitlines()) < 50


def test_the_readme_plugin_trains_a_classifier(negated_reviews, one_thread, monkeypatch):
    """The plugin exactly as the README prints it, listed in a registry.toml as it says."""
    from zoo.core import loading

    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "meanbag")  # the suite loads built-ins only

    Path("meanbag.py").write_text(readme_plugin(), encoding="utf-8")
    Path("registry.toml").write_text('[plugins]\nmodules = ["./meanbag.py"]\n', encoding="utf-8")
    loading.reset_zoo()
    listed = run_cli("list", "architectures")
    assert "meanbag" in listed.out, listed
    result = run_cli(
        "run",
        "meanbag-char",
        negated_reviews,
        "--steps",
        "4",
        "--json",
        "--quiet",
        "--device",
        "cpu",
    )
    assert result.code == 0, result
    record = json.loads(result.out.strip().splitlines()[-1])
    assert record["architecture"] == "meanbag" and record["task"] == "classification"
    assert record["status"] == "finished" and 0 <= record["metrics"]["test_accuracy"] <= 1


def render_module():
    path = REPO / "scripts" / "render_benchmarks.py"
    spec = importlib.util.spec_from_file_location("render_benchmarks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_docs_show_what_the_results_hold():
    render = render_module()
    records = render.load_results()
    assert records, "benchmarks/results holds no JSON"
    for record in records:
        assert {"date", "machine", "versions"} <= set(record), record["name"]
    stale = [
        str(path.relative_to(REPO))
        for path, text in render.rendered(records).items()
        if path.read_text(encoding="utf-8") != text
    ]
    assert not stale, (
        f"{stale} do not match benchmarks/results/*.json; run python scripts/render_benchmarks.py"
    )


def test_a_changed_figure_changes_the_rendered_page():
    """The check above would pass vacuously if rendering ignored the figures."""
    render = render_module()
    records = render.load_results()

    def numeric(row):  # a figure's key, if the row holds one as a number (not as text)
        return next(
            (k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)),
            None,
        )

    table = next(
        t for r in records for t in r.get("tables") or [] if t.get("rows") and numeric(t["rows"][0])
    )
    before = render.render_page(records)
    key = numeric(table["rows"][0])
    table["rows"][0][key] = 123456.0
    assert render.render_page(records) != before


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed")
    pytest.importorskip("mkdocstrings")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reference = (tmp_path / "site" / "reference" / "plugin" / "index.html").read_text()
    assert 'id="zoo.plugin.TaskSpec"' in reference  # the reference is generated, not empty
    for name in ("data.LoadedDataset.split_names", "layers.check_length", "config.sized"):
        assert f'id="zoo.plugin.{name}"' in reference  # and so are the sub-namespaces'
    assert "lazy_names" not in reference  # internals stay out of the table of contents
    # The tutorial shows the example file itself (a snippet included when the site builds)
    tutorial = (tmp_path / "site" / "plugins" / "tutorial" / "index.html").read_text()
    text = re.sub(r"<[^>]+>", "", tutorial)
    example = (REPO / "examples" / "meanbag.py").read_text(encoding="utf-8")
    for line in ("class MeanBagConfig:", "def register_architectures(register):"):
        assert line in example and line in text
    assert "--8" not in text


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_class_and_function_has_a_docstring(module):
    """The reference is generated from docstrings: an undocumented name, or method of a
    public class, is an empty entry."""
    import inspect

    namespace = importlib.import_module(module)
    missing = []
    for name in namespace.__all__:
        value = getattr(namespace, name)
        if inspect.isclass(value):
            doc = value.__dict__.get("__doc__")  # not inherited, nor dataclass's signature
            if not doc or doc.startswith(f"{value.__name__}("):
                missing.append(name)
            for attribute, member in vars(value).items():  # its own methods and properties
                function = getattr(member, "fget", None) or getattr(member, "__func__", member)
                if attribute.startswith("_") or not inspect.isfunction(function):
                    continue
                if not function.__doc__:
                    missing.append(f"{name}.{attribute}")
        elif inspect.isfunction(value) and not value.__doc__:
            missing.append(name)
    assert not missing, f"{module}: public names without a docstring: {missing}"


def test_results_without_tables_render_by_their_shape():
    """A benchmark that writes its own JSON shape (rows per dataset, summaries over seeds)
    still renders: a table per dataset, mean ± std cells, run-id lists left out."""
    render = render_module()
    record = {
        "name": "classification",
        "date": "2026-01-01",
        "machine": {"cpu": "x"},
        "versions": {"python": "3"},
        "datasets": {
            "rotten_tomatoes": [
                {
                    "name": "encoder",
                    "test_accuracy": {"mean": 0.781, "std": 0.004, "n": 3},
                    "runs": ["a", "b", "c"],
                }
            ]
        },
    }
    page = render.render_page([record])
    assert "| encoder | 78.10% ± 0.40% |" in page and '"a"' not in page
    assert "| encoder | 78.10% ± 0.40% |" in render.render_readme_section([record])


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_class_documents_every_field(module):
    """The reference reads the source (griffe): each field of a public dataclass, and each
    attribute a protocol declares, carries its own docstring, so the generated page shows
    it with a description (a field without one is left out of the page)."""
    griffe = pytest.importorskip("griffe")
    import dataclasses
    import inspect

    namespace = importlib.import_module(module)
    loaded = griffe.load(module, search_paths=[str(REPO)], resolve_aliases=True)
    missing = []
    for name in namespace.__all__:
        value = getattr(namespace, name)
        if not inspect.isclass(value):
            continue
        members = loaded[name].members
        fields = (
            [f.name for f in dataclasses.fields(value)] if dataclasses.is_dataclass(value) else []
        )
        fields += [a for a in getattr(value, "__annotations__", {}) if not a.startswith("_")]
        for field in dict.fromkeys(fields):
            if field.startswith("_") or field.isupper():
                continue
            member = members.get(field)
            if member is None or not (member.docstring and member.docstring.value.strip()):
                missing.append(f"{name}.{field}")
    assert not missing, f"fields without a description in the reference: {missing}"
