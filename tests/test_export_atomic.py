"""Folders written whole (zoo.atomic_folders.atomic_folder, which `zoo export` writes through): the
target is absent or complete, whatever fails or is killed; target problems are one line;
two exports racing for one folder leave one complete export and one exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.atomic_folders import MARKER, atomic_folder
from zoo.errors import ZooError


def written(folder):
    """What a write put in ``folder``, less the marker that says zoo wrote it."""
    assert (folder / MARKER).is_file()
    return sorted(p.name for p in folder.iterdir() if p.name != MARKER)


def fill(folder, text="whole"):
    (folder / "a.txt").write_text(text)
    (folder / "b.txt").write_text(text)


def leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name)


def test_the_folder_appears_whole_and_only_at_the_end(tmp_path):
    target = tmp_path / "out"
    with atomic_folder(target) as staging:
        fill(staging)
        assert not target.exists()
    assert written(target) == ["a.txt", "b.txt"]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt(), OSError(28, "x")])
def test_a_failed_write_leaves_nothing(tmp_path, error):
    target = tmp_path / "out"
    with pytest.raises((RuntimeError, KeyboardInterrupt, ZooError)):
        with atomic_folder(target) as staging:
            fill(staging)
            raise error
    assert not target.exists() and leftovers(tmp_path) == []


def test_an_existing_folder_is_refused_or_replaced_whole_with_force(tmp_path):
    target = tmp_path / "out"
    with atomic_folder(target) as staging:
        (staging / "old.txt").write_text("old")
    with pytest.raises(ZooError, match="exists and is not empty.*force replacing it"):
        with atomic_folder(target) as staging:
            fill(staging)
    assert written(target) == ["old.txt"]
    with atomic_folder(target, force=True) as staging:
        fill(staging)
    assert written(target) == ["a.txt", "b.txt"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # old one gone


def test_force_never_replaces_a_folder_zoo_did_not_write(tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    with pytest.raises(ZooError, match="forcing replaces only a folder zoo wrote") as caught:
        with atomic_folder(target, force=True, what="export to") as staging:
            fill(staging)
    assert "\n" not in str(caught.value)
    assert sorted(p.name for p in target.iterdir()) == ["thesis.tex"]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("where", ["home", "inside", "run folder", "holds home", "via link"])
def test_a_target_that_is_in_or_holds_zoo_home_is_refused_even_with_force(isolated, where):
    home = Path(os.environ["ZOO_HOME"])
    (home / "run-1").mkdir(parents=True)
    (home / "run-1" / "config.json").write_text("{}")
    (home / "zoo.db").write_text("store")
    (isolated / "link").symlink_to(home, target_is_directory=True)
    target = {
        "home": home,
        "inside": home / "export",
        "run folder": home / "run-1",
        "holds home": home.parent,
        "via link": isolated / "link" / "export",
    }[where]
    for force in (False, True):
        with pytest.raises(ZooError, match="ZOO_HOME") as caught:
            with atomic_folder(target, force=force, what="export to") as staging:
                fill(staging)
        assert "\n" not in str(caught.value)
    assert (home / "zoo.db").read_text() == "store"
    assert (home / "run-1" / "config.json").read_text() == "{}"
    assert sorted(p.name for p in home.iterdir()) == ["run-1", "zoo.db"]


def test_an_empty_folder_is_filled(tmp_path):
    (tmp_path / "out").mkdir()
    with atomic_folder(tmp_path / "out") as staging:
        fill(staging)
    assert (tmp_path / "out" / "a.txt").read_text() == "whole"


def targets(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    return {
        "file": (tmp_path / "file", "it is a file"),
        "link to a file": (tmp_path / "link", "it is a symbolic link"),
        "link to a folder": (tmp_path / "dirlink", "it is a symbolic link"),
        "device": ("/dev/null", "it is a device"),
        "under a file": (tmp_path / "file" / "out", "is a file, not a folder"),
        "name too long": (tmp_path / ("n" * 300), "longer than 255 bytes"),
    }


@pytest.mark.parametrize(
    "case",
    ["file", "link to a file", "link to a folder", "device", "under a file", "name too long"],
)
def test_target_problems_are_one_line(tmp_path, case):
    target, reason = targets(tmp_path)[case]
    with pytest.raises(ZooError, match=reason) as caught:
        with atomic_folder(target, what="export to") as staging:
            fill(staging)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only folders")
def test_a_read_only_parent_is_one_line(tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        with pytest.raises(ZooError, match="is not writable"):
            with atomic_folder(parent / "out") as staging:
                fill(staging)
    finally:
        parent.chmod(0o755)


KILLED = """
import sys, time
from pathlib import Path
from zoo.atomic_folders import atomic_folder
with atomic_folder(sys.argv[1]) as staging:
    (Path(staging) / "half.txt").write_text("half")
    print("writing", flush=True)
    time.sleep(600)
