"""Files a run writes honour the umask, as open() would: a ZOO_HOME shared by a group is
readable by the group (atomic writes used to leave mkstemp's 0600)."""

from __future__ import annotations

import os
import stat

from conftest import TINY_DECODER, run_cli

from zoo.io import atomic_write_text, new_file_mode
from zoo.records.store import home


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def with_umask(umask: int, action):
    before = os.umask(umask)
    try:
        return action()
    finally:
        os.umask(before)


def test_an_atomic_write_gets_0666_less_the_umask(tmp_path):
    for umask, expected in ((0o002, 0o664), (0o022, 0o644), (0o077, 0o600)):
        path = tmp_path / f"file-{umask:o}"
        with_umask(umask, lambda path=path: atomic_write_text(path, "x"))
        assert mode(path) == expected
        assert with_umask(umask, new_file_mode) == expected


def test_every_file_of_a_run_is_group_readable_under_a_group_umask(tiny_text, one_thread):
    result = with_umask(
        0o002,
        lambda: run_cli("run", "decoder-char", tiny_text, "--steps", 3, *TINY_DECODER, "--json"),
    )
    assert result.code == 0, result
    (folder,) = [p for p in home().iterdir() if p.is_dir() and not p.name.startswith(".")]
    files = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    names = {p.name for p in files}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= names, names
    assert {p.name: mode(p) for p in files} == {p.name: 0o664 for p in files}
