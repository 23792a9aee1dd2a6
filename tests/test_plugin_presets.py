"""Presets a plugin ships (register_presets): listed beside the built-in ones naming their
package, run like them; a clash with a built-in or another plugin's preset sets the plugin
aside; the user's own registry.toml wins over a plugin's preset."""

import json

import pytest
from conftest import install_example, run_cli, run_zoo

from zoo.core import loading
from zoo.core.names import resolve_model
from zoo.errors import ZooError
from zoo.hookspecs import hookimpl


class Shipping:
    """A plugin with an architecture-free preset (the built-in decoder and char) and one
    that builds on it and on a built-in template."""

    @hookimpl
    def register_presets(self, register):
        register(
            "tiny-decoder",
            architecture="decoder",
            tokenizer="char",
            description="a tiny decoder",
            set={"n_layer": 1, "n_embd": 16, "n_head": 2},
        )
        register("tiny-decoder-bpe", base=["tiny-decoder", "bpe-512"], set={"n_embd": 32})


def plugin_zoo(*plugins):
    zoo = loading.build_zoo(entry_points=False)
    for name, plugin in plugins:
        zoo.add_plugin(plugin, loading.PluginInfo(name, "test"))
    return zoo


def test_a_plugins_presets_resolve_like_built_in_ones():
    zoo = plugin_zoo(("shipping", Shipping()))
    assert not zoo.plugins["shipping"].error
    spec = resolve_model("tiny-decoder-bpe", zoo)
    assert (spec.architecture.name, spec.tokenizer.name) == ("decoder", "bpe")
    assert spec.overrides["n_layer"] == 1 and spec.overrides["n_embd"] == 32
    assert spec.overrides["vocab_size"] == 512  # from the built-in template bpe-512
    assert spec.description == "built on tiny-decoder + bpe-512"
    zoo.remove_plugin("shipping")
    assert "tiny-decoder" not in zoo.catalogue.models


def test_zoo_list_and_show_name_the_package_a_preset_comes_from():
    loading.reset_zoo(plugin_zoo(("shipping", Shipping())))
    listed = run_cli("list", "models", "tiny-decoder")
    assert listed.code == 0, listed
    line = next(x for x in listed.out.splitlines() if x.strip().startswith("tiny-decoder "))
    assert "a tiny decoder [preset from plugin shipping]" in line
    assert "[preset]" in run_cli("list", "models", "decoder-char").out  # built-ins unchanged
    rows = json.loads(run_cli("list", "models", "--json").out)
    origin = {r["name"]: r["from"] for r in rows}
    assert origin["tiny-decoder"] == "plugin shipping" and origin["decoder-char"] == "zoo"
    shown = run_cli("show", "tiny-decoder")
    assert "model tiny-decoder (preset from plugin shipping)" in shown.out, shown


class SameAsBuiltIn:
    @hookimpl
    def register_architectures(self, register):
        register("other", "zoo.plugins.decoder.model:build", tasks=("language-modeling",))

    @hookimpl
    def register_presets(self, register):
        register("decoder-char", architecture="decoder", tokenizer="char")


def test_a_preset_named_like_a_built_in_one_sets_the_plugin_aside(caplog):
    zoo = plugin_zoo(("impostor", SameAsBuiltIn()))
    error = zoo.plugins["impostor"].error
    assert "preset name 'decoder-char' from plugin 'impostor' clashes with the built-in" in error
    assert "other" not in zoo.architectures  # nothing of the plugin is added
    assert zoo.catalogue.models["decoder-char"].plugin == ""
    with pytest.raises(ZooError, match="clashes with the built-in preset"):
        zoo.add_plugin(SameAsBuiltIn(), loading.PluginInfo("again", "test"), strict=True)


def test_two_plugins_with_one_preset_name_clash_naming_both():
    zoo = plugin_zoo(("first", Shipping()), ("second", Shipping()))
    assert not zoo.plugins["first"].error
    assert "clashes with the one from plugin 'first'" in zoo.plugins["second"].error
    assert zoo.catalogue.models["tiny-decoder"].plugin == "first"


@pytest.mark.parametrize(
    "table, problem",
    [
        ({"base": "nothing-here"}, "Unknown base preset of [models.bad] from plugin 'bad'"),
        ({"architecture": "decoder"}, "[models.bad] needs 'tokenizer'"),
        ({"architecture": "nope", "tokenizer": "char"}, "names architecture 'nope'"),
        ({"architecture": "decoder", "tokenizer": "char", "colour": 1}, "unknown key 'colour'"),
        ({"members": ["decoder-char", "missing"]}, "member of [models.bad]"),
    ],
)
def test_a_broken_preset_sets_its_plugin_aside_with_one_line(table, problem):
    class Broken:
        @hookimpl
        def register_presets(self, register):
            register("bad", **table)

    zoo = plugin_zoo(("bad", Broken()))
    error = zoo.plugins["bad"].error
    assert problem.lower() in error.lower() and "\n" not in error, error
    assert "bad" not in zoo.catalogue.models and "bad" not in zoo.catalogue.ensembles


LOCAL_PLUGIN = """
from zoo.hookspecs import hookimpl

@hookimpl
def register_presets(register):
    register("tiny-decoder", architecture="decoder", tokenizer="char", description="ours")
    register("tiny-decoder-bpe", base=["tiny-decoder", "bpe-512"], set={"n_embd": 32})
"""


def test_the_users_registry_toml_wins_and_may_build_on_a_plugins_preset(isolated, monkeypatch):
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "shipping")
    (isolated / "shipping.py").write_text(LOCAL_PLUGIN, encoding="utf-8")
    (isolated / "registry.toml").write_text(
        '[plugins]\nmodules = ["./shipping.py"]\n\n'
        '[models.tiny-decoder]\narchitecture = "decoder"\ntokenizer = "char"\n'
        'description = "mine"\n\n'
        '[models.wider]\nbase = "tiny-decoder-bpe"\nset = { n_embd = 64 }\n',
        encoding="utf-8",
    )
    zoo = loading.build_zoo(entry_points=False)
    assert not zoo.plugins["shipping"].error
    assert resolve_model("tiny-decoder", zoo).description == "mine"  # the user's own
    wider = resolve_model("wider", zoo)  # built on the plugin's preset, resolved after it
    assert wider.tokenizer.name == "bpe" and wider.overrides["n_embd"] == 64
    assert wider.overrides["vocab_size"] == 512


@pytest.fixture(scope="module")
def bow_site(tmp_path_factory):
    return install_example(tmp_path_factory, "zoo-bow")


@pytest.mark.slow
def test_an_installed_packages_preset_is_listed_and_runs(bow_site, tiny_text, tmp_path):
    env = {"PYTHONPATH": str(bow_site), "ZOO_LOAD_PLUGINS": "bow", "ZOO_HOME": str(tmp_path)}
    listed = run_zoo("list", "models", "bow", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "[preset from zoo-bow 0.1.0]" in next(
        line for line in listed.stdout.splitlines() if line.strip().startswith("bow-small ")
    )
    result = run_zoo(
        "run", "bow-small", tiny_text, "--steps", 5, "--set", "sample_tokens=5", "--json", env=env
    )
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["model"] == "bow-small" and run["status"] == "finished"
    shown = run_zoo("show", run["run_id"], "--json", env=env)
    configs = json.loads(shown.stdout)["config"]["configs"]
    assert configs["model"]["n_embd"] == 32 and configs["tokenizer"]["vocab_size"] == 2000
