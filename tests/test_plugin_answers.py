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
