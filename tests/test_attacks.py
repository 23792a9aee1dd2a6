"""Attacks and faults that once got past zoo, one test per hole: query injection through
--where, output paths that are not regular files, plugins that exit or raise
KeyboardInterrupt, store inserts that fail, sizes that cannot be allocated, and tampered
run folders. Each test failed before its fix."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import signal
import stat
import textwrap
import threading

import pandas as pd
import pytest
from conftest import TINY_DECODER, run_cli

from zoo.core import loading
from zoo.records.store import Store


def record(model, dataset, seed, value, **fields):
    """A finished run row written straight into the store."""
    run_id = f"{model}-{dataset}-{seed}"
    with Store() as store:
        store.insert(
            run_id,
            model=model,
            architecture=model.split("-")[0],
            dataset=dataset,
            task="language-modeling",
            seed=seed,
            params=1000 * (seed + 1),
            status="finished",
            config_hash=run_id,
            metrics={"val_bpc": value},
            duration=1.0,
            **fields,
        )
    return run_id


@pytest.fixture
def three_runs():
    for seed in range(2):
        record("decoder-char", "text", seed, 2.0 + seed)
        record("encoder-char", "text", seed, 3.0 + seed)
    record("digits-char", "other", 0, 1.5)


# -- query injection -------------------------------------------------------------------
def test_where_cannot_call_methods_to_write_files(three_runs, isolated):
    """The attack: DataFrame.query(engine='python') ran column methods, so a --where wrote
    a registry.toml naming a plugin module, which the next zoo command would import."""
    target = isolated / "registry.toml"
    attack = (
        f"model.str.replace('decoder-char', '[plugins]').to_csv({str(target)!r}) or model == 'x'"
    )
    result = run_cli("compare", "--where", attack)
    assert result.code == 2, result
    assert "a function or method call is not allowed" in result.err, result
    assert len(result.err.strip().splitlines()) == 1
    assert not target.exists()
    plain = run_cli("compare", "--where", f"model.to_csv({str(isolated / 'x.csv')!r})")
    assert plain.code == 2 and not (isolated / "x.csv").exists()


@pytest.mark.parametrize(
    "expression, says",
    [
        ("model.str.len() > 3", "call"),
        ("model.size > 0", "Unknown column 'model.size'"),  # a dotted name is a column name
        ("model[0] == 'd'", "indexing"),
        ("__import__('os').system('true')", "call"),
        ("(lambda: 1)() == 1", "call"),
        ("@model == 1", "not a valid condition"),
        ("[x for x in model] == 1", "not allowed"),
        ("(seed := 1) == 1", "assignment"),
        ("seed if seed else 1", "if/else"),
        ("model is None", "'is'"),
        ("model == 'a' & seed > 0", "write 'and'"),
        ("seed in model", "'in' takes a list"),
        ("model in [len]", "not a literal value"),
        ("10 ** 10 ** 10 > 1", "too large"),
        ("'a' * 1000000000 == model", "arithmetic on text"),
        ("nope == 1", "Unknown column 'nope'"),
        ("model", "is not a condition"),
        ("(" * 5000 + "1" + ")" * 5000, "at most 2000"),
        ("not " * 400 + "seed == 0", "nested too deeply"),
    ],
)
def test_where_refuses_everything_outside_the_whitelist(three_runs, expression, says):
    result = run_cli("compare", "--where", expression)
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zoo: error: --where"), result
    assert says in lines[0], (says, lines[0])


@pytest.mark.parametrize(
    "expression, models",
    [
        ("model == 'decoder-char'", ["decoder-char"]),
        ("model in ['decoder-char', 'digits-char']", ["decoder-char", "digits-char"]),
        ("model not in ('decoder-char',) and dataset == 'text'", ["encoder-char"]),
        ("not (model == 'decoder-char' or model == 'encoder-char')", ["digits-char"]),
        ("params / 1000 - 1 == 1", ["decoder-char", "encoder-char"]),  # seed 1 only
        ("val_bpc ** 2 > 9.5 and -seed < 1", ["encoder-char"]),
        ("1.9 < val_bpc <= 2.0 or error != None", ["decoder-char"]),
    ],
)
def test_where_keeps_what_it_promises(three_runs, expression, models):
    result = run_cli("compare", "--where", expression, "--status", "all", "--format", "csv")
    assert result.code == 0, result
    assert sorted(set(pd.read_csv(io.StringIO(result.out))["model"])) == models


# -- output paths ------------------------------------------------------------------------
def test_output_to_a_fifo_streams_and_leaves_the_fifo(three_runs, isolated):
    fifo = isolated / "table.pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run_cli("compare", "--output", fifo, "--format", "csv")
    reader.join(timeout=60)
    assert result.code == 0, result
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # not replaced by a regular file
    assert received and b"decoder-char" in received[0]


def test_output_to_a_device_streams_and_a_full_one_is_exit_2(three_runs, isolated):
    """The attack ran as root: --output /dev/full became a regular file. A clone of the
    device node in the test's folder shows the same without touching /dev."""
    full = isolated / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # /dev/full
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc.strerror}); needs root")
    result = run_cli("compare", "--output", full)
    assert result.code == 2, result
    assert result.err.strip() == f"zoo: error: cannot write {full}: No space left on device"
    assert stat.S_ISCHR(os.stat(full).st_mode)
    null = isolated / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null
    assert run_cli("compare", "--output", null).code == 0
    assert stat.S_ISCHR(os.stat(null).st_mode)


