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


def reviews_csv(folder, rows=40):
    path = folder / "reviews.csv"
    lines = ["title,text,label"] + [
        f"review {i},the film was {'good' if i % 2 else 'awful'},{i % 2}" for i in range(rows)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_which_columns_a_run_reads_is_part_of_its_cell(isolated):
    from zoo.core import loading

    reviews_csv(isolated)
    (isolated / "registry.toml").write_text(
        "".join(
            f'[datasets.rev-{column}]\npath = "reviews.csv"\ntask = "classification"\n'
            f'text_column = "{column}"\nlabel_column = "label"\n'
            for column in ("title", "text")
        ),
        encoding="utf-8",
    )
    loading.reset_zoo()
    sweep = plan_sweep(["fasttext-wordpunct"], ["rev-title", "rev-text"], seeds=1)
    assert len({c.config_hash for c in sweep.cells}) == 2 and not sweep.impossible
    from zoo.train.plan import PlanChoices, config_hash, plan_run

    chosen = plan_run("fasttext-wordpunct", "reviews.csv", choices=PlanChoices(text_column="title"))
    detected = plan_run("fasttext-wordpunct", "reviews.csv")
    assert config_hash(chosen) != config_hash(detected)


def test_a_finished_cell_is_not_reused_once_its_file_changed(isolated):
    from zoo.data import datasets as zoo_data
    from zoo.records.store import Store

    path = reviews_csv(isolated)
    (cell,) = plan_sweep(["fasttext-wordpunct"], [str(path)], seeds=1).cells
    from zoo.core.loading import get_zoo

    fingerprint = zoo_data.load(cell.plan.dataset_ref, get_zoo(), quiet=True).fingerprint
    with Store() as store:
        store.insert(
            "then",
            status="finished",
            model="fasttext-wordpunct",
            kind="train",
            dataset=str(path),
            seed=0,
            config_hash=cell.config_hash,
            config={"dataset_fingerprint": fingerprint},
        )
    (cell,) = plan_sweep(["fasttext-wordpunct"], [str(path)], seeds=1).cells
    assert cell.done == "then"
    reviews_csv(isolated, rows=41)  # the same file, other content
    (cell,) = plan_sweep(["fasttext-wordpunct"], [str(path)], seeds=1).cells
    assert cell.done is None and cell.stale == "then"
    assert cell.new_because.startswith("the dataset changed since run then")


def test_only_a_local_files_content_is_compared_with_what_a_run_read():
    from types import SimpleNamespace

    from zoo.data.datasets import changed_since

    def loaded(kind):
        return SimpleNamespace(ref=SimpleNamespace(kind=kind), fingerprint="now")

    assert changed_since(loaded("path"), "r1", "then").startswith(
        "the dataset changed since run r1"
    )
    assert changed_since(loaded("path"), "r1", "now") is None
    assert changed_since(loaded("path"), "r1", None) is None  # a run that recorded none
    for kind in ("hub", "plugin"):  # named by their id or their options, never carved anew
        assert changed_since(loaded(kind), "r1", "then") is None
