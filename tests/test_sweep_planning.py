"""Planning a sweep is linear and bounded: values equal once parsed are one cell, a grid
beyond the cap is refused before anything is planned, and planning reuses what cells share
(the dataset loaded once, a setting's plan for every seed)."""

from __future__ import annotations

import time

from conftest import run_cli

from zoo.sweeps.cells import MAX_CELLS, plan_sweep
from zoo.sweeps.grid import parse_grid


def test_values_equal_after_parsing_are_one_cell(tiny_text):
    result = run_cli(
        "sweep", "decoder-char", "--on", tiny_text, "--grid", "lr=0.001,1e-3,0.0010", "--dry-run"
    )
    assert result.code == 0, result
    assert "= 1 cells" in result.err and "1 setting(s)" in result.err, result.err


def test_a_grid_beyond_the_cap_is_refused_at_once(tiny_text):
    values = ",".join(f"{0.0001 * i:.4f}" for i in range(1, 101))
    began = time.time()
    result = run_cli(
        "sweep",
        "decoder-char",
        "--on",
        tiny_text,
        "--grid",
        f"lr={values}",
        "--grid",
        f"dropout={','.join(f'0.{i:03d}' for i in range(100))}",
        "--dry-run",
    )
    assert result.code == 2, result
    assert "10,000 cells" in result.err and f"at most {MAX_CELLS:,}" in result.err
    assert time.time() - began < 5


def test_a_million_seeds_is_refused_at_once(tiny_text):
    began = time.time()
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--seeds", 1_000_000, "--dry-run")
    assert result.code == 2 and "1,000,000 seed(s)" in result.err, result
    assert time.time() - began < 5


def test_planning_the_largest_sweep_allowed_takes_seconds_not_minutes(tiny_text):
    plan_sweep(["decoder-char"], [str(tiny_text)], seeds=1)  # imports and first load
    grid = parse_grid(["lr=" + ",".join(f"{0.0001 * i:.4f}" for i in range(1, 101))])
    began = time.time()
    sweep = plan_sweep(["decoder-char"], [str(tiny_text)], seeds=MAX_CELLS // 100, grid=grid)
    assert len(sweep.cells) == MAX_CELLS and not sweep.impossible
    assert time.time() - began < 10  # about 1 s here; the old planner took about 200 s
