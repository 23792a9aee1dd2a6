"""The transformers architectures (gpt2, llama, bert) and the `pretrained` tokenizer: tiny
runs of each task, --set checks, fine-tuning from a checkpoint the test saves itself."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, TINY_ANY, run_cli

TINY_BPE = ["--set", "vocab_size=300"]


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest


@pytest.fixture
def labelled(tmp_path):
    rng = np.random.default_rng(0)
    words = {"pos": ["good", "great", "fine"], "neg": ["bad", "awful", "dull"]}
    rows = ["text,label"] + [
        f"film {i} was {' and '.join(rng.choice(words[label], size=1 + i % 3))},{label}"
        for i, label in enumerate(["pos", "neg"] * 60)
    ]
    path = tmp_path / "labelled.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def run_json(*args) -> dict:
    result = run_cli("run", *args, "--json")
    assert result.code == 0, result
    return json.loads(result.out)


def test_listed_with_their_tasks_and_listing_imports_no_transformers():
    listed = run_cli("list", "architectures")
    assert listed.code == 0
    lines = {line.split()[0]: line for line in listed.out.splitlines()[1:] if line.strip()}
    assert "[language-modeling, classification, next-item]" in lines["gpt2"]
    assert "[language-modeling, classification, next-item]" in lines["llama"]
    assert (
        "[language-modeling, classification, next-item, masked-language-modeling]" in lines["bert"]
    )
    assert "[language-modeling, next-item]" in lines["hf-mamba"]  # every type, by the rule
    probe = (
        "import sys; from zoo.cli.main import main; main(['list']); "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip().endswith("[]"), done


@pytest.mark.parametrize("model, extra", [("llama-char", []), ("gpt2-bpe", TINY_BPE)])
def test_language_models_train_record_generate_and_compare(model, extra, tiny_text):
    summary = run_json(
        model, tiny_text, "--steps", 8, *TINY_ANY, *extra, "--set", "sample_tokens=10"
    )
    assert summary["architecture"] == model.split("-")[0]
    assert summary["task"] == "language-modeling" and summary["status"] == "finished"
    assert math.isfinite(summary["metrics"]["val_bpc"]) and summary["metrics"]["steps"] == 8
    generated = run_cli("generate", summary["run_id"], "--prompt", "line", "--tokens", 5)
    assert generated.code == 0 and generated.out.startswith("line"), generated
    compared = run_cli("compare", "--format", "csv")
    assert compared.code == 0 and model in compared.out and summary["run_id"] in compared.out


def test_reloaded_run_gives_the_recorded_validation_loss(tiny_text):
    from zoo.pipelines.language_modeling import encode, split_metrics, split_text, total_nll

    from zoo.core.loading import get_zoo
    from zoo.data import datasets
    from zoo.operations.reload import load_trained

    summary = run_json("gpt2-char", tiny_text, "--steps", 6, *TINY_ANY, "--set", "sample_tokens=5")
    trained = load_trained(summary["run_id"])
    dataset = datasets.load(datasets.resolve(str(tiny_text), get_zoo()), get_zoo())
    text = split_text(dataset, "validation")
    nll, count = total_nll(
        trained.model, encode(trained.tokenizer, text), trained.context_length, 64
    )
    assert split_metrics("val", nll, count, text)["val_loss"] == pytest.approx(
        summary["metrics"]["val_loss"], rel=1e-6
    )


def test_bert_classifies_with_its_pooler_and_predicts(labelled):
    summary = run_json("bert-bpe", labelled, "--steps", 8, *TINY_ANY, *TINY_BPE)
    assert summary["task"] == "classification" and summary["architecture"] == "bert"
    assert 0 <= summary["metrics"]["test_accuracy"] <= 1
    predicted = run_cli("predict", summary["run_id"], "film 1 was good")
    assert predicted.code == 0 and predicted.out.split("\t")[0] in ("pos", "neg"), predicted


@pytest.mark.parametrize("model", ["gpt2-char", "llama-char"])
def test_decoders_classify_at_the_last_real_token_whatever_the_padding(model, labelled):
    """Right padding must not change a text's logits: the head reads its last real token."""
    import torch

    from zoo.operations.reload import load_trained

    summary = run_json(model, labelled, "--steps", 4, *TINY_ANY)
    assert summary["task"] == "classification"
    module = load_trained(summary["run_id"]).model.module.eval()
    ids = torch.tensor([[2, 5, 6, 7, 0, 0, 0], [2, 5, 6, 7, 8, 9, 10]])
    mask = (torch.arange(7) < torch.tensor([[4], [7]])).long()
    with torch.no_grad():
        padded = module(ids, mask)[0]
        alone = module(ids[:1, :4], mask[:1, :4])[0]
    assert torch.allclose(padded, alone, atol=1e-5)


