"""Plugin discovery: entry points of real distributions, local modules, broken plugins,
strict mode, name clashes, and in-process registration."""

import textwrap
from pathlib import Path

import pytest
from conftest import install_example, run_cli, run_python, run_zoo

from zoo.core import loading
from zoo.errors import ZooError
from zoo.hookspecs import hookimpl


@pytest.fixture(scope="session")
def bow_site(tmp_path_factory) -> Path:
    """The example third-party package, installed for real into its own folder."""
    return install_example(tmp_path_factory, "zoo-bow")


def fake_distribution(site: Path, name: str, module_source: str, entry_name: str | None = None):
    """A minimal installed distribution: a module plus a dist-info with an entry point."""
    module = name.replace("-", "_")
    (site / f"{module}.py").write_text(textwrap.dedent(module_source), encoding="utf-8")
    info = site / f"{module}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[zoo]\n{entry_name or module} = {module}\n")


@pytest.mark.slow
def test_third_party_distribution_is_discovered_through_its_entry_point(bow_site):
    env = {"PYTHONPATH": str(bow_site), "ZOO_LOAD_PLUGINS": "bow"}
    listed = run_zoo("list", "plugins", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "bow" in listed.stdout and "zoo-bow 0.1.0" in listed.stdout
    models = run_zoo("list", "models", "bow-*", env=env)
    assert "bow-words" in models.stdout and "bow-char" in models.stdout


@pytest.mark.slow
def test_example_plugin_trains_through_zoo_run(bow_site, tiny_text, tmp_path):
    env = {
        "PYTHONPATH": str(bow_site),
        "ZOO_LOAD_PLUGINS": "bow",
        "ZOO_HOME": str(tmp_path / "runs"),
    }
    result = run_zoo(
        "run",
        "bow-words",
        tiny_text,
        "--steps",
        5,
        "--json",
        "--set",
        "block_size=16",
        "--set",
        "sample_tokens=5",
        "--set",
        "vocab_size=100",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert '"architecture": "bow"' in result.stdout and '"status": "finished"' in result.stdout


@pytest.mark.slow
def test_load_plugins_filter_can_exclude_a_distribution(bow_site):
    result = run_zoo("list", "plugins", env={"PYTHONPATH": str(bow_site), "ZOO_LOAD_PLUGINS": ""})
    assert result.returncode == 0 and "zoo-bow" not in result.stdout


def test_local_module_listed_in_user_registry(isolated, monkeypatch):
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "my_plugin")
    (isolated / "my_plugin.py").write_text(
        textwrap.dedent("""
        from zoo.hookspecs import hookimpl

        @hookimpl
        def register_tokenizers(register):
            register("bytes", "zoo.plugins.char:CharTokenizer", description="local test tokenizer")
    """)
    )
    (isolated / "registry.toml").write_text('[plugins]\nmodules = ["./my_plugin.py"]\n')
    result = run_cli("list", "tokenizers")
    assert result.code == 0, result
    assert "bytes" in result.out and "local test tokenizer" in result.out


BROKEN_IMPORT = "raise ImportError('missing dependency frobnicate')\n"
BROKEN_HOOK = """
from zoo.hookspecs import hookimpl

@hookimpl
def register_architectures(register):
    register("half", "x:y")
    raise RuntimeError("hook exploded")
"""


@pytest.fixture
def broken_site(tmp_path, monkeypatch):
    site = tmp_path / "broken-site"
    site.mkdir()
    fake_distribution(site, "zoo-broken-import", BROKEN_IMPORT, "broken_import")
    fake_distribution(site, "zoo-broken-hook", BROKEN_HOOK, "broken_hook")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("ZOO_LOAD_PLUGINS")
    return site


def test_broken_plugins_are_set_aside_and_named(broken_site):
    result = run_cli("list", "plugins")
    assert result.code == 0, result
    warnings = [line for line in result.err.splitlines() if line.startswith("zoo: warning")]
    assert len(warnings) == 2
    assert any(
        "broken_import" in w and "zoo-broken-import 1.2.3" in w and "frobnicate" in w
        for w in warnings
    )
    assert any("broken_hook" in w and "hook exploded" in w for w in warnings)
    assert "SET ASIDE" in result.out
    # Nothing of the half-registered plugin stays, and the built-ins still work.
    zoo = loading.get_zoo()
    assert "half" not in zoo.architectures and "decoder" in zoo.architectures


def test_strict_mode_turns_a_broken_plugin_into_exit_2(broken_site, monkeypatch):
    monkeypatch.setenv("ZOO_STRICT_PLUGINS", "1")
    result = run_cli("list")
    assert result.code == 2
    assert "set aside" in result.err and "ZOO_STRICT_PLUGINS" in result.err
    assert "Traceback" not in result.err


class Clashing:
    @hookimpl
    def register_architectures(self, register):
        register("decoder", "x:y", description="an impostor")


def test_a_name_clash_is_an_error_never_an_overwrite(caplog):
    zoo = loading.build_zoo(entry_points=False)
    original = zoo.architectures.get("decoder")
    assert not zoo.add_plugin(Clashing(), loading.PluginInfo("clashing", "test"))
    assert [r.levelname for r in caplog.records if "clashes" in r.getMessage()] == ["WARNING"]
    assert zoo.architectures.get("decoder") is original
    with pytest.raises(ZooError, match="clashes with the one from plugin 'decoder'"):
        zoo.add_plugin(Clashing(), loading.PluginInfo("clashing2", "test"), strict=True)


class Misspelled:
    @hookimpl
    def register_architecture(self, register):  # not a hook: missing the s
        pass


def test_a_misspelled_hook_fails_loudly():
    zoo = loading.build_zoo(entry_points=False)
    assert not zoo.add_plugin(Misspelled(), loading.PluginInfo("misspelled", "test"))
    assert "register_architecture" in zoo.plugins["misspelled"].error


def test_in_process_registration_and_lookup():
    class Extra:
        @hookimpl
        def register_architectures(self, register):
            register("tiny2", "zoo.plugins.decoder.model:build", tasks=("language-modeling",))
            register("tiny10", "zoo.plugins.decoder.model:build", tasks=("language-modeling",))

    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(Extra(), loading.PluginInfo("extra", "test"))
    assert zoo.architectures.names("tiny*") == ["tiny2", "tiny10"]  # natural sort
    with pytest.raises(ZooError, match="Did you mean: decoder"):
        zoo.architectures.get("decodr")


def test_listing_imports_neither_torch_nor_transformers():
    probe = (
        "import sys; from zoo.cli.main import main; main(['list']); "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    lines = run_python(probe)
    assert "hf-mamba" in " ".join(lines) and lines[-1] == "False False"


class WithoutBlockSize:
    """Architectures whose config declares pipelines no context length: none at all, or a
    dataclass without the field (one with a plain block_size field still runs, with a
    deprecation warning: tests/test_plugin_api.py)."""

    @hookimpl
    def register_architectures(self, register):
        import dataclasses

        @dataclasses.dataclass
        class WidthOnly:
            n_embd: int = 16

        register("noconfig", "zoo.plugins.decoder.model:build", tasks=("language-modeling",))
        register(
            "noblock",
            "zoo.plugins.decoder.model:build",
            config=WidthOnly,
            tasks=("language-modeling",),
        )


def test_an_architecture_without_a_block_size_is_exit_2_naming_its_plugin(tiny_text):
    from zoo.records.store import Store

    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(WithoutBlockSize(), loading.PluginInfo("sizeless", "test"))
    loading.reset_zoo(zoo)
    for name, problem in (
        ("noconfig", "registers no config dataclass"),
        ("noblock", "has a config (WidthOnly) with no positive context-length field"),
    ):
        result = run_cli("run", f"{name}-char", tiny_text, "--steps", 2)
        assert result.code == 2, result
        lines = result.err.strip().splitlines()
        assert len(lines) == 1, result
        assert f"architecture {name!r} from plugin 'sizeless' {problem}" in lines[0], result
        assert 'role="context"' in lines[0] and "Traceback" not in result.err
    with Store() as store:
        assert store.rows() == []  # refused at plan time: nothing was recorded


def test_a_plugins_exception_after_loading_is_one_line_naming_the_plugin():
    """A build (or a command, or an exporter) that raises fails with one line naming its
    plugin; a ZooError it raises already says what it means."""
    from zoo.core.containment import call_plugin
    from zoo.errors import ZooError

    def exploding():
        raise ValueError("audit build exploded")

    with pytest.raises(ZooError) as caught:
        call_plugin(exploding, what="architecture 'avgbag'", plugin="audit")
    assert str(caught.value) == (
        "architecture 'avgbag' from plugin 'audit' failed: ValueError: audit build exploded"
    )
    assert isinstance(caught.value.__cause__, ValueError)  # --debug shows its traceback

    def refusing():
        raise ZooError("width must be even")

    with pytest.raises(ZooError, match="^width must be even$"):
        call_plugin(refusing, what="architecture 'avgbag'", plugin="audit")


def test_a_ctrl_c_landing_in_a_finalizer_still_stops_the_code():
    """A SIGINT handled while a garbage collection runs a weakref callback or a __del__
    raises there, where Python prints and drops the exception: the Ctrl-C comes again."""
    import time

    from conftest import press_ctrl_c

    from zoo.core.containment import own_interrupts_fail

    class PressesCtrlCWhenDropped:
        def __del__(self):
            press_ctrl_c()  # its handler runs here, in the finalizer

    began = time.time()
    with pytest.raises(KeyboardInterrupt), own_interrupts_fail():
        PressesCtrlCWhenDropped()  # dropped at once
        while time.time() - began < 5:  # the code going on, as a run's training does
            time.sleep(0.01)
    assert time.time() - began < 2


def test_an_unknown_name_points_only_at_a_listing_that_exists():
    from zoo.core.kinds import Entries, Entry
    from zoo.errors import UnknownNameError

    for kind, hint in (("exporter", "Available: onnx"), ("logger", "zoo list loggers shows all")):
        registry = Entries(kind)
        registry.add(Entry(kind, "onnx", "x:y", plugin="export"))
        with pytest.raises(UnknownNameError, match=hint):
            registry.get("onxx")
