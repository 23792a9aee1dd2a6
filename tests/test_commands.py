"""Plugins add commands through the `register_commands` hook; `zoo generate` and `zoo
predict` find their pipeline's function by the run's task."""

from __future__ import annotations

import contextlib
import io

import pytest
from conftest import run_cli, run_python

from zoo.cli.main import main
from zoo.core import loading
from zoo.core.process import YOUNG_GC_THRESHOLD
from zoo.errors import ZooError
from zoo.hookspecs import hookimpl
from zoo.tasks import Metric, Task

CALLS = []


def greet(args):
    """A handler named by a "module:function" string (this test module)."""
    CALLS.append(args)
    print(f"hello {args.name} x{args.times}")
    return 3 if args.name == "three" else None


def greet_arguments(parser):
    parser.add_argument("name")
    parser.add_argument("--times", type=int, default=1)


def refuse(args):
    raise ZooError("this command refuses politely")


class Greeter:
    @hookimpl
    def register_commands(self, register):
        register(
            "greet",
            "test_commands:greet",
            arguments=greet_arguments,
            help="say hello",
            description="Say hello to NAME.",
        )
        register("refuse", refuse, help="always an error")


def help_text(*args) -> str:
    """What `zoo ARGS --help` prints (argparse exits after printing help)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        main([*args, "--help"])
    assert exit_info.value.code == 0
    return out.getvalue()


def zoo_with(*plugins):
    zoo = loading.build_zoo(entry_points=False)
    for i, plugin in enumerate(plugins):
        zoo.add_plugin(plugin, loading.PluginInfo(f"plugin{i}", "test"))
    loading.reset_zoo(zoo)
    return zoo


def test_a_plugin_command_parses_its_own_arguments_and_runs_its_handler():
    zoo_with(Greeter())
    CALLS.clear()
    result = run_cli("greet", "world", "--times", "2")
    assert result.code == 0 and result.out == "hello world x2\n", result
    assert CALLS[0].name == "world" and CALLS[0].times == 2
    assert run_cli("greet", "three").code == 3  # the handler's return value is the exit code
    assert run_cli("greet", "x", "--times", "many").code == 2  # its arguments are checked
    refused = run_cli("refuse")
    assert refused.code == 2 and refused.err == "zoo: error: this command refuses politely\n"
    assert "say hello" in help_text()
    assert "added by plugin plugin0" in help_text("greet")


def test_a_misspelt_plugin_command_gets_a_did_you_mean():
    zoo_with(Greeter())
    result = run_cli("greeet", "x")
    assert result.code == 2 and "Did you mean: greet?" in result.err


class TakesRun:
    @hookimpl
    def register_commands(self, register):
        register("run", greet, arguments=greet_arguments)
        register("fine", greet, arguments=greet_arguments)


class BrokenArguments:
    @hookimpl
    def register_commands(self, register):
        register("broken", greet, arguments=lambda parser: parser.add_argument("--x", type="int"))


def test_a_command_that_clashes_or_cannot_build_is_set_aside_and_the_rest_work(monkeypatch):
    zoo_with(TakesRun(), BrokenArguments())
    result = run_cli("fine", "someone")
    assert result.code == 0 and result.out == "hello someone x1\n"
    assert "command 'run' from plugin 'plugin0' set aside" in result.err
    assert "command 'broken' from plugin 'plugin1' set aside" in result.err
    assert "usage: zoo run" in help_text("run")  # zoo's own run, untouched
    monkeypatch.setenv("ZOO_STRICT_PLUGINS", "1")
    strict = run_cli("fine", "someone")
    assert strict.code == 2 and "ZOO_STRICT_PLUGINS" in strict.err and not strict.out


@pytest.mark.parametrize(
    "call, problem",
    [
        (lambda r: r("Bad Name", greet), "command name 'Bad Name'"),
        (lambda r: r("ok", "no_colon"), "must look like 'module:function'"),
        (lambda r: r("ok", 42), "not a function"),
        (lambda r: r("ok", greet, arguments=42), "not a function"),
        (lambda r: (r("ok", greet), r("ok", greet)), "registered twice"),
    ],
)
def test_a_bad_command_registration_sets_the_plugin_aside(call, problem):
    class Bad:
        @hookimpl
        def register_commands(self, register):
            call(register)

    zoo = loading.build_zoo(entry_points=False)
    assert not zoo.add_plugin(Bad(), loading.PluginInfo("bad", "test"))
    assert problem in zoo.plugins["bad"].error
    assert "ok" not in zoo.commands


def test_the_numpy_plugin_adds_verify_and_help_imports_no_torch():
    zoo = loading.build_zoo(entry_points=False)
    assert zoo.commands.get("verify").plugin == "numpy"
    probe = (
        "import sys\nfrom zoo.cli.main import main\n"
        "for argv in (['--help'], ['verify', '--help'], ['list']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('torch' in sys.modules, 'numpy' in sys.modules)"
    )
    lines = run_python(probe)
    assert any("zoo verify [-h] [--batch BATCH]" in line for line in lines)
    assert lines[-1] == "False False"


# -- generate and predict are looked up on the run's pipeline ------------------------------
class Echo:
    """A pipeline for a task the core has never heard of, which can generate."""

    @staticmethod
    def run(job):
        raise AssertionError("not trained here")

    @staticmethod
    def generate(trained, prompt, tokens, *, temperature, top_k, seed):
        yield from (f"<{trained.run_id}:{i}:{seed}>" for i in range(tokens))


class Silent:
    @staticmethod
    def run(job):
        raise AssertionError("not trained here")


def declared(name: str) -> Task:
    return Task(
        name,
        loss="zoo.train.losses:cross_entropy",
        output="logits [B, V]",
        metrics=(Metric("loss", "lower"),),
        primary="loss",
        curve_metric="loss",
    )


class Pipelines:
    @hookimpl
    def register_pipelines(self, register):
        register(declared("echo-task"), Echo)
        register(declared("silent-task"), Silent)


def test_generate_uses_whatever_pipeline_offers_generation(monkeypatch):
    import zoo.operations.reload
    from zoo.operations.reload import LoadedRun

    zoo_with(Pipelines())
    runs = {"e1": "echo-task", "s1": "silent-task"}

    def reloaded(run_id, zoo=None, device="auto"):  # no model: the pipeline's answers only
        return LoadedRun(run_id, runs[run_id], {}, {}, None, None, None, None)

    monkeypatch.setattr(zoo.operations.reload, "load_trained", reloaded)
    result = run_cli("generate", "e1", "--prompt", "go", "--tokens", "2", "--seed", "5")
    assert result.code == 0 and result.out == "go<e1:0:5><e1:1:5>\n", result
    silent = run_cli("generate", "s1")
    assert silent.code == 2
    assert "silent-task pipeline offers no generation" in silent.err
    assert "silent-task pipeline offers no prediction" in run_cli("predict", "s1", "x").err


def test_only_the_program_tunes_the_garbage_collector():
    """`zoo` as a program collects young objects less often and freezes the rest before it
    exits (it saves a short run CPU time); main(argv) leaves the caller's
    collector alone."""
    probe = (  # the caller's settings are this Python's defaults, whatever its version
        "import gc, sys\nfrom zoo.cli.main import main\n"
        "before = gc.get_threshold(), gc.get_freeze_count()\n"
        "main(['list'])\nprint('caller', (gc.get_threshold(), gc.get_freeze_count()) == before)\n"
        "sys.argv = ['zoo', 'list']\nmain()\n"
        "print('program', gc.get_threshold()[0], gc.get_freeze_count() > before[1])"
    )
    lines = run_python(probe)
    assert "caller True" in lines and f"program {YOUNG_GC_THRESHOLD} True" in lines
