"""A dataset plugin declares its task, columns and config dataclass; --set reaches its
config (checked like any key, with did-you-mean), runs record it, and zoo show lists it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from conftest import TINY_ENCODER, run_cli

from zoo.core import loading
from zoo.errors import ZooError
from zoo.hookspecs import hookimpl
from zoo.records.store import home
from zoo.train.plan import config_hash, plan_from_record, plan_run

LOADED = []  # the configs the loader was called with


@dataclass
class ReviewsConfig:
    rows: int = 60  # rows per split
    good_word: str = "great"  # the word the positive rows contain
    lengths: list[int] = None  # words per row, cycled

    def __post_init__(self):
        if self.rows < 10:
            raise ValueError(f"rows must be at least 10, got {self.rows}")
        self.lengths = list(self.lengths or [3, 5])


def load_reviews(config: ReviewsConfig):
    import datasets

    LOADED.append(config)

    def split(offset):
        rows = [
            (
                " ".join(
                    [config.good_word if i % 2 else "awful"]
                    * config.lengths[i % len(config.lengths)]
                ),
                "pos" if i % 2 else "neg",
            )
            for i in range(offset, offset + config.rows)
        ]
        return datasets.Dataset.from_dict(
            {"words": [r[0] for r in rows], "tag": [r[1] for r in rows]}
        )

    return datasets.DatasetDict({"train": split(0), "validation": split(1), "test": split(2)})


class ReviewsPlugin:
    @hookimpl
    def register_datasets(self, register):
        register(
            "reviews",
            load_reviews,
            config=ReviewsConfig,
            tasks=("classification",),
            columns={"text": "words", "label": "tag"},
            description="generated reviews",
        )


@pytest.fixture
def reviews():
    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(ReviewsPlugin(), loading.PluginInfo("reviews", "test"))
    loading.reset_zoo(zoo)
    LOADED.clear()
    return zoo


@pytest.mark.slow
def test_set_reaches_the_dataset_config_and_the_run_records_it(reviews):
    result = run_cli(
        "run",
        "encoder-char",
        "reviews",
        "--steps",
        2,
        "--json",
        *TINY_ENCODER,
        "--set",
        "rows=20",
        "--set",
        "dataset.good_word=fine",
        "--set",
        "lengths=2,4,6",
    )
    assert result.code == 0, result
    summary = json.loads(result.out)
    assert summary["task"] == "classification"  # declared by the plugin, no catalogue entry
    assert LOADED[-1] == ReviewsConfig(rows=20, good_word="fine", lengths=[2, 4, 6])
    config = json.loads((home() / summary["run_id"] / "config.json").read_text())
    assert config["configs"]["dataset"] == {"rows": 20, "good_word": "fine", "lengths": [2, 4, 6]}
    assert (config["text_column"], config["label_column"]) == ("words", "tag")  # declared
    # Rebuilt from the record (resume, reproduce), the dataset is generated the same way.
    plan = plan_from_record(config, reviews)
    assert plan.dataset_ref.config == LOADED[-1] and plan.configs["dataset"] == LOADED[-1]


@pytest.mark.parametrize(
    "setting, message",
    [
        ("row=20", "Unknown config key 'row'. Did you mean: rows?"),
        ("rows=many", "rows must be an integer, not 'many'"),
        ("lengths=2,x", "lengths must be an integer, not 'x'"),
        ("rows=3", "invalid ReviewsConfig: rows must be at least 10, got 3"),
        ("dataset.n_layer=2", "Unknown dataset config key 'n_layer'"),
    ],
)
def test_a_bad_dataset_setting_is_one_line_and_exit_2_before_loading(reviews, setting, message):
    result = run_cli("run", "encoder-char", "reviews", "--set", setting, *TINY_ENCODER)
    assert result.code == 2 and message in result.err, result
    assert len(result.err.strip().splitlines()) == 1 and not LOADED


def test_catalogue_options_come_before_set_and_both_are_checked(reviews, tmp_path):
    (tmp_path / "work" / "registry.toml").write_text(
        '[datasets.short-reviews]\nplugin = "reviews"\nconfig = { rows = 12, lengths = [1] }\n',
        encoding="utf-8",
    )
    loading.reset_zoo()
    zoo = loading.get_zoo()
    assert zoo.add_plugin(ReviewsPlugin(), loading.PluginInfo("reviews", "test"))
    plan = plan_run("encoder-char", "short-reviews", overrides={"rows": "15"}, zoo=zoo)
    assert plan.configs["dataset"] == ReviewsConfig(rows=15, lengths=[1])
    assert plan.task == "classification"
    (tmp_path / "work" / "registry.toml").write_text(
        '[datasets.bad-reviews]\nplugin = "reviews"\nconfig = { rowz = 12 }\n', encoding="utf-8"
    )
    loading.reset_zoo()
    zoo = loading.get_zoo()
    assert zoo.add_plugin(ReviewsPlugin(), loading.PluginInfo("reviews", "test"))
    with pytest.raises(ZooError, match="Unknown dataset config key .rowz.. Did you mean: rows"):
        plan_run("encoder-char", "bad-reviews", zoo=zoo)


def test_zoo_show_lists_a_dataset_plugins_fields_columns_and_task(reviews):
    shown = run_cli("show", "reviews")
    assert shown.code == 0, shown
    for line in (
        "dataset reviews",
        "tasks:  classification",
        "text column: words",
        "label column: tag",
        "dataset config (set with --set KEY=VALUE",
        "rows             int            60",
        "lengths          list[int]",
    ):
        assert line in shown.out, line
    digits = run_cli("show", "digits").out  # the built-in example, with no catalogue entry
    assert "text column: text" in digits and "label column: target" in digits
    assert "min_len          int            3" in digits


def test_the_digits_dataset_takes_its_options_from_set():
    plan = plan_run("digits-char", "digits", overrides={"min_len": "4", "periods": "2,3,4"})
    assert (plan.configs["dataset"].min_len, plan.configs["dataset"].periods) == (4, [2, 3, 4])
    assert plan.dataset_ref.config is plan.configs["dataset"]
    default = plan_run("digits-char", "digits")
    assert default.configs["dataset"].min_len == 3  # and the two plans hash apart
    assert config_hash(plan) != config_hash(default)


@pytest.mark.parametrize("columns", [{"txt": "words"}, {"text": 3}, ["words"]])
def test_bad_declared_columns_set_the_plugin_aside(columns):
    class Bad:
        @hookimpl
        def register_datasets(self, register):
            register("bad", load_reviews, columns=columns)

    zoo = loading.build_zoo(entry_points=False)
    assert not zoo.add_plugin(Bad(), loading.PluginInfo("bad", "test"))
    assert "columns must map roles" in zoo.plugins["bad"].error
