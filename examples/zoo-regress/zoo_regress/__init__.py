"""zoo-regress: a task zoo's core has never heard of, added by a plugin.

It registers three things through the public API (``import zoo``) and nothing else:

- the ``regression`` task: its pipeline (``zoo_regress.pipeline``) and its declaration
  (``zoo.plugin.Task``): the loss, the module output, the metrics with their directions and units,
  the primary metric and the prediction type;
- the ``bits`` dataset, generated bit strings whose target is their value as a binary
  fraction (``0.1011`` in base 2), which serves that task;
- the ``bitmlp`` architecture, a small torch network with a regression head.

``zoo run bitmlp-char bits`` trains it with the built-in ``char`` tokenizer.

This module is imported whenever zoo starts, so it stays light: declarations, config
dataclasses and hooks. torch is imported by ``zoo_regress.model`` on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.plugin import Metric, Task, hookimpl
from zoo.plugin.config import sized

REGRESSION = Task(
    name="regression",
    loss="zoo_regress.model:squared_error",  # imported when a model trains
    output="values [B]: one real number per input",
    output_shape=("B",),  # checked on a tiny batch before training: [B, 1] is refused
    metrics=(
        Metric("loss", "lower", "squared error", "mean squared error while training"),
        Metric("mse", "lower", "squared error", "mean squared error"),
        Metric("r2", "higher", "fraction of variance explained", "coefficient of determination"),
    ),
    primary="test_r2",
    curve_metric="val_mse",
    prediction="zoo_regress.pipeline:ValuePrediction",
    columns=("text", "label"),  # a text and a numeric label; check_dataset refuses classes
    description="one real number per text",
)


@dataclass
class BitsConfig:
    # strings in all, split 80/10/10 into train, validation and test
    rows: int = sized(1200, role="rows")
    length: int = 10  # bits per string
    seed: int = 0

    def __post_init__(self):
        if self.rows < 10 or not 1 <= self.length <= 52:  # 52: a float64 holds the value exactly
            raise ValueError("rows must be at least 10 and length between 1 and 52")


@dataclass
class BitMLPConfig:
    n_embd: int = sized(8, role="width")  # width of each position's embedding
    hidden: int = sized(32, at_most=2**15)  # width of the hidden layer
    block_size: int = sized(16, role="context")  # longest input in tokens; shorter ones are padded

    def __post_init__(self):
        if min(self.n_embd, self.hidden, self.block_size) <= 0:
            raise ValueError("n_embd, hidden and block_size must be positive")


@hookimpl
def register_pipelines(register):
    register(
        REGRESSION,
        "zoo_regress.pipeline:Regression",
        config="zoo_regress.pipeline:RegressionConfig",
        description="one real number per text; reports mean squared error and R²",
    )


@hookimpl
def register_datasets(register):
    register(
        "bits",
        "zoo_regress.data:load",
        config=BitsConfig,
        tasks=("regression",),
        columns={"text": "text", "label": "label"},
        description="random bit strings; the target is their value as a binary fraction",
    )


@hookimpl
def register_architectures(register):
    register(
        "bitmlp",
        "zoo_regress.model:build",
        config=BitMLPConfig,
        tasks=("regression",),
        description="embeddings of every position, flattened into a one-hidden-layer MLP",
    )