def test_output_through_a_symlink_writes_its_target(three_runs, isolated):
    target = isolated / "real.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    link = isolated / "link.csv"
    link.symlink_to(target)
    result = run_cli("compare", "--output", link, "--format", "csv")
    assert result.code == 0, result
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "decoder-char" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file keeps its permissions


def test_output_dash_is_stdout_and_a_folder_is_refused(three_runs, isolated):
    result = run_cli("compare", "--output", "-", "--format", "csv")
    assert result.code == 0 and "decoder-char" in result.out
    assert all(line.startswith("zoo: note: ") for line in result.err.splitlines())  # notes only
    folder = run_cli("compare", "--output", isolated)
    assert folder.code == 2 and "is a folder" in folder.err, folder
    assert not (isolated / "-").exists()


def test_plot_output_follows_symlinks_and_streams_to_fifos(isolated):
    from zoo.records.store import home

    run_id = record("decoder-char", "text", 0, 2.0)
    (home() / run_id).mkdir(parents=True)
    (home() / run_id / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"step": s, "train_loss": 3.0 - s / 10, "elapsed": s}) + "\n"
            for s in range(1, 6)
        )
    )
    target = isolated / "curve.png"
    link = isolated / "link.png"
    link.symlink_to(target)
    result = run_cli("plot", run_id, "--plot", link)
    assert result.code == 0, result
    assert link.is_symlink() and target.read_bytes().startswith(b"\x89PNG")
    fifo = isolated / "curve.pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run_cli("plot", run_id, "--plot", fifo)
    reader.join(timeout=60)
    assert result.code == 0, result
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and received[0].startswith(b"\x89PNG")


# -- plugins that exit or interrupt ------------------------------------------------------
def local_plugin(work, monkeypatch, stem: str, body: str, strict: bool = False):
    (work / f"{stem}.py").write_text("from zoo.hookspecs import hookimpl\n" + textwrap.dedent(body))
    (work / "registry.toml").write_text(f'[plugins]\nmodules = ["{stem}.py"]\n')
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", stem)
    if strict:
        monkeypatch.setenv("ZOO_STRICT_PLUGINS", "1")
    loading.reset_zoo()


HOOK = "@hookimpl\ndef register_architectures(register):\n    {}\n"


@pytest.mark.parametrize(
    "body, says",
    [
        ("import sys\nsys.exit(0)\n", "it called sys.exit(0)"),
        ("raise SystemExit(3)\n", "it called sys.exit(3)"),
        ("raise KeyboardInterrupt\n", "it raised KeyboardInterrupt"),
        (HOOK.format("import sys; sys.exit()"), "it called sys.exit()"),
        (HOOK.format("raise KeyboardInterrupt"), "it raised KeyboardInterrupt"),
        (HOOK.format("raise GeneratorExit"), "GeneratorExit"),
    ],
)
def test_a_plugin_that_exits_or_interrupts_is_set_aside(isolated, monkeypatch, body, says):
    local_plugin(isolated, monkeypatch, "p_exit", body)
    result = run_cli("list", "architectures")
    assert result.code == 0, result
    assert "decoder" in result.out  # everything else keeps working
    (line,) = result.err.strip().splitlines()
    assert "plugin 'p_exit'" in line and "set aside" in line and says in line, line
    local_plugin(isolated, monkeypatch, "p_exit", body, strict=True)
    strict = run_cli("list", "architectures")
    assert strict.code == 2 and says in strict.err and "ZOO_STRICT_PLUGINS" in strict.err


