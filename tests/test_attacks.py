"""Attacks and faults that once got past zoo, one test per hole: query injection through
--where, output paths that are not regular files, plugins that exit or raise
KeyboardInterrupt, store inserts that fail, sizes that cannot be allocated, and tampered
run folders. Each test failed before its fix."""
from __future__ import annotations

import io
import json
import os
import stat
import threading

import pandas as pd
import pytest

from conftest import run_cli
from zoo.store import Store


def record(model, dataset, seed, value, **fields):
    """A finished run row written straight into the store."""
    run_id = f"{model}-{dataset}-{seed}"
    with Store() as store:
        store.insert(run_id, model=model, architecture=model.split("-")[0], dataset=dataset,
                     task="language-modeling", seed=seed, params=1000 * (seed + 1),
                     status="finished", config_hash=run_id, metrics={"val_bpc": value},
                     duration=1.0, **fields)
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
    attack = (f"model.str.replace('decoder-char', '[plugins]').to_csv({str(target)!r}) "
              "or model == 'x'")
    result = run_cli("compare", "--where", attack)
    assert result.code == 2, result
    assert "a function or method call is not allowed" in result.err, result
    assert len(result.err.strip().splitlines()) == 1
    assert not target.exists()
    plain = run_cli("compare", "--where", f"model.to_csv({str(isolated / 'x.csv')!r})")
    assert plain.code == 2 and not (isolated / "x.csv").exists()


@pytest.mark.parametrize("expression, says", [
    ("model.str.len() > 3", "call"),
    ("model.size > 0", "attribute access"),
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
])
def test_where_refuses_everything_outside_the_whitelist(three_runs, expression, says):
    result = run_cli("compare", "--where", expression)
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zoo: error: --where"), result
    assert says in lines[0], (says, lines[0])


@pytest.mark.parametrize("expression, models", [
    ("model == 'decoder-char'", ["decoder-char"]),
    ("model in ['decoder-char', 'digits-char']", ["decoder-char", "digits-char"]),
    ("model not in ('decoder-char',) and dataset == 'text'", ["encoder-char"]),
    ("not (model == 'decoder-char' or model == 'encoder-char')", ["digits-char"]),
    ("params / 1000 - 1 == 1", ["decoder-char", "encoder-char"]),  # seed 1 only
    ("val_bpc ** 2 > 9.5 and -seed < 1", ["encoder-char"]),
    ("1.9 < val_bpc <= 2.0 or error != None", ["decoder-char"]),
])
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
    assert result.code == 0 and "decoder-char" in result.out and result.err == ""
    folder = run_cli("compare", "--output", isolated)
    assert folder.code == 2 and "is a folder" in folder.err, folder
    assert not (isolated / "-").exists()


def test_plot_output_follows_symlinks_and_streams_to_fifos(isolated):
    from zoo.store import home

    run_id = record("decoder-char", "text", 0, 2.0)
    (home() / run_id).mkdir(parents=True)
    (home() / run_id / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "train_loss": 3.0 - s / 10, "elapsed": s}) + "\n"
        for s in range(1, 6)))
    target = isolated / "curve.png"
    link = isolated / "link.png"
    link.symlink_to(target)
    result = run_cli("plot", run_id, "--output", link)
    assert result.code == 0, result
    assert link.is_symlink() and target.read_bytes().startswith(b"\x89PNG")
    fifo = isolated / "curve.pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run_cli("plot", run_id, "--output", fifo)
    reader.join(timeout=60)
    assert result.code == 0, result
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and received[0].startswith(b"\x89PNG")
