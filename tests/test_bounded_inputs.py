"""Sizes a user can set are bounded before anything is allocated: `predict` input is read
in bounded lines and its bytes counted as read (pipes and devices too), and dataset
settings are checked against an estimate of what they need."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.core.limits import MAX_PREDICT_TEXT_BYTES


@pytest.fixture
def run_id(tiny_text, one_thread):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--json")
    assert result.code == 0, result
    return json.loads(result.out)["run_id"]


# Runs a command and writes its peak memory (KiB) to a file. The command is forked from this
# small interpreter, not from the test process: on Linux a process's peak counts the memory of
# the process it was forked from (the test's, torch included), which would hide its own.
PEAK_OF = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def predict_from(run_id: str, source: list[str], name: str, tmp_path):
    """`zoo predict RUN --file NAME` fed by the command ``source`` through a pipe: its exit
    code, standard error, own peak memory in bytes and wall seconds."""
    began = time.time()
    peak = tmp_path / "peak"
    feed = subprocess.Popen(source, stdout=subprocess.PIPE)
    predict = subprocess.run(
        [sys.executable, "-c", PEAK_OF, peak, sys.executable, "-m", "zoo", "predict", run_id]
        + ["--file", name],
        stdin=feed.stdout,
        capture_output=True,
        text=True,
    )
    feed.stdout.close()
    feed.kill()
    feed.wait()
    return predict.returncode, predict.stderr, int(peak.read_text()) * 1024, time.time() - began


@pytest.mark.slow
@pytest.mark.parametrize("name", ["/dev/stdin", "-"])
def test_200_mb_of_zeros_on_a_pipe_is_exit_2_within_seconds_holding_none_of_it(
    run_id, name, tmp_path
):
    # The same refusal after 1.1 MB: what Python, zoo (and whatever torch build this machine
    # has) take on this path, with no more input than one line too long.
    too_long = ["head", "-c", "1100000", "/dev/zero"]
    code, err, baseline, baseline_seconds = predict_from(run_id, too_long, name, tmp_path)
    assert code == 2 and "line 1 is longer than 1 MiB" in err, err
    zeros = ["head", "-c", "200000000", "/dev/zero"]
    code, err, peak, seconds = predict_from(run_id, zeros, name, tmp_path)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "line 1 is longer than 1 MiB" in err, err
    assert peak - baseline < 32 * 2**20, (peak, baseline)  # a bounded line, not 200 MB
    assert seconds < 2 * baseline_seconds + 10  # it stops at the first MiB


def test_the_bytes_read_are_capped_not_the_size_the_system_reports(monkeypatch, tmp_path):
    from zoo.cli import options

    monkeypatch.setattr("zoo.core.limits.MAX_PREDICT_BYTES", 1000)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c", f"open({str(fifo)!r}, 'w').write('short line\\n' * 500)"]
    )
    try:
        with pytest.raises(Exception, match="holds more than 0 MiB"):
            options.read_texts(str(fifo))
    finally:
        writer.kill()
        writer.wait()


def test_one_overlong_line_is_refused_before_it_is_tokenized(tmp_path):
    from zoo.cli import options
    from zoo.errors import ZooError

    path = tmp_path / "long.txt"
    path.write_text("ok\n" + "x" * (MAX_PREDICT_TEXT_BYTES + 5) + "\n")
    with pytest.raises(ZooError, match="line 2 is longer than 1 MiB"):
        options.read_texts(str(path))


def test_texts_are_predicted_in_bounded_groups():
    from zoo.cli.options import batches_of_texts

    groups = list(batches_of_texts(["a" * 600, "b" * 600, "c"], max_bytes=1000))
    assert groups == [["a" * 600], ["b" * 600, "c"]]
    assert [len(g) for g in batches_of_texts(["x"] * 2500)] == [1024, 1024, 452]


@pytest.mark.parametrize(
    "setting, maximum",
    [
        ("max_len=65536", "at most 250"),
        ("max_len=512", "at most 250"),
        ("train_size=16777216", "at most 2,0"),
    ],
)
def test_digits_settings_beyond_the_budget_are_refused_before_anything_is_built(setting, maximum):
    began = time.time()
    result = run_cli("run", "digits-char", "digits", "--steps", 1, "--set", f"dataset.{setting}")
    assert result.code == 2, result
    assert len(result.err.strip().splitlines()) == 1, result.err
    name = setting.split("=")[0]
    assert f"dataset.{name} = " in result.err and maximum in result.err, result.err
    assert time.time() - began < 20


@pytest.mark.parametrize("max_len", [32, 96])
def test_the_digits_estimate_bounds_what_the_rule_tables_take(max_len):
    import tracemalloc

    from zoo.plugins.digits.data import DigitsDataConfig, check_identifiable, rules, table_cost

    config = DigitsDataConfig(max_len=max_len)
    count = sum(len(rules(family, config)) for family in config.families)
    tracemalloc.start()
    try:
        check_identifiable(config)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = table_cost(config, max_len, count)[0]
    assert peak <= estimate <= 3 * peak, (peak, estimate)


def test_generated_tokens_are_bounded_before_generating(run_id):
    from zoo.core.limits import MAX_GENERATE_TOKENS

    result = run_cli("generate", run_id, "--tokens", MAX_GENERATE_TOKENS + 1)
    assert result.code == 2 and f"at most {MAX_GENERATE_TOKENS:,}" in result.err, result
    assert run_cli("generate", run_id, "--tokens", 5).code == 0


def test_more_sweep_workers_than_memory_holds_are_refused_before_planning(tiny_text, monkeypatch):
    from zoo.sweeps import local

    monkeypatch.setattr(local, "physical_memory", lambda: 4 * 2**30)  # any machine: 4 GiB
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--jobs", 9, *TINY_DECODER)
    assert result.code == 2, result
    assert "--jobs 9 needs about 4 GiB" in result.err and "at most 8" in result.err
    assert "sweep:" not in result.err  # nothing planned, nothing trained


@pytest.mark.slow
def test_a_sweep_starts_no_more_workers_than_it_has_cells(tiny_text, one_thread):
    result = run_cli(
        "sweep", "decoder-char", "--on", tiny_text, "--jobs", 6, "--steps", 2, *TINY_DECODER
    )
    assert result.code == 0, result
    assert "running on 1 worker process, " in result.err
    # with the thread count --jobs 6 gives a worker, however few cells are left to run
    from zoo.sweeps.local import available_cores

    assert f" {max(1, available_cores() // 6)} thread(s) each" in result.err


def test_tune_seeds_are_bounded_before_the_search(tiny_text):
    result = run_cli(
        "tune",
        "decoder-char",
        "--on",
        tiny_text,
        "--trials",
        1,
        "--seeds",
        10**6,
        "--space",
        "lr=log(1e-4,1e-2)",
    )
    assert result.code == 2 and "at most 2,000" in result.err, result
    assert "study" not in result.err  # refused before any study or trial
