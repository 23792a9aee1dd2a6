"""A plugin's code failing at run time is one line naming the plugin and the function, exit
2, at every stage: build, training, evaluation, prediction, export, a tracker that cannot
start; a tracker failing later is a warning naming it, and the run goes on. The traceback shows under --debug."""

import sys
import textwrap

import pytest
from conftest import REPO, run_cli

from zoo.core import loading

sys.path.insert(0, str(REPO / "examples" / "zoo-regress"))  # the example task, in-process

BITS = ["--quiet", "--set", "rows=60", "--set", "eval_interval=2", "--set", "batch_size=4"]

# Each plugin in a module of its own (as an installed one is): zoo names it by its code.
PLUGINS = {
    "oddtok": """
        import numpy as np
        from zoo.plugin import hookimpl
        from zoo.plugins.char import CharTokenizer

        class OffByVocab(CharTokenizer):
            def encode_rows(self, texts):
                ids, offsets = super().encode_rows(texts)
                return ids + self.vocab_size, offsets  # every id past the vocabulary

        @hookimpl
        def register_tokenizers(register):
            register("offbyvocab", OffByVocab)
    """,
    "oddarch": """
        from zoo.plugin import hookimpl
        from zoo_regress import BitMLPConfig

        def build(config, spec):
            import torch

            class Exploding(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = torch.nn.Parameter(torch.zeros(1))

                def forward(self, input_ids, attention_mask=None):
                    raise RuntimeError("forward exploded")

            return Exploding()

        def unbuildable(config, spec):
            raise ValueError("no such layer")

        @hookimpl
        def register_architectures(register):
            register("exploding", build, config=BitMLPConfig, tasks=("regression",))
            register("unbuildable", unbuildable, config=BitMLPConfig, tasks=("regression",))
    """,
    "oddtools": """
        from zoo.plugin import hookimpl

        class Failing:
            def start(self, run):
                return {}

            def log(self, record):
                raise OSError("tracker disk gone")

            def finish(self, metrics, folder, status):
                pass

        class BrokenFormat:
            @staticmethod
            def unsupported(trained):
                return None

            @staticmethod
            def write(trained, folder):
                raise TypeError("cannot serialise")

            @staticmethod
            def check(trained, folder, texts):
                return {}

        @hookimpl
        def register_loggers(register):
            register("failing", Failing)
            register("needy", "zoo_absent_extra_xyz:Logger")  # an extra not installed

        @hookimpl
        def register_exporters(register):
            register("broken", BrokenFormat, architectures=("*",))
    """,
}


@pytest.fixture
def plugins(tmp_path):
    """The regression example and the odd plugins, registered in this process."""
    import zoo_regress

    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(zoo_regress, loading.PluginInfo("regress", "test"), strict=True)
    for name, source in PLUGINS.items():
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        plugin = loading._import_file(path)
        assert zoo.add_plugin(plugin, loading.PluginInfo(name, "local file"), strict=True)
    loading.reset_zoo(zoo)
    return zoo


def one_line(result, code=2) -> str:
    assert result.code == code, result
    lines = [line for line in result.err.splitlines() if line.startswith("zoo:")]
    assert len(lines) == 1 and "Traceback" not in result.err, result
    return lines[0]


@pytest.mark.parametrize(
    "model, said",
    [
        (
            "unbuildable-char",
            "architecture 'unbuildable' from plugin 'oddarch' failed: ValueError: no such layer",
        ),
        (
            "exploding-char",
            "training: build.<locals>.Exploding.forward (oddarch.py:",
        ),
        (
            "bitmlp-offbyvocab",
            "training: OffByVocab from plugin 'oddtok' broke the contract: OffByVocab encoded "
            "an id",
        ),
    ],
)
def test_a_plugins_failure_in_training_names_it_in_one_line(plugins, model, said):
    line = one_line(run_cli("run", model, "bits", "--steps", 3, *BITS))
    assert said in line, line
    if model == "exploding-char":
        assert "from plugin 'oddarch' failed: RuntimeError: forward exploded" in line


def test_a_validation_without_its_score_key_names_the_pipelines_plugin(plugins, monkeypatch):
    import zoo_regress.pipeline

    def renamed(y, predicted, prefix):
        return {f"{prefix}_error": 0.5}

    monkeypatch.setattr(zoo_regress.pipeline, "scores", renamed)
    line = one_line(run_cli("run", "bitmlp-char", "bits", "--steps", 3, *BITS))
    assert line.startswith("zoo: error: training: run (pipeline.py:"), line
    assert line.endswith(
        "from plugin 'regress' broke the contract: validate() returned no 'val_mse', the "
        "score_key given to train() (it returned 'val_error')"
    ), line


def test_a_tracker_that_cannot_start_stops_the_run_naming_its_plugin(plugins):
    line = one_line(run_cli("run", "bitmlp-char", "bits", "--steps", 3, *BITS, "--log-to", "needy"))
    assert "logger from plugin 'oddtools'" in line and "needs zoo_absent_extra_xyz" in line, line
    from zoo.records.store import Store

    with Store() as store:
        assert store.rows() == []  # refused before anything trained


def test_failures_after_training_name_the_plugin(plugins, monkeypatch, tmp_path):
    result = run_cli("run", "bitmlp-char", "bits", "--steps", 3, *BITS, "--log-to", "failing")
    assert result.code == 0, result  # a tracker's failure: a warning, and the run goes on
    assert "logger 'failing' from plugin 'oddtools' failed in log(): OSError" in result.err
    run_id = result.out.split("run ")[1].split()[0] if "run " in result.out else None
    from zoo.records.store import Store

    with Store() as store:
        (row,) = store.rows()
    run_id = row["id"]
    line = one_line(run_cli("export", run_id, tmp_path / "out", "--format", "broken"))
    assert "exporter 'broken' from plugin 'oddtools' failed: TypeError: cannot serialise" in line

    import zoo_regress.pipeline

    def failing(model, ids, mask, batch=256):
        raise FloatingPointError("predictions overflowed")

    monkeypatch.setattr(zoo_regress.pipeline, "predictions", failing)
    for stage, args in (
        ("prediction", ("predict", run_id, "0101")),
        ("evaluation", ("eval", run_id, "bits", "--split", "validation")),
    ):
        line = one_line(run_cli(*args))
        assert line.startswith(f"zoo: error: {stage}: "), line
        assert "from plugin 'regress' failed: FloatingPointError: predictions overflowed" in line

    debug = run_cli("predict", run_id, "0101", "--debug")
    assert debug.code == 2 and "Traceback" in debug.err and "failing" in debug.err
