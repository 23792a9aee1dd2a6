"""User mistakes that were answered with a raw exception, silently accepted, or with a
misleading message: each is one clear line and exit 2, before anything trains."""

from __future__ import annotations

import os

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.records.store import Store

SPACE = ["--space", "lr=log(1e-4,1e-2)"]


def one_line(result, says: str) -> str:
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result
    return lines[0]


def nothing_recorded():
    with Store() as store:
        assert store.rows() == []


def test_a_negative_sampler_seed_is_exit_2(tiny_text):
    result = run_cli(
        "tune", "decoder-char", "--on", tiny_text, "--trials", 1, *SPACE, "--sampler-seed", -1
    )
    one_line(result, "sampler seed must be a whole number from 0 to 4294967295, not -1")


@pytest.mark.parametrize("option", ["--text-column", "--task", "--label-column"])
def test_an_empty_column_or_task_is_refused_not_ignored(tiny_text, option):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 1, *TINY_DECODER, option, "")
    one_line(result, f"{option} is empty")
    nothing_recorded()


def test_a_presets_key_that_the_chosen_task_lacks_names_the_preset(tiny_text):
    line = one_line(
        run_cli("run", "bert-finetune", tiny_text, "--steps", 1), "preset bert-finetune"
    )
    assert "sets 'epochs'" in line and "Unknown config key" not in line


def test_a_storage_password_is_never_echoed(tiny_text):
    url = "postgresql://u:SECRETPW@127.0.0.1:1/db"
    result = run_cli(
        "tune", "decoder-char", "--on", tiny_text, "--trials", 1, *SPACE, "--storage", url
    )
    assert result.code == 2, result
    assert "SECRETPW" not in result.err and "SECRETPW" not in result.out and "u:***@" in result.err


def test_a_tunes_storage_cannot_be_zoos_own_store(tiny_text):
    store = os.path.join(os.environ["ZOO_HOME"], "zoo.db")
    result = run_cli(
        "tune",
        "decoder-char",
        "--on",
        tiny_text,
        "--trials",
        1,
        *SPACE,
        "--storage",
        f"sqlite:///{store}",
    )
    one_line(result, "that is zoo's own store")
    nothing_recorded()