@pytest.mark.slow
def test_zoo_run_still_trains_when_a_plugin_exits_at_import(isolated, monkeypatch, tiny_text):
    local_plugin(isolated, monkeypatch, "p_exit", "import sys\nsys.exit(0)\n")
    result = run_cli("run", "decoder-char", tiny_text, "--steps", "2", "--quiet", *TINY_DECODER)
    assert result.code == 0, result
    assert "status finished" in result.out and "set aside" in result.err


def test_a_lazy_plugin_module_that_exits_fails_the_lookup_with_exit_2(
    isolated, monkeypatch, tiny_text
):
    (isolated / "p_lazy_target.py").write_text("import sys\nsys.exit(5)\n")
    monkeypatch.syspath_prepend(str(isolated))
    local_plugin(
        isolated,
        monkeypatch,
        "p_lazy",
        HOOK.format(
            "register('junk', 'p_lazy_target:build', tasks=('language-modeling',), "
            "config='zoo.plugins.decoder:DecoderConfig')"
        ),
    )
    result = run_cli("run", "junk-char", tiny_text, "--steps", "1", "--quiet")
    assert result.code == 2, result
    assert "p_lazy_target:build" in result.err and "sys.exit(5)" in result.err
    with Store() as store:
        assert store.rows() == []


def test_a_real_ctrl_c_while_a_plugin_loads_still_stops_zoo(isolated, monkeypatch):
    """SIGINT delivered while plugin code runs is the user's: zoo stops (exit 130)."""
    local_plugin(
        isolated,
        monkeypatch,
        "p_slow",
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\n",
    )
    result = run_cli("list", "architectures")
    assert result.code == 130, result
    assert "interrupted" in result.err and "set aside" not in result.err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


COMMAND = (
    "def boom(args):\n    {}\n\n@hookimpl\ndef register_commands(register):\n"
    "    register('boom', boom, help='plugin code that exits')\n"
)
BUILD = (
    "def build(config, spec):\n    {}\n\n@hookimpl\ndef register_architectures(register):\n"
    "    register('junk', build, config='zoo.plugins.decoder:DecoderConfig',\n"
    "             tasks=('language-modeling',))\n"
)
EXITS = [
    ("import sys; sys.exit()", "it called sys.exit()"),
    ("import sys; sys.exit(0)", "it called sys.exit(0)"),
    ("raise KeyboardInterrupt", "it raised KeyboardInterrupt"),
]


def zoo_says(*args):
    """run_cli, failing the test (not the session) when a BaseException escapes zoo."""
    try:
        return run_cli(*args)
    except BaseException as exc:  # noqa: B036 - what escaping zoo looks like
        pytest.fail(f"{type(exc).__name__} escaped zoo")


@pytest.mark.parametrize("code, says", EXITS)
def test_a_plugin_command_that_exits_or_interrupts_is_its_failure(
    isolated, monkeypatch, code, says
):
    local_plugin(isolated, monkeypatch, "p_cmd", COMMAND.format(code))
    result = zoo_says("boom")
    assert result.code == 2, result
    (line,) = result.err.strip().splitlines()
    assert "command 'boom' from plugin 'p_cmd' failed" in line and says in line, line


def test_with_sigint_ignored_a_plugins_keyboard_interrupt_is_its_failure(isolated, monkeypatch):
    """Started with SIGINT ignored (nohup, a background job), zoo can get no Ctrl-C: every
    KeyboardInterrupt there is the code's own."""
    local_plugin(isolated, monkeypatch, "p_cmd", COMMAND.format("raise KeyboardInterrupt"))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = zoo_says("boom")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.code == 2, result
    assert "it raised KeyboardInterrupt" in result.err


@pytest.mark.parametrize("code, says", EXITS)
def test_a_plugin_command_whose_arguments_exit_is_set_aside(isolated, monkeypatch, code, says):
    """Adding a command's arguments runs at every start: exiting there must not stop zoo."""
    local_plugin(
        isolated,
        monkeypatch,
        "p_args",
        COMMAND.replace("help='plugin code that exits'", "help='h', arguments=arguments")
        .replace(
            "def boom(args):\n    {}\n",
            "def boom(args):\n    return 0\n\ndef arguments(parser):\n    {}\n",
        )
        .format(code),
    )
    result = zoo_says("list", "architectures")
    assert result.code == 0, result
    assert "command 'boom' from plugin 'p_args' set aside" in result.err and says in result.err
    assert "decoder" in result.out


@pytest.mark.parametrize("code, says", EXITS)
def test_an_architecture_build_that_exits_or_interrupts_fails_the_run(
    isolated, monkeypatch, tiny_text, code, says
):
    local_plugin(isolated, monkeypatch, "p_build", BUILD.format(code))
    result = zoo_says("run", "junk-char", tiny_text, "--steps", "1", "--quiet")
    assert result.code == 2, result
    (line,) = result.err.strip().splitlines()
    assert "architecture 'junk' from plugin 'p_build' failed" in line and says in line, line
    with Store() as store:
        assert [row["status"] for row in store.rows()] == ["failed"]


