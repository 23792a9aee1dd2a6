"""`zoo tune` on each example plugin package, installed like any third-party package: every
trial finishes (a trial holds the test split out, and the example pipelines read only the
splits a run may read), and the winner is re-run and reported on test."""

from __future__ import annotations

import json

import pytest
from conftest import install_example, run_zoo

EXAMPLES = {
    # package: (entry point, model, dataset, settings)
    "zoo-regress": ("regress", "bitmlp-char", "bits", []),
    "zoo-bow": ("bow", "bow-words", "TEXT", ["--set", "vocab_size=100"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("package", sorted(EXAMPLES))
def test_zoo_tune_passes_on_each_example_package(package, tmp_path_factory, tmp_path, one_thread):
    pytest.importorskip("optuna")
    entry_point, model, dataset, settings = EXAMPLES[package]
    if dataset == "TEXT":  # a labelled text file the classification pipeline takes
        dataset = tmp_path / "reviews.csv"
        rows = [f"a {'good' if i % 2 else 'bad'} film number {i},{i % 2}" for i in range(60)]
        dataset.write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    site = install_example(tmp_path_factory, package)
    env = {
        "PYTHONPATH": str(site),
        "ZOO_LOAD_PLUGINS": entry_point,
        "ZOO_HOME": str(tmp_path / "home"),
    }
    result = run_zoo(
        "tune",
        model,
        "--on",
        dataset,
        "--trials",
        2,
        "--seeds",
        1,
        "--steps",
        30,
        "--space",
        "lr=log(1e-3,1e-2)",
        *settings,
        "--json",
        env=env,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "held out" not in result.stderr and "failed" not in result.stderr, result.stderr
    runs = run_zoo("runs", "--json", env=env, cwd=tmp_path)
    rows = json.loads(runs.stdout)
    assert rows and all(row["status"] == "finished" for row in rows), rows
    assert len(rows) >= 3  # two trials, then the winner re-run on a seed of its own
