"""Pretrained checkpoints a user names: a missing folder, a Hub id with no network, a
pickled checkpoint and a checkpoint that does not fit the model are one line each, exit 2,
before any run is recorded."""

from __future__ import annotations

import time

import pytest
from conftest import run_cli
from test_transformers import labelled, save_checkpoint  # noqa: F401  (a fixture)


def refused(*args) -> str:
    result = run_cli(*args)
    assert result.code == 2, result
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert run_cli("runs", "--json").out.count('"id"') == 0  # nothing recorded
    return result.err


@pytest.mark.parametrize("source", ["./no/such/folder", "/no/such/folder", "a/b/c"])
def test_a_missing_local_folder_is_named_as_such(tiny_text, source):
    err = refused("run", "llama-pretrained", tiny_text, "--set", f"pretrained={source}")
    assert "no such folder" in err and "Repo id" not in err


@pytest.mark.parametrize("model", ["llama-pretrained", "decoder-pretrained"])
def test_a_hub_id_without_network_is_one_line_within_seconds(tiny_text, monkeypatch, model):
    import socket

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(socket, "create_connection", offline)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    began = time.time()
    result = run_cli("run", model, tiny_text, "--set", "pretrained=some-org/some-id")
    assert result.code == 2, result
    err = result.err
    assert len(err.strip().splitlines()) == 1, err
    assert "cannot be reached and no copy is cached" in err
    assert time.time() - began < 10


def test_a_pickle_only_checkpoint_is_refused_with_the_way_out(tiny_text, tmp_path):
    folder = tmp_path / "pickled"
    import torch

    model, _ = save_checkpoint(folder, ["abc"])
    for path in folder.glob("*.safetensors"):
        path.unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")  # as older savers wrote it
    err = refused(
        "run",
        "llama-pretrained",
        tiny_text,
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=16",
    )
    assert "holds only pickled weights" in err and "safe_serialization=True" in err


def test_a_checkpoint_whose_head_does_not_fit_is_one_line(labelled, tmp_path):  # noqa: F811
    import transformers

    folder = tmp_path / "five-classes"
    _, tokenizer = save_checkpoint(folder, ["abcdefghijklmnopqrstuvwxyz "])
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=32,
        pad_token_id=0,
        num_labels=7,
    )
    transformers.LlamaForSequenceClassification(config).save_pretrained(folder)
    result = run_cli(
        "run",
        "llama-pretrained",
        labelled,
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=16",
        "--steps",
        1,
    )
    assert result.code == 2, result
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "Traceback" not in result.err and "other shapes than the model's" in result.err


def test_a_pretrained_vocabulary_beyond_the_bound_is_refused_before_a_model(
    tiny_text, tmp_path, monkeypatch
):
    folder = tmp_path / "checkpoint"
    save_checkpoint(folder, ["abcdefghijklmnopqrstuvwxyz"])
    import zoo.plugin.config

    monkeypatch.setattr(zoo.plugin.config, "MAX_VOCAB", 10)  # 29 tokens: "too big"
    result = run_cli(
        "run",
        "llama-pretrained",
        tiny_text,
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=16",
    )
    assert result.code == 2, result  # before any model is built (the run is recorded failed)
    assert "has 29 tokens; at most 10" in result.err and len(result.err.splitlines()) == 1
