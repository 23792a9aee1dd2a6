"""The digits dataset, the digits architecture and the next-item pipeline, on tiny configs."""

import json
import math

import numpy as np
import pytest
from conftest import TINY_DECODER, run_cli
from zoo.plugins.digits import data as digits_data
from zoo.plugins.digits.data import DigitsDataConfig

from zoo.core import loading
from zoo.records.store import Store

SMALL = dict(
    train_size=300, validation_size=60, test_size=60, heldout_size=60, heldout_validation_size=60
)

# Every model field is set, so the tests do not drift with the preset.
TINY_DIGITS = [
    "--set",
    "width=32",
    "--set",
    "blocks=1",
    "--set",
    "heads=1",
    "--set",
    "ff_ratio=4",
    "--set",
    "dropout=0",
    "--set",
    "block_size=32",
    "--set",
    "batch_size=32",
    "--set",
    "eval_interval=20",
    "--set",
    "eval_batches=2",
    "--set",
    "warmup_steps=5",
]


# The shared tiny decoder settings, less the language-modeling-only ones.
TINY_DECODER_NEXT = [
    a
    for pair in zip(TINY_DECODER[::2], TINY_DECODER[1::2])
    if not pair[1].startswith("sample_tokens")
    for a in pair
]


def catalogue(tmp_path, name: str, **config) -> None:
    """A registry.toml in the working directory naming a digits dataset with these options."""
    options = ", ".join(f"{k} = {json.dumps(v)}" for k, v in config.items())
    (tmp_path / "work" / "registry.toml").write_text(
        f'[datasets.{name}]\nplugin = "digits"\ntask = "next-item"\ntext_column = "text"\n'
        f'label_column = "target"\nconfig = {{ {options} }}\n',
        encoding="utf-8",
    )
    loading.reset_zoo()  # the process-wide zoo read the old catalogue


# -- the generator -------------------------------------------------------------------------
def test_generator_is_deterministic_with_a_stable_fingerprint(tmp_path):
    config = DigitsDataConfig(**SMALL)
    first = digits_data.build(config, cache_dir=str(tmp_path / "a"))
    again = digits_data.build(config, cache_dir=str(tmp_path / "b"))  # no shared cache
    other = digits_data.build(DigitsDataConfig(**SMALL, seed=1), cache_dir=str(tmp_path / "a"))
    assert list(first) == ["train", "validation", "test", "heldout", "heldout_validation"]
    for split in first:
        assert first[split]._fingerprint == again[split]._fingerprint
        assert first[split].to_list() == again[split].to_list()
        assert first[split]._fingerprint != other[split]._fingerprint
    assert first["train"].to_list() != other["train"].to_list()
    assert len(first["train"]) == 300 and len(first["heldout"]) == 60


def test_rows_follow_their_rules():
    rows = list(digits_data.generate_rows({**SMALL, "min_len": 5, "max_len": 7}, "train"))
    assert {r["family"] for r in rows} == {"arithmetic", "fibonacci", "periodic"}
    assert {len(r["text"].split()) for r in rows} == {5, 6, 7}
    shortest = {
        f: min(len(r["text"].split()) for r in rows if r["family"] == f)
        for f in ("arithmetic", "fibonacci")
    }
    assert shortest == {"arithmetic": 5, "fibonacci": 5}
    default = list(digits_data.generate_rows(SMALL, "train"))  # min_len 3: family minimums
    assert min(len(r["text"].split()) for r in default if r["family"] == "arithmetic") == 3
    assert min(len(r["text"].split()) for r in default if r["family"] == "fibonacci") == 4
    assert (
        min(
            len(r["text"].split())
            for r in default
            if r["family"] == "periodic" and len(r["rule"].split()) == 3
        )
        == 6
    )
    for row in rows:
        params = tuple(int(x) for x in row["rule"].split())
        items = digits_data.sequence(row["family"], params, len(row["text"].split()) + 1)
        assert row["text"] == " ".join(map(str, items[:-1])) and row["target"] == str(items[-1])
    assert digits_data.sequence("arithmetic", (7, 1), 4) == [7, 8, 9, 0]
    assert digits_data.sequence("fibonacci", (1, 1), 6) == [1, 1, 2, 3, 5, 8]
    assert digits_data.sequence("periodic", (4, 2, 9), 5) == [4, 2, 9, 4, 2]


