"""The encoder and the classification pipeline, on tiny configs: padding invariance, end to
end runs, predict and evaluate from the saved run, the task chosen for every architecture x
dataset, and the errors for impossible pairs and missing labels."""

import json

import numpy as np
import pytest
from conftest import TINY_DECODER_CLASSIFIER, TINY_ENCODER, run_cli
from test_models import HF_SAMPLE


@pytest.fixture
def reviews(tmp_path):
    """A labelled CSV (string labels, so no ClassLabel): the loader carves validation and test."""
    rng = np.random.default_rng(0)
    words = {"pos": ["good", "great", "fine", "lovely"], "neg": ["bad", "awful", "dull", "poor"]}
    rows = ["text,label"]
    for i in range(240):
        label = "pos" if i % 2 else "neg"
        picked = rng.choice(words[label], size=3)
        rows.append(f"the film {i} was {' and '.join(picked)},{label}")
    path = tmp_path / "reviews.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def tiny_run(model, dataset, *extra, steps=12):
    flags = TINY_DECODER_CLASSIFIER if model.startswith("decoder") else TINY_ENCODER
    result = run_cli("run", model, dataset, "--steps", steps, "--json", *flags, *extra)
    assert result.code == 0, result
    return json.loads(result.out)


# -- the network -----------------------------------------------------------------------
def build_module(arch: str, task: str, pooling: str = "mean", vocab: int = 50, classes: int = 3):
    import torch

    from zoo.train.model import TaskSpec

    torch.manual_seed(0)
    if arch.startswith("encoder"):
        from zoo.plugins.encoder import EncoderConfig
        from zoo.plugins.encoder.model import build

        modern = dict(position="rotary", norm="rms", mlp="swiglu", n_kv_head=1, bias=False)
        cfg = EncoderConfig(
            n_layer=2,
            n_head=2,
            n_embd=16,
            block_size=24,
            dropout=0.1,
            pooling=pooling,
            **(modern if arch == "encoder-modern" else {}),
        )
    else:
        from zoo.plugins.decoder import DecoderConfig
        from zoo.plugins.decoder.model import build

        cfg = DecoderConfig(n_layer=2, n_head=2, n_embd=16, block_size=24, dropout=0.1)
    module = build(
        cfg, TaskSpec(task, vocab, num_classes=classes if task == "classification" else None)
    )
    with torch.no_grad():  # larger weights than the init's, so any leak shows in the logits
        for p in module.parameters():
            p.normal_(0.0, 0.3)
    return module.eval()


@pytest.mark.parametrize(
    "arch,task,pooling",
    [
        ("encoder", "classification", "mean"),
        ("encoder", "classification", "cls"),
        ("encoder", "classification", "max"),
        ("encoder", "next-item", "mean"),
        ("encoder", "next-item", "cls"),
        ("encoder-modern", "classification", "mean"),
        ("decoder", "classification", "-"),
        ("decoder", "next-item", "-"),
    ],
)
def test_padding_never_changes_an_examples_logits(arch, task, pooling):
    import torch

    module = build_module(arch, task, pooling)
    rng = np.random.default_rng(1)
    lengths = [3, 9, 1, 14]
    seqs = [rng.integers(3, 50, size=n) for n in lengths]
    alone = [
        module(torch.tensor(s[None]), torch.ones(1, len(s), dtype=torch.long))[0] for s in seqs
    ]
    for width, filler in ((14, 0), (20, 0), (20, 7)):  # more padding; padding that is not <pad>
        inputs = torch.full((len(seqs), width), filler)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, s in enumerate(seqs):
            inputs[row, : len(s)] = torch.tensor(s)
            mask[row, : len(s)] = 1
        with torch.no_grad():
            batched = module(inputs, mask)
        expected_shape = (len(seqs), 3 if task == "classification" else 50)
        assert tuple(batched.shape) == expected_shape
        for row in range(len(seqs)):
            torch.testing.assert_close(batched[row], alone[row].detach(), atol=1e-4, rtol=1e-4)


def test_the_mask_is_what_hides_padding():
    """Without the mask, the padded example's logits move: the test above can fail."""
    import torch

    module = build_module("encoder", "classification", "cls")
    seq = torch.tensor([[5, 6, 7]])
    padded = torch.tensor([[5, 6, 7, 9, 9]])
    with torch.no_grad():
        alone = module(seq, torch.ones_like(seq))
        unmasked = module(padded, torch.ones_like(padded))
    assert not torch.allclose(alone, unmasked, atol=1e-2, rtol=1e-2)


