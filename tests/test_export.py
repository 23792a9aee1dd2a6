"""`zoo export`: runs as folders transformers loads without zoo, and parity with zoo: logits
within 1e-4 on validation windows, the same greedy text in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import TINY_ANY, TINY_DECODER, run_cli

# Loads an exported folder and generates greedily, in a process where zoo cannot be imported.
GENERATE = r"""
import importlib.abc, json, sys
class NoZoo(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "zoo" or name.startswith("zoo."):
            raise ImportError("zoo is not installed here")
sys.meta_path.insert(0, NoZoo())
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
folder, prompt, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
model = AutoModelForCausalLM.from_pretrained(folder)
tokenizer = AutoTokenizer.from_pretrained(folder)
ids = tokenizer(prompt, return_tensors="pt").input_ids
never = [tokenizer.convert_tokens_to_ids(t) for t in ("<pad>", "<unk>", "<cls>")]
out = model.generate(ids, max_new_tokens=tokens, do_sample=False, suppress_tokens=never,
                     pad_token_id=tokenizer.pad_token_id)
print(json.dumps({"text": tokenizer.decode(out[0], skip_special_tokens=True),
                  "class": type(model).__name__, "zoo": "zoo" in sys.modules}))
"""

# Loads an exported seq2seq folder and translates greedily with generate()'s saved defaults,
# in a process where zoo cannot be imported.
TRANSLATE = r"""
import importlib.abc, json, sys
class NoZoo(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "zoo" or name.startswith("zoo."):
            raise ImportError("zoo is not installed here")
sys.meta_path.insert(0, NoZoo())
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
folder, texts = sys.argv[1], json.loads(sys.argv[2])
model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
tokenizer = AutoTokenizer.from_pretrained(folder)
batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
out = model.generate(**batch)
print(json.dumps({"outputs": tokenizer.batch_decode(out, skip_special_tokens=True),
                  "class": type(model).__name__, "zoo": "zoo" in sys.modules}))
"""


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest


def trained_run(model, dataset, *extra, steps=60) -> str:
    result = run_cli(
        "run",
        model,
        dataset,
        "--steps",
        steps,
        "--json",
        *TINY_DECODER,
        "--set",
        "block_size=32",
        "--set",
        "n_embd=32",
        "--set",
        "lr=1e-2",
        "--set",
        "precision=fp32",
        *extra,
    )
    assert result.code == 0, result
    return json.loads(result.out)["run_id"]


def export(run_id, folder):
    result = run_cli("export", run_id, folder)
    assert result.code == 0, result
    return result


@pytest.mark.parametrize(
    "options",
    [
        ["--set", "bias=false", "--set", "gelu=tanh"],
        ["--set", "bias=true", "--set", "gelu=exact", "--set", "tie_weights=false"],
    ],
)
def test_decoder_logits_match_transformers_on_validation_windows(options, tiny_text, tmp_path):
    import torch
    import transformers
    from zoo.pipelines.language_modeling import encode, split_text, windows

    from zoo.core.loading import get_zoo
    from zoo.data import datasets
    from zoo.operations.reload import load_trained

    run_id = trained_run("decoder-char", tiny_text, *options, steps=20)
    export(run_id, tmp_path / "out")
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out").eval()
    assert type(hf).__name__ == "GPT2LMHeadModel"
    trained = load_trained(run_id, precision="fp32")
    dataset = datasets.load(datasets.resolve(str(tiny_text), get_zoo()), get_zoo())
    inputs, _, _ = windows(encode(trained.tokenizer, split_text(dataset, "validation")), 32)
    ours = trained.model.logits(inputs)
    with torch.no_grad():
        theirs = hf(input_ids=torch.from_numpy(inputs)).logits.numpy()
    assert ours.shape == theirs.shape and len(inputs) >= 8
    assert np.max(np.abs(ours - theirs)) < 1e-4
    assert np.std(ours) > 0.1  # a trained model, not a constant one


@pytest.mark.slow
def test_greedy_text_in_a_fresh_process_without_zoo_equals_zoo_generate(tiny_text, tmp_path):
    run_id = trained_run("decoder-char", tiny_text, "--set", "gelu=exact", steps=150)
    folder = tmp_path / "exported"
    export(run_id, folder)
    ours = run_cli("generate", run_id, "--prompt", "line 3", "--tokens", 20, "--temperature", 0)
    assert ours.code == 0, ours
    done = subprocess.run(
        [sys.executable, "-c", GENERATE, str(folder), "line 3", "20"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert theirs["class"] == "GPT2LMHeadModel" and theirs["zoo"] is False
    assert theirs["text"] == ours.out.rstrip("\n")
    assert len(set(theirs["text"][len("line 3") :])) > 2  # varied text, not one repeated token


def test_transformers_runs_export_natively(tiny_text, tmp_path):
    import torch
    import transformers

    from zoo.operations.reload import load_trained

    run_id = trained_run("llama-char", tiny_text, steps=5)
    export(run_id, tmp_path / "llama")
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "llama").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "llama")
    ids = np.asarray([tokenizer("line 12: the quick")["input_ids"]])
    with torch.no_grad():
        theirs = hf(input_ids=torch.from_numpy(ids)).logits.numpy()
    ours = load_trained(run_id, precision="fp32").model.logits(ids)
    assert type(hf).__name__ == "LlamaForCausalLM" and np.max(np.abs(ours - theirs)) < 1e-5


@pytest.mark.slow
def test_classification_exports_to_sequence_classification(tmp_path):
    import transformers

    rows = ["text,label"] + [
        f"film {i} was {'good' if i % 2 else 'bad'},{'pos' if i % 2 else 'neg'}" for i in range(120)
    ]
    labelled = tmp_path / "labelled.csv"
    labelled.write_text("\n".join(rows) + "\n")
    result = run_cli("run", "bert-char", labelled, "--steps", 5, "--json", *TINY_ANY)
    assert result.code == 0, result
    run_id = json.loads(result.out)["run_id"]
    export(run_id, tmp_path / "bert")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(tmp_path / "bert")
    assert type(hf).__name__ == "BertForSequenceClassification"
    assert hf.config.id2label == {0: "neg", 1: "pos"}
    decoder = json.loads(
        run_cli("run", "decoder-char", labelled, "--steps", 2, "--json", *TINY_ANY).out
    )["run_id"]
    refused = run_cli("export", decoder, tmp_path / "decoder", "--format", "transformers")
    assert refused.code == 2 and "score layer has none" in refused.err, refused
    assert not (tmp_path / "decoder").exists()
    assert run_cli("export", decoder, tmp_path / "decoder").code == 0  # onnx by default
    assert (tmp_path / "decoder" / "model.onnx").is_file()


@pytest.mark.slow
def test_what_cannot_be_exported_exits_2_saying_why(tiny_text, tmp_path):
    encoder = json.loads(
        run_cli(
            "run",
            "encoder-char",
            tiny_text,
            "--task",
            "next-item",
            "--steps",
            2,
            "--json",
            *TINY_ANY,
        ).out
    )["run_id"]
    refused = run_cli("export", encoder, tmp_path / "encoder", "--format", "transformers")
    assert refused.code == 2 and "does not export encoder runs" in refused.err, refused
    assert "formats for it: onnx" in refused.err
    unknown = run_cli("export", encoder, tmp_path / "encoder", "--format", "onx")
    assert unknown.code == 2 and "onnx" in unknown.err, unknown
    assert not (tmp_path / "encoder").exists()
    run_id = trained_run("decoder-char", tiny_text, steps=2)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    busy = run_cli("export", run_id, tmp_path / "full")
    assert busy.code == 2 and "not empty" in busy.err


def test_export_writes_a_model_card_the_hub_reads_and_force_replaces_it(tiny_text, tmp_path):
    import os
    import stat

    from huggingface_hub import ModelCard

    from zoo.records.paths import MODEL_CARD, run_folder

    run_id = trained_run("decoder-char", tiny_text, steps=4)
    folder = tmp_path / "export"
    mask = os.umask(0o022)
    try:
        export(run_id, folder)
    finally:
        os.umask(mask)
    card = ModelCard.load(folder / "README.md")
    assert card.data.library_name == "transformers" and "zoo" in card.data.tags
    kept = run_folder(run_id) / MODEL_CARD  # beside the run too: zoo ui's run page shows it
    assert kept.read_text() == (folder / "README.md").read_text()
    assert card.data.pipeline_tag == "text-generation"
    results = {(r.metric_type, r.dataset_split): r.metric_value for r in card.data.eval_results}
    metrics = json.loads(run_cli("runs", "--json", "--columns", "val_bpc,test_bpc").out)[0]
    assert results[("bits_per_character", "validation")] == pytest.approx(metrics["val_bpc"])
    assert results[("bits_per_character", "test")] == pytest.approx(metrics["test_bpc"])
    assert results[("perplexity", "test")] > 1
    for heading in (
        "## Intended use",
        "## How to use it",
        "## Results",
        "## Data",
        "## How it was trained",
        "## Config",
        "## Limitations",
        "## License",
    ):
        assert heading in card.text
    assert card.data.license == "unknown" and "Unknown: none was given" in card.text
    # the card zoo ui shows for a run never exported is this one, bar what the export adds
    from zoo.operations.card import model_card, recorded_run
    from zoo.records.store import Store

    with Store() as store:
        recorded = model_card(recorded_run(store.get(run_id)))
    for heading in ("## Results", "## Data", "## How it was trained", "## Limitations"):
        assert (
            recorded.split(heading)[1].split("\n## ")[0]
            == (card.text.split(heading)[1].split("\n## ")[0])
        )
    assert "## How to use it" not in recorded and "## Checked on export" not in recorded
    assert "bits per character" in card.text and "AutoModelForCausalLM" in card.text
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
    assert modes and set(modes.values()) == {0o644}, modes
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755

    again = run_cli("export", run_id, folder)
    assert again.code == 2 and "force replacing it" in again.err
    other = trained_run("decoder-char", tiny_text, "--seed", "1", steps=4)
    assert run_cli("export", other, folder, "--force").code == 0
    assert other in ModelCard.load(folder / "README.md").text
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".export")]  # no leftovers


@pytest.mark.slow
def test_an_encdec_export_translates_32_validation_texts_as_zoo_predict_does(tmp_path):
    """An encdec run exports as PegasusForConditionalGeneration; in a fresh process without
    zoo, generate() with the folder's defaults translates the 32 validation texts the
    export is checked on exactly as `zoo predict --beam 1` does."""
    from zoo.operations.export import validation_texts
    from zoo.operations.reload import load_trained

    record = run_cli(
        "run", "encdec-char", "digits-transduction", "--json",
        "--set", "steps=100", "--set", "eval_interval=100", "--set", "eval_batches=1",
        "--set", "n_embd=32", "--set", "block_size=16", "--set", "beam_size=3",
        "--set", "dataset.train_size=500", "--set", "dataset.validation_size=40",
        "--set", "dataset.test_size=8", "--set", "dataset.max_len=4",
    )  # fmt: skip
    assert record.code == 0, record
    run_id = json.loads(record.out)["run_id"]
    folder = tmp_path / "exported"
    exported = run_cli("export", run_id, folder, "--json")
    assert exported.code == 0, exported
    assert json.loads(exported.out)["format"] == "transformers"
    texts = validation_texts(load_trained(run_id, device="cpu"))
    assert len(texts) == 32
    ours = run_cli("predict", run_id, *texts, "--beam", 1, "--json")
    assert ours.code == 0, ours
    ours_outputs = [json.loads(line)["output"] for line in ours.out.splitlines()]
    done = subprocess.run(
        [sys.executable, "-c", TRANSLATE, str(folder), json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert theirs["class"] == "PegasusForConditionalGeneration" and theirs["zoo"] is False
    assert theirs["outputs"] == ours_outputs
    assert len(set(ours_outputs)) > 8  # varied translations, not one repeated
