"""One CLI vocabulary: predict takes several texts and stdin, --json on show and generate,
zoo rm, presets first in zoo list models, a compact --matrix, rounded run figures and named
splits, no run recorded for a device that is not there, long failure lists summarised."""

import io
import json
import sys

import pytest
from conftest import TINY_ANY, TINY_DECODER, run_cli

from zoo.records.store import Store, home


def ok(*args):
    result = run_cli(*args)
    assert result.code == 0, result
    return result


def train(model, data, *extra, steps=3) -> str:
    out = ok(
        "run", model, data, "--steps", steps, "--json", "--quiet", "--device", "cpu", *extra
    ).out
    return json.loads(out)["run_id"]


@pytest.fixture
def classifier(negated_reviews):
    return train("encoder-char", negated_reviews, *TINY_ANY)


def test_predict_takes_several_texts_and_standard_input(classifier, monkeypatch):
    several = ok("predict", classifier, "the film was good", "the film was not good", "--json")
    rows = [json.loads(line) for line in several.out.splitlines()]
    assert [r["text"] for r in rows] == ["the film was good", "the film was not good"]
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the film was bad\n\nthe film was great\n"))
    )
    piped = [
        json.loads(line)
        for line in ok("predict", classifier, "-", "--json").out.split("\n")
        if line
    ]
    assert [r["text"] for r in piped] == ["the film was bad", "the film was great"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the film was dull\n")))
    assert (
        json.loads(ok("predict", classifier, "--file", "-", "--json").out)["text"]
        == "the film was dull"
    )
    both = run_cli("predict", classifier, "a text", "--file", "x.txt")
    assert both.code == 2 and "either TEXT or --file" in both.err


def test_show_and_generate_print_json(tiny_text):
    run_id = train("decoder-char", tiny_text, *TINY_DECODER)
    shown = json.loads(ok("show", run_id, "--json").out)
    assert (
        shown["type"] == "run"
        and shown["kind"] == "train"
        and shown["id"] == run_id
        and "val_bpc" in shown["metrics"]
    )
    model = json.loads(ok("show", "decoder-char", "--json").out)
    assert model["architecture"] == "decoder" and model["settings"]["steps"] == 500
    texts = [
        json.loads(line)
        for line in ok(
            "generate", run_id, "--prompt", "li", "--prompt", "the", "--tokens", 5, "--json"
        ).out.splitlines()
    ]
    assert [t["prompt"] for t in texts] == ["li", "the"]
    assert all(t["text"].startswith(t["prompt"]) and t["run_id"] == run_id for t in texts)


def test_rm_removes_runs_rows_and_folders(tiny_text):
    first = train("decoder-char", tiny_text, *TINY_DECODER)
    second = train("decoder-char", tiny_text, *TINY_DECODER, "--set", "lr=2e-3")
    scored = json.loads(ok("eval", first, tiny_text, "--split", "validation", "--json").out)
    dry = ok("rm", "--where", "lr == 0.002", "--dry-run").out
    assert second in dry and (home() / second).is_dir()
    out = ok("rm", "--where", "lr == 0.002").out
    assert f"removed {second}" in out and not (home() / second).exists()
    # a unique prefix of the run (its evaluation may have been made in the same second)
    ok("rm", next(first[:n] for n in range(15, 20) if not scored["run_id"].startswith(first[:n])))
    with Store() as store:
        assert store.rows() == []  # the evaluation of the first went with it
    assert not (home() / first).exists()
    assert run_cli("rm").code == 2
    missing = run_cli("rm", "nosuchrun")
    assert missing.code == 2 and "Unknown run" in missing.err


def test_list_models_shows_presets_and_all_shows_every_pair():
    presets = json.loads(ok("list", "models", "--json").out)
    assert presets and all(m["preset"] for m in presets)
    every = json.loads(ok("list", "models", "--all", "--json").out)
    assert len(every) > len(presets) and not all(m["preset"] for m in every)
    assert "zoo list models --all" in ok("list", "models").out


def test_the_matrix_is_compact_and_names_each_reason_once():
    text = ok("list", "--matrix").out
    # a column per catalogue dataset, as wide as their names; past 120 characters the
    # columns go on in a block below
    assert max(len(line) for line in text.splitlines()) <= 120
    assert all(name in text for name in ("digits", "multi30k-en-de", "shakespeare"))
    assert "- (1)" in text and "(1) " in text


def test_run_output_rounds_figures_and_names_the_split(tiny_text):
    out = ok("run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--device", "cpu")
    tokens = next(line for line in out.out.splitlines() if "tokens_per_s" in line)
    assert "." not in tokens.split()[-1] or len(tokens.split()[-1]) <= 6, tokens
    assert "rows of the train split" in out.err or "rows of the train split" in out.out


def test_a_device_that_is_not_there_records_no_run(tiny_text, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 1, "--device", "cuda")
    assert result.code == 2 and "no CUDA device" in result.err
    with Store() as store:
        assert store.rows() == []
    assert not home().exists() or not [p for p in home().iterdir() if p.is_dir()]


def test_many_failures_are_summarised():
    from zoo.sweeps.cells import Cell, Sweep
    from zoo.sweeps.report import summary

    cells = [
        Cell("m", "d", seed, status="failed", error="E" * 900, run_id=f"r{seed}")
        for seed in range(12)
    ]
    text = summary(Sweep(cells, ["m"], ["d"], list(range(12))))
    assert len(text.splitlines()) == 7 and "and 7 more" in text
    assert max(len(line) for line in text.splitlines()) < 300


def test_plots_refuse_mixed_tasks_name_only_shared_differences_and_never_repeat_colours(
    tiny_text, classifier
):
    from zoo.comparison.plots import run_labels
    from zoo.train.curves import colors

    lm = train("decoder-char", tiny_text, *TINY_DECODER)
    mixed = run_cli("plot", lm, classifier, "--plot", "mixed.png")
    assert mixed.code == 2 and "different tasks" in mixed.err
    rows = [
        {
            "id": f"r{i}",
            "model": model,
            "dataset": "d",
            "seed": 0,
            "kind": "train",
            "architecture": model.split("-")[0],
            "tokenizer": "char",
            "task": "classification",
            "config": {"incidental": {}, "configs": {"model": settings}},
        }
        for i, (model, settings) in enumerate(
            [("fasttext-char", {"bag_dim": 8, "lr_x": 1}), ("lstm-char", {"hidden": 4, "lr_x": 2})]
        )
    ]
    labels = run_labels(rows)
    assert all("bag_dim" not in label and "hidden" not in label for label in labels)
    assert labels[0].endswith("lr_x=1)") and labels[1].endswith("lr_x=2)")
    for count in (3, 11, 25):
        assert len({repr(c) for c in colors(count)}) == count