def test_encoder_has_no_language_modeling_head():
    with pytest.raises(ValueError, match="no language-modeling head"):
        build_module("encoder", "language-modeling")


def test_bad_encoder_config_exits_2_before_training(reviews):
    result = run_cli("run", "encoder-char", reviews, "--set", "pooling=attention")
    assert result.code == 2 and "pooling" in result.err
    assert run_cli("runs", "--json").out.strip() in ("", "[]")


# -- pieces of the pipeline ------------------------------------------------------------
def test_scores_match_a_hand_count():
    from zoo.pipelines.classification import scores

    y_true = np.array([0, 0, 1, 1, 2, 2])
    y_pred = np.array([0, 1, 1, 1, 0, 2])
    probs = np.eye(3)[y_pred] * 0.7 + 0.1
    figures = scores(y_true, probs, ["a", "b", "c"], "test")
    assert figures["test_accuracy"] == pytest.approx(4 / 6)
    assert figures["test_confusion_matrix"] == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    per = figures["test_per_class"]
    assert per["a"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2})
    assert per["b"]["precision"] == pytest.approx(2 / 3) and per["b"]["recall"] == 1.0
    assert per["c"]["precision"] == 1.0 and per["c"]["recall"] == 0.5
    f1s = [0.5, 0.8, 2 / 3]
    assert figures["test_macro_f1"] == pytest.approx(sum(f1s) / 3)
    assert figures["test_loss"] == pytest.approx(-np.mean(np.log([0.8, 0.1, 0.8, 0.8, 0.1, 0.8])))


def test_batches_cover_each_example_once_per_epoch_with_little_padding():
    from zoo.pipelines.classification import Batches

    lengths = np.random.default_rng(0).integers(1, 60, size=1000)
    batches = Batches(lengths, batch_size=32, bucket=8)
    rng = np.random.default_rng(0)
    epoch = [batches.next(rng) for _ in range(batches.per_epoch())]
    assert sorted(np.concatenate(epoch).tolist()) == list(range(1000))
    padded = sum(len(b) * lengths[b].max() for b in epoch)
    assert padded < 1.3 * lengths.sum()  # random batches would pad to about 1.9x


def test_epochs_set_the_step_budget_and_steps_cap_it():
    from zoo.pipelines.classification import ClassificationConfig, step_budget

    assert step_budget(ClassificationConfig(epochs=2.5), 40) == 100
    assert step_budget(ClassificationConfig(epochs=2.5, steps=30), 40) == 30
    assert step_budget(ClassificationConfig(epochs=None, steps=30), 40) == 30
    # a small training split gets at least min_steps updates; steps still caps them
    assert step_budget(ClassificationConfig(epochs=2, min_steps=534), 90) == 534
    assert step_budget(ClassificationConfig(epochs=2, min_steps=534), 500) == 1000
    assert step_budget(ClassificationConfig(epochs=2, min_steps=534, steps=300), 90) == 300


