"""`zoo check-plugin`: the examples pass it, and each of six seeded contract bugs is one
failed line naming the plugin and the check."""

import json
import sys
import textwrap

import pytest
from conftest import REPO, run_cli

from zoo.core import loading

sys.path.insert(0, str(REPO / "examples" / "zoo-regress"))  # the example task, in-process

MEANBAG = (REPO / "examples" / "meanbag.py").read_text(encoding="utf-8")
FORWARD = MEANBAG[MEANBAG.index("        def forward") : MEANBAG.index("    return MeanBag()")]
SMALL = ["--set", "n_embd=8", "--set", "rows=60", "--set", "hidden=8"]


def meanbag(forward: str = "", init: str = "") -> str:
    """examples/meanbag.py with another forward (and more in its __init__)."""
    source = MEANBAG
    if forward:
        source = source.replace(FORWARD, textwrap.indent(textwrap.dedent(forward), " " * 8) + "\n")
    if init:
        anchor = "            self.head = nn.Linear(config.n_embd, spec.num_classes)\n"
        source = source.replace(anchor, anchor + textwrap.indent(textwrap.dedent(init), " " * 12))
    return source


SEEDS = {
    "batch": meanbag(
        """
        def forward(self, input_ids, attention_mask):  # [B, T] -> [B, classes]
            mask = attention_mask.unsqueeze(-1).float()
            mean = (self.embed(input_ids) * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
            return self.head(mean - mean.mean(dim=0))  # each row reads the whole batch
        """
    ),
    "resume": meanbag(
        """
        def forward(self, input_ids, attention_mask):  # [B, T] -> [B, classes]
            mask = attention_mask.unsqueeze(-1).float()
            mean = (self.embed(input_ids) * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
            if not self.training:
                return self.head(mean)
            self.calls += 1  # training state that no checkpoint holds
            return self.head(mean) * (1.0 + 0.1 * self.calls)
        """,
        init="self.calls = 0\n",
    ),
    "export": meanbag(
        """
        def forward(self, input_ids, attention_mask):  # [B, T] -> [B, classes]
            mask = attention_mask.unsqueeze(-1).float()
            mean = (self.embed(input_ids) * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
            scale = 2.0 if input_ids.shape[1] > 4 else 1.0  # a branch a trace fixes
            return self.head(scale * mean)
        """
    ),
    "vocabulary": """
        from zoo.plugin import hookimpl
        from zoo.plugins.char import CharTokenizer

        class OffByVocab(CharTokenizer):
            def encode_rows(self, texts):
                ids, offsets = super().encode_rows(texts)
                return ids + self.vocab_size, offsets

        @hookimpl
        def register_tokenizers(register):
            register("offbyvocab", OffByVocab)
    """,
    "shape": """
        from zoo.plugin import hookimpl
        from zoo_regress import BitMLPConfig

        def build(config, spec):
            from zoo_regress.model import BitMLP

            class Column(BitMLP):
                def forward(self, input_ids, attention_mask=None):
                    return super().forward(input_ids, attention_mask).unsqueeze(-1)  # [B, 1]

            return Column(config, spec)

        @hookimpl
        def register_architectures(register):
            register("column", build, config=BitMLPConfig, tasks=("regression",))
    """,
}


def register(tmp_path, name: str, source: str):
    zoo = loading.get_zoo()
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    plugin = loading._import_file(path)
    assert zoo.add_plugin(plugin, loading.PluginInfo(name, "local file"), strict=True)


@pytest.fixture
def regress():
    import zoo_regress

    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(zoo_regress, loading.PluginInfo("regress", "test"), strict=True)
    loading.reset_zoo(zoo)
    return zoo


def checks(*args) -> tuple[int, list[dict]]:
    result = run_cli("check-plugin", *args, "--json")
    assert result.code in (0, 1), result
    return result.code, json.loads(result.out)


def failed_lines(*args) -> list[str]:
    result = run_cli("check-plugin", *args)
    assert result.code == 1, result
    return [line for line in result.out.splitlines() if line.startswith("failed")]


@pytest.mark.slow
def test_the_examples_pass(regress, tmp_path):
    register(tmp_path, "meanbag", MEANBAG)
    for plugin in ("regress", "meanbag"):
        code, found = checks(plugin, *SMALL)
        assert code == 0, found
        assert {c["check"] for c in found if c["status"] == "ok"} >= {
            "train",
            "best step",
            "batch",
            "resume",
        }, found
    assert any(c["check"] == "output shape" and c["status"] == "ok" for c in found)


@pytest.mark.parametrize(
    "seed, check, said",
    [
        pytest.param(
            "batch",
            "batch",
            "predicted alone and among other texts differs by",
            marks=pytest.mark.slow,  # every check runs: three short runs and an export
        ),
        pytest.param(
            "resume",
            "resume",
            "the weights differ from the run trained without a stop",
            marks=pytest.mark.slow,  # three short runs and an export
        ),
        pytest.param(
            "export", "export", "the traced graph's logits differ", marks=pytest.mark.slow
        ),
        ("vocabulary", "vocabulary", "OffByVocab encoded an id"),
        ("shape", "train", "[B]"),
    ],
)
def test_a_seeded_contract_bug_is_one_line_naming_the_plugin_and_the_check(
    regress, tmp_path, seed, check, said
):
    register(tmp_path, f"seeded{seed}", SEEDS[seed])
    lines = failed_lines(f"seeded{seed}", *SMALL)
    assert any(
        line.startswith(f"failed  plugin 'seeded{seed}', check {check} (") and said in line
        for line in lines
    ), lines


