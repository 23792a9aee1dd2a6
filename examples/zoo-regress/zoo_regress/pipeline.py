"""The regression pipeline: what ``zoo run`` does for the ``regression`` task.

Each text becomes its tokens, right-padded to the architecture's ``block_size`` with a mask;
the model maps them to one number, trained on the task's declared loss (squared error).
Reported: ``val_mse``, ``val_r2``, ``test_mse``, ``test_r2`` (and the loop's figures).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zoo.plugin import Batch, Job, Prediction, RunResult, TaskSpec, TrainConfig, ZooError, train
from zoo.plugin.data import check_ids, dataset_key, train_cached

ROLES = {"train": "train", "validation": "val", "test": "test"}


@dataclass
class RegressionConfig(TrainConfig):
    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup_steps: int = 10
    weight_decay: float = 0.0
    eval_interval: int = 50


@dataclass(frozen=True)
class ValuePrediction(Prediction):
    """What ``predict`` returns for each text: the predicted number."""

    value: float


def check_dataset(dataset) -> None:
    """A numeric label column: class labels (a ClassLabel, text) are not numbers to regress."""
    column = dataset.label_column
    if column is None:
        raise ZooError(
            f"dataset {dataset.ref.name!r} has no label column to regress on; "
            "name one with --label-column"
        )
    dtype = str(getattr(dataset.split("train").features[column], "dtype", ""))
    if dataset.class_names or not dtype.startswith(("float", "int")):
        raise ZooError(
            f"label column {column!r} of dataset {dataset.ref.name!r} holds classes "
            f"({dtype or 'class labels'}), not numbers to regress on"
        )


def encode(tokenizer, texts: list[str], block: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids [N, block] right-padded with <pad>, and the mask [N, block] (1 = real)."""
    flat, offsets = tokenizer.encode_rows(texts)
    check_ids(tokenizer, flat)  # an id outside the vocabulary is the tokenizer's failure
    ids = np.full((len(texts), block), tokenizer.pad_id, dtype=np.int64)
    mask = np.zeros((len(texts), block), dtype=np.int64)
    for row in range(len(texts)):
        tokens = flat[offsets[row] : offsets[row + 1]][:block]
        ids[row, : len(tokens)], mask[row, : len(tokens)] = tokens, 1
    return ids, mask


def predictions(model, ids: np.ndarray, mask: np.ndarray, batch: int = 256) -> np.ndarray:
    return np.concatenate(
        [
            model.logits(ids[i : i + batch], mask[i : i + batch]).reshape(-1)
            for i in range(0, len(ids), batch)
        ]
    ).astype(np.float64)


def scores(y: np.ndarray, predicted: np.ndarray, prefix: str) -> dict:
    """Mean squared error and R² (1 - residual / total sum of squares)."""
    residual = float(np.sum((y - predicted) ** 2))
    total = float(np.sum((y - y.mean()) ** 2))
    head = f"{prefix}_" if prefix else ""
    return {
        f"{head}mse": residual / len(y),
        f"{head}r2": 1.0 - residual / total if total > 0 else float("nan"),
    }


def split_data(dataset, role: str, tokenizer, block: int):
    split = dataset.split(role)
    ids, mask = encode(tokenizer, [str(t) for t in split[dataset.text_column]], block)
    return ids, mask, np.asarray(split[dataset.label_column], dtype=np.float32)


def run(job: Job) -> RunResult:
    cfg = job.train_config
    block = job.context_length
    tokenizer = job.saved_tokenizer()  # resuming: the run keeps the vocabulary it started with
    if tokenizer is None:
        column = job.dataset.text_column
        tokenizer = train_cached(
            job.tokenizer.load(),
            job.tokenizer.name,
            job.tokenizer_config,
            lambda: job.dataset.split("train")[column],
            dataset_key(job.dataset, "train"),
            say=job.say,
        )
        tokenizer.save(job.run.file("tokenizer.json"))
    # the splits this run may read: `zoo tune` holds the test split out of its trials
    roles = job.dataset.roles
    data = {role: split_data(job.dataset, role, tokenizer, block) for role in roles}
    spec = TaskSpec("regression", tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    model = job.build_model(spec)  # trains with the task's declared loss
    ids, mask, y = data["train"]

    def next_batch(rng) -> Batch:
        rows = rng.integers(0, len(y), cfg.batch_size)
        return Batch(ids[rows], y[rows], mask[rows], tokens=int(mask[rows].sum()))

    def validate() -> dict:
        v_ids, v_mask, v_y = data["validation"]
        return scores(v_y, predictions(model, v_ids, v_mask), "val")

    # the validation figure that picks the best weights (and stops on patience)
    result = train(
        job, model, next_batch, validate=validate, score_key="val_mse", higher_is_better=False
    )
    metrics = {
        "steps": result.steps,
        "best_step": result.best_step,  # the validation whose weights are reported
        "train_loss": result.train_loss,
        "tokens_per_s": result.tokens_per_s,
        "train_time": result.train_time,
    }
    for role in roles:
        if role != "train":
            r_ids, r_mask, r_y = data[role]
            metrics.update(scores(r_y, predictions(model, r_ids, r_mask), ROLES[role]))
    job.run.save_weights(model.state_dict())
    return RunResult(model.num_parameters(), metrics, spec)


def predict(trained, texts: list[str]) -> list[ValuePrediction]:
    ids, mask = encode(trained.tokenizer, [str(t) for t in texts], trained.context_length)
    return [ValuePrediction(float(v)) for v in predictions(trained.model, ids, mask)]


def evaluate(trained, dataset, split: str = "test") -> dict:
    """``zoo eval``: mse and r2 of a trained run on one split (names without a split prefix)."""
    check_dataset(dataset)
    ids, mask, y = split_data(dataset, split, trained.tokenizer, trained.context_length)
    return {**scores(y, predictions(trained.model, ids, mask), ""), "examples": len(y)}


class Regression:
    """The pipeline object registered for the task."""

    config = RegressionConfig
    check_dataset = staticmethod(check_dataset)
    run = staticmethod(run)
    predict = staticmethod(predict)
    evaluate = staticmethod(evaluate)
