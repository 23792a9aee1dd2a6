"""User mistakes that used to be accepted silently or answered with a raw exception: each
is one clear line and exit 2."""

from __future__ import annotations

import pytest
from conftest import TINY_DECODER, run_cli
from test_compare import fill_two_models


@pytest.mark.parametrize(
    "where",
    [
        "params / 0 > 1",
        "val_bpc // 0 < 5",
        "seed % 0 == 0",
        "10 ** 400 > params",
        "params / (seed - seed) > 0",
    ],
)
def test_where_with_a_non_finite_result_is_an_error(where):
    fill_two_models()
    result = run_cli("compare", "--where", where)
    assert result.code == 2, result
    assert len(result.err.strip().splitlines()) == 1 and result.err.startswith(
        "zoo: error: --where"
    ), result.err


def test_where_arithmetic_that_stays_finite_still_works():
    fill_two_models()
    result = run_cli("compare", "--where", "params / 2 >= 0", "--format", "csv")
    assert result.code == 0, result


@pytest.mark.parametrize("setting", ["temperature=-1", "temperature=nan", "top_k=0"])
def test_bad_sampling_settings_are_refused_before_training(tiny_text, setting):
    result = run_cli(
        "run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--set", setting
    )
    assert result.code == 2, result
    assert setting.split("=")[0] in result.err and len(result.err.strip().splitlines()) == 1


LONG = "9" * 100_000


@pytest.mark.parametrize(
    "args",
    [
        ["run", "x" * 100_000, "text.txt"],
        ["run", "decoder-char", "text.txt", "--set", f"lr={LONG}"],
        ["run", "decoder-char", "text.txt", "--set", f"y{LONG}=1"],
    ],
)
def test_a_long_value_is_not_echoed_back_whole(args):
    result = run_cli(*args)
    assert result.code == 2, result.err[:300]
    assert len(result.err) < 2_200, len(result.err)
    assert len(result.err.strip().splitlines()) == 1


def test_a_partial_is_named_by_its_function_in_messages():
    import functools

    from zoo.core.kinds import describe_target
    from zoo.errors import shown

    def build(config, spec, extra):
        return None

    target = functools.partial(build, extra=1)
    assert (
        shown(target) == "a partial of test_a_partial_is_named_by_its_function_in_messages."
        "<locals>.build"
    )
    assert "functools.partial(" not in describe_target(target)


def test_a_long_class_list_is_summarised():
    from zoo.pipelines.classification import class_ids

    from zoo.errors import ZooError

    classes = [f"class{i}" for i in range(190)]
    with pytest.raises(ZooError) as caught:
        class_ids(["class1", "nope"], classes, "the test split")
    message = str(caught.value)
    assert "nope" in message and "(190 in all)" in message and "class189" not in message


def test_nan_weights_in_a_run_folder_are_one_line(tiny_text, one_thread):
    import json

    import numpy as np
    from safetensors.numpy import load_file, save_file

    from zoo.records.store import home

    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--json")
    run_id = json.loads(result.out)["run_id"]
    path = home() / run_id / "model.safetensors"
    weights = load_file(path)
    name = sorted(weights)[0]
    weights[name] = np.full_like(weights[name], np.nan)
    save_file(weights, path)
    for args in (["generate", run_id, "--tokens", 3], ["eval", run_id, tiny_text]):
        refused = run_cli(*args)
        assert refused.code == 2, refused
        assert "holds NaN or infinite values" in refused.err
        assert len(refused.err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_dataset_that_is_a_pipe_or_a_device_is_named_as_such(tmp_path, kind):
    import os

    if kind == "fifo":
        path = tmp_path / "data.txt"
        os.mkfifo(path)
        expected = "is a named pipe (FIFO)"
    else:
        path, expected = "/dev/null", "is a device"
    result = run_cli("run", "decoder-char", path, "--steps", 1)
    assert result.code == 2, result
    assert expected in result.err and "Unable to find" not in result.err, result.err


@pytest.mark.parametrize("failing", ["store", "lock"])
def test_a_full_disk_leaves_no_run_folder_without_its_row(tiny_text, monkeypatch, failing):
    from zoo.errors import ZooError
    from zoo.records.store import home

    def full(*args, **kwargs):
        raise ZooError("cannot open the results store: database or disk is full")

    monkeypatch.setattr(
        "zoo.train.runner.Store" if failing == "store" else "zoo.train.runner.own_run", full
    )
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 1, *TINY_DECODER)
    assert result.code == 2, result
    assert "disk is full" in result.err
    folders = (
        [p for p in home().iterdir() if p.is_dir() and not p.name.startswith(".")]
        if home().exists()
        else []
    )
    assert folders == []
