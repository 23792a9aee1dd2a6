"""registry.toml parsing and merging, --set overrides, dataset resolution order."""

import json
import os
from pathlib import Path

import pytest
from conftest import DATASETS, run_cli
from zoo.plugins.decoder import DecoderConfig

from zoo.core import loading
from zoo.core.catalogue import load_catalogue
from zoo.core.config import coerce, split_overrides
from zoo.data import datasets as data
from zoo.data import sources
from zoo.errors import ZooError

MIRROR = Path(DATASETS.split(os.pathsep)[0])
needs_mirror = pytest.mark.skipif(
    not (MIRROR / "karpathy" / "tiny_shakespeare").is_dir(),
    reason=f"the dataset mirror ({MIRROR}) lacks karpathy/tiny_shakespeare; set ZOO_DATASETS",
)


def test_builtin_catalogue_has_the_named_datasets_and_presets():
    catalogue = load_catalogue([])
    assert catalogue.datasets["shakespeare"].hub == "karpathy/tiny_shakespeare"
    assert catalogue.datasets["rotten_tomatoes"].label_column == "label"
    assert catalogue.datasets["emotion"].hub == "dair-ai/emotion"
    assert catalogue.models["decoder-char"].architecture == "decoder"
    assert catalogue.mirrors == []  # the shipped catalogue names no development folder


def test_multi30k_is_in_the_catalogue_both_ways():
    """multi30k translates German to English, multi30k-en-de the same pairs the other way."""
    catalogue = load_catalogue([])
    de_en, en_de = catalogue.datasets["multi30k"], catalogue.datasets["multi30k-en-de"]
    assert de_en.hub == en_de.hub == "bentrevett/multi30k"
    assert de_en.task == en_de.task == "seq2seq"
    assert (de_en.text_column, de_en.label_column) == ("de", "en")
    assert (en_de.text_column, en_de.label_column) == ("en", "de")


def test_user_registry_extends_and_overrides(isolated):
    (isolated / "registry.toml").write_text(
        '[datasets.shakespeare]\nhub = "me/shakespeare"\ntask = "language-modeling"\n'
        '[models.decoder-mini]\narchitecture = "decoder"\ntokenizer = "char"\nset = { n_layer = 1 }\n'
    )
    result = run_cli("list", "models", "decoder-mini", "--json")
    assert json.loads(result.out)[0]["preset"] is True
    catalogue = load_catalogue()
    assert catalogue.datasets["shakespeare"].hub == "me/shakespeare"
    assert "emotion" in catalogue.datasets  # the built-in entries are still there


def test_zoo_registry_variable_names_a_file(isolated, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere.toml"
    other.write_text('[datasets.mine]\npath = "data.csv"\n')
    monkeypatch.setenv("ZOO_REGISTRY", str(other))
    assert load_catalogue().datasets["mine"].path == str(tmp_path / "data.csv")


def test_malformed_registry_exits_2_naming_file_and_line(isolated):
    (isolated / "registry.toml").write_text('[datasets.x]\nhub = "a/b"\ntask = \n')
    result = run_cli("list")
    assert result.code == 2
    assert "registry.toml" in result.err and "line 3" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_unknown_registry_key_gets_a_did_you_mean_and_its_line(isolated):
    (isolated / "registry.toml").write_text('\n[datasets.x]\nhubb = "a/b"\n')
    result = run_cli("list")
    assert result.code == 2
    assert "Did you mean: hub?" in result.err and "line 3" in result.err


def test_set_values_are_checked_against_field_types():
    sections = {"model": DecoderConfig, "tokenizer": None, "train": None}
    assert split_overrides({"n_layer": "3", "bias": "false", "dropout": "0.5"}, sections)[
        "model"
    ] == {"n_layer": 3, "bias": False, "dropout": 0.5}
    with pytest.raises(ZooError, match="n_layer must be an integer"):
        split_overrides({"n_layer": "three"}, sections)
    with pytest.raises(ZooError, match="Did you mean: n_layer"):
        split_overrides({"n_layers": "3"}, sections)
    assert coerce("none", int | None, "x") is None
    assert coerce("2e3", int, "steps") == 2000


def test_unknown_names_get_exit_2_and_a_suggestion(tiny_text):
    cases = [
        (
            ["run", "decoder-chr", "shakespeare"],
            "Unknown model 'decoder-chr'. Did you mean: decoder-char",
        ),
        (["run", "decoder-char", "shakespear"], "Did you mean: shakespeare?"),
        (["run", "decoder-char", tiny_text, "--set", "n_layr=2"], "Did you mean: n_layer"),
        (["run", "decoder-char", tiny_text, "--text-column", "txt"], "Did you mean: text?"),
        (["show", "decodr"], "Did you mean: decoder"),
        (["list", "modls"], "Did you mean: models?"),
        (["generate", "nope"], "Unknown run 'nope'"),
    ]
    for args, expected in cases:
        result = run_cli(*args)
        assert result.code == 2, (args, result)
        assert expected in result.err, (args, result.err)
        assert len(result.err.strip().splitlines()) == 1, (args, result.err)
        assert "Traceback" not in result.err


def test_unexpected_failures_exit_1_with_a_short_message(monkeypatch):
    from zoo.api import entry_rows

    monkeypatch.setattr(entry_rows, "rows", lambda *a, **k: 1 / 0)
    result = run_cli("list")
    assert result.code == 1 and "ZeroDivisionError" in result.err and "Traceback" not in result.err
    debug = run_cli("--debug", "list")
    assert debug.code == 1 and "Traceback" in debug.err


def test_help_and_version():
    import contextlib
    import io

    from zoo.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        main(["run", "--help"])
    assert exit_info.value.code == 0 and "--steps" in out.getvalue() and "--set" in out.getvalue()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--version"])
    assert out.getvalue().startswith("zoo 0.1.0") and "decoder" in out.getvalue()


@needs_mirror
def test_catalogue_alias_loads_from_the_zoo_datasets_mirror(mirror):
    zoo = loading.get_zoo()
    loaded = data.load(data.resolve("shakespeare", zoo), zoo)
    assert loaded.location == str(MIRROR / "karpathy" / "tiny_shakespeare")
    assert loaded.text_column == "text" and set(loaded.splits) == {"train", "validation", "test"}


def test_resolution_order_env_folders_first_then_catalogue_mirrors(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, text in ((first, "from first"), (second, "from second")):
        (folder / "someone" / "corpus").mkdir(parents=True)
        (folder / "someone" / "corpus" / "train.txt").write_text(f"{text}\n" * 40)
    zoo = loading.get_zoo()
    zoo.catalogue.mirrors.insert(0, second)
    monkeypatch.setenv("ZOO_DATASETS", os.pathsep.join([str(first)]))
    ref = data.resolve("someone/corpus", zoo)
    assert ref.kind == "hub"
    assert sources.find_in_mirrors("someone/corpus", zoo) == first / "someone" / "corpus"
    monkeypatch.delenv("ZOO_DATASETS")
    loaded = data.load(ref, zoo)
    assert loaded.location == str(second / "someone" / "corpus")
    assert loaded.split("train")[0]["text"] == "from second"


def test_offline_with_no_mirror_exits_2_naming_what_was_searched(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("ZOO_DATASETS", str(tmp_path / "nothing-here"))
    result = run_cli("run", "decoder-char", "nobody/nothing", "--steps", 1)
    assert result.code == 2, result
    assert "nobody/nothing" in result.err and "nothing-here" in result.err
    assert "HF_HUB_OFFLINE=1" in result.err and len(result.err.strip().splitlines()) == 1


def test_local_files_load_with_detected_columns(tmp_path):
    csv = tmp_path / "reviews.csv"
    csv.write_text(
        "sentence,labels\n" + "".join(f"good film {i},1\nbad film {i},0\n" for i in range(30))
    )
    zoo = loading.get_zoo()
    loaded = data.load(data.resolve(str(csv), zoo), zoo)
    assert (loaded.text_column, loaded.label_column) == ("sentence", "labels")
    assert loaded.tasks[0] == "classification"
    sizes = {role: len(loaded.split(role)) for role in ("train", "validation", "test")}
    assert sum(sizes.values()) == 60 and sizes["validation"] == sizes["test"] == 3


def test_a_folder_with_train_and_test_only_gets_validation_from_train_and_drops_no_row(tmp_path):
    folder = tmp_path / "questions"
    folder.mkdir()

    def rows(n, tag):
        return "".join(f'{{"text": "{tag} question {i}", "label": {i % 3}}}\n' for i in range(n))

    (folder / "train.jsonl").write_text(rows(200, "train"))
    (folder / "test.jsonl").write_text(rows(40, "test"))
    zoo = loading.get_zoo()
    loaded = data.load(data.resolve(str(folder), zoo), zoo)
    sizes = {role: len(loaded.split(role)) for role in ("train", "validation", "test")}
    assert sizes == {"train": 190, "validation": 10, "test": 40}
    assert all(text.startswith("train") for text in loaded.split("validation")["text"])


def test_missing_dataset_path_is_a_clear_error():
    result = run_cli("run", "decoder-char", "./no/such/file.csv")
    assert result.code == 2 and "does not exist" in result.err


def plan_on_a_task(name: str, datasets: list[str], overrides: dict):
    """The plan of preset ``name`` on the first of ``datasets`` whose task the preset is made
    for: a classification preset of an architecture that also models language plans on a
    classification set."""
    from zoo.errors import ZooError
    from zoo.train.plan import plan_run

    refusals = []
    for dataset in datasets:
        try:
            return plan_run(name, dataset, overrides=overrides)
        except ZooError as exc:
            refusals.append(str(exc))
    raise AssertionError(f"{name} plans on none of {datasets}: {refusals}")


@pytest.mark.slow
def test_every_built_in_preset_plans_on_a_dataset_of_its_task(tmp_path):
    """Preset values are checked against the config dataclasses when a run is planned."""
    from test_pretrained_checkpoint import save_bert_checkpoint

    from zoo.core.loading import get_zoo

    zoo = get_zoo()
    by_task = {
        "language-modeling": "shakespeare",
        "classification": "rotten_tomatoes",
        "next-item": "digits",
        "seq2seq": "digits-transduction",
    }
    save_bert_checkpoint(tmp_path / "bert", positions=512)  # what a checkpoint preset is given
    planned = set()
    for name, preset in zoo.catalogue.models.items():
        tasks = zoo.architectures.get(preset.architecture).tasks
        given = {"pretrained": str(tmp_path / "bert")} if preset.tokenizer == "pretrained" else {}
        # its architecture's tasks first; then the others (a decoder is also a prefix LM)
        order = [task for task in tasks if task in by_task] + [t for t in by_task if t not in tasks]
        plan = plan_on_a_task(name, [by_task[task] for task in order], given)
        for key, value in preset.overrides.items():
            section = next(c for c in plan.configs.values() if c is not None and hasattr(c, key))
            assert getattr(section, key) == value, (name, key)
        planned.add(name)
    assert {"decoder-char", "decoder-char-nanogpt", "decoder-bpe"} <= planned
