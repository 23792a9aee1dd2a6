"""Nothing zoo reads waits forever: a named pipe, a socket or a device named as a config
file is refused before it is opened, and a pipe zoo does read (standard input, a FIFO
given to predict --file) is read with a deadline."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import run_zoo

from zoo.errors import ZooError


def within(seconds: float, function, *args):
    """What ``function(*args)`` raised, or returned, within ``seconds``, on a daemon thread
    (so a call that hangs fails the test instead of stalling it)."""
    outcome: list = []

    def call():
        try:
            outcome.append(function(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"{function.__name__} still waiting after {seconds} s"
    return outcome[0]


@pytest.mark.parametrize("command", ["run", "sweep", "tune"])
def test_a_fifo_or_a_socket_as_config_is_refused_before_it_is_opened(tmp_path, command):
    from zoo.cli import config_file

    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    raised = within(5, config_file.read, fifo, command)
    assert isinstance(raised, ZooError) and "is a named pipe (FIFO)" in str(raised), raised
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    try:
        raised = within(5, config_file.read, tmp_path / "sock", command)
        assert isinstance(raised, ZooError) and "is a socket" in str(raised), raised
    finally:
        server.close()


@pytest.mark.slow
def test_zoo_sweep_dry_run_with_a_fifo_config_answers_at_once(tmp_path):
    os.mkfifo(tmp_path / "f")
    began = time.monotonic()
    result = run_zoo("sweep", "--dry-run", "--config", "f", cwd=tmp_path, timeout=30)
    assert time.monotonic() - began < 10
    assert result.returncode == 2, result
    assert result.stderr.strip().splitlines() == [
        "zoo: error: f is a named pipe (FIFO); a config file is a regular file"
    ]


def test_standard_input_that_never_ends_is_given_up_at_the_deadline(monkeypatch):
    """A pipe whose writer stays but writes nothing: the config read stops at the deadline."""
    code = (
        "import zoo.io, sys\n"
        "zoo.io.PIPE_SECONDS = 1\n"
        "try:\n"
        "    zoo.io.read_config_text('/dev/stdin')\n"
        "except zoo.io.ZooError as exc:\n"
        "    print(exc)\n"
    )
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    watchdog = threading.Timer(20, process.kill)  # a reader that hangs fails, not stalls
    watchdog.start()
    try:
        process.stdin.write("model = ")  # half a file, then silence
        process.stdin.flush()
        out = process.stdout.readline()
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
    assert "nothing more came through this pipe in 1 s" in out, out
    assert time.monotonic() - began < 20


def test_predict_file_from_a_fifo_nobody_writes_ends_at_the_deadline(tmp_path, monkeypatch):
    from zoo.cli import options

    monkeypatch.setattr("zoo.io.PIPE_SECONDS", 0.5)
    fifo = tmp_path / "texts"
    os.mkfifo(fifo)
    raised = within(10, options.read_texts, str(fifo))
    assert isinstance(raised, ZooError) and "nothing more came" in str(raised), raised


def test_predict_file_that_is_a_device_is_refused(tmp_path):
    from zoo.cli import options

    with pytest.raises(ZooError, match="it is a device"):
        options.read_texts("/dev/zero")


def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path):
    from zoo.cli import config_file

    path = tmp_path / "sweep.toml"
    path.write_bytes(b"\xef\xbb\xbfmodels = ['decoder-char']\n")
    assert config_file.read(path, "sweep") == {"models": ["decoder-char"]}
    yaml_path = tmp_path / "sweep.yaml"
    yaml_path.write_bytes(b"\xef\xbb\xbfmodels: [decoder-char]\n")
    assert config_file.read(yaml_path, "sweep") == {"models": ["decoder-char"]}


def test_yaml_keeps_on_yes_and_no_as_text(tmp_path):
    """YAML 1.1 reads on, yes and no as booleans: zoo sweep's own key `on` would be True."""
    from zoo.cli import config_file

    path = tmp_path / "sweep.yaml"
    path.write_text("models: [decoder-char]\non: [yes, no, on, off]\nseeds: 2\n")
    assert config_file.read(path, "sweep") == {
        "models": ["decoder-char"],
        "on": ["yes", "no", "on", "off"],
        "seeds": 2,
    }
    flag = tmp_path / "run.yaml"
    flag.write_text("model: decoder-char\ncompile: true\n")
    assert config_file.read(flag, "run")["compile"] is True
