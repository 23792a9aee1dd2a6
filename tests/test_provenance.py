"""Plugin code is part of a run's identity: a released distribution's version, or for the
built-ins, an editable install or a local module a hash of its source, goes into the config
hash and the provenance, so a sweep never reuses cells trained by other plugin code (and its
dry run says why such a cell is new), and a resume across a plugin change is refused with the
plugin's name."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, TINY_DECODER, press_ctrl_c, run_cli

from zoo.core import loading
from zoo.records.store import Store, home
from zoo.train import checkpoints

PLUGIN = textwrap.dedent("""
    from zoo.plugin import hookimpl

    @hookimpl
    def register_architectures(register):
        register("localdec", "zoo.plugins.decoder.model:build",
                 config="zoo.plugins.decoder:DecoderConfig", tasks=("language-modeling",))
""")
SWEEP = ["sweep", "localdec-char", "--on", None, "--steps", 2, *TINY_DECODER, "--format", "csv"]


@pytest.fixture
def local_plugin(isolated, monkeypatch):
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "my_arch")
    path = isolated / "my_arch.py"
    path.write_text(PLUGIN, encoding="utf-8")
    (isolated / "registry.toml").write_text('[plugins]\nmodules = ["./my_arch.py"]\n')
    return path


def change(path):
    """Edit the plugin's source (its behaviour stays, its code does not) and start afresh,
    as a new `zoo` process would."""
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    loading.reset_zoo()


def sweep(dataset):
    result = run_cli(*[dataset if a is None else a for a in SWEEP])
    assert result.code == 0, result
    return result


def finished_runs() -> list[dict]:
    with Store() as store:
        return [row for row in store.rows() if row["status"] == "finished"]


@pytest.mark.slow
def test_a_changed_local_plugin_is_a_new_sweep_cell(local_plugin, tiny_text):
    sweep(tiny_text)
    (first,) = finished_runs()
    recorded = first["config"]["plugins"]["my_arch"]
    assert recorded["source"] == "local file" and len(recorded["source_sha256"]) == 16
    builtin = first["config"]["plugins"]["char"]
    assert builtin["source"] == "builtin" and len(builtin["source_sha256"]) == 16
    loading.reset_zoo()
    assert "0 trained, 1 already finished" in sweep(tiny_text).err  # same code: done
    change(local_plugin)
    sweep(tiny_text)
    runs = finished_runs()
    assert len(runs) == 2  # the edited plugin's cell trained again
    assert runs[0]["config_hash"] != runs[1]["config_hash"]
    hashes = {r["config"]["plugins"]["my_arch"]["source_sha256"] for r in runs}
    assert len(hashes) == 2


@pytest.mark.slow
def test_resume_refuses_across_a_plugin_change_naming_the_plugin(
    local_plugin, tiny_text, monkeypatch
):
    original = checkpoints.Checkpointer.save

    def save_then_stop(self, elapsed):
        original(self, elapsed)
        if self.result.steps >= 2:
            press_ctrl_c()

    with monkeypatch.context() as patch:
        patch.setattr(checkpoints.Checkpointer, "save", save_then_stop)
        stopped = run_cli(
            "run",
            "localdec-char",
            tiny_text,
            "--steps",
            4,
            *TINY_DECODER,
            "--set",
            "checkpoint_every=1",
            "--json",
        )
    assert stopped.code == 130, stopped
    (run_id,) = [p.name for p in home().iterdir() if (p / "config.json").is_file()]
    change(local_plugin)
    refused = run_cli("resume", run_id)
    assert refused.code == 2, refused
    assert "plugin 'my_arch' changed" in refused.err and run_id in refused.err
    assert len(refused.err.strip().splitlines()) == 1
    loading.reset_zoo()
    local_plugin.write_text(PLUGIN, encoding="utf-8")  # the code it started with: resumable
    resumed = run_cli("resume", run_id, "--json")
    assert resumed.code == 0, resumed
    assert json.loads(resumed.out)["status"] == "finished"


def test_a_changed_local_plugin_makes_the_dry_run_plan_its_cell_as_new(local_plugin, tiny_text):
    sweep(tiny_text)
    loading.reset_zoo()
    dry = run_cli(*[tiny_text if a is None else a for a in SWEEP[:-2]], "--dry-run")
    assert dry.code == 0 and dry.out.rstrip().endswith("done: run " + finished_runs()[0]["id"])
    change(local_plugin)
    dry = run_cli(*[tiny_text if a is None else a for a in SWEEP[:-2]], "--dry-run")
    assert dry.code == 0, dry
    (line,) = dry.out.strip().splitlines()
    assert "to run: plugin code changed" in line and "my_arch (sha256:" in line
    assert "decoder" not in line.split("changed", 1)[1]  # only the plugin that changed


EDITABLE_PLUGIN = textwrap.dedent("""
    from zoo.plugin import hookimpl

    @hookimpl
    def register_architectures(register):
        register("editdec", "edplug.model:build",
                 config="zoo.plugins.decoder:DecoderConfig", tasks=("language-modeling",))
