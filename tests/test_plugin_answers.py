"""A plugin's answers are checked as user input is: an exporter's write() and check()
results have declared types, and a check that compared nothing, or reports a negative or
NaN difference, vouches for nothing. Anything else is one line naming the plugin, exit 2,
and nothing is written."""

import math
import shutil

import pytest
from conftest import TINY_DECODER, run_cli, train_once

from zoo.core import loading
from zoo.hookspecs import hookimpl


@pytest.fixture(scope="module")
def tiny_run_home(tmp_path_factory):
    base = tmp_path_factory.mktemp("answers")
    text = base / "tiny.txt"
    text.write_text("".join(f"line {i}: the quick brown fox {i % 7}.\n" for i in range(400)))
    run = ["run", "decoder-char", text, "--steps", 1, *TINY_DECODER, "--device", "cpu"]
    return base / "runs", train_once(base, {"run": run})["run"]["run_id"]


class Answers:
    """An exporter that writes nothing and answers what the test says."""

    write_answer: object = None
    check_answer: object = None

    @staticmethod
    def unsupported(trained):
        return None

    @staticmethod
    def write(trained, folder):
        return Answers.write_answer

    @staticmethod
    def check(trained, folder, texts):
        answer = Answers.check_answer
        return answer(texts) if callable(answer) else answer


class AnswersPlugin:
    @hookimpl
    def register_exporters(self, register):
        register("answers", Answers, description="test: answers as told", architectures=("*",))


@pytest.fixture
def exported(tiny_run_home, isolated):
    from zoo.records.store import home

    source, run_id = tiny_run_home
    shutil.copytree(source, home())
    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(AnswersPlugin(), loading.PluginInfo("test-answers", "test"))
    loading.reset_zoo(zoo)

    def export(write, check):
        Answers.write_answer, Answers.check_answer = write, check
        return run_cli("export", run_id, isolated / "out", "--format", "answers")

    export.run_id = run_id
    return export


GOOD_FACTS = {"summary": "nothing", "library_name": None, "usage": "print(1)"}


def good_check(texts):
    return {"max_difference": 0.0, "agree": True, "compared": len(texts)}


@pytest.mark.parametrize(
    "write, check, says",
    [
        (None, good_check, "write() returned NoneType, not a dict"),
        (["a"], good_check, "write() returned list, not a dict"),
        ({"summary": 3}, good_check, "write() returned summary as int, not str"),
        ({**GOOD_FACTS, "base": "x"}, good_check, "returned base as str, not dict or None"),
        (GOOD_FACTS, None, "check() returned NoneType, not a dict"),
        (GOOD_FACTS, {"max_difference": 0.0, "agree": True, "compared": 0}, "compared 0 texts"),
        (GOOD_FACTS, lambda t: {**good_check(t), "compared": len(t) + 1}, "it must compare 1 to"),
        (GOOD_FACTS, lambda t: {**good_check(t), "compared": True}, "not a count"),
        (GOOD_FACTS, lambda t: {**good_check(t), "max_difference": -1}, "not a number 0 or more"),
        (GOOD_FACTS, lambda t: {**good_check(t), "max_difference": math.nan}, "0 or more"),
        (GOOD_FACTS, lambda t: {**good_check(t), "max_difference": "0"}, "0 or more"),
        (GOOD_FACTS, lambda t: {**good_check(t), "agree": "yes"}, "not true or false"),
    ],
)
def test_an_exporters_junk_answer_is_one_line_naming_the_plugin(exported, write, check, says):
    result = exported(write, check)
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "exporter 'answers' from plugin 'test-answers'" in lines[0] and says in lines[0]
    assert "nothing was written" in lines[0]


def test_an_exporter_that_answers_as_declared_is_exported(exported, isolated):
    result = exported(GOOD_FACTS, good_check)
    assert result.code == 0, result
    assert (isolated / "out" / "README.md").is_file()