def test_heldout_rules_and_contexts_never_appear_in_train():
    # The default sizes: the whole train split is checked, not a sample.
    config = {
        f.name: getattr(DigitsDataConfig(), f.name)
        for f in __import__("dataclasses").fields(DigitsDataConfig)
    }
    train = list(digits_data.generate_rows(config, "train"))
    train_rules = {(r["family"], r["rule"]) for r in train}
    assert {("arithmetic", "1 1"), ("arithmetic", "7 1"), ("arithmetic", "2 2")} <= train_rules
    held = {}
    for split in ("heldout", "heldout_validation"):  # to report on, to choose on
        rows = list(digits_data.generate_rows(config, split))
        assert len(train) == 20000 and len(rows) == 2000
        held[split] = {(r["family"], r["rule"]) for r in rows}
        assert {r["family"] for r in rows} == set(digits_data.FAMILIES)
        assert train_rules and held[split] and not train_rules & held[split]
        assert not {r["text"] for r in train} & {r["text"] for r in rows}
        for seen in ("validation", "test"):
            rules = {(r["family"], r["rule"]) for r in digits_data.generate_rows(config, seen)}
            assert not rules & held[split]
    assert not held["heldout"] & held["heldout_validation"]  # choosing never sees a reported rule


def test_every_context_has_one_next_item():
    """The task is exactly learnable: no context continues two ways, in any split."""
    seen = {}
    for split in digits_data.SPLITS:
        for row in digits_data.generate_rows(SMALL, split):
            assert seen.setdefault(row["text"], row["target"]) == row["target"]


def test_ambiguous_or_bad_configs_fail_with_one_line(tmp_path, cli, monkeypatch):
    digits_data.check_identifiable(DigitsDataConfig(periods=[2, 3, 4], max_len=10))
    # Fibonacci-like at 3 digits: "1 2 3" continues with 4 (arithmetic) and 5 (1 2 3 5).
    with monkeypatch.context() as patched:
        patched.setitem(digits_data.SHORTEST, "fibonacci", 3)
        with pytest.raises(ValueError, match="ambiguous: 1 2 3 continues with 4"):
            digits_data.check_identifiable(DigitsDataConfig())
    catalogue(tmp_path, "bad", families=["arithmetic", "squares"])
    result = cli("run", "digits-char", "bad", "--steps", 1)
    assert result.code == 2 and "families" in result.err
    assert len(result.err.strip().splitlines()) == 1
    catalogue(tmp_path, "typo", min_lenght=3)
    result = cli("run", "digits-char", "typo", "--steps", 1)
    assert result.code == 2 and "Did you mean: min_len" in result.err


# -- the architecture ----------------------------------------------------------------------
@pytest.mark.parametrize("positions", ["start", "end"])
def test_digits_model_reads_the_last_real_position_whatever_the_padding(positions):
    import torch
    from zoo.plugins.digits import DigitsConfig
    from zoo.plugins.digits.model import build

    from zoo.train.model import TaskSpec

    torch.manual_seed(0)
    model = build(
        DigitsConfig(width=16, blocks=2, heads=2, block_size=12, positions=positions),
        TaskSpec("next-item", 9),
    )
    model.eval()
    short = torch.tensor([[3, 4, 5]])
    padded = torch.tensor([[3, 4, 5, 0, 0, 0], [6, 7, 8, 3, 4, 5]])
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
    alone = model(short)
    batched = model(padded, mask)
    assert alone.shape == (1, 9) and batched.shape == (2, 9)
    assert torch.allclose(alone[0], batched[0], atol=1e-5)
    assert not torch.allclose(batched[0], batched[1], atol=1e-3)
    assert "positions" not in model.state_dict()  # fixed sinusoids are not weights
    with pytest.raises(ValueError, match="exceeds the context length 12"):
        model(torch.zeros((1, 13), dtype=torch.long))