@pytest.mark.slow
def test_loading_a_trained_run_whose_build_exits_is_exit_2(isolated, monkeypatch, tiny_text):
    local_plugin(
        isolated,
        monkeypatch,
        "p_build",
        BUILD.format(
            "import os, sys\n    if os.environ.get('P_BUILD_EXIT'):\n        sys.exit(0)\n"
            "    from zoo.plugins.decoder.model import build as decoder\n"
            "    return decoder(config, spec)"
        ),
    )
    trained = run_cli("run", "junk-char", tiny_text, "--steps", "2", "--json", *TINY_DECODER)
    assert trained.code == 0, trained
    monkeypatch.setenv("P_BUILD_EXIT", "1")
    result = zoo_says("eval", json.loads(trained.out)["run_id"], tiny_text)
    assert result.code == 2, result
    assert "architecture 'junk' from plugin 'p_build' failed: it called sys.exit(0)" in result.err


def test_a_real_ctrl_c_in_a_plugin_command_still_stops_zoo(isolated, monkeypatch):
    local_plugin(
        isolated,
        monkeypatch,
        "p_cmd",
        COMMAND.format(
            "import os, signal, time; os.kill(os.getpid(), signal.SIGINT); time.sleep(5)"
        ),
    )
    result = zoo_says("boom")
    assert result.code == 130, result
    assert "interrupted" in result.err and "failed" not in result.err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


# -- a trained run to attack, made once and copied into each test's ZOO_HOME --------------
@pytest.fixture(scope="module")
def trained_home(tmp_path_factory):
    """A finished language-modeling run (decoder-char) and a classification run
    (encoder-char), trained once; tests get a copy (see ``trained``)."""
    base = tmp_path_factory.mktemp("trained")
    text = base / "tiny.txt"
    text.write_text(
        "\n".join(
            f"line {i}: the quick brown fox jumps over the lazy dog {i % 7}." for i in range(400)
        )
        + "\n"
    )
    reviews = base / "reviews.csv"
    reviews.write_text(
        "text,label\n"
        + "\n".join(
            f"the film {i} was {'good and great' if i % 2 else 'bad and dull'},{'pos' if i % 2 else 'neg'}"
            for i in range(200)
        )
        + "\n"
    )
    saved = {k: os.environ.get(k) for k in ("ZOO_HOME", "ZOO_LOAD_PLUGINS")}
    os.environ.update(ZOO_HOME=str(base / "runs"), ZOO_LOAD_PLUGINS="")
    loading.reset_zoo()
    try:
        runs = {}
        for name, args in (
            ("lm", ["decoder-char", text, *TINY_DECODER]),
            (
                "cls",
                [
                    "encoder-char",
                    reviews,
                    "--set",
                    "n_layer=1",
                    "--set",
                    "n_head=2",
                    "--set",
                    "n_embd=16",
                    "--set",
                    "block_size=32",
                    "--set",
                    "batch_size=8",
                    "--set",
                    "eval_interval=3",
                ],
            ),
            (
                "decoder-cls",
                [
                    "decoder-char",
                    reviews,
                    "--set",
                    "n_layer=1",
                    "--set",
                    "n_head=2",
                    "--set",
                    "n_embd=16",
                    "--set",
                    "block_size=32",
                    "--set",
                    "batch_size=8",
                    "--set",
                    "eval_interval=3",
                ],
            ),
        ):
            result = run_cli("run", *args, "--steps", "6", "--json")
            assert result.code == 0, result
            runs[name] = json.loads(result.out)["run_id"]
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
        loading.reset_zoo()
    return base / "runs", runs


@pytest.fixture
def trained(trained_home, isolated):
    """(ZOO_HOME, {"lm": run id, "cls": run id}) for this test, a fresh copy."""
    from zoo.records.store import home

    source, runs = trained_home
    shutil.copytree(source, home())
    return home(), runs


def only_line(result) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zoo: error: "), result
    assert "Traceback" not in result.err and " object at 0x" not in result.err
    return lines[0]


