"""Config files and registries are bounded, plain data: at most 1 MiB is read from any
file or pipe, a device is refused before reading, YAML aliases are refused (no alias bomb),
and nesting and preset `base` chains are bounded: each is one line and exit 2, at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from conftest import run_cli

RUN = ["run", "decoder-char", "tiny.txt", "--steps", 1]


def one_line(result, says: str) -> str:
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result
    return lines[0]


def test_a_device_as_config_is_refused_at_once():
    began = time.monotonic()
    one_line(run_cli(*RUN, "--config", "/dev/zero"), "is a device")
    assert time.monotonic() - began < 1.0


def test_a_config_on_a_pipe_is_read_up_to_the_cap_only():
    """300 MB of comments on stdin: refused after 1 MiB, growing the reader by under 100 MB
    (peak resident memory before and after the read), in seconds."""
    code = (
        "import resource, sys\n"
        "from zoo.cli import config_file\n"
        "from zoo.errors import ZooError\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    config_file.read('/dev/stdin', 'run')\n"
        "except ZooError as exc:\n"
        "    print(exc, file=sys.stderr)\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(after - before, file=sys.stderr)\n"
    )
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    line = b"# " + b"x" * 1000 + b"\n"
    try:
        for _ in range(300_000):  # 300 MB, if zoo read it all
            process.stdin.write(line)
    except BrokenPipeError:
        pass  # zoo stopped reading, as it should
    finally:
        try:
            process.stdin.close()
        except BrokenPipeError:
            pass
    err = process.stderr.read().decode()
    process.stderr.close()
    process.wait(timeout=60)
    assert "holds more than 1,024 KiB" in err, err
    grown_kib = int(err.strip().splitlines()[-1])
    assert grown_kib < 100 * 1024, err
    assert time.monotonic() - began < 60  # seconds on a loaded machine; not 300 MB parsed


ALIAS_BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
set:
  i: [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize("where", ["set", "top"])
def test_a_yaml_alias_bomb_is_refused_within_a_second(isolated, where):
    path = isolated / "bomb.yaml"
    text = ALIAS_BOMB if where == "set" else "x: &x [1, 2]\nset:\n  n_layer: *x\n"
    path.write_text(text, encoding="utf-8")
    began = time.monotonic()
    one_line(run_cli(*RUN, "--config", path), "aliases (*name) are not allowed")
    assert time.monotonic() - began < 1.0


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
def test_deeply_nested_config_tables_are_exit_2(isolated, suffix):
    path = isolated / f"deep{suffix}"
    if suffix == ".toml":
        path.write_text("[set." + ".".join(["a"] * 3000) + "]\nx = 1\n", encoding="utf-8")
    else:
        path.write_text("set: " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    one_line(run_cli(*RUN, "--config", path), "deep")


def test_an_oversized_registry_file_is_exit_2(isolated):
    (isolated / "registry.toml").write_text("# x\n" * 300_000, encoding="utf-8")
    one_line(run_cli("list"), "holds more than 1,024 KiB")


@pytest.mark.parametrize("order", ["leaf first", "root first"])
def test_a_long_chain_of_base_presets_is_exit_2_naming_the_presets(isolated, order):
    lines = ['[models.p0]\narchitecture = "decoder"\ntokenizer = "char"\n']
    lines += [f'[models.p{i}]\nbase = "p{i - 1}"\n' for i in range(1, 2000)]
    if order == "leaf first":
        lines.reverse()
    (isolated / "registry.toml").write_text("".join(lines), encoding="utf-8")
    line = one_line(run_cli("list"), "builds on more than 32 presets")
    assert "[models.p" in line and " -> p" in line


def test_a_chain_of_a_few_base_presets_still_builds(isolated):
    lines = ['[models.p0]\narchitecture = "decoder"\ntokenizer = "char"\n']
    lines += [f'[models.p{i}]\nbase = "p{i - 1}"\n' for i in range(1, 20)]
    (isolated / "registry.toml").write_text("".join(lines), encoding="utf-8")
    assert run_cli("list", "models", "p19").code == 0


def test_a_cycle_of_base_presets_is_exit_2_naming_it(isolated):
    (isolated / "registry.toml").write_text(
        '[models.a]\nbase = "b"\n[models.b]\nbase = "a"\n', encoding="utf-8"
    )
    one_line(run_cli("list"), "base makes a cycle (a -> b -> a)")
