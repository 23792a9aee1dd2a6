"""The Python API (zoo.api, re-exported as zoo.run, zoo.load, zoo.sweep): the same names,
settings and figures as the commands, and ZooError where a command exits 2. Each side
trains in its own ZOO_HOME, so neither finds the other's runs."""

import json
import subprocess
import sys

import pytest
from conftest import TINY_DECODER, run_cli

import zoo

TIMING = {"train_time", "tokens_per_s"}
# TINY_DECODER's --set pairs as keyword arguments
TINY = dict(pair.split("=") for pair in TINY_DECODER[1::2])
TINY_ENCODER = {k: v for k, v in TINY.items() if k != "sample_tokens"}


def flags(settings: dict) -> list[str]:
    return [part for key, value in settings.items() for part in ("--set", f"{key}={value}")]


def ok(*args) -> str:
    result = run_cli(*args)
    assert result.code == 0, result
    return result.out


def same_metrics(a: dict, b: dict):
    assert set(a) == set(b)
    for key in a:
        if key not in TIMING:
            assert a[key] == b[key], key


@pytest.fixture
def reviews(tmp_path):
    rows = ["text,label"] + [
        f"the film {i} was {'good and fine' if i % 2 else 'dull and bad'},"
        f"{'pos' if i % 2 else 'neg'}"
        for i in range(160)
    ]
    path = tmp_path / "reviews.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_language_model_run_generate_evaluate_and_sweep_match_the_cli(
    tiny_text, tmp_path, monkeypatch
):
    monkeypatch.setenv("ZOO_HOME", str(tmp_path / "api"))
    run = zoo.run("decoder-char", str(tiny_text), steps=6, seed=0, quiet=True, **TINY)
    assert run.status == "finished" and run.task == "language-modeling"
    assert run.folder.name == run.id and (run.folder / "model.safetensors").is_file()
    model = zoo.load(run.id[:15])
    text = model.generate("line", tokens=15, seed=1)
    with pytest.raises(zoo.ZooError, match="temperature must be"):
        model.generate("line", temperature=float("nan"))
    scored = model.evaluate(str(tiny_text), split="validation")
    assert scored.parent_id == run.id and scored.metrics["bpc"] == run.metrics["val_bpc"]
    swept = zoo.sweep("decoder-char", on=str(tiny_text), seeds=2, steps=6, progress=False, **TINY)
    assert [(c["seed"], c["state"]) for c in swept.cells] == [(0, "reused"), (1, "finished")]
    assert swept.cells[0]["run_id"] == run.id and not swept.failed  # seed 0: not trained again
    assert zoo.runs()["id"].tolist().count(run.id) == 1

    monkeypatch.setenv("ZOO_HOME", str(tmp_path / "cli"))
    cli = json.loads(
        ok("run", "decoder-char", tiny_text, "--steps", 6, "--seed", 0, "--json", *flags(TINY))
    )
    same_metrics(run.metrics, cli["metrics"])
    assert (
        ok("generate", cli["run_id"], "--prompt", "line", "--tokens", 15, "--seed", 1)
        == text + "\n"
    )
    cli_scored = json.loads(ok("eval", cli["run_id"], tiny_text, "--split", "validation", "--json"))
    assert cli_scored["metrics"] == scored.metrics
    cli_swept = json.loads(
        ok(
            "sweep",
            "decoder-char",
            "--on",
            tiny_text,
            "--seeds",
            2,
            "--steps",
            6,
            *flags(TINY),
            "--json",
        )
    )
    assert [c["state"] for c in cli_swept["cells"]] == [c["state"] for c in swept.cells]
    (cell,) = cli_swept["comparison"]
    (api_cell,) = swept.frame.to_dict("records")
    assert (api_cell["n"], api_cell["mean"], api_cell["std"]) == (2, cell["mean"], cell["std"])


