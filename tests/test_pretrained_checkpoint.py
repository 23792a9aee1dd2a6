"""A checkpoint's own tokenizer, as real checkpoints ship it: a tokenizer.json that pads every
text to a fixed length, truncates, and adds BERT's [CLS] ... [SEP] in its post-processor.
zoo turns the padding and truncation off (it pads, cuts and masks itself) and places the
checkpoint's special tokens once, where the checkpoint expects them."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import run_cli

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest

WORDS = ["the", "film", "was", "good", "great", "fine", "bad", "awful", "dull", "and", "plot"]
FIXED = 16  # the checkpoint's tokenizer pads every text to this many tokens


def save_bert_checkpoint(folder, positions: int = 32):
    """A tiny random BERT and a WordPiece tokenizer saved as transformers saves them, whose
    tokenizer.json pads to FIXED, truncates to FIXED and frames texts as [CLS] text [SEP]."""
    import torch
    import transformers
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {
        token: i
        for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s"])
    }
    backend = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    backend.enable_truncation(max_length=FIXED)
    backend.enable_padding(length=FIXED, pad_id=0, pad_token="[PAD]")
    tokenizer = transformers.BertTokenizerFast(
        tokenizer_object=backend,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    tokenizer.save_pretrained(folder)
    backend.save(str(folder / "tokenizer.json"))  # as shipped: padding and truncation on
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=positions,
        pad_token_id=0,
    )
    transformers.BertForMaskedLM(config).save_pretrained(folder)
    return vocab


@pytest.fixture
def checkpoint(tmp_path):
    folder = tmp_path / "bert"
    vocab = save_bert_checkpoint(folder)
    shipped = json.loads((folder / "tokenizer.json").read_text())
    assert shipped["padding"] and shipped["truncation"]  # what the tests are about
    return folder, vocab


@pytest.fixture
def reviews(tmp_path):
    rng = np.random.default_rng(0)
    rows = ["text,label"]
    for i in range(80):
        label = ["pos", "neg"][i % 2]
        choices = ["good", "great", "fine"] if label == "pos" else ["bad", "awful", "dull"]
        words = rng.choice(choices, size=1 + i % 3)
        tail = " the plot was fine and the film was good" * (i % 5 == 0)  # some long texts
        rows.append(f"the film was {' and '.join(words)}{tail},{label}")
    path = tmp_path / "reviews.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def pretrained_tokenizer(folder):
    from zoo.plugins.transformers.tokenizer import PretrainedTokenizer

    return PretrainedTokenizer.train([], type("Config", (), {"pretrained": str(folder)}))


def test_the_checkpoints_padding_and_truncation_are_off(checkpoint):
    folder, vocab = checkpoint
    tokenizer = pretrained_tokenizer(folder)
    assert tokenizer.encode("the film") == [vocab["the"], vocab["film"]]  # no [PAD] x 14
    long = " ".join(["film"] * 40)
    assert tokenizer.encode(long) == [vocab["film"]] * 40  # not cut at FIXED
    assert tokenizer.encode_batch(["good", "the film"]) == [
        [vocab["good"]],
        [vocab["the"], vocab["film"]],
    ]
    assert tokenizer.frame == ((vocab["[CLS]"],), (vocab["[SEP]"],))
    assert tokenizer.pad_id == vocab["[PAD]"] and tokenizer.cls_id == vocab["[CLS]"]
    assert tokenizer.mask_id == vocab["[MASK]"]


def test_classification_frames_texts_once_as_the_checkpoint_does(checkpoint):
    import transformers
    from zoo.pipelines.classification import encode

    folder, vocab = checkpoint
    tokenizer = pretrained_tokenizer(folder)
    reference = transformers.AutoTokenizer.from_pretrained(folder)
    texts = ["the film was good", "bad", " ".join(["dull"] * 30)]
    encoded = encode(tokenizer, texts, block=10)
    inputs, mask = encoded.batch(np.arange(3))
    for row, text in enumerate(texts[:2]):  # what the checkpoint's own tokenizer gives
        expected = reference(text, padding=False, truncation=False)["input_ids"]
        assert inputs[row, : len(expected)].tolist() == expected
        assert mask[row].sum() == len(expected) and not mask[row, len(expected) :].any()
        assert (inputs[row, len(expected) :] == vocab["[PAD]"]).all()
    # A long text is cut to block_size around its frame: [CLS] 8 tokens [SEP].
    assert inputs[2].tolist() == [vocab["[CLS]"], *[vocab["dull"]] * 8, vocab["[SEP]"]]
    assert encoded.tokens.tolist() == [4, 1, 30]  # each text's own tokens, uncut
    assert (inputs == vocab["[CLS]"]).sum() == 3 and (inputs == vocab["[SEP]"]).sum() == 3


def test_zoo_own_tokenizers_keep_cls_first():
    from zoo.pipelines.classification import encode
    from zoo.plugins.char import CharTokenizer

    tokenizer = CharTokenizer.train(["abc"], None)
    encoded = encode(tokenizer, ["ab", "c"], block=8)
    assert tokenizer.frame == ((tokenizer.cls_id,), ())
    assert encoded.inputs[:, 0].tolist() == [tokenizer.cls_id] * 2
    assert encoded.lengths.tolist() == [3, 2]


@pytest.mark.slow
def test_fine_tuned_logits_are_the_checkpoints_whatever_the_padding(checkpoint, reviews):
    """The run's real text lengths are reported, and the fine-tuned model scores a text
    batched with longer ones exactly as transformers does on the checkpoint's own encoding
    of it alone ([CLS] text [SEP], no padding)."""
    import torch
    import transformers
    from zoo.pipelines.classification import predict

    from zoo.operations.reload import load_trained

    folder, _ = checkpoint
    result = run_cli(
        "run",
        "bert-pretrained",
        reviews,
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=12",
        "--steps",
        3,
        "--set",
        "batch_size=8",
        "--set",
        "precision=fp32",
    )
    assert result.code == 0, result
    summary = json.loads(run_cli("runs", "--json").out)[0]
    said = re.search(r"\(([\d.]+) tokens on average, ([\d.]+)% cut to block_size 12\)", result.err)
    assert said, result.err
    average, cut = float(said[1]), float(said[2]) / 100
    assert 4 < average < 9  # texts of 4 to 17 words; padded to 16, they would all be 16
    trained = load_trained(summary["id"])
    assert 0.1 < cut < 0.35 and trained.row["metrics"]["truncated"] == pytest.approx(cut, abs=1e-3)
    reference = transformers.AutoTokenizer.from_pretrained(folder)
    texts = ["the film was good", "awful", "the film was dull and the plot was bad"]
    batched = predict(trained, texts)
    module = trained.model.module.eval()
    for text, prediction in zip(texts, batched):
        ids = torch.tensor([reference(text, padding=False)["input_ids"]])
        with torch.no_grad():
            logits = module.hf(input_ids=ids).logits[0].double()
        probs = torch.softmax(logits, dim=0).numpy()
        assert np.allclose(list(prediction.probabilities.values()), probs, atol=1e-5)


@pytest.mark.slow
def test_a_checkpoint_pretrains_further_with_its_own_mask_token(checkpoint, reviews):
    """Masked language modeling from the checkpoint: windows framed [CLS] ... [SEP], the
    checkpoint's [MASK] hides the chosen tokens, and a classifier starts from the result."""
    from zoo.pipelines.masked_language_modeling import framing_of

    folder, vocab = checkpoint
    framing = framing_of(pretrained_tokenizer(folder), 0.15)
    windows = np.full((200, 10), vocab["film"])
    inputs, _ = framing.mask(windows, np.random.default_rng(0))
    assert (inputs[:, 0] == vocab["[CLS]"]).all() and (inputs[:, -1] == vocab["[SEP]"]).all()
    assert 0.09 < (inputs[:, 1:-1] == vocab["[MASK]"]).mean() < 0.15  # 80% of the 15% chosen
    result = run_cli(
        "run",
        "bert-pretrained",
        reviews,
        "--task",
        "masked-language-modeling",
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=12",
        "--steps",
        2,
        "--set",
        "batch_size=4",
        "--set",
        "eval_batches=1",
        "--json",
    )
    assert result.code == 0, result
    source = json.loads(result.out)["run_id"]
    tuned = run_cli(
        "run",
        "bert-pretrained",
        reviews,
        "--init",
        source,
        "--steps",
        2,
        "--set",
        f"pretrained={folder}",
        "--set",
        "block_size=12",
        "--json",
    )
    assert tuned.code == 0, tuned