# -- store failures ----------------------------------------------------------------------
@pytest.mark.parametrize("seed", ["18446744073709551616", "-5", "4294967296"])
def test_a_seed_out_of_range_is_exit_2_before_anything_is_written(isolated, tiny_text, seed):
    from zoo.records.store import home

    result = run_cli("run", "decoder-char", tiny_text, "--steps", "1", "--seed", seed)
    assert result.code == 2, result
    assert "--seed" in only_line(result) and "from 0 to 4294967295" in result.err
    assert not home().exists() or [p.name for p in home().iterdir()] in ([], ["zoo.db"])
    generate = run_cli("generate", "x", "--seed", "-1")
    assert generate.code == 2 and "--seed" in only_line(generate)


def test_the_python_api_checks_the_seed_too(isolated, tiny_text):
    from zoo.errors import ZooError
    from zoo.train.plan import PlanChoices, plan_run

    with pytest.raises(ZooError, match="seed must be a whole number"):
        plan_run("decoder-char", str(tiny_text), choices=PlanChoices(seed=2**64))


def test_a_failed_store_insert_leaves_no_run_folder(isolated, tiny_text, monkeypatch):
    from zoo.errors import ZooError
    from zoo.records.store import Store as RealStore
    from zoo.records.store import home

    def failing_insert(self, run_id, **fields):
        raise ZooError(f"cannot write the results store {self.path}: disk I/O error")

    monkeypatch.setattr(RealStore, "insert", failing_insert)
    result = run_cli("run", "decoder-char", tiny_text, "--steps", "1", "--quiet", *TINY_DECODER)
    assert result.code == 2 and "disk I/O error" in only_line(result)
    assert [p.name for p in home().iterdir() if not p.name.startswith("zoo.db")] == []


def test_a_read_only_store_is_exit_2_naming_it_and_leaves_no_folder(
    isolated, tiny_text, monkeypatch
):
    """As root, permissions cannot make zoo.db read-only, so the check that sees a read-only
    file or folder is made to see one; SQLite itself then opens the file read-only."""
    import zoo.records.store
    from zoo.records.store import home

    with Store():
        pass  # the store exists
    monkeypatch.setattr(zoo.records.store, "not_writable", lambda path: True)
    result = run_cli("run", "decoder-char", tiny_text, "--steps", "1", "--quiet", *TINY_DECODER)
    assert result.code == 2, result
    line = only_line(result)
    assert str(home() / "zoo.db") in line and "read-only" in line
    assert [p.name for p in home().iterdir() if not p.name.startswith("zoo.db")] == []


def test_sqlite_refusing_a_write_is_exit_2_naming_the_store(isolated):
    import sqlite3

    from zoo.errors import ZooError
    from zoo.records.store import home

    with Store():
        pass
    store = Store(read_only=False)
    store.conn.close()
    store.conn = sqlite3.connect(
        f"file:{home() / 'zoo.db'}?mode=ro", uri=True, isolation_level=None
    )  # what a read-only file gives
    with pytest.raises(ZooError, match=r"zoo\.db: it is read-only"):
        store.insert("r1", model="m")
    with pytest.raises(ZooError, match="too large|int too"):
        Store().insert("r2", model="m", seed=2**70)


# -- resource bounds ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "setting, says",
    [
        ("vocab_size=1000000000", "vocab_size = 1,000,000,000 is more than zoo can allocate"),
        ("block_size=1000000000", "block_size = 1,000,000,000 is more than zoo can allocate"),
        ("n_embd=24576", "needs about"),
    ],
)
def test_sizes_that_cannot_be_allocated_are_exit_2_before_a_run(isolated, tiny_text, setting, says):
    result = run_cli(
        "run",
        "decoder-bpe",
        tiny_text,
        "--steps",
        "1",
        "--set",
        setting,
        "--set",
        "n_layer=1024" if setting.startswith("n_embd") else "n_layer=1",
    )
    assert result.code == 2, result
    assert says in only_line(result)
    with Store() as store:
        assert store.rows() == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, settings, says",
    [
        (
            "llama-char",
            ["intermediate_size=1000000000"],
            "intermediate_size = 1,000,000,000 is more than zoo can allocate (at most 2,097,152)",
        ),
        (
            "gpt2-char",
            ["n_inner=1000000000"],
            "n_inner = 1,000,000,000 is more than zoo can allocate (at most 2,097,152)",
        ),
        # within the limit, but 8 layers of that MLP width need about 490 GiB (at 4 x width: 1.5 GiB)
        (
            "llama-char",
            ["intermediate_size=2000000", "n_embd=1024", "n_head=8", "n_layer=8"],
            "needs about",
        ),
        ("gpt2-char", ["n_inner=2000000", "n_embd=1024", "n_head=8", "n_layer=8"], "needs about"),
        # the encoder's MLP is mlp_ratio x n_embd wide: about 530 GiB (at 4 x width: 48 GiB)
        ("encoder-bpe", ["mlp_ratio=64", "n_embd=2048", "n_head=8", "n_layer=64"], "needs about"),
    ],
)
def test_mlp_widths_that_cannot_be_allocated_are_exit_2_before_a_run(
    isolated, tiny_text, model, settings, says
):
    pytest.importorskip("transformers")
    sets = [arg for setting in settings for arg in ("--set", setting)]
    result = run_cli("run", model, tiny_text, "--steps", "1", *sets)
    assert result.code == 2, result
    assert says in only_line(result)
    with Store() as store:
        assert store.rows() == []


