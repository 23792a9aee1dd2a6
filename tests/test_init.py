"""`zoo run MODEL DATASET --init RUN_ID`: a run that starts from another run's tokenizer and
weights, across tasks and datasets, recorded so that reproduce, resume and compare follow it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY_ANY, run_cli

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest


def run_json(*args) -> dict:
    result = run_cli("run", *args, "--json")
    assert result.code == 0, result
    return json.loads(result.out)


@pytest.fixture
def pretrained_decoder(tiny_text):
    """A tiny character decoder trained as a language model on plain text."""
    return run_json("decoder-char", tiny_text, "--steps", 6, *TINY_ANY, "--set", "lr=1e-2")


@pytest.fixture
def labelled(tmp_path):
    rows = ["text,label"] + [
        f"the {'quick' if i % 2 else 'lazy'} fox {i},{'a' if i % 2 else 'b'}" for i in range(80)
    ]
    path = tmp_path / "labelled.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.slow
def test_a_language_models_body_starts_a_classifier(pretrained_decoder, labelled):
    from zoo.operations.reload import load_trained
    from zoo.records.store import home

    source = pretrained_decoder["run_id"]
    tuned = run_json(
        "decoder-char",
        labelled,
        "--init",
        source,
        "--steps",
        4,
        *TINY_ANY,
        "--set",
        "lr=1e-12",
        "--set",
        "min_lr=1e-12",
        "--set",
        "warmup_steps=0",
    )
    assert tuned["task"] == "classification"
    init = json.loads((home() / tuned["run_id"] / "config.json").read_text())["init"]
    assert init["run_id"] == source and init["task"] == "language-modeling"
    assert init["fresh"] == ["cls_head.bias", "cls_head.weight"]  # the new head, listed
    assert "tok_emb.weight" in init["copied"] and "ln_f.weight" in init["copied"]
    assert any(name.startswith("blocks.0.") for name in init["copied"])
    # The copied tensors are the source's (a learning rate of 1e-12 leaves them as they were),
    # and the tokenizer is the source's file.
    before, after = load_trained(source).model.state_dict(), load_trained(tuned["run_id"])
    for name in init["copied"]:
        assert np.allclose(before[name], after.model.state_dict()[name], atol=1e-6), name
    assert (home() / tuned["run_id"] / "tokenizer.json").read_text() == (
        home() / source / "tokenizer.json"
    ).read_text()


@pytest.mark.slow
def test_the_source_is_part_of_the_config_hash_and_reproduce_follows_it(
    pretrained_decoder, labelled
):
    from zoo.records.store import Store

    source = pretrained_decoder["run_id"]
    plain = run_json("decoder-char", labelled, "--steps", 4, *TINY_ANY)
    tuned = run_json("decoder-char", labelled, "--init", source, "--steps", 4, *TINY_ANY)
    with Store() as store:
        hashes = {store.get(r["run_id"])["config_hash"] for r in (plain, tuned)}
    assert len(hashes) == 2
    assert tuned["metrics"]["val_loss"] != plain["metrics"]["val_loss"]

    reproduced = run_cli("reproduce", tuned["run_id"], "--json")
    assert reproduced.code == 0, reproduced
    report = json.loads(reproduced.out)
    assert report["match"], report
    with Store() as store:
        assert store.get(report["rerun_id"])["config"]["init"]["run_id"] == source

    compared = run_cli("compare", "--metric", "val_accuracy")
    assert compared.code == 0 and f"init={source}" in compared.out, compared

    shown = run_cli("show", tuned["run_id"])
    assert f"started from run {source} " in shown.out, shown
    file = Path(labelled).parent / "again.toml"  # zoo show --config trains it again, from it
    file.write_text(run_cli("show", tuned["run_id"], "--config").out, encoding="utf-8")
    again = run_cli("run", "--config", file, "--json", "--quiet")
    assert again.code == 0, again
    rerun = json.loads(again.out)
    assert rerun["metrics"]["val_loss"] == tuned["metrics"]["val_loss"]


@pytest.mark.slow
def test_nothing_matching_or_a_removed_source_is_one_line(pretrained_decoder, labelled, tiny_text):
    from zoo.records.store import Store, home

    source = pretrained_decoder["run_id"]
    with Store() as store:
        before = [r["id"] for r in store.rows()]
    other_size = run_cli(
        "run",
        "decoder-char",
        labelled,
        "--init",
        source,
        "--steps",
        2,
        *TINY_ANY,
        "--set",
        "n_embd=8",
        "--set",
        "block_size=8",
        "--quiet",
    )
    assert other_size.code == 2 and "matches a parameter of this model" in other_size.err
    assert len(other_size.err.strip().splitlines()) == 1, other_size.err
    with Store() as store:  # refused: no failed row, no folder left behind
        assert [r["id"] for r in store.rows()] == before
    assert sorted(p.name for p in home().iterdir() if p.name[:1].isdigit()) == sorted(before)
    other_tokenizer = run_cli("run", "decoder-bpe", labelled, "--init", source)
    assert other_tokenizer.code == 2 and "char tokenizer" in other_tokenizer.err, other_tokenizer
    unknown = run_cli("run", "decoder-char", labelled, "--init", "nonexistent")
    assert unknown.code == 2 and len(unknown.err.strip().splitlines()) == 1, unknown

    tuned = run_json("decoder-char", labelled, "--init", source, "--steps", 2, *TINY_ANY)
    shutil.rmtree(home() / source)
    again = run_cli("run", "decoder-char", labelled, "--init", source, "--steps", 2, *TINY_ANY)
    assert again.code == 2 and "removed" in again.err, again
    reproduced = run_cli("reproduce", tuned["run_id"])
    assert reproduced.code == 2 and len(reproduced.err.strip().splitlines()) == 1, reproduced
    assert f"started from run {source}" in reproduced.err and "removed" in reproduced.err


@pytest.mark.slow
def test_the_python_api_starts_from_a_run(pretrained_decoder, labelled):
    import zoo

    source = pretrained_decoder["run_id"]
    run = zoo.run(
        "decoder-char",
        str(labelled),
        init=source,
        steps=2,
        n_layer=1,
        n_head=2,
        n_embd=16,
        block_size=16,
        batch_size=4,
        warmup_steps=2,
        quiet=True,
    )
    assert run.task == "classification"
    assert json.loads((run.folder / "config.json").read_text())["init"]["run_id"] == source
    with pytest.raises(zoo.ZooError, match=r"^init\b"):
        zoo.run("decoder-char", str(labelled), init="nonexistent", steps=2, quiet=True)


def test_a_source_whose_config_was_edited_to_another_shape_is_refused(
    pretrained_decoder, tiny_text
):
    """The source's config.json says n_embd=32 where its weights have 16: before, the new
    run copied whatever still matched and trained on, exit 0."""
    from zoo.records.store import Store, home

    source = pretrained_decoder["run_id"]
    path = home() / source / "config.json"
    config = json.loads(path.read_text())
    config["configs"]["model"]["n_embd"] = 2 * config["configs"]["model"]["n_embd"]
    path.write_text(json.dumps(config))
    with Store() as store:
        before = [r["id"] for r in store.rows()]
    result = run_cli(
        "run", "decoder-char", tiny_text, "--init", source, "--steps", 2, *TINY_ANY, "--quiet"
    )
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "builds a model its weights do not fit" in lines[0], result.err
    assert f"--init {source}: its config.json" in lines[0]
    with Store() as store:  # refused before training: no row
        assert [r["id"] for r in store.rows()] == before