def test_the_last_block_computes_the_read_row_alone_with_the_whole_blocks_output():
    """The output is read at each row's last real position, so the last block computes that
    position only (attending over every position): the same logits as running every block
    on every position, for a fraction of the last block's work."""
    import torch
    from zoo.plugins.digits import DigitsConfig
    from zoo.plugins.digits.model import build

    from zoo.train.layers import key_mask, last_real
    from zoo.train.model import TaskSpec

    torch.manual_seed(0)
    model = build(
        DigitsConfig(width=16, blocks=3, heads=2, block_size=12, positions="end"),
        TaskSpec("next-item", 9),
    )
    ids = torch.tensor([[3, 4, 5, 0, 0, 0], [6, 7, 8, 3, 4, 5], [1, 2, 0, 0, 0, 0]])
    mask = (ids > 0).long()
    seen = []
    model.blocks[-1].ff.register_forward_hook(lambda m, i, o: seen.append(i[0].shape))
    logits = model(ids, mask)

    x = model.embed(ids) * 16**0.5 + model.position_table(mask, 6)
    for block in model.blocks:  # every block at every position
        x = block(x, key_mask(mask))
    assert torch.allclose(logits, model.head(last_real(x, mask)), atol=1e-5)
    assert seen[0] == (3, 1, 16)  # the last block's feed-forward saw one row per sequence


def test_positions_from_the_end_give_the_last_items_fixed_positions():
    """Counted from the end, the last real token is always position 0 and the one before it
    position 1, however long the context and however much padding follows."""
    import torch
    from zoo.plugins.digits import DigitsConfig
    from zoo.plugins.digits.model import build

    from zoo.train.model import TaskSpec

    model = build(DigitsConfig(width=16, block_size=12, positions="end"), TaskSpec("next-item", 9))
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
    table = model.position_table(mask, 6)  # [B, T, C]
    sinusoids = model.positions
    assert torch.equal(table[0, 2], sinusoids[0]) and torch.equal(table[1, 5], sinusoids[0])
    assert torch.equal(table[0, 1], sinusoids[1]) and torch.equal(table[1, 4], sinusoids[1])
    assert torch.equal(model.position_table(None, 3), sinusoids[[2, 1, 0]])
    start = build(DigitsConfig(width=16, block_size=12), TaskSpec("next-item", 9))
    assert torch.equal(start.position_table(mask, 6), sinusoids[:6])


# -- the pipeline --------------------------------------------------------------------------
@pytest.mark.slow
def test_tiny_model_learns_one_progression_family_exactly(tmp_path):
    catalogue(
        tmp_path,
        "arith",
        families=["arithmetic"],
        min_len=3,
        max_len=5,
        train_size=2000,
        validation_size=200,
        test_size=300,
        heldout_size=100,
    )
    # About 3 s of CPU; test accuracy is 100% with seeds 0 to 3 (validation from step 250).
    result = run_cli(
        "run",
        "digits-char",
        "arith",
        "--json",
        "--steps",
        300,
        *TINY_DIGITS,
        "--set",
        "batch_size=128",
        "--set",
        "lr=1e-2",
        "--set",
        "min_lr=1e-3",
        "--set",
        "eval_interval=50",
    )
    assert result.code == 0, result
    summary = json.loads(result.out)
    metrics = summary["metrics"]
    assert summary["task"] == "next-item"
    assert metrics["test_accuracy"] == 1.0
    assert metrics["test_arithmetic_accuracy"] == 1.0
    assert 0 <= metrics["heldout_accuracy"] <= 1 and "heldout_arithmetic_accuracy" in metrics

    # The documentation's examples are training rules (always_train); 5 6 7 8 is a test row.
    predicted = run_cli("predict", summary["run_id"], "1 2 3", "--json")
    assert predicted.code == 0, predicted
    answer = json.loads(predicted.out)
    assert answer["label"] == "4" and 0.5 < answer["probability"] <= 1
    assert [t["label"] for t in answer["top"]][0] == "4" and len(answer["top"]) == 3
    lines = tmp_path / "contexts.txt"
    lines.write_text("7 8 9\n\n2 4 6\n", encoding="utf-8")  # blank lines are skipped
    predicted = run_cli("predict", summary["run_id"], "--file", lines)
    assert predicted.code == 0, predicted
    assert [line.split("\t")[0] for line in predicted.out.splitlines()] == ["0", "8"]