# -- end to end ------------------------------------------------------------------------
@pytest.mark.slow
def test_train_show_predict_and_evaluate_round_trip(reviews):
    summary = tiny_run("encoder-char", reviews, steps=12)
    assert summary["task"] == "classification" and summary["status"] == "finished"
    metrics = summary["metrics"]
    assert metrics["steps"] == 12 and metrics["class_names"] == ["neg", "pos"]
    for key in ("val_accuracy", "test_accuracy", "test_macro_f1", "val_macro_f1"):
        assert 0.0 <= metrics[key] <= 1.0, key
    assert set(metrics["test_per_class"]) == {"neg", "pos"}
    confusion = np.array(metrics["test_confusion_matrix"])
    assert confusion.shape == (2, 2) and confusion.sum() == 12  # 5% of 240 rows
    assert metrics["test_accuracy"] == pytest.approx(np.trace(confusion) / 12)

    shown = run_cli("show", summary["run_id"])
    assert shown.code == 0, shown
    assert "test_per_class:" in shown.out and "precision" in shown.out
    assert "test_confusion_matrix (rows: true, columns: predicted):" in shown.out

    # predictions from the saved run reproduce the recorded test accuracy
    from zoo.pipelines.classification import evaluate, predict

    from zoo.core.loading import get_zoo
    from zoo.data import datasets as data
    from zoo.operations.reload import load_trained

    trained = load_trained(summary["run_id"])
    dataset = data.load(data.resolve(str(reviews), get_zoo()), get_zoo())
    assert evaluate(trained, dataset, "test")["test_accuracy"] == pytest.approx(
        metrics["test_accuracy"]
    )
    test = dataset.split("test")
    predicted = [p.label for p in predict(trained, test["text"])]
    assert np.mean([p == t for p, t in zip(predicted, test["label"])]) == pytest.approx(
        metrics["test_accuracy"]
    )

    scored = run_cli("eval", summary["run_id"], reviews, "--split", "test", "--json")
    assert scored.code == 0, scored
    assert json.loads(scored.out)["metrics"]["test_accuracy"] == pytest.approx(
        metrics["test_accuracy"]
    )

    one = run_cli("predict", summary["run_id"], test["text"][0])
    assert one.code == 0, one
    label, probability, text = one.out.rstrip("\n").split("\t")
    assert label == predicted[0] and 0.5 <= float(probability) <= 1.0
    assert text == test["text"][0].replace("\t", "\\t")
    texts = reviews.parent / "texts.txt"
    texts.write_text("\n".join(test["text"][:3]) + "\n", encoding="utf-8")
    many = run_cli("predict", summary["run_id"], "--file", texts, "--json")
    assert many.code == 0, many
    rows = [json.loads(line) for line in many.out.splitlines()]
    assert [r["label"] for r in rows] == predicted[:3]
    assert all(sum(r["probabilities"].values()) == pytest.approx(1.0) for r in rows)


@pytest.mark.slow
def test_same_seed_same_metrics(reviews):
    first = tiny_run("encoder-char", reviews, "--seed", 3, steps=6)["metrics"]
    second = tiny_run("encoder-char", reviews, "--seed", 3, steps=6)["metrics"]
    assert first["val_loss"] == second["val_loss"] and first["train_loss"] == second["train_loss"]


@pytest.mark.slow
def test_class_names_come_from_the_classlabel_feature(mirror):
    summary = tiny_run("encoder-char", "rotten_tomatoes", "--set", "block_size=16", steps=3)
    assert summary["metrics"]["class_names"] == ["neg", "pos"]
    assert sum(summary["metrics"]["test_per_class"][c]["support"] for c in ("neg", "pos")) == 1066


@pytest.mark.slow
def test_the_decoder_classifies_through_the_pipeline(reviews):
    summary = tiny_run("decoder-char", reviews, steps=6)
    assert summary["task"] == "classification" and summary["architecture"] == "decoder"
    assert 0.0 <= summary["metrics"]["test_accuracy"] <= 1.0


# -- which task runs -------------------------------------------------------------------
def test_every_cell_of_the_matrix_plans_the_task_it_shows():
    from zoo.api import entry_rows
    from zoo.core.loading import get_zoo
    from zoo.errors import ZooError
    from zoo.train.plan import plan_run

    zoo = get_zoo()
    table = entry_rows.matrix(zoo)
    cells = {(r["architecture"], r["dataset"]): r for r in table}
    assert cells[("encoder", "rotten_tomatoes")]["task"] == "classification"
    assert cells[("encoder", "emotion")]["task"] == "classification"
    assert cells[("decoder", "emotion")]["task"] == "classification"
    assert cells[("decoder", "shakespeare")]["task"] == "language-modeling"
    assert cells[("encoder", "shakespeare")]["task"] != "language-modeling"
    for row in table:
        if row["architecture"].startswith("hf-") and row["architecture"] not in HF_SAMPLE:
            continue  # every transformers type alike: which build is the compatibility matrix's
        model = f"{row['architecture']}-char"
        if row["task"]:
            plan = plan_run(model, row["dataset"], zoo=zoo)
            assert plan.task == row["task"] and plan.pipeline.name == row["task"]
        else:
            with pytest.raises(ZooError) as caught:
                plan_run(model, row["dataset"], zoo=zoo)
            assert row["reason"] in str(caught.value)


def test_matrix_is_printed_and_forcing_a_missing_head_exits_2():
    listed = run_cli("list", "--matrix")
    assert listed.code == 0 and "encoder" in listed.out and "classification" in listed.out
    result = run_cli("run", "encoder-char", "shakespeare", "--task", "language-modeling")
    assert result.code == 2 and "encoder has no language-modeling head" in result.err


