"""Next-item prediction: read a context, predict the one token that comes next.

Two kinds of data serve it:

- a dataset whose own task is next-item (like `digits`): each row is a context (the text
  column, e.g. "1 2 3") and its next item (the label column, e.g. "4"). Context and target
  are encoded with the run's tokenizer; the label is the target's first token. With the
  `char` tokenizer the spaces between digits are tokens too, so the context "1 2 3" is five
  tokens ending in the digit 3, and the target "4" is one token.
- any other text dataset: the split is tokenized once (as in language modeling) and cut
  into windows of block_size tokens; the label is the token after the window.

A context longer than block_size keeps its last block_size tokens. Every architecture that
lists next-item serves it: the module returns logits [B, vocab] for the token after the
last real position. Metrics: accuracy (exact next item) and loss on the validation and test
splits, on any further split (`heldout` for digits), and per family when rows name one
(`test_arithmetic_accuracy`).
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

import numpy as np
from zoo.pipelines.common import (
    log_softmax,
    loop_metrics,
    pad_rows,
    padded_batch,
    run_tokenizer,
    softmax,
    special_ids,
)

from zoo.plugin import Batch, Job, Prediction, RunResult, TaskSpec, TrainConfig, ZooError, train
from zoo.plugin.config import sized
from zoo.plugin.data import (
    check_ids,
    column_of,
    compression,
    dataset_key,
    row_ids,
    row_texts,
    unragged,
)

GROUP_COLUMN = "family"  # rows that name a family get accuracy per family
PREFIXES = {"validation": "val", "test": "test"}


@dataclass
class NextItemConfig(TrainConfig):
    batch_size: int = 64
    eval_batch_size: int = sized(256, role="batch")
    # text datasets: evenly spaced windows per split in the final evaluation
    eval_windows: int = sized(4000, at_most=2**20)
    # example predictions from the test split, shown at the end
    samples: int = sized(5, at_most=10_000, incidental=True)


# -- examples ------------------------------------------------------------------------------
class Rows:
    """Contexts of mixed lengths (right-padded token ids) and the token each predicts."""

    def __init__(
        self,
        inputs: np.ndarray,
        lengths: np.ndarray,
        targets: np.ndarray,
        groups: np.ndarray | None = None,
        texts: list[str] | None = None,
    ):
        self.inputs, self.lengths, self.targets = inputs, lengths, targets  # [N, T], [N], [N]
        self.groups, self.texts = groups, texts

    def __len__(self) -> int:
        return len(self.targets)

    def batch(self, rows: np.ndarray) -> Batch:
        inputs, mask = padded_batch(self.inputs, self.lengths, rows)
        return Batch(inputs, self.targets[rows], mask, tokens=int(self.lengths[rows].sum()))

    def context(self, row: int, tokenizer) -> str:
        if self.texts is not None:
            return self.texts[row]
        return tokenizer.decode(self.inputs[row, : self.lengths[row]].tolist())


class Windows:
    """Windows of `block` tokens of one tokenized split; the label is the token after each."""

    def __init__(self, ids: np.ndarray, block: int, starts: np.ndarray | None = None):
        self.ids, self.block = ids, block
        self.starts = np.arange(len(ids) - block) if starts is None else starts
        self.groups = None

    def __len__(self) -> int:
        return len(self.starts)

    def batch(self, rows: np.ndarray) -> Batch:
        starts = self.starts[rows]
        inputs = self.ids[starts[:, None] + np.arange(self.block)[None, :]]  # [B, block]
        return Batch(inputs, self.ids[starts + self.block], None, tokens=inputs.size)

    def spread(self, count: int) -> Windows:
        """At most `count` windows, evenly spaced over the split (the same every time)."""
        if count >= len(self):
            return self
        picked = np.unique(np.linspace(0, len(self) - 1, count).round().astype(np.int64))
        return Windows(self.ids, self.block, self.starts[picked])

    def digest(self) -> str:
        """What pairs two runs' windows: the same ids in each window and its next token."""
        rows = self.ids[self.starts[:, None] + np.arange(self.block + 1)[None, :]]
        return hashlib.sha256(rows.astype(np.int64).tobytes()).hexdigest()

    def context(self, row: int, tokenizer) -> str:
        start = self.starts[row]
        return tokenizer.decode(self.ids[start : start + self.block].tolist())