@pytest.mark.slow
def test_classifier_run_and_predict_match_the_cli(reviews, tmp_path, monkeypatch):
    texts = ["the film was good", "a dull film"]
    monkeypatch.setenv("ZOO_HOME", str(tmp_path / "api"))
    run = zoo.run("encoder-char", str(reviews), steps=4, seed=2, quiet=True, **TINY_ENCODER)
    loaded = zoo.load(run.id)
    predicted = loaded.predict(texts)
    same_predictions([p.record() for p in loaded.predict(texts[0])], [predicted[0].record()])
    with pytest.raises(zoo.ZooError, match="offers no generation"):
        loaded.generate("the film")

    monkeypatch.setenv("ZOO_HOME", str(tmp_path / "cli"))
    cli = json.loads(
        ok(
            "run",
            "encoder-char",
            reviews,
            "--steps",
            4,
            "--seed",
            2,
            "--json",
            *flags(TINY_ENCODER),
        )
    )
    same_metrics(run.metrics, cli["metrics"])
    texts_file = tmp_path / "texts.txt"
    texts_file.write_text("\n".join(texts) + "\n", encoding="utf-8")
    lines = ok("predict", cli["run_id"], "--file", texts_file, "--json").splitlines()
    same_predictions(
        [{k: v for k, v in json.loads(line).items() if k != "text"} for line in lines],
        [p.record() for p in predicted],
    )


def same_predictions(ours: list[dict], theirs: list[dict]) -> None:
    """The same labels, and probabilities equal to the last digits a kernel may change (a
    text alone and in a padded batch, or another CPU's instruction set, differ near 1e-9)."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], (float, dict)):  # a probability, or every class's
                assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-9), key
            else:
                assert a[key] == b[key], key


@pytest.mark.slow
def test_reloaded_runs_compute_on_the_device_zoo_run_picks(reviews, monkeypatch):
    """A run trained with --device auto (CUDA when present) is reloaded the same way, so its
    recorded figures and a reload's agree on any machine; --device asks for another."""
    import zoo.train.torch_model

    run = zoo.run("encoder-char", str(reviews), steps=2, quiet=True, **TINY_ENCODER)
    asked, pick = [], zoo.train.torch_model.pick_device
    monkeypatch.setattr(
        zoo.train.torch_model, "pick_device", lambda device: asked.append(device) or pick(device)
    )
    zoo.load(run.id, device="cpu").evaluate(str(reviews), "train")
    ok("predict", run.id, "a good film")
    ok("predict", run.id, "a good film", "--device", "cpu")
    ok("eval", run.id, reviews, "--split", "train")
    # the loaded run evaluates as it was loaded (no second reload); predict and eval pick anew
    assert asked == ["cpu", "auto", "cpu", "auto"]
    with pytest.raises(zoo.ZooError, match="device must be"):
        zoo.load(run.id, device="gpu")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda t: zoo.run("decoder-chr", t), "Did you mean: decoder-char"),
        (lambda t: zoo.run("decoder-char", t, n_layerz=2), "Did you mean"),
        (lambda t: zoo.run("decoder-char", t, steps=0), "steps must be positive"),
        (lambda t: zoo.run("decoder-char", t, steps=5, time=1.0), "not both"),
        (lambda t: zoo.run("decoder-char", t, device="tpu"), "device must be"),
        (lambda t: zoo.run("decoder-char", t, seed=-1), "seed must be a whole number"),
        (lambda t: zoo.run("decoder-char", "no-such-data"), "Unknown dataset"),
        (lambda t: zoo.load("20990101"), "run"),
        (lambda t: zoo.sweep("decoder-char", on=t, n_layerz=2), "no cell of the sweep can run"),
        (lambda t: zoo.sweep("decoder-char", on=t, seeds=0), "seeds must be positive"),
        (lambda t: zoo.sweep("decoder-char", on=t, grid={"n_layerz": [1, 2]}), "n_layerz"),
        (
            lambda t: zoo.sweep("decoder-char", on=t, workers=zoo.Workers(executor="dask")),
            "executor must be",
        ),
        (
            lambda t: zoo.sweep("decoder-char", t, workers=zoo.Workers(jobs=2, executor="ray")),
            "^jobs is for",
        ),
        (
            lambda t: zoo.sweep("decoder-char", on=t, compare=zoo.ComparisonSpec(evals=True)),
            "not evaluations",
        ),
    ],
)
def test_errors_are_zoo_errors_before_anything_trains(tiny_text, call, message):
    with pytest.raises(zoo.ZooError, match=message):
        call(str(tiny_text))
    assert zoo.runs().empty