@pytest.fixture
def oddity():
    """An architecture for a task no dataset serves, registered in-process and removed after."""
    from zoo.core.loading import PluginInfo, get_zoo
    from zoo.hookspecs import hookimpl

    class Oddity:
        @hookimpl
        def register_architectures(self, register):
            register(
                "oddity",
                "zoo.plugins.encoder.model:build",
                tasks=("segmentation",),
                description="a test architecture",
            )

    zoo = get_zoo()
    assert zoo.add_plugin(Oddity(), PluginInfo("oddity-plugin", "test"), strict=True)
    try:
        yield zoo
    finally:
        zoo.remove_plugin("oddity-plugin")
        assert "oddity" not in zoo.architectures


def test_an_impossible_pair_exits_2_with_the_reason(oddity):
    result = run_cli("run", "oddity-char", "rotten_tomatoes")
    assert result.code == 2
    assert "oddity has no classification head" in result.err
    assert len(result.err.strip().splitlines()) == 1
    row = next(
        r for r in run_cli_matrix() if (r["architecture"], r["dataset"]) == ("oddity", "emotion")
    )
    assert row["task"] == "" and "oddity has no classification head" in row["reason"]
    assert run_cli("runs", "--json").out.strip() in ("", "[]")


def run_cli_matrix():
    result = run_cli("list", "--matrix", "--json")
    assert result.code == 0, result
    return json.loads(result.out)


@pytest.mark.slow
def test_a_labelled_file_is_classified_and_an_unlabelled_one_is_not(reviews, tmp_path):
    assert tiny_run("encoder-char", reviews, steps=2)["task"] == "classification"
    plain = tmp_path / "plain.csv"
    plain.write_text("text,stars\n" + "".join(f"review {i},{i % 5}\n" for i in range(60)))
    from zoo.train.plan import plan_run

    assert plan_run("decoder-char", str(plain)).task == "language-modeling"


def test_missing_label_column_exits_2_listing_the_columns(tmp_path, isolated):
    path = isolated / "nolabels.csv"
    path.write_text("text,stars\n" + "".join(f"review {i},{i % 5}\n" for i in range(60)))
    (isolated / "registry.toml").write_text(
        '[datasets.nolabels]\npath = "nolabels.csv"\ntask = "classification"\n'
    )
    result = run_cli("run", "encoder-char", "nolabels", *TINY_ENCODER)
    assert result.code == 2, result
    assert "no label column" in result.err and "columns: text, stars" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert run_cli("runs", "--json").out.strip() in ("", "[]")  # nothing was recorded
    wrong = run_cli("run", "encoder-char", "nolabels", "--label-column", "label", *TINY_ENCODER)
    assert wrong.code == 2 and "text, stars" in wrong.err


@pytest.mark.slow
def test_test_metrics_come_from_the_best_validation_weights(reviews, monkeypatch):
    """Validation accuracy is scripted to peak at the second of four validations (step 6 of
    12); the run must report best_step 6 and the test figures of the step-6 weights: they
    differ from the same run's with keep_best=false, and `zoo eval` of the saved weights
    reproduces them."""
    from zoo.pipelines import classification

    training, calls = [], []
    real_train, real_scores = classification.train, classification.scores

    def train_noting_it(*args, **kwargs):
        training.append(True)
        try:
            return real_train(*args, **kwargs)
        finally:
            training.pop()

    def scripted_scores(y_true, probs, classes, prefix, detail=True):
        figures = real_scores(y_true, probs, classes, prefix, detail)
        if training and prefix == "val":  # a validation during training: script its score
            calls.append(1)
            figures["val_accuracy"] = 1.0 if len(calls) % 4 == 2 else 0.5
        return figures

    monkeypatch.setattr(classification, "train", train_noting_it)
    monkeypatch.setattr(classification, "scores", scripted_scores)
    best = tiny_run("encoder-char", reviews, steps=12)
    last = tiny_run("encoder-char", reviews, "--set", "keep_best=false", steps=12)
    metrics, last_metrics = best["metrics"], last["metrics"]
    assert len(calls) == 8  # four validations in each run
    assert metrics["best_step"] == last_metrics["best_step"] == 6 < metrics["steps"] == 12
    assert metrics["test_loss"] != last_metrics["test_loss"]  # not the last weights
    scored = run_cli("eval", best["run_id"], reviews, "--split", "test", "--json")
    assert scored.code == 0, scored
    assert json.loads(scored.out)["metrics"]["test_loss"] == pytest.approx(metrics["test_loss"])