""")
EDITABLE_MODEL = "from zoo.plugins.decoder.model import build  # noqa: F401\n"


@pytest.fixture
def forget_edplug():
    """Each test imports its own edplug: none stays imported for the next test."""
    yield
    for name in [m for m in sys.modules if m == "edplug" or m.startswith("edplug.")]:
        del sys.modules[name]


def installed_plugin(tmp_path, monkeypatch, editable: bool) -> Path:
    """The package edplug (its hooks in __init__.py, its model in model.py) with the
    dist-info pip writes: entry point group zoo, and for an editable install PEP 610's
    direct_url.json with dir_info.editable."""
    source, site = tmp_path / "src", tmp_path / "site"
    (source / "edplug").mkdir(parents=True)
    (source / "edplug" / "__init__.py").write_text(EDITABLE_PLUGIN, encoding="utf-8")
    (source / "edplug" / "model.py").write_text(EDITABLE_MODEL, encoding="utf-8")
    info = site / "edplug-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: edplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[zoo]\nedplug = edplug\n")
    if editable:
        url = {"url": source.as_uri(), "dir_info": {"editable": True}}
        (info / "direct_url.json").write_text(json.dumps(url))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "edplug")
    return source / "edplug" / "model.py"


def edplug_identity() -> str:
    loading.reset_zoo()
    return loading.get_zoo().plugins["edplug"].identity


def test_an_editable_plugin_is_its_source_and_a_released_one_its_version(
    tmp_path, monkeypatch, forget_edplug
):
    model = installed_plugin(tmp_path, monkeypatch, editable=True)
    before = edplug_identity()
    assert before.startswith("sha256:") and loading.get_zoo().plugins["edplug"].editable
    model.write_text(EDITABLE_MODEL + "# a change to a module the hooks do not define\n")
    assert edplug_identity() not in (before, "unknown")
    (tmp_path / "site" / "edplug-1.0.dist-info" / "direct_url.json").unlink()  # released
    assert edplug_identity() == "1.0"


def test_a_recorded_hash_must_match_and_a_recorded_version_is_judged_as_a_version():
    from zoo.train.provenance import same_code

    assert same_code("sha256:a", "sha256:a", "0.1.0")
    assert not same_code("sha256:a", "sha256:b", "0.1.0")  # the code changed
    assert same_code("0.1.0", "sha256:b", "0.1.0")  # recorded before code identity
    assert not same_code("0.0.9", "sha256:b", "0.1.0") and not same_code(None, "1.0", "1.0")


def test_zoo_list_reads_no_source_and_the_builtins_are_their_source(monkeypatch):
    from zoo.core import code_identity

    calls = []
    monkeypatch.setattr(code_identity, "files_hash", lambda *a: calls.append(a) or "")
    code_identity.builtin_source_hash.cache_clear()
    try:
        assert run_cli("list").code == 0
        assert calls == []  # hashes are computed when a run needs them, not when plugins load
    finally:
        code_identity.builtin_source_hash.cache_clear()
    info = loading.get_zoo().plugins["decoder"]
    expected = code_identity.builtin_source_hash(loading.ZOO_PACKAGES)
    assert info.identity == f"sha256:{expected}" and info.version
    assert loading.ZOO_PACKAGES == ("zoo", "zoo.pipelines", "zoo.plugins")


@pytest.mark.slow
def test_an_edited_editable_plugin_makes_the_dry_run_plan_its_cell_as_new(
    tmp_path, monkeypatch, tiny_text, forget_edplug
):
    model = installed_plugin(tmp_path, monkeypatch, editable=True)
    args = ["sweep", "editdec-char", "--on", tiny_text, "--steps", 2, *TINY_DECODER]
    assert run_cli(*args).code == 0
    loading.reset_zoo()
    assert "done: run" in run_cli(*args, "--dry-run").out
    model.write_text(EDITABLE_MODEL + "# edited\n")
    loading.reset_zoo()
    dry = run_cli(*args, "--dry-run")
    assert "to run: plugin code changed" in dry.out and "edplug (sha256:" in dry.out, dry


@pytest.mark.slow
def test_an_edited_builtin_plugin_in_a_copy_of_zoo_makes_the_dry_run_plan_its_cell_as_new(
    tmp_path, tiny_text
):
    site = tmp_path / "site"  # zoo laid out as installed: zoo/, zoo/plugins/, zoo/pipelines/
    shutil.copytree(REPO / "zoo", site / "zoo", symlinks=False)
    shutil.copytree(REPO / "plugins", site / "zoo" / "plugins")
    shutil.copytree(REPO / "pipelines", site / "zoo" / "pipelines")
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    args = ["sweep", "decoder-char", "--on", tiny_text, "--steps", 2, *TINY_DECODER]

    def zoo(*more):
        command = [sys.executable, "-m", "zoo", *map(str, args), *more]
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    located = subprocess.run(
        [sys.executable, "-c", "import zoo.plugins.decoder as d; print(d.__file__)"],
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert Path(located.strip()).is_relative_to(site)  # the copy runs, not the checkout
    zoo()
    assert "done: run" in zoo("--dry-run")
    model = site / "zoo" / "plugins" / "decoder" / "model.py"
    model.write_text(model.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    planned = zoo("--dry-run")
    # every built-in the cell uses is zoo's code: all of them changed
    assert "to run: plugin code changed" in planned
    assert "char, decoder, zoo.pipelines (sha256:" in planned