def test_a_presets_recipe_for_another_task_does_not_stop_a_chosen_task():
    from zoo.pipelines.classification import ClassificationConfig

    from zoo.train.job import TrainConfig
    from zoo.train.plan import for_sections

    preset = {"epochs": 2, "min_steps": 534, "lr": 5e-5, "train.patience": 2}
    kept = for_sections(preset, {"train": TrainConfig})  # a pipeline without epochs
    assert kept == {"lr": 5e-5, "train.patience": 2}
    assert for_sections(preset, {"train": ClassificationConfig}) == preset


@pytest.mark.slow
def test_bert_finetune_continues_pretraining_on_the_task_text_then_fine_tunes(checkpoint, reviews):
    """Task-adaptive pretraining as the docs give it: the fine-tuning preset, told
    --task masked-language-modeling, continues the checkpoint's MLM; --init fine-tunes."""
    folder, _ = checkpoint
    common = ["--set", f"pretrained={folder}", "--set", "block_size=12", "--steps", 2, "--json"]
    adapted = run_cli(
        "run", "bert-finetune", reviews, "--task", "masked-language-modeling", *common
    )
    assert adapted.code == 0, adapted
    source = json.loads(adapted.out)
    assert source["task"] == "masked-language-modeling"
    tuned = run_cli("run", "bert-finetune", reviews, "--init", source["run_id"], *common)
    assert tuned.code == 0, tuned
    assert json.loads(tuned.out)["task"] == "classification"