@pytest.mark.slow
def test_evaluate_on_a_reloaded_run_matches_the_recorded_metrics(tmp_path):
    from zoo.pipelines.next_item import evaluate

    from zoo.core.loading import get_zoo
    from zoo.data import datasets as data
    from zoo.operations.reload import load_trained

    catalogue(tmp_path, "mixed", **SMALL)
    result = run_cli("run", "digits-char", "mixed", "--json", "--steps", 8, *TINY_DIGITS)
    assert result.code == 0, result
    summary = json.loads(result.out)
    trained = load_trained(summary["run_id"])
    dataset = data.load(data.resolve("mixed", get_zoo()), get_zoo())
    for split in ("test", "heldout"):
        figures = evaluate(trained, dataset, split)  # zoo eval's names: no split prefix
        for key, value in figures.items():
            assert value == pytest.approx(summary["metrics"][f"{split}_{key}"], abs=1e-9), key
    assert set(figures) >= {"accuracy", "loss", "periodic_accuracy"}
    # each row's score is kept for comparisons, and averages to the figure
    from safetensors.numpy import load_file

    from zoo.records.paths import run_folder

    kept = load_file(str(run_folder(summary["run_id"]) / "per_example.safetensors"))
    assert {"test_accuracy", "test_loss", "val_accuracy"} <= set(kept)
    for name in ("test_accuracy", "test_loss"):
        assert float(kept[name].mean()) == pytest.approx(summary["metrics"][name], rel=1e-5)

    scored = run_cli("eval", summary["run_id"], "mixed", "--split", "heldout", "--json")
    assert scored.code == 0, scored
    assert json.loads(scored.out)["metrics"]["accuracy"] == pytest.approx(
        summary["metrics"]["heldout_accuracy"], abs=1e-9
    )


@pytest.mark.slow
def test_text_datasets_serve_next_item_as_windows(tiny_text):
    # digits on plain text picks next-item; the decoder is asked for it explicitly.
    result = run_cli(
        "run",
        "digits-char",
        tiny_text,
        "--json",
        "--steps",
        5,
        *TINY_DIGITS,
        "--set",
        "block_size=16",
        "--set",
        "eval_windows=50",
    )
    assert result.code == 0, result
    metrics = json.loads(result.out)["metrics"]
    assert json.loads(result.out)["task"] == "next-item"
    assert 0 <= metrics["test_accuracy"] <= 1 and math.isfinite(metrics["test_loss"])
    assert not any(k.startswith("heldout") for k in metrics)
    run_id = json.loads(result.out)["run_id"]
    predicted = run_cli("predict", run_id, "the quick brown fo", "--json")
    assert predicted.code == 0 and 0 < json.loads(predicted.out)["probability"] <= 1

    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--task",
        "next-item",
        "--json",
        "--steps",
        5,
        *TINY_DECODER_NEXT,
        "--set",
        "eval_windows=50",
    )
    assert result.code == 0, result
    assert 0 <= json.loads(result.out)["metrics"]["test_accuracy"] <= 1


@pytest.mark.slow
def test_decoder_serves_the_digits_rows(tmp_path):
    catalogue(tmp_path, "mixed", **SMALL)
    result = run_cli("run", "decoder-char", "mixed", "--json", "--steps", 5, *TINY_DECODER_NEXT)
    assert result.code == 0, result
    metrics = json.loads(result.out)["metrics"]
    assert {"test_accuracy", "heldout_accuracy", "test_fibonacci_accuracy"} <= set(metrics)


def test_windows_cover_the_split_and_predict_the_following_token():
    from zoo.pipelines.next_item import Windows

    ids = np.arange(100)
    windows = Windows(ids, 8)
    batch = windows.batch(np.array([0, 91]))
    assert batch.inputs.tolist()[1] == list(range(91, 99)) and batch.targets.tolist() == [8, 99]
    spread = windows.spread(5)
    assert len(spread) == 5 and spread.starts[0] == 0 and spread.starts[-1] == 91


@pytest.mark.slow
def test_empty_context_is_a_clear_error(tmp_path):
    catalogue(tmp_path, "arith", families=["arithmetic"], **SMALL)
    result = run_cli("run", "digits-char", "arith", "--json", "--steps", 3, *TINY_DIGITS)
    assert result.code == 0, result
    predicted = run_cli("predict", json.loads(result.out)["run_id"], "")
    assert predicted.code == 2 and "no token" in predicted.err