def test_import_zoo_and_the_api_names_import_no_torch():
    code = (
        "import sys, zoo; zoo.run, zoo.load, zoo.sweep, zoo.runs, zoo.compare; "
        "print(sorted(m for m in ('torch', 'pandas', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_run_flows_down_the_layers_once(tiny_text):
    """zoo.run's model name goes API -> plan -> runner -> store: planned once, never through
    the operations on trained runs (an ensemble preset is told apart by the catalogue), and
    no lower layer calls back up into the API or the command line."""
    import zoo.train.plan

    entered, plans = [], []
    planned = zoo.train.plan.plan_run

    def plan_once(*args, **kwargs):
        plans.append(args[0])
        return planned(*args, **kwargs)

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name != "<module>":  # calls, not imports
            name = frame.f_globals.get("__name__", "")
            if name.startswith("zoo.") and (not entered or entered[-1][0] != name):
                entered.append((name, frame.f_code.co_name))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zoo.train.plan, "plan_run", plan_once)
        sys.setprofile(profile)
        try:
            zoo.run("decoder-char", str(tiny_text), steps=2, quiet=True, **TINY)
        finally:
            sys.setprofile(None)
    assert plans == ["decoder-char"]
    modules = [module for module, _ in entered]
    assert "zoo.records.store" in modules
    assert not [m for m in modules if m.startswith("zoo.operations")]
    trains = entered.index(("zoo.train.runner", "execute"))
    assert not [m for m in modules[trains:] if m.startswith(("zoo.api", "zoo.cli"))]


def test_a_sweeps_comparison_is_its_comparison_and_the_old_table_name_warns():
    from zoo.errors import ZooDeprecationWarning

    compared = object()
    result = zoo.SweepResult([], compared, None)
    assert result.comparison is compared and result.frame is None
    with pytest.warns(ZooDeprecationWarning, match=r"SweepResult\.comparison"):
        assert result.table is compared


def test_export_gives_a_typed_record_and_its_dict_reading_warns():
    from pathlib import Path

    from zoo.errors import ZooDeprecationWarning

    done = zoo.Export("r1", Path("out"), "onnx", "model.onnx", 32, 1e-6, True)
    assert done.record() == {
        "run_id": "r1",
        "folder": "out",
        "format": "onnx",
        "summary": "model.onnx",
        "compared": 32,
        "max_difference": 1e-6,
        "labels_agree": True,
    }
    with pytest.warns(ZooDeprecationWarning, match=r"read \.format"):
        assert done["format"] == "onnx"  # what zoo.export's dict gave


def test_the_sweep_and_tune_keywords_before_workers_and_compare_still_work_and_warn(tiny_text):
    on = str(tiny_text)
    old_keywords = pytest.warns(zoo.ZooDeprecationWarning, match="deprecated")

    def sweep(**options):
        return zoo.sweep("decoder-char", on, seeds=2, dry_run=True, progress=False, **options)

    with old_keywords as said, pytest.raises(zoo.ZooError, match="is for the ray executor"):
        sweep(jobs=2, cell_cpus=2)  # reached the workers' own check
    assert "pass workers=zoo.Workers(jobs=..., cpus=...)" in str(said[0].message)
    with old_keywords as said, pytest.raises(zoo.ZooError) as old:
        sweep(metric="val_bpcz", better="lower")
    assert "pass compare=zoo.ComparisonSpec(metric=..., better=...)" in str(said[0].message)
    with pytest.raises(zoo.ZooError) as new:
        sweep(compare=zoo.ComparisonSpec(metric="val_bpcz", better="lower"))
    assert str(old.value) == str(new.value) and "val_bpcz" in str(new.value)
    with old_keywords:
        before = sweep(jobs="auto", baseline="decoder-char", examples=False)
    grouped = sweep(workers=zoo.Workers(jobs="auto"), compare=zoo.ComparisonSpec(examples=False))
    assert before.cells == grouped.cells
    with old_keywords as said, pytest.raises(zoo.ZooError, match="is for the ray executor"):
        zoo.tune("decoder-char", on, space="lr=log(1e-3,1e-1)", trials=1, trial_gpus=1)
    assert "zoo.tune(trial_gpus=...)" in str(said[0].message)