# -- names a plugin registers are words the command line takes --------------------------
def add(plugin) -> loading.PluginInfo:
    zoo = loading.build_zoo(entry_points=False)
    info = loading.PluginInfo("test-names", "test")
    added = zoo.add_plugin(plugin, info)
    return info if not added else None


class Presets:
    def __init__(self, *registrations):
        self.registrations = registrations

    @hookimpl
    def register_presets(self, register):
        for name, table in self.registrations:
            register(name, **table)


DECODER = {"architecture": "decoder", "tokenizer": "char"}


@pytest.mark.parametrize("name", ["--help", "-x", "two\nlines", "ends\n", "", "a b", "x" * 200])
def test_a_preset_name_the_command_line_cannot_take_is_refused(name):
    refused = add(Presets((name, DECODER)))
    assert refused is not None, name
    assert "must be letters, digits" in refused.error and "\n" not in refused.error


@pytest.mark.parametrize("name", ["--help", "-x", "two\nlines"])
def test_an_exporter_name_the_command_line_cannot_take_is_refused(name):
    class Exporters:
        @hookimpl
        def register_exporters(self, register):
            register(name, Answers, architectures=("*",))

    refused = add(Exporters())
    assert refused is not None and "exporter name" in refused.error, name
    assert "must be letters, digits" in refused.error and "\n" not in refused.error


def test_an_ensemble_preset_that_lists_itself_is_refused():
    refused = add(Presets(("small", DECODER), ("loop", {"members": ["small", "loop"]})))
    assert refused is not None
    assert "[models.loop] members lists 'loop' itself" in refused.error


def test_twenty_thousand_presets_load_in_linear_time():
    """A plugin's presets were checked for duplicates by a scan of all before them:
    10,000 took 8 s and 20,000 over 30 s; a set makes it about a second."""
    many = [(f"preset-{i}", {**DECODER, "set": {"n_layer": 1}}) for i in range(20_000)]
    zoo = loading.build_zoo(entry_points=False)
    import time

    began = time.monotonic()
    assert zoo.add_plugin(Presets(*many), loading.PluginInfo("test-many", "test"))
    assert time.monotonic() - began < 15
    assert "preset-19999" in zoo.catalogue.models


# -- a model card's metadata is what the Hub reads, not free text -----------------------
@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--license", "MIT", "the Hub writes it 'mit'"),
        ("--license", "apache2", "Did you mean: apache-2.0"),
        ("--license", "mit\n<script>", "Unknown license"),
        ("--license", "x" * 100_000, "Unknown license"),
        ("--base-model", "../../etc/passwd", "neither a Hub model id"),
        ("--base-model", "javascript:alert(1)", "neither a Hub model id"),
        ("--base-model", "org/model\nlicense: mit", "neither a Hub model id"),
        ("--base-model", "a" * 200, "neither a Hub model id"),
    ],
)
def test_card_metadata_that_is_no_hub_identifier_is_refused(exported, option, value, says):
    from zoo.records.store import home

    Answers.write_answer, Answers.check_answer = GOOD_FACTS, good_check
    result = run_cli("export", exported.run_id, home().parent / "card", option, value)
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.err
    assert not (home().parent / "card").exists()


def test_hub_licenses_other_and_a_local_run_as_base_model_are_taken(exported, isolated):
    from huggingface_hub import ModelCard

    Answers.write_answer, Answers.check_answer = GOOD_FACTS, good_check
    run_id = exported.run_id
    for license, base, folder in (
        ("cc-by-4.0", "google-bert/bert-base-uncased", "a"),
        ("other", run_id, "b"),
    ):
        given = ["--license", license, "--base-model", base, "--format", "answers"]
        result = run_cli("export", run_id, isolated / folder, *given)
        assert result.code == 0, result
        card = ModelCard.load(isolated / folder / "README.md")
        assert card.data.license == license and card.data.base_model == base