def test_a_validation_without_its_score_key_fails_the_train_check(regress, monkeypatch):
    import zoo_regress.pipeline

    monkeypatch.setattr(zoo_regress.pipeline, "scores", lambda y, p, prefix: {f"{prefix}_e": 1})
    lines = failed_lines("regress", *SMALL)
    assert lines == [
        "failed  plugin 'regress', check train (bitmlp-char on bits, regression): training: run "
        + lines[0].split("training: run ")[1]
    ]
    assert "broke the contract: validate() returned no 'val_mse'" in lines[0]


TRACKERS = """
    from zoo.plugin import hookimpl

    class Quiet:
        def start(self, run):
            return {"where": str(run["folder"])}

        def log(self, record):
            pass

        def finish(self, metrics, folder, status):
            pass

    class Leaky(Quiet):
        def log(self, record):
            raise OSError("disk gone")

    @hookimpl
    def register_loggers(register):
        register("quiet", Quiet)
        register("leaky", Leaky)
"""


def test_each_tracker_is_driven_as_a_run_drives_it(regress, tmp_path):
    register(tmp_path, "trackful", TRACKERS)
    code, found = checks("trackful")
    assert code == 1
    by_name = {c["subject"]: c for c in found if c["check"] == "tracker"}
    assert by_name["quiet"]["status"] == "ok", found
    assert by_name["leaky"]["status"] == "failed"
    assert (
        "logger 'leaky' from plugin 'trackful' failed in log(): OSError: disk gone"
        in (by_name["leaky"]["detail"])
    )


def test_a_plugin_with_nothing_to_check_says_so():
    result = run_cli("check-plugin", "numpy", "--only", "nothing-by-this-name")
    assert result.code == 0, result
    assert result.out.strip() == (
        "plugin 'numpy' registers no architecture, tokenizer, task, exporter or tracker "
        "matching 'nothing-by-this-name': nothing to check"
    )


def test_an_unknown_plugin_is_exit_2_with_a_did_you_mean():
    result = run_cli("check-plugin", "decodr")
    assert result.code == 2 and "Did you mean: decoder" in result.err, result


@pytest.mark.slow
def test_the_pytest_plugin_runs_the_checks_of_an_installed_plugin(tmp_path, monkeypatch):
    """zoo.plugin.testing, as an author's CI runs it: a test per check, in a fresh process
    that loads the plugin as zoo does (here a local module named in registry.toml)."""
    import subprocess

    from zoo.plugin.testing import check_plugin

    work = tmp_path / "work"
    (work / "meanbag.py").write_text(MEANBAG, encoding="utf-8")
    seeded = SEEDS["batch"].replace('"meanbag",', '"batchbag",')  # a name of its own
    (work / "seededbatch.py").write_text(seeded, encoding="utf-8")
    (work / "registry.toml").write_text(
        '[plugins]\nmodules = ["./meanbag.py", "./seededbatch.py"]\n', encoding="utf-8"
    )
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "meanbag,seededbatch")
    assert {c["status"] for c in check_plugin("meanbag", n_embd=8)} <= {"ok", "skipped"}
    with pytest.raises(pytest.fail.Exception, match="plugin 'seededbatch', check batch"):
        check_plugin("seededbatch", n_embd=8)
    (work / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "zoo.plugin.testing", "-p", "no:cacheprovider"]
        + ["--zoo-plugin", "meanbag", "--zoo-set", "n_embd=8", "-q", "test_nothing.py"],
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed" in done.stdout or "passed" in done.stdout, done.stdout


# Small sizes for every built-in's settings (a run leaves out those its configs lack)
BUILT_IN_SMALL = [
    *("--set", "n_embd=16", "--set", "n_layer=1", "--set", "n_head=2", "--set", "block_size=32"),
    *("--set", "hidden=8", "--set", "dim=16", "--set", "buckets=500", "--set", "vocab_size=300"),
    *("--set", "sample_tokens=5", "--set", "train_size=200", "--set", "validation_size=50"),
    *("--set", "test_size=50", "--set", "heldout_size=50", "--set", "heldout_validation_size=50"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "plugin, only",
    [("char", "*"), ("bpe", "*"), ("lstm", "*"), ("nbsvm", "*"), ("export", "*")],
)
def test_built_ins_pass(plugin, only):
    """A sample of the built-ins, each kind among them (tokenizers, architectures, an
    exporter): all of them take minutes on two cores (`zoo check-plugin NAME` for each)."""
    code, found = checks(plugin, "--only", only, *BUILT_IN_SMALL)
    assert code == 0 and found, found
    assert all(c["status"] in ("ok", "skipped") for c in found), found