def test_next_item_reads_the_last_real_position(tiny_text):
    summary = run_json("llama-char", tiny_text, "--task", "next-item", "--steps", 4, *TINY_ANY)
    assert summary["task"] == "next-item" and 0 <= summary["metrics"]["test_accuracy"] <= 1


@pytest.mark.slow
def test_transformers_fields_are_settable_and_checked(tiny_text):
    summary = run_json(
        "llama-char",
        tiny_text,
        "--steps",
        2,
        *TINY_ANY,
        "--set",
        "sample_tokens=0",
        "--set",
        "rms_norm_eps=1e-3",
        "--set",
        "num_key_value_heads=1",
    )
    assert (
        summary["params"]
        < run_json("llama-char", tiny_text, "--steps", 2, *TINY_ANY, "--set", "sample_tokens=0")[
            "params"
        ]
    )  # grouped KV
    typo = run_cli("run", "llama-char", tiny_text, "--set", "rms_norm_epss=1e-3")
    assert typo.code == 2 and "rms_norm_eps" in typo.err and "Did you mean" in typo.err
    for model in ("gpt2-char", "llama-char"):  # llama: before transformers' own check
        bad = run_cli("run", model, tiny_text, "--set", "n_embd=10", "--set", "n_head=3")
        assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1, bad
        assert "n_embd (10) must be divisible by n_head (3)" in bad.err, bad
    wrong_type = run_cli("run", "bert-bpe", tiny_text, "--set", "layer_norm_eps=tiny")
    assert wrong_type.code == 2 and "layer_norm_eps" in wrong_type.err
    assert run_cli("runs", "--json").out.count('"id"') == 2  # the refused runs left no row


def test_a_transformers_validation_error_gives_its_reason_not_its_header():
    from zoo.plugins.transformers.configs import _first_line

    error = ValueError(
        "Class validation error for validator 'validate_architecture':\n"
        "    ValueError: The hidden size (10) is not a multiple of the number "
        "of attention heads (3).\n"
    )
    assert _first_line(error) == (
        "ValueError: The hidden size (10) is not a multiple of the number of attention heads (3)."
    )
    assert _first_line(ValueError("one line")) == "one line"
    assert _first_line(ValueError()) == "ValueError"


# -- fine-tuning from a checkpoint ---------------------------------------------------
def save_checkpoint(folder, texts, architecture="llama"):
    """A tiny random model and a character tokenizer for it, saved as transformers saves
    them. Its output layer is scaled up, so its loss is unlike a fresh model's."""
    import torch
    import transformers
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import WordLevel

    chars = sorted(set("".join(texts)))
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", *chars])}
    backend = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]"
    )
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=32,
        pad_token_id=0,
    )
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        model.lm_head.weight.mul_(40)  # sharper logits: a loss far from log(vocab)
    model.save_pretrained(folder)
    return model, tokenizer


