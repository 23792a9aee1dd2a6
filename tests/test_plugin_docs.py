"""Every Python code block on the plugin pages (docs/plugins/) runs: its imports resolve,
its declarations build, and the hooks it defines register in a fresh zoo."""

import re
import sys
import textwrap
import types

import pytest
from conftest import REPO

from zoo.core import loading

PAGES = sorted((REPO / "docs" / "plugins").glob("*.md"))
BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.M | re.S)
INCLUDE = re.compile(r'^--8<-- "(.+)"$', re.M)
# the example packages the pages quote excerpts of (their other names come from there)
sys.path[:0] = [str(REPO / "examples" / "zoo-bow"), str(REPO / "examples" / "zoo-regress")]


def blocks():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for number, match in enumerate(BLOCK.finditer(text), 1):
            code = textwrap.dedent(match.group(2))
            code = INCLUDE.sub(lambda m: (REPO / m.group(1)).read_text(encoding="utf-8"), code)
            yield pytest.param(code, id=f"{page.name}-{number}")


def test_the_pages_have_python_blocks():
    assert len(list(blocks())) >= 8


@pytest.mark.parametrize("code", list(blocks()))
def test_a_plugin_page_code_block_runs(code, tmp_path):
    import runpy

    import zoo_bow

    start = {}
    if "BowConfig" in code:  # an excerpt of zoo_bow/__init__.py
        start.update({k: v for k, v in vars(zoo_bow).items() if not k.startswith("__")})
    block = tmp_path / "doc_block.py"  # run as a file of its own, as an author's module runs
    block.write_text(code, encoding="utf-8")
    namespace = runpy.run_path(str(block), init_globals=start, run_name="doc_block")
    hooks = [v for v in namespace.values() if callable(v) and hasattr(v, "zoo_impl")]
    if not hooks:
        return
    zoo = loading.build_zoo(builtins=(), entry_points=False)  # no clash with a built-in
    if "register_presets" in code:  # presets name the example package's architecture
        bow = types.ModuleType("zoo_bow_parts")
        for hook in ("register_architectures", "register_tokenizers"):
            setattr(bow, hook, getattr(zoo_bow, hook))
        assert zoo.add_plugin(bow, loading.PluginInfo("bow", "test"), strict=True)
    module = types.ModuleType("doc_block")
    module.__dict__.update({k: v for k, v in namespace.items() if k not in vars(zoo_bow)})
    module.__dict__.update({h.__name__: h for h in hooks})
    assert zoo.add_plugin(module, loading.PluginInfo("doc-block", "test"), strict=True)