@pytest.mark.parametrize(
    "model, settings, says",
    [
        (
            "fasttext-wordpunct",
            ["buckets=2000000000"],
            "buckets = 2,000,000,000 is more than zoo can allocate (at most 16,777,216)",
        ),
        ("fasttext-wordpunct", ["buckets=16000000", "dim=30000"], "needs about"),
        (
            "nbsvm-wordpunct",
            ["buckets=2000000000"],
            "buckets = 2,000,000,000 is more than zoo can allocate (at most 16,777,216)",
        ),
        ("nbsvm-wordpunct", ["char_buckets=20000000000"], "needs about"),  # 1.3 TB of weights
        # 2.5 TB: hidden is lstm's own field, within its declared limit
        ("lstm-wordpunct", ["hidden=30000", "n_layer=8"], "needs about"),
        (
            "lstm-wordpunct",
            ["hidden=100000"],
            "hidden = 100,000 is more than zoo can allocate (at most 32,768)",
        ),
    ],
)
def test_hashed_bigram_tables_that_cannot_be_allocated_are_exit_2_before_a_run(
    isolated, model, settings, says
):
    data = isolated / "reviews.csv"
    data.write_text(
        "text,label\n" + "".join(f"review {i},{'pos' if i % 2 else 'neg'}\n" for i in range(40)),
        encoding="utf-8",
    )
    sets = [arg for setting in settings for arg in ("--set", setting)]
    result = run_cli("run", model, data, "--steps", "1", *sets)
    assert result.code == 2, result
    assert says in only_line(result)
    with Store() as store:
        assert store.rows() == []


SHAPE = {"n_layer": 2, "n_head": 2, "n_embd": 64, "block_size": 16}


@pytest.mark.slow
@pytest.mark.parametrize(
    "architecture, settings",
    [
        ("decoder", SHAPE),  # 4 x n_embd always
        ("encoder", {**SHAPE, "mlp_ratio": 1}),
        ("encoder", {**SHAPE, "mlp_ratio": 8}),
        ("digits", {"blocks": 2, "heads": 2, "width": 64, "block_size": 16, "ff_ratio": 1}),
        ("digits", {"blocks": 2, "heads": 2, "width": 64, "block_size": 16, "ff_ratio": 8}),
        ("gpt2", {**SHAPE, "n_inner": 32}),
        ("bert", {**SHAPE, "intermediate_size": 512}),
        ("fasttext", {"dim": 32, "buckets": 5000}),
        ("lstm", {"n_embd": 64, "hidden": 48, "n_layer": 3}),
    ],
    ids=[
        "decoder",
        "encoder-mlp_ratio-1",
        "encoder-mlp_ratio-8",
        "digits-ff_ratio-1",
        "digits-ff_ratio-8",
        "gpt2-n_inner",
        "bert-intermediate_size",
        "fasttext",
        "lstm",
    ],
)
def test_the_memory_estimate_is_near_the_built_models_parameter_count(architecture, settings):
    """The estimate zoo checks against this machine's memory before a run (bounds.py: the
    architecture's own, else the transformer default) is within 10% of the built model's
    parameters at 16 bytes each, whatever its feed-forward width."""
    from zoo.core.limits import default_memory
    from zoo.train.model import TaskSpec

    if architecture in ("gpt2", "bert"):
        pytest.importorskip("transformers")
    entry = loading.get_zoo().architectures.get(architecture)
    config = entry.config_class()(**settings)
    task = "next-item" if architecture == "digits" else "classification"
    model = entry.load()(config, TaskSpec(task, vocab_size=12, num_classes=3))
    built = sum(p.numel() for p in model.parameters()) * 16
    estimate = entry.memory_estimate(config, 12) or default_memory(config, 12)
    assert abs(estimate - built) <= 0.1 * built, (estimate, built)