@pytest.mark.slow
def test_fine_tuning_starts_from_the_checkpoint_and_trains(tiny_text, tmp_path):
    import torch
    from zoo.pipelines.language_modeling import encode, split_text, total_nll
    from zoo.plugins.transformers.model import TransformersModel
    from zoo.plugins.transformers.tokenizer import PretrainedTokenizer

    from zoo.core.loading import get_zoo
    from zoo.data import datasets
    from zoo.train.losses import cross_entropy
    from zoo.train.torch_model import TorchModel

    folder = tmp_path / "checkpoint"
    dataset = datasets.load(datasets.resolve(str(tiny_text), get_zoo()), get_zoo())
    hf, _ = save_checkpoint(folder, dataset.split("train")["text"])
    # The checkpoint's own validation loss, with its own tokenizer, computed here.
    tokenizer = PretrainedTokenizer.train([], type("C", (), {"pretrained": str(folder)}))
    ids = encode(tokenizer, split_text(dataset, "validation"))
    nll, count = total_nll(
        TorchModel(TransformersModel(hf.eval(), "language-modeling"), loss=cross_entropy),
        ids,
        16,
        64,
    )
    own = nll / count
    assert abs(own - math.log(tokenizer.vocab_size)) > 0.5  # unlike a fresh model's loss

    args = [
        "llama-pretrained",
        tiny_text,
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=16",
        "--set",
        "batch_size=4",
        "--set",
        "eval_batches=2",
        "--set",
        "sample_tokens=5",
        "--set",
        "warmup_steps=1",
        "--set",
        "precision=fp32",
    ]
    first = run_json(*args, "--steps", 1, "--set", "lr=1e-12", "--set", "min_lr=1e-12")
    assert first["metrics"]["val_loss"] == pytest.approx(own, rel=1e-5)
    assert first["params"] == sum(p.numel() for p in hf.parameters())
    tuned = run_json(*args, "--steps", 15, "--set", "lr=1e-2", "--set", "min_lr=1e-3")
    assert tuned["metrics"]["val_loss"] < own - 0.5
    generated = run_cli("generate", tuned["run_id"], "--prompt", "line", "--tokens", 5)
    assert generated.code == 0 and generated.out.startswith("line"), generated
    with torch.no_grad():  # the run's tokenizer is the checkpoint's, roles included
        from zoo.operations.reload import load_trained

        reloaded = load_trained(tuned["run_id"]).tokenizer
        assert reloaded.encode("line 1") == tokenizer.encode("line 1")
        assert (reloaded.pad_id, reloaded.unk_id, reloaded.cls_id) == (0, 1, 2)


def test_a_checkpoint_of_another_architecture_or_shape_is_refused(tiny_text, tmp_path):
    folder = tmp_path / "checkpoint"
    save_checkpoint(folder, ["abc"])
    other = run_cli("run", "gpt2-pretrained", tiny_text, "--set", f"pretrained={folder}")
    assert other.code == 2 and "is a llama model, not gpt2" in other.err, other
    shape = run_cli(
        "run", "llama-pretrained", tiny_text, "--set", f"pretrained={folder}", "--set", "n_layer=3"
    )
    assert shape.code == 2 and "n_layer=3 differs from the checkpoint's" in shape.err, shape
    missing = run_cli("run", "llama-pretrained", tiny_text, "--set", f"pretrained={tmp_path}/none")
    assert missing.code == 2 and "cannot read the checkpoint" in missing.err, missing
    no_path = run_cli("run", "llama-pretrained", tiny_text)
    assert no_path.code == 2 and "the setting pretrained=" in no_path.err, no_path
    (folder / "tokenizer.json").unlink()
    no_tokenizer = run_cli(
        "run",
        "llama-pretrained",
        tiny_text,
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=16",
    )
    assert no_tokenizer.code == 2 and "has no tokenizer.json" in no_tokenizer.err, no_tokenizer
    assert run_cli("runs", "--json").out.count('"id"') == 0  # nothing started