"""


def test_a_killed_write_leaves_no_target_and_the_next_write_clears_its_remains(tmp_path):
    target = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(target)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "writing"
    assert leftovers(tmp_path)  # a live write's temporary folder and its lock
    with atomic_folder(tmp_path / "other") as staging:  # not beside the same name: kept
        fill(staging)
    process.kill()
    process.wait()
    assert not target.exists()
    with atomic_folder(target) as staging:
        fill(staging)
    assert written(target) == ["a.txt", "b.txt"]
    assert leftovers(tmp_path) == []


def test_the_next_write_into_the_same_parent_clears_remains_of_any_name(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(tmp_path / "killed")], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "writing"
    process.kill()
    process.wait()
    assert leftovers(tmp_path)  # the killed write's folder and lock
    with atomic_folder(tmp_path / "another") as staging:
        fill(staging)
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "killed").exists() and (tmp_path / "another").is_dir()


def test_a_live_write_beside_is_not_cleared(tmp_path):
    target = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "writing"
        with pytest.raises(ZooError):  # this one finishes first; the live one is left alone
            with atomic_folder(target) as staging:
                fill(staging)
                os.mkdir(target)
                (target / "first.txt").write_text("first")
        assert len([p for p in leftovers(tmp_path) if not p.endswith(".lock")]) == 1
    finally:
        process.kill()
        process.wait()


@pytest.mark.slow
def test_two_concurrent_exports_leave_one_complete_export_and_one_exit_2(
    tiny_text, tmp_path, one_thread
):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--json")
    run_id = json.loads(result.out)["run_id"]
    target = tmp_path / "exported"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    exports = [
        subprocess.Popen(
            [sys.executable, "-m", "zoo", "export", run_id, str(target)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = [(p.wait(timeout=300), p.stderr.read()) for p in exports]
    assert sorted(code for code, _ in outcomes) == [0, 2], outcomes
    (refusal,) = [err for code, err in outcomes if code == 2]
    assert len(refusal.strip().splitlines()) == 1, refusal
    alone = tmp_path / "alone"  # the same export on its own: what complete means
    assert run_cli("export", run_id, alone).code == 0
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in alone.iterdir())
    for name in ("model.safetensors", "tokenizer.json"):
        assert (target / name).read_bytes() == (alone / name).read_bytes()
    assert leftovers(tmp_path) == []


def test_export_refuses_a_file_target_before_any_work(tiny_text, tmp_path):
    (tmp_path / "taken").write_text("mine")
    result = run_cli("export", "nosuchrun", tmp_path / "taken")
    assert result.code == 2, result
    assert result.err.strip().splitlines() == [
        f"zoo: error: cannot export to {tmp_path / 'taken'}: it is a file; name a new folder"
    ]


@pytest.mark.parametrize("where", ["home", "run folder", "holds home"])
def test_export_into_zoo_home_is_exit_2_and_the_store_is_intact(isolated, where):
    from zoo.records.store import Store

    home = Path(os.environ["ZOO_HOME"])
    with Store() as store:
        store.insert("run-1", model="decoder-char", dataset="text", seed=0, status="finished")
    (home / "run-1").mkdir(parents=True, exist_ok=True)
    (home / "run-1" / "config.json").write_text("{}")
    target = {"home": home, "run folder": home / "run-1", "holds home": home.parent}[where]
    before = sorted(p.name for p in home.iterdir())
    result = run_cli("export", "run-1", target, "--force")
    assert result.code == 2, result
    assert len(result.err.strip().splitlines()) == 1 and "ZOO_HOME" in result.err, result
    assert sorted(p.name for p in home.iterdir()) == before
    assert (home / "run-1" / "config.json").read_text() == "{}"
    listed = run_cli("runs", "--json")
    assert listed.code == 0 and "run-1" in listed.out, listed


def test_a_full_disk_inside_a_writer_that_is_not_python_is_one_line(tmp_path):
    class SafetensorError(Exception):  # what safetensors raises on a full disk
        pass

    with pytest.raises(ZooError, match="no space left on the device") as caught:
        with atomic_folder(tmp_path / "out", what="export to") as staging:
            fill(staging)
            raise SafetensorError(
                "Error while serializing: IoError(Os { code: 28, kind: "
                'StorageFull, message: "No space left on device" })'
            )
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []
