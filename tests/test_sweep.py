"""zoo sweep: planning, skipping impossible cells, failures that do not stop the sweep,
resuming, and the table at the end (tiny configs)."""

import io

import pandas as pd
import pytest
from conftest import TINY_DECODER, run_cli

from zoo.core import loading
from zoo.hookspecs import hookimpl
from zoo.records.store import Store


class HeadlessPlugin:
    """An architecture with only a classification head: it cannot model plain text."""

    @hookimpl
    def register_architectures(self, register):
        from zoo.plugins.decoder import DecoderConfig

        register(
            "headless",
            "zoo.plugins.decoder.model:build",
            config=DecoderConfig,
            tasks=("classification",),
            description="test: classification only",
        )


@pytest.fixture
def with_headless():
    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(HeadlessPlugin(), loading.PluginInfo("headless", "test"))
    loading.reset_zoo(zoo)
    return zoo


@pytest.fixture
def small_text(tmp_path):
    """Too little text for a context length of 16: every run on it fails inside the pipeline."""
    path = tmp_path / "small.txt"
    path.write_text("\n".join(f"l{i}" for i in range(24)) + "\n", encoding="utf-8")
    return path


def finished_runs():
    with Store() as store:
        return [r for r in store.rows() if r["status"] == "finished"]


@pytest.mark.slow
def test_sweep_skips_impossible_records_failures_resumes_and_prints_the_table(
    tiny_text, small_text, with_headless
):
    args = [
        "sweep",
        "decoder-char",
        "headless-char",
        "--on",
        tiny_text,
        small_text,
        "--seeds",
        2,
        "--steps",
        3,
        *TINY_DECODER,
        "--format",
        "csv",
    ]
    first = run_cli(*args)
    assert first.code == 1, first  # two cells failed
    assert "8 cells: 4 to run, 0 already finished, 4 impossible" in first.err
    skips = [line for line in first.err.splitlines() if line.startswith("  skip headless-char")]
    assert len(skips) == 2 and "no language-modeling head" in skips[0]
    assert (
        "[4/4]" in first.err
        and "sweep done: 2 trained, 0 already finished, 4 impossible, 2 failed" in first.err
    )
    table = pd.read_csv(io.StringIO(first.out))
    assert table[["model", "dataset", "n"]].values.tolist() == [["decoder-char", str(tiny_text), 2]]
    assert table["std"].iloc[0] > 0 and len(table["runs"].iloc[0].split()) == 2
    with Store() as store:
        failed = [r for r in store.rows() if r["status"] == "failed"]
    assert len(failed) == 2 and all(r["dataset"] == str(small_text) for r in failed)
    assert all("context length" in r["error"] for r in failed)

    second = run_cli(*args)  # resumes: the finished cells are not trained again
    assert "2 to run, 2 already finished, 4 impossible" in second.err
    assert "sweep done: 0 trained, 2 already finished" in second.err
    assert len(finished_runs()) == 2
    assert pd.read_csv(io.StringIO(second.out))["runs"].tolist() == table["runs"].tolist()


@pytest.mark.slow
def test_sweep_table_shows_only_the_sweeps_runs(tiny_text):
    base = ["--seeds", 1, *TINY_DECODER, "--format", "csv"]
    run_cli("sweep", "decoder-char", "--on", tiny_text, "--steps", 2, *base)
    result = run_cli("sweep", "decoder-cha?", "--on", tiny_text, "--steps", 3, *base)
    assert result.code == 0, result
    table = pd.read_csv(io.StringIO(result.out))
    assert len(table) == 1 and table["setting"].isna().all()  # not the 2-step run
    assert len(finished_runs()) == 2


@pytest.mark.slow
def test_grid_makes_each_setting_its_own_cell_and_row(tiny_text):
    result = run_cli(
        "sweep",
        "decoder-char",
        "--on",
        tiny_text,
        "--grid",
        "lr=1e-3,3e-3",
        "--grid",
        "train.grad_clip=0.5,1",
        "--steps",
        2,
        *TINY_DECODER,
        "--format",
        "csv",
    )
    assert result.code == 0, result
    assert "1 model(s) x 1 dataset(s) x 4 setting(s) x 1 seed(s) = 4 cells" in result.err
    assert "decoder-char (lr=0.003, train.grad_clip=0.5) on" in result.err  # typed once
    table = pd.read_csv(io.StringIO(result.out))
    assert sorted(table["setting"]) == [
        "grad_clip=0.5, lr=0.001",
        "grad_clip=0.5, lr=0.003",
        "grad_clip=1, lr=0.001",
        "grad_clip=1, lr=0.003",
    ]
    assert (table["n"] == 1).all()
    with Store() as store:
        configs = sorted(
            (r["config"]["configs"]["train"]["lr"], r["config"]["configs"]["train"]["grad_clip"])
            for r in store.rows()
        )
    assert configs == [(1e-3, 0.5), (1e-3, 1.0), (3e-3, 0.5), (3e-3, 1.0)]


def test_dry_run_plans_without_training(tiny_text, with_headless):
    result = run_cli(
        "sweep",
        "decoder-char",
        "headless-c*",
        "--on",
        tiny_text,
        "shakespeare",
        "--seeds",
        2,
        "--dry-run",
    )
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert len(lines) == 8  # decoder-char and headless-char x 2 datasets x 2 seeds
    assert sum("to run" in line for line in lines) == 4
    assert sum("skip:" in line for line in lines) == 4
    assert finished_runs() == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["nomatch-*", "--on", "shakespeare"], "no model matches 'nomatch-*'"),
        (["decoder-chr", "--on", "shakespeare"], "Did you mean: decoder-char"),
        (["decoder-char", "--on", "shakespere"], "Did you mean: shakespeare"),
        (
            ["decoder-char", "--on", "shakespeare", "--set", "n_layr=2"],
            "no cell of the sweep can run",
        ),
        (
            ["decoder-char", "--on", "shakespeare", "--grid", "n_layr=1,2"],
            "--grid: Unknown config key 'n_layr'. Did you mean: n_layer",
        ),
        (
            ["decoder-char", "--on", "shakespeare", "--grid", "lr=0.1,fast"],
            "--grid lr: lr must be a finite number, not 'fast'",
        ),
        (
            ["decoder-char", "--on", "shakespeare", "--grid", "n_layer=1,2.5"],
            "n_layer must be an integer",
        ),
        (
            ["decoder-char", "--on", "shakespeare", "--grid", "steps=1,2", "--steps", "3"],
            "steps is both swept (grid) and fixed",
        ),
        (["decoder-char", "--on", "shakespeare", "--grid", "lr"], "--grid expects key=v1,v2"),
        (
            [
                "decoder-char",
                "--on",
                "shakespeare",
                "--grid",
                "lr=1,",
            ],
            "--grid lr: empty value",
        ),
        (
            ["decoder-char", "--on", "shakespeare", "--grid", "lr=1", "--grid", "train.lr=2"],
            "--grid train.lr is given twice",
        ),
    ],
)
def test_bad_sweeps_fail_before_training(args, message):
    result = run_cli("sweep", *args)
    assert result.code == 2 and message in result.err, result
    with Store() as store:
        assert store.rows() == []


@pytest.mark.slow
def test_the_time_to_quality_presets_sweep_together_and_compare(tiny_text):
    """The README's comparison of the language-model families (a state-space model, the
    modern and the GPT-2 block, RWKV) runs as one sweep, at tiny shapes."""
    presets = ["mamba-char", "decoder-modern", "decoder-char", "hf-rwkv-char"]
    # 2 layers: transformers' RWKV initialisation divides by n_layer - 1
    tiny = ["n_layer=2", "n_embd=24", "block_size=16", "batch_size=4", "eval_batches=2"]
    result = run_cli(
        "sweep",
        *presets,
        "--on",
        tiny_text,
        "--seeds",
        2,
        "--steps",
        2,
        *[a for s in [*tiny, "sample_tokens=0"] for a in ("--set", s)],
        "--format",
        "csv",
    )
    assert result.code == 0, result
    assert "8 cells: 8 to run, 0 already finished, 0 impossible" in result.err
    table = pd.read_csv(io.StringIO(result.out))
    assert sorted(table["model"]) == sorted(presets) and (table["n"] == 2).all()
    assert table["mean"].notna().all() and (table["std"] > 0).all()
