"""Run ids and run paths are data: an id from the store or from the user must be a run id,
and a run's folder must resolve inside ZOO_HOME; anything else is refused with one line by
every command that opens a run folder, and nothing is read or written outside."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.errors import ZooError
from zoo.records.paths import check_run_id, run_folder
from zoo.records.store import Store, home

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize(
    "bad",
    [
        "../x",
        "../../../../tmp/bw/escape",
        "/etc",
        "a/b",
        ".",
        "..",
        ".hidden",
        "a\x00b",
        "",
        "x" * 200,
        7,
    ],
)
def test_what_is_not_a_run_id_is_refused_in_one_line(bad):
    with pytest.raises(ZooError) as caught:
        check_run_id(bad)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_a_well_formed_id_is_a_folder_under_zoo_home():
    assert run_folder("20261126-040944-502b") == home() / "20261126-040944-502b"


@pytest.fixture
def escaped(tiny_text, tmp_path):
    """A finished run whose store row was edited to `../../escape` and whose folder was moved
    there, as an attacker with the store file could: what resume, export, generate and
    predict must refuse to follow."""
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 3, *TINY_DECODER, "--json")
    assert result.code == 0, result
    run_id = json.loads(result.out)["run_id"]
    bad = "../../escape"
    outside = (home() / bad).resolve()
    shutil.move(home() / run_id, outside)
    with sqlite3.connect(home() / "zoo.db") as db:
        db.execute("UPDATE runs SET id = ?, status = 'interrupted' WHERE id = ?", (bad, run_id))
    before = sorted(p.name for p in outside.iterdir())
    yield bad
    assert sorted(p.name for p in outside.iterdir()) == before  # nothing written there


@pytest.mark.parametrize(
    "command",
    [["resume"], ["export", "{tmp}/out"], ["generate", "--tokens", "3"], ["predict", "hello"]],
)
def test_an_id_leading_out_of_zoo_home_is_refused_by_every_command(escaped, command, tmp_path):
    args = [a.format(tmp=tmp_path) for a in command]
    result = run_cli(args[0], escaped, *args[1:])
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "'../../escape' is not a run id" in lines[0], result.err
    assert not (tmp_path / "out").exists()


def test_a_run_folder_that_links_out_of_zoo_home_is_refused(tiny_text, tmp_path):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 3, *TINY_DECODER, "--json")
    run_id = json.loads(result.out)["run_id"]
    elsewhere = tmp_path / "elsewhere"
    shutil.move(home() / run_id, elsewhere)
    (home() / run_id).symlink_to(elsewhere, target_is_directory=True)
    for args in (["generate", run_id, "--tokens", "3"], ["predict", run_id, "hi"]):
        refused = run_cli(*args)
        assert refused.code == 2, refused
        assert "leads outside the runs folder" in refused.err
        assert len(refused.err.strip().splitlines()) == 1


def test_the_store_refuses_to_record_a_run_under_a_path_like_id():
    with Store() as store, pytest.raises(ZooError, match="is not a run id"):
        store.insert("../outside", status="running")