def has_rows(dataset) -> bool:
    """Does the dataset hold (context, next item) rows, rather than text to cut into windows?"""
    return bool(dataset.label_column) and dataset.tasks[:1] == ("next-item",)


def row_examples(dataset, split, tokenizer, block: int) -> Rows:
    """A rows dataset's contexts and targets, each row encoded on its own through the
    cached, batched ``Dataset.map`` (zoo.plugin.data.row_ids) and padded by NumPy."""
    texts = row_texts(column_of(split, dataset.text_column))
    inputs, lengths = contexts(
        *row_ids(split, dataset.text_column, tokenizer), block, tokenizer.pad_id, texts
    )
    ids, offsets = row_ids(split, dataset.label_column, tokenizer)
    empty = np.flatnonzero(offsets[1:] == offsets[:-1])
    if len(empty):
        raise ZooError(
            f"Dataset {dataset.ref.name!r}: the target of row {empty[0]} encodes to no token"
        )
    groups = None
    if GROUP_COLUMN in split.column_names:
        groups = np.asarray(row_texts(column_of(split, GROUP_COLUMN)))
    return Rows(inputs, lengths, ids[offsets[:-1]].astype(np.int64), groups, texts)


def contexts(
    ids: np.ndarray, offsets: np.ndarray, block: int, pad_id: int, texts: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ids [N, T] and lengths [N] of ragged contexts; each keeps its last
    `block` tokens."""
    inputs, lengths = pad_rows(ids, offsets, block, pad_id, keep_last=True)
    empty = np.flatnonzero(lengths == 0)
    if len(empty):
        raise ZooError(f"context {texts[empty[0]]!r} encodes to no token; nothing to continue")
    return inputs, lengths


def encode_contexts(tokenizer, texts: list[str], block: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ids [N, T] and lengths [N]; each context keeps its last `block` tokens."""
    ids, offsets = tokenizer.encode_rows(texts)
    return contexts(check_ids(tokenizer, ids), offsets, block, tokenizer.pad_id, texts)


def window_examples(dataset, role: str, tokenizer, block: int) -> Windows:
    from zoo.pipelines.language_modeling import encode, split_text

    ids = encode(tokenizer, split_text(dataset, role))
    if len(ids) <= block:
        raise ZooError(
            f"split {role!r} has {len(ids)} tokens; next-item windows need more than "
            f"the context length {block}"
        )
    return Windows(ids, block)


def examples_for(dataset, role: str, tokenizer, block: int):
    if has_rows(dataset):
        return row_examples(dataset, dataset.split(role), tokenizer, block)
    return window_examples(dataset, role, tokenizer, block)


def extra_splits(dataset) -> list[str]:
    """Splits of a rows dataset beyond train, validation and test (digits has `heldout`),
    evaluated under their own names. (Text datasets' extra splits, such as an unlabelled
    `unsupervised`, are not next-item test sets.)"""
    if not has_rows(dataset):
        return []
    roles = set(dataset.split_names.values())
    return [name for name in dataset.splits if name not in roles]


# -- evaluation ----------------------------------------------------------------------------
def score(model, examples, batch_size: int, specials: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """For every example: was the likeliest token (specials excluded) right, and its NLL."""
    correct, nll = [], []
    for begin in range(0, len(examples), batch_size):
        batch = examples.batch(np.arange(begin, min(begin + batch_size, len(examples))))
        logits = model.logits(batch.inputs, batch.mask).astype(np.float64)  # [B, V]
        log_probs = log_softmax(logits)
        nll.append(-log_probs[np.arange(len(batch.targets)), batch.targets])
        logits[:, specials] = -np.inf
        correct.append(logits.argmax(axis=1) == batch.targets)
    return np.concatenate(correct), np.concatenate(nll)


def metrics_for(prefix: str, examples, correct: np.ndarray, nll: np.ndarray) -> dict:
    """accuracy, loss and <family>_accuracy, each after `prefix_` when a prefix is given."""
    head = f"{prefix}_" if prefix else ""
    out = {f"{head}accuracy": float(correct.mean()), f"{head}loss": float(nll.mean())}
    if examples.groups is not None:
        for group in np.unique(examples.groups):
            out[f"{head}{group}_accuracy"] = float(correct[examples.groups == group].mean())
    return out


# -- the pipeline --------------------------------------------------------------------------
def tokenizer_for(job: Job):
    """The run's tokenizer; on rows, trained on the targets too, so every next item has a
    token."""
    dataset = job.dataset
    split = dataset.split("train")
    key = dataset_key(dataset, "train")
    columns = [dataset.text_column]
    if has_rows(dataset) and dataset.label_column:  # has_rows says there is one
        columns.append(dataset.label_column)
        key += "+" + dataset_key(dataset, "train", dataset.label_column)

    def texts():
        return list(
            itertools.chain.from_iterable(row_texts(column_of(split, column)) for column in columns)
        )

    return run_tokenizer(job, texts, key)


def run(job: Job[NextItemConfig]) -> RunResult:

    cfg = job.train_config
    block = job.context_length
    tokenizer = tokenizer_for(job)
    data = {
        role: examples_for(job.dataset, role, tokenizer, block) for role in job.dataset.roles
    }  # all three, but for one held out while tuning
    for name in extra_splits(job.dataset):
        data[name] = examples_for(job.dataset, name, tokenizer, block)

    spec = TaskSpec("next-item", tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    model = job.build_model(spec)
    params = model.num_parameters()
    specials = special_ids(tokenizer)
    job.say(f"{job.model_name}: {params:,} parameters, {len(data['train']):,} training examples")

    def evaluation_set(examples, count: int):
        if isinstance(examples, Windows):
            return examples.spread(count)
        return examples if len(examples) <= count else _subset(examples, count)

    # Validation during training sees the same examples every time, so the curve compares.
    curve_set = evaluation_set(data["validation"], cfg.eval_batches * cfg.eval_batch_size)

    def next_batch(rng) -> Batch:
        return data["train"].batch(rng.integers(0, len(data["train"]), size=cfg.batch_size))

    def validate() -> dict:
        correct, nll = score(model, curve_set, cfg.eval_batch_size, specials)
        return {"val_accuracy": float(correct.mean()), "val_loss": float(nll.mean())}

    # The score is the validation loss: accuracy saturates (digits reach 100% early) while
    # the loss keeps telling better weights from worse.
    result = train(
        job, model, next_batch, validate=validate, score_key="val_loss", higher_is_better=False
    )
    metrics = loop_metrics(result)
    # one score per example; a text's windows depend on the tokenizer (a row does not), so
    # they carry a digest of their ids, and only runs that scored the same windows pair
    per_example, digests = {}, {}
    for name, examples in data.items():
        if name == "train":
            continue
        prefix = PREFIXES.get(name, name)
        if isinstance(examples, Windows):  # rows are evaluated whole
            examples = examples.spread(cfg.eval_windows)
            digests[prefix] = examples.digest()
        correct, nll = score(model, examples, cfg.eval_batch_size, specials)
        metrics.update(metrics_for(prefix, examples, correct, nll))
        per_example.update({f"{prefix}_accuracy": correct, f"{prefix}_loss": nll})
    metrics.update(tokenizer_figures(tokenizer, data["validation"]))
    job.run.save_weights(model.state_dict())

    shown = data["test"] if "test" in data else data["validation"]
    samples = example_lines(model, tokenizer, shown, cfg.samples, specials)
    if samples:
        job.run.write_text("samples.txt", "\n".join(samples) + "\n")
    return RunResult(
        params,
        metrics,
        spec,
        ["\n".join(samples)] if samples else [],
        per_example=per_example,
        examples_digest=digests,
    )


def tokenizer_figures(tokenizer, examples) -> dict:
    """Vocabulary size and characters per token over the validation contexts (or text)."""
    if isinstance(examples, Windows):
        ids = [examples.ids.tolist()]
    else:  # each context's real tokens, cut out of the padded array
        real = np.arange(examples.inputs.shape[1])[None, :] < examples.lengths[:, None]
        offsets = np.concatenate([[0], np.cumsum(examples.lengths)])
        ids = unragged(examples.inputs[real], offsets)
    return compression(tokenizer, tokenizer.decode_batch(ids), ids)


def _subset(rows: Rows, count: int) -> Rows:
    keep = np.arange(count)  # the splits are already in random order
    return Rows(
        rows.inputs[keep],
        rows.lengths[keep],
        rows.targets[keep],
        None if rows.groups is None else rows.groups[keep],
        None if rows.texts is None else rows.texts[:count],
    )


def example_lines(model, tokenizer, examples, count: int, specials) -> list[str]:
    """A few test contexts with the predicted and the true next item."""
    if count <= 0:
        return []
    if isinstance(examples, Windows):
        examples = examples.spread(count)
    rows = np.arange(min(count, len(examples)))
    batch = examples.batch(rows)
    logits = model.logits(batch.inputs, batch.mask).astype(np.float64)
    logits[:, specials] = -np.inf
    probs = softmax(logits)
    lines = []
    for i, row in enumerate(rows):
        guess = int(probs[i].argmax())
        lines.append(
            f"{examples.context(int(row), tokenizer)!r} -> "
            f"{tokenizer.decode([guess])!r} ({probs[i, guess]:.3f}); "
            f"true {tokenizer.decode([int(batch.targets[i])])!r}"
        )
    return lines


@dataclass(frozen=True)
class ItemPrediction(Prediction):
    """The likeliest next item of a context, its probability, and the runners-up (each a
    {"label", "probability"} pair, likeliest first)."""

    label: str
    probability: float
    top: list[dict]


def predict(trained, texts: list[str], top: int = 3) -> list[ItemPrediction]:
    """The likeliest next item of each text and its probability, plus the runners-up."""
    tokenizer = trained.tokenizer
    inputs, lengths = encode_contexts(tokenizer, list(map(str, texts)), trained.context_length)
    specials = special_ids(tokenizer)
    out = []
    for begin in range(0, len(texts), 256):
        rows = np.arange(begin, min(begin + 256, len(texts)))
        batch = Rows(inputs, lengths, np.zeros(len(texts), dtype=np.int64)).batch(rows)
        logits = trained.model.logits(batch.inputs, batch.mask).astype(np.float64)
        logits[:, specials] = -np.inf
        for p in softmax(logits):
            order = np.argsort(-p, kind="stable")[:top]
            ranked = [
                {"label": tokenizer.decode([int(i)]), "probability": float(p[i])} for i in order
            ]
            out.append(ItemPrediction(ranked[0]["label"], ranked[0]["probability"], ranked))
    return out


def evaluate(trained, dataset, split: str = "test") -> dict:
    """Accuracy and loss of a trained run on one split of a dataset (a role or a split name),
    for `zoo eval`: the names carry no split prefix (the evaluation row records the split)."""
    cfg = trained.train_config or NextItemConfig()  # the run's eval settings
    examples = examples_for(dataset, split, trained.tokenizer, trained.context_length)
    if isinstance(examples, Windows):
        examples = examples.spread(cfg.eval_windows)
    correct, nll = score(
        trained.model, examples, cfg.eval_batch_size, special_ids(trained.tokenizer)
    )
    return metrics_for("", examples, correct, nll)


class NextItem:
    """The pipeline object registered for the task: run, predict and evaluate."""

    config = NextItemConfig
    run = staticmethod(run)
    predict = staticmethod(predict)
    evaluate = staticmethod(evaluate)