@pytest.mark.slow
def test_a_tampered_block_size_is_refused_before_allocation(trained):
    home, runs = trained
    path = home / runs["lm"] / "config.json"
    config = json.loads(path.read_text())
    config["configs"]["model"]["block_size"] = 10**9
    path.write_text(json.dumps(config))
    result = run_cli("generate", runs["lm"], "--tokens", "3")
    assert result.code == 2 and "block_size = 1,000,000,000" in only_line(result)


@pytest.mark.slow
def test_verify_batch_and_predict_file_are_bounded(trained, isolated):
    home, runs = trained
    result = run_cli("verify", runs["lm"], "--batch", "100000000")
    assert result.code == 2 and "--batch" in only_line(result) and "at most" in result.err
    big = isolated / "big.txt"
    with open(big, "wb") as handle:
        handle.truncate(65 * 2**20)  # sparse: 65 MiB of nothing
    result = run_cli("predict", runs["cls"], "--file", big)
    assert result.code == 2 and "MiB" in only_line(result)


# -- tampered run folders ----------------------------------------------------------------
def tamper_config(home, run_id, change):
    path = home / run_id / "config.json"
    config = json.loads(path.read_text())
    change(config)
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda c: c.pop("architecture"), "the key 'architecture' is missing"),
        (lambda c: c.pop("configs"), "the key 'configs' is missing"),
        (
            lambda c: c.update(architecture=["decoder"]),
            "'architecture' must be a string, not a list",
        ),
        (lambda c: c.update(seed="zero"), "'seed' must be an integer"),
        (lambda c: c.update(configs=[1, 2]), "'configs' must be an object, not a list"),
        (lambda c: c["configs"].update(model="big"), "configs.model must be an object or null"),
        (lambda c: c["configs"].update(train=7), "configs.train must be an object or null"),
        (lambda c: c["configs"]["model"].update(n_layers=3), "n_layers"),
        (lambda c: c["configs"]["model"].update(n_layer="two"), "n_layer"),
        (lambda c: c["spec"].update(colour="red"), "unknown key 'colour' in 'spec'"),
        (lambda c: c["spec"].update(vocab_size=None), "spec.vocab_size must be an integer"),
        (lambda c: c["configs"]["model"].update(n_embd=[[[[[[1]]]]]]), "nested too deeply"),
    ],
)
def test_a_tampered_config_json_is_exit_2_naming_it(trained, change, says):
    home, runs = trained
    path = tamper_config(home, runs["lm"], change)
    for command in (["generate", runs["lm"], "--tokens", "2"], ["resume", runs["lm"]]):
        result = run_cli(*command)
        assert result.code == 2, (command, result)
        line = only_line(result)
        if command[0] == "generate":
            assert str(path) in line and says in line, line


def test_a_deeply_nested_config_json_is_exit_2(trained):
    home, runs = trained
    path = home / runs["lm"] / "config.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = run_cli("generate", runs["lm"], "--tokens", "2")
    assert result.code == 2 and str(path) in only_line(result) and "nested" in result.err


@pytest.mark.parametrize(
    "content, says",
    [
        ('{not json}\n{"step": 1}\n', "line 1 is not valid JSON"),
        ("[1, 2]\n", "line 1 is a list, not a JSON object"),
        ("\x00\x01garbage\n", "line 1 is not valid JSON"),
    ],
)
def test_garbage_metrics_jsonl_is_exit_2_naming_it(trained, content, says):
    home, runs = trained
    path = home / runs["lm"] / "metrics.jsonl"
    path.write_text(content)
    result = run_cli("plot", runs["lm"], "--plot", "curve.png")
    assert result.code == 2 and str(path) in only_line(result) and says in result.err


def test_a_line_cut_short_by_a_crash_is_left_out_of_the_curve(trained):
    from zoo.records.folder import read_curve

    home, runs = trained
    path = home / runs["lm"] / "metrics.jsonl"
    whole = read_curve(path)
    path.write_text(path.read_text() + '{"step": 99, "train_lo')
    assert read_curve(path) == whole


@pytest.mark.parametrize(
    "content, says",
    [
        ('{"pos": 1}', "expected a non-empty list of class names"),
        ("[1, 2]", "expected a non-empty list of class names"),
        ("[]", "expected a non-empty list"),
        ('["neg"]', "1 class names for a model with 2 classes"),
        ("[[[[[[[[", "not valid JSON"),
    ],
)
def test_a_bad_classes_json_is_exit_2_naming_it(trained, content, says):
    home, runs = trained
    path = home / runs["cls"] / "classes.json"
    assert path.is_file()
    path.write_text(content)
    result = run_cli("predict", runs["cls"], "the film was good")
    assert result.code == 2, result
    assert str(path) in only_line(result) and says in result.err