def labelled(labels, class_names=None):
    """A dataset with one split of labels, as the pipeline's data functions read it."""
    from types import SimpleNamespace

    import datasets
    import pyarrow as pa

    split = datasets.Dataset(pa.table({"text": ["t"] * len(labels), "label": labels}))
    return SimpleNamespace(
        split=lambda role: split,
        label_column="label",
        text_column="text",
        class_names=class_names,
        ref=SimpleNamespace(name="fake"),
    )


def test_labels_become_class_ids_by_name_in_arrow():
    from zoo.pipelines.classification import class_ids, class_list, label_names

    from zoo import ZooError

    dataset = labelled(["pos", "neg", "pos", "class 10", "class 9"])
    names = label_names(dataset, "train")
    assert names.tolist() == ["pos", "neg", "pos", "class 10", "class 9"]
    classes = class_list(dataset, names)
    assert classes == ["class 9", "class 10", "neg", "pos"]  # natural order
    assert class_ids(names, classes, "split 'train'").tolist() == [3, 2, 3, 1, 0]
    with pytest.raises(ZooError, match="does not know: class 10, class 9 .classes: neg, pos"):
        class_ids(names, ["neg", "pos"], "split 'test'")
    numbered = labelled([1, 0, 1], class_names=["neg", "pos"])
    assert label_names(numbered, "test").tolist() == ["pos", "neg", "pos"]
    assert label_names(labelled([7, 3]), "test").tolist() == ["7", "3"]
    for bad, row in (([1, 0, 2], 2), ([0, None, 1], 1), ([-1, 0], 0)):
        with pytest.raises(ZooError, match=f"row {row} has label"):
            label_names(labelled(bad, class_names=["neg", "pos"]), "test")


def test_texts_are_cls_and_their_first_tokens_right_padded():
    from zoo.pipelines.classification import encode
    from zoo.plugins.char import CharTokenizer

    tokenizer = CharTokenizer.train(["abcdef"])
    texts = ["abcdefab", "", "ca", "fed"]
    encoded = encode(tokenizer, texts, 4)
    rows = [[tokenizer.cls_id, *tokenizer.encode(text)[:3]] for text in texts]  # the reference
    width = max(map(len, rows))
    assert encoded.inputs.tolist() == [
        row + [tokenizer.pad_id] * (width - len(row)) for row in rows
    ]
    assert encoded.lengths.tolist() == [4, 1, 3, 4] and encoded.tokens.tolist() == [8, 0, 2, 3]
    inputs, mask = encoded.batch(np.array([2, 1]))
    assert inputs.tolist() == [rows[2], [tokenizer.cls_id, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]]


def test_eval_limit_scores_that_many_texts_and_is_a_row_of_its_own(reviews):
    whole = tiny_run("encoder-char", reviews)
    sampled = tiny_run("encoder-char", reviews, "--set", "eval_limit=7")
    matrix = next(v for k, v in sampled["metrics"].items() if k.startswith("test_confusion"))
    assert sum(map(sum, matrix)) == 7
    matrix = next(v for k, v in whole["metrics"].items() if k.startswith("test_confusion"))
    assert sum(map(sum, matrix)) > 7
    text = run_cli(
        "run",
        "encoder-char",
        reviews,
        "--steps",
        12,
        "--seed",
        1,
        "--set",
        "eval_limit=7",
        *TINY_ENCODER,
    ).out
    assert "evaluated on a sample: at most 7 examples" in text
    cells = json.loads(run_cli("compare", "--metric", "test_accuracy", "--format", "json").out)
    assert sorted(cell["n"] for cell in cells) == [1, 2]  # never pooled with the whole run


@pytest.mark.slow
def test_a_run_keeps_its_per_example_correctness_for_comparisons(reviews):
    from safetensors.numpy import load_file

    from zoo.records.paths import run_folder

    out = tiny_run("encoder-char", str(reviews))
    scores = load_file(str(run_folder(out["run_id"]) / "per_example.safetensors"))
    # each split scored with the digest of its rows: only runs of the same examples pair
    assert set(scores) == {"val_accuracy", "test_accuracy", "examples:val", "examples:test"}
    assert scores["examples:val"].tolist() != scores["examples:test"].tolist()
    for name in ("val_accuracy", "test_accuracy"):
        correct = scores[name]
        assert set(np.unique(correct)) <= {0.0, 1.0}
        assert float(correct.mean()) == pytest.approx(out["metrics"][name], abs=1e-6)
