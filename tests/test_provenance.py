"""Plugin code is part of a run's identity: each plugin's distribution and version (or, for a
local module, a hash of its source) goes into the config hash and the provenance, so a sweep
never reuses cells trained by other plugin code, and a resume across a plugin change is
refused with the plugin's name."""

import json
import textwrap

import pytest
from conftest import TINY_DECODER, press_ctrl_c, run_cli

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
    assert first["config"]["plugins"]["char"] == {
        "distribution": "zoo",
        "version": "0.1.0",
        "source": "builtin",
    }
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