# -- the store: a damaged row, a read-only home ----------------------------------------
def test_one_row_with_invalid_json_is_skipped_with_a_warning(trained):
    import sqlite3

    home, runs = trained
    with sqlite3.connect(home / "zoo.db") as conn:
        conn.execute("UPDATE runs SET metrics = '{broken' WHERE id = ?", (runs["lm"],))
    for command in (["runs"], ["compare", "--by", "model", "--metric", "test_accuracy"]):
        result = run_cli(*command)
        assert result.code == 0, (command, result)
        assert runs["cls"] in result.out or "encoder-char" in result.out
        warnings = result.err.strip().splitlines()
        assert warnings and all(
            runs["lm"] in w and "invalid JSON" in w and "skipped" in w for w in warnings
        ), result
    show = run_cli("show", runs["lm"])
    assert show.code == 2 and runs["lm"] in only_line(show) and "invalid JSON" in show.err
    assert run_cli("show", runs["cls"]).code == 0


def test_a_read_only_home_can_be_browsed(trained, monkeypatch, isolated):
    """An archived store (read-only folder and zoo.db): runs, show, compare, generate and
    predict work, reading it with SQLite's read-only mode; nothing is written. As root,
    permissions do not stop writes, so the check that sees them is made to see them."""
    import zoo.records.store

    home, runs = trained
    if os.geteuid() != 0:
        for path in [home / "zoo.db", home]:
            path.chmod(0o555)
    else:
        monkeypatch.setattr(zoo.records.store, "not_writable", lambda path: path.is_file())
    before = {p: p.stat().st_mtime_ns for p in home.rglob("*") if p.is_file()}
    try:
        for command in (
            ["runs"],
            ["show", runs["lm"]],
            ["compare", "--by", "model"],
            ["generate", runs["lm"], "--tokens", "3"],
            ["predict", runs["cls"], "the film was good"],
        ):
            result = run_cli(*command)
            assert result.code == 0, (command, result)
        with Store() as store:
            assert store.read_only
        written = run_cli("run", "decoder-char", "tiny.txt")
        assert written.code == 2
    finally:
        if os.geteuid() != 0:
            for path in [home, home / "zoo.db"]:
                path.chmod(0o755)
    assert {
        p: p.stat().st_mtime_ns
        for p in home.rglob("*")
        if p.is_file() and not p.name.startswith("zoo.db-")
    } == {p: t for p, t in before.items() if not p.name.startswith("zoo.db-")}


# -- budgets, the Hub, library noise -------------------------------------------------------
@pytest.mark.slow
def test_a_time_budget_too_small_for_a_step_still_trains_one(isolated, tiny_text):
    result = run_cli("run", "decoder-char", tiny_text, "--time", "1e-9", "--json", *TINY_DECODER)
    assert result.code == 0, result
    summary = json.loads(result.out)
    assert summary["status"] == "finished"
    with Store() as store:
        row = store.get(summary["run_id"])
    assert row["metrics"]["steps"] == 1 and math.isfinite(row["metrics"]["train_loss"])


def test_an_unknown_hub_id_without_network_fails_fast_with_one_line(isolated, monkeypatch):
    import time

    import zoo.data.hub

    monkeypatch.setattr(zoo.data.hub, "hub_reachable", lambda timeout=3.0: False)
    start = time.perf_counter()
    result = run_cli("run", "decoder-char", "nobody/nothing-here", "--steps", "1")
    assert time.perf_counter() - start < 15  # not 25 s of retries
    assert result.code == 2, result
    line = only_line(result)  # and no library log lines around it
    assert "nobody/nothing-here" in line and "cannot be reached" in line
    assert "Retrying" not in result.err


def test_verify_refuses_other_architectures_and_tasks(trained):
    """The README's promise: zoo verify checks decoder language-modeling runs only."""
    home, runs = trained
    other = run_cli("verify", runs["cls"])
    assert other.code == 2 and "decoder (or numpy) architecture" in only_line(other)
    assert "encoder run" in other.err
    task = run_cli("verify", runs["decoder-cls"])
    assert task.code == 2 and "language-modeling runs" in only_line(task)
    assert "classification run" in task.err
    assert run_cli("verify", runs["lm"]).code == 0


def test_an_unquoted_text_value_is_told_to_be_quoted():
    import pandas as pd

    from zoo.comparison.query import select
    from zoo.errors import ZooError

    frame = pd.DataFrame({"model": ["decoder-char"], "seed": [0]})
    with pytest.raises(ZooError, match="a text value is quoted, as in model == 'decoder-char'"):
        select(frame, "model == decoder-char")
    assert len(select(frame, "model == 'decoder-char'")) == 1