def test_catalogue_names_the_digits_dataset_and_preset(cli):
    from zoo.train.plan import plan_run

    listed = cli("list", "datasets", "--json")
    digits = next(row for row in json.loads(listed.out) if row["name"] == "digits")
    assert digits["task"] == "next-item"
    plan = plan_run("digits-char", "digits")
    assert plan.task == "next-item" and plan.pipeline.name == "next-item"
    assert plan.configs["model"].heads == 1 and plan.configs["train"].steps > 0
    assert plan_run("digits-char", "shakespeare").task == "next-item"
    assert plan_run("decoder-char", "digits").task == "next-item"


def test_show_of_a_name_shared_by_an_architecture_and_a_dataset_shows_both(cli):
    shown = cli("show", "digits")
    assert shown.code == 0, shown
    assert "architecture digits (plugin digits)" in shown.out
    assert "dataset digits" in shown.out and "next-item" in shown.out


def test_row_examples_keep_each_contexts_last_tokens_and_the_targets_first():
    from types import SimpleNamespace

    import datasets
    import pyarrow as pa
    from zoo.pipelines.next_item import row_examples
    from zoo.plugins.char import CharTokenizer

    from zoo import ZooError

    def rows(texts, targets):
        split = datasets.Dataset(
            pa.table({"text": texts, "target": targets, "family": ["a", "b"][: len(texts)]})
        )
        return SimpleNamespace(
            text_column="text", label_column="target", ref=SimpleNamespace(name="fake")
        ), split

    tokenizer = CharTokenizer.train(["0123456789 "])
    texts = ["1 2 3 4 5", "7"]
    examples = row_examples(*rows(texts, ["6", "89"]), tokenizer, block=4)
    expected = [tokenizer.encode(text)[-4:] for text in texts]  # the reference
    assert examples.inputs.tolist() == [expected[0], expected[1] + [tokenizer.pad_id] * 3]
    assert examples.lengths.tolist() == [4, 1] and examples.texts == texts
    assert examples.targets.tolist() == [tokenizer.encode("6")[0], tokenizer.encode("8")[0]]
    assert examples.groups.tolist() == ["a", "b"]
    with pytest.raises(ZooError, match="the target of row 1 encodes to no token"):
        row_examples(*rows(texts, ["6", ""]), tokenizer, block=4)
    with pytest.raises(ZooError, match="context '' encodes to no token"):
        row_examples(*rows(["1", ""], ["6", "7"]), tokenizer, block=4)


@pytest.mark.slow
def test_eval_on_the_runs_own_dataset_uses_the_dataset_settings_it_trained_with(tmp_path):
    """Dataset settings given with --set at training time are part of the run: `zoo eval` of
    the run on its own dataset generates the same rows, not the defaults'."""
    catalogue(tmp_path, "mixed", **SMALL)
    result = run_cli(
        "run",
        "digits-char",
        "mixed",
        "--json",
        "--steps",
        8,
        *TINY_DIGITS,
        "--set",
        "dataset.seed=7",
        "--set",
        "dataset.max_len=6",
    )
    assert result.code == 0, result
    summary = json.loads(result.out)
    scored = run_cli("eval", summary["run_id"], "mixed", "--split", "heldout", "--json")
    assert scored.code == 0, scored
    assert json.loads(scored.out)["metrics"]["accuracy"] == pytest.approx(
        summary["metrics"]["heldout_accuracy"], abs=1e-9
    )
    with Store() as store:
        trained, evaluation = (
            store.get(summary["run_id"]),
            store.get(json.loads(scored.out)["run_id"]),
        )
    assert evaluation["config"]["dataset_fingerprint"] == trained["config"]["dataset_fingerprint"]


def test_text_windows_keep_one_score_each_paired_by_their_ids(tiny_text):
    from safetensors.numpy import load_file

    from zoo.records.paths import run_folder

    def kept(*settings):
        result = run_cli(
            "run", "digits-char", tiny_text, "--json", "--steps", 2, *TINY_DIGITS, *settings
        )
        assert result.code == 0, result
        out = json.loads(result.out)
        scores = load_file(str(run_folder(out["run_id"]) / "per_example.safetensors"))
        return out["metrics"], scores

    metrics, scores = kept("--set", "block_size=16", "--set", "eval_windows=50")
    assert len(scores["test_accuracy"]) == 50
    assert scores["test_loss"].mean() == pytest.approx(metrics["test_loss"], rel=1e-5)
    _, other = kept("--set", "block_size=8", "--set", "eval_windows=50")  # other windows
    assert bytes(other["examples:test"]) != bytes(scores["examples:test"])
