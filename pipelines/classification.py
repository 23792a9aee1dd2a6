"""Classification: one label per text, on a labelled dataset.

Every text is encoded inside its tokenizer's ``frame`` (``<cls>`` first for zoo's own
tokenizers; ``[CLS] ... [SEP]`` for a BERT checkpoint's), its tokens cut so that the whole
fits the model's block_size. Training draws shuffled batches, each padded only to its own longest text
(right padding, with an attention mask), from buckets of similar length so little compute
goes to padding. The budget adapts to the dataset: the whole validation split is scored twice per epoch,
and training stops once `patience` of those validations in a row have not beaten the best
accuracy, within `epochs` passes (a maximum; --steps and --time cap it too). So a small set
gets as many passes as it needs and a large one is not over-trained. The weights with the
best validation accuracy are kept and reported on the test split: accuracy, macro F1,
per-class precision/recall/F1 and the confusion matrix.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from zoo.pipelines.common import loop_metrics, pad_rows, padded_batch, run_tokenizer, softmax

from zoo.plugin import (
    Batch,
    Job,
    Prediction,
    RunResult,
    SplitProbabilities,
    TaskSpec,
    TrainConfig,
    ZooError,
    train,
)
from zoo.plugin.config import sized
from zoo.plugin.data import check_ids, column_of, dataset_key, row_ids, text_batches
from zoo.plugin.io import natural_key

ROLES = ("train", "validation", "test")
PREFIX = {"train": "train", "validation": "val", "test": "test"}
CLASSES_FILE = "classes.json"


@dataclass
class ClassificationConfig(TrainConfig):
    # The budget is at most `epochs` passes over the training split; `steps` (and `time`)
    # cap it, so --steps N still means at most N steps. epochs=none leaves `steps` alone.
    # Within it, training stops after `patience` validations without a better accuracy.
    epochs: float | None = 20.0
    # at least this many steps where `epochs` would give fewer (a small training split gets
    # the updates of a recipe chosen on a larger one); `steps` still caps it
    min_steps: int = 0
    steps: int = 100_000
    patience: int = 4  # two epochs without improvement, at the default eval_interval
    # steps between validations on the whole validation split; none: twice per epoch
    eval_interval: int | None = None
    eval_batch_size: int = sized(128, role="batch")
    # batches drawn together and grouped by length (1: no grouping)
    bucket_batches: int = sized(50, role="batch")

    # Classification kept its best validation weights before keep_best existed.
    LEGACY: ClassVar[dict] = {"keep_best": True, "patience": 0}

    def __post_init__(self):
        super().__post_init__()
        if self.epochs is not None and not self.epochs > 0:
            raise ValueError(f"epochs must be positive (or none), got {self.epochs}")
        if self.min_steps < 0:
            raise ValueError(f"min_steps must be zero or more, got {self.min_steps}")
        if self.bucket_batches <= 0:
            raise ValueError(f"bucket_batches must be positive, got {self.bucket_batches}")


# -- data ------------------------------------------------------------------------------
def check_dataset(dataset) -> None:
    """Fail before any run is recorded when the dataset has nothing to classify: labels are
    a ClassLabel's ids, or values (strings, integers) used as class names; every row has
    one, and validation and test use only classes training has."""
    column, name = dataset.label_column, dataset.ref.name
    train = dataset.split("train")
    if column is None:
        raise ZooError(
            f"dataset {name!r} has no label column (label/labels) for "
            f"classification; name it (label_column) "
            f"(columns: {', '.join(train.column_names)})"
        )
    feature = train.features[column]
    names = getattr(feature, "names", None)
    dtype = str(getattr(feature, "dtype", type(feature).__name__))
    if names is None and not (
        dtype.startswith(("int", "uint")) or dtype in ("string", "large_string")
    ):
        sample = sorted({str(v) for v in train.select(range(min(len(train), 50)))[column]})[:3]
        raise ZooError(
            f"label column {column!r} of dataset {name!r} holds {dtype} values "
            f"(e.g. {', '.join(sample)}); classification needs class names (text), "
            "integer class ids or a ClassLabel feature"
        )
    seen: set = set()
    for role in dataset.roles:
        where = f"split {dataset.split_names.get(role, role)!r} of dataset {name!r}"
        labels = dataset.split(role).data.column(column)
        if len(labels) == 0:
            raise ZooError(f"{where} has no rows")
        if labels.null_count:
            raise ZooError(
                f"{where} has {labels.null_count} rows without a label in "
                f"{column!r}; every row needs a class"
            )
        values = set(pc.unique(labels).to_pylist())
        if names is not None:
            bad = sorted(v for v in values if not 0 <= v < len(names))
            if bad:
                raise ZooError(
                    f"{where} has label {bad[0]} in {column!r}, not a class id "
                    f"0..{len(names) - 1} ({', '.join(names[:6])}); unlabelled rows "
                    "cannot be used"
                )
        elif role == "train":
            seen = values
        elif values - seen:
            unseen = ", ".join(sorted(map(str, values - seen))[:5])
            raise ZooError(
                f"{where} has labels the training split never has: {unseen} "
                f"(training has: {', '.join(sorted(map(str, seen))[:10])})"
            )


def label_names(dataset, role: str) -> np.ndarray:
    """Each row's label as a class name: the ClassLabel name, or the value as text (an array
    of str built by Arrow, with no Python step per row)."""
    values = column_of(dataset.split(role), dataset.label_column)
    names = dataset.class_names
    bad = pc.is_null(values)
    if names:
        outside = pc.or_(pc.less(values, 0), pc.greater_equal(values, len(names)))
        bad = pc.or_(bad, pc.fill_null(outside, True))
    if pc.any(bad).as_py():
        row = pc.index(bad, True).as_py()
        raise ZooError(
            f"Dataset {dataset.ref.name!r} split {role!r} row {row} has label "
            f"{values[row].as_py()!r}, which is not a class (unlabelled rows cannot "
            "be used)"
        )
    text = pa.array(names, pa.string()).take(values) if names else pc.cast(values, pa.string())
    return text.to_numpy(zero_copy_only=False)


def class_list(dataset, train_names) -> list[str]:
    """The classes in id order: the ClassLabel's, else the training labels in natural order."""
    if dataset.class_names:
        return list(dataset.class_names)
    return sorted(pc.unique(pa.array(train_names, pa.string())).to_pylist(), key=natural_key)


def class_ids(names, classes: list[str], where: str) -> np.ndarray:
    """Each class name's id in ``classes`` (looked up by Arrow)."""
    names = pa.array(names, pa.string())
    ids = pc.index_in(names, value_set=pa.array(classes, pa.string()))
    if ids.null_count:
        unknown = sorted(pc.unique(pc.filter(names, pc.is_null(ids))).to_pylist())
        shown = ", ".join(classes[:10]) + (
            f", ... ({len(classes)} in all)" if len(classes) > 10 else ""
        )
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ZooError(
            f"{where} has labels the model does not know: {', '.join(unknown[:5])}"
            f"{more} (classes: {shown})"
        )
    return ids.to_numpy().astype(np.int64)


def texts_of(dataset, role: str) -> list[str]:
    """The split's texts (an empty row as ""), read as one Arrow column."""
    return pc.fill_null(column_of(dataset.split(role), dataset.text_column), "").to_pylist()


def text_chars(dataset, role: str) -> int:
    """Characters in the split's texts (counted by Arrow)."""
    return pc.sum(pc.utf8_length(column_of(dataset.split(role), dataset.text_column))).as_py() or 0


@dataclass
class Encoded:
    """Texts inside the tokenizer's frame (its special ids before and after), their tokens
    cut so the whole fits ``block`` ids, right-padded: ``inputs`` [N, T] and ``lengths`` [N]
    (frame included); ``tokens`` [N]: each text's tokens before cutting."""

    inputs: np.ndarray
    lengths: np.ndarray
    tokens: np.ndarray

    @classmethod
    def from_ragged(cls, ids: np.ndarray, offsets: np.ndarray, tokenizer, block: int) -> Encoded:
        before, after = tokenizer.frame
        body, lengths = pad_rows(ids, offsets, block - len(before) - len(after), tokenizer.pad_id)
        n = len(lengths)
        inputs = np.full(
            (n, body.shape[1] + len(before) + len(after)), tokenizer.pad_id, dtype=np.int64
        )
        inputs[:, : len(before)] = np.asarray(before, dtype=np.int64)
        inputs[:, len(before) : len(before) + body.shape[1]] = body
        for i, token in enumerate(after):  # right after each text's last kept token
            inputs[np.arange(n), len(before) + lengths + i] = token
        return cls(inputs, lengths + len(before) + len(after), np.diff(offsets))

    def __len__(self) -> int:
        return len(self.lengths)

    def batch(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs and attention mask [B, T] of some texts, padded to the longest of them."""
        return padded_batch(self.inputs, self.lengths, rows)


def encode(tokenizer, texts: list[str], block: int) -> Encoded:
    """Texts inside the tokenizer's frame, cut to `block` ids."""
    ids, offsets = tokenizer.encode_rows(texts)
    return Encoded.from_ragged(check_ids(tokenizer, ids), offsets, tokenizer, block)


def encode_split(tokenizer, dataset, role: str, block: int) -> Encoded:
    """A split's texts encoded through the cached, batched ``Dataset.map`` (zoo.plugin.data.row_ids)."""
    ids = row_ids(dataset.split(role), dataset.text_column, tokenizer)
    return Encoded.from_ragged(*ids, tokenizer, block)


class Batches:
    """Endless epochs of shuffled batches of example indices. Each epoch is cut into groups
    of `bucket` batches; within a group examples are sorted by length, so a batch's
    padding is short, and the batches are then shuffled."""

    def __init__(self, lengths: np.ndarray, batch_size: int, bucket: int):
        self.lengths, self.batch_size, self.bucket = lengths, batch_size, bucket
        self.queue: list[np.ndarray] = []

    def state_dict(self) -> dict:
        """The epoch's remaining batches, for checkpoints (the order comes from the rng)."""
        return {"queue": [batch.tolist() for batch in self.queue]}

    def load_state_dict(self, state: dict) -> None:
        self.queue = [np.asarray(batch, dtype=np.int64) for batch in state["queue"]]

    def per_epoch(self) -> int:
        group = self.batch_size * self.bucket
        n = len(self.lengths)
        return (n // group) * self.bucket + math.ceil((n % group) / self.batch_size)

    def next(self, rng: np.random.Generator) -> np.ndarray:
        if not self.queue:
            order = rng.permutation(len(self.lengths))
            group = self.batch_size * self.bucket
            for start in range(0, len(order), group):
                chunk = order[start : start + group]
                chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
                self.queue += [
                    chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)
                ]
            self.queue = [self.queue[i] for i in rng.permutation(len(self.queue))]
        return self.queue.pop()


# -- evaluation ------------------------------------------------------------------------
def probabilities(model, texts: Encoded, batch_size: int) -> np.ndarray:
    """Class probabilities [N, K], computed in batches of similar length."""
    order = np.argsort(texts.lengths, kind="stable")
    out = None
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        probs = softmax(model.logits(*texts.batch(rows)).astype(np.float64))
        if out is None:
            out = np.empty((len(texts), probs.shape[1]))
        out[rows] = probs
    return out if out is not None else np.empty((0, 0))


def scores(
    y_true: np.ndarray, probs: np.ndarray, classes: list[str], prefix: str, detail: bool = True
) -> dict:
    """Accuracy, macro F1 and mean loss; with `detail`, per-class figures and the
    confusion matrix (rows: true class, columns: predicted class)."""
    k = len(classes)
    y_pred = probs.argmax(axis=1)
    confusion = np.zeros((k, k), dtype=np.int64)
    np.add.at(confusion, (y_true, y_pred), 1)
    true_pos = np.diag(confusion).astype(np.float64)
    predicted, actual = confusion.sum(axis=0), confusion.sum(axis=1)
    precision = np.divide(true_pos, predicted, out=np.zeros(k), where=predicted > 0)
    recall = np.divide(true_pos, actual, out=np.zeros(k), where=actual > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros(k), where=denom > 0)
    present = actual > 0  # macro F1 over the classes that occur in this split
    nll = -np.log(np.clip(probs[np.arange(len(y_true)), y_true], 1e-12, None))
    figures: dict[str, Any] = {  # floats, and with `detail` per-class tables
        f"{prefix}_accuracy": float(true_pos.sum() / max(1, len(y_true))),
        f"{prefix}_macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        f"{prefix}_loss": float(nll.mean()) if len(nll) else float("nan"),
    }
    if detail:
        figures[f"{prefix}_per_class"] = {
            name: {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(actual[i]),
            }
            for i, name in enumerate(classes)
        }
        figures[f"{prefix}_confusion_matrix"] = confusion.tolist()
    return figures


# -- training --------------------------------------------------------------------------
def tokenizer_for(job: Job):
    """The run's tokenizer, trained on the training split's texts (batches of rows joined
    by newlines; the data check has made sure that no training row is empty)."""
    train = job.dataset.split("train")
    column = job.dataset.text_column
    return run_tokenizer(
        job, lambda: text_batches(train, column), dataset_key(job.dataset, "train", column)
    )


def step_budget(cfg: ClassificationConfig, per_epoch: int) -> int:
    if cfg.epochs is None:
        return cfg.steps
    return max(1, min(cfg.steps, max(cfg.min_steps, math.ceil(cfg.epochs * per_epoch))))


def validation_interval(cfg: ClassificationConfig, per_epoch: int) -> int:
    """Steps between validations: the configured number, or half an epoch."""
    return cfg.eval_interval if cfg.eval_interval is not None else max(1, math.ceil(per_epoch / 2))


def class_labels(dataset, roles) -> tuple[list[str], dict[str, np.ndarray]]:
    """The classes of the training split (at least two), and each split's labels as their
    ids."""
    names = {role: label_names(dataset, role) for role in roles}
    classes = class_list(dataset, names["train"])
    if len(classes) < 2:
        raise ZooError(
            f"Dataset {dataset.ref.name!r} has {len(classes)} class in its "
            "training split; classification needs at least 2"
        )
    return classes, {role: class_ids(names[role], classes, f"split {role!r}") for role in roles}


def run(job: Job[ClassificationConfig]) -> RunResult:

    check_dataset(job.dataset)
    cfg = job.train_config
    block = job.context_length
    roles = job.dataset.roles  # all three, but for a split held out while tuning
    classes, labels = class_labels(job.dataset, roles)

    tokenizer = tokenizer_for(job)
    framing = sum(map(len, tokenizer.frame))
    if block < framing + 1:
        raise ZooError(
            f"the context length must be at least {framing + 1} for classification (the "
            f"tokenizer's {framing} special tokens and a token), got {block}"
        )
    job.run.write_json(CLASSES_FILE, classes)
    texts = {role: encode_split(tokenizer, job.dataset, role, block) for role in roles}
    truncated = np.mean(texts["train"].tokens > block - framing)
    pad_id = tokenizer.pad_id

    spec = TaskSpec("classification", tokenizer.vocab_size, num_classes=len(classes), pad_id=pad_id)
    model = job.build_model(spec)
    if getattr(model, "fits_training_split", False):  # declared by zoo.plugin.Model
        job.say(f"{job.model_name}: fitting on the training split")
        inputs, mask = texts["train"].batch(np.arange(len(texts["train"])))
        vocabulary = tokenizer.decode_batch([[i] for i in range(tokenizer.vocab_size)])
        model.fit(inputs, labels["train"], mask, vocabulary)
    params = model.num_parameters()

    lengths = texts["train"].lengths
    batches = Batches(lengths, cfg.batch_size, cfg.bucket_batches)
    steps = step_budget(cfg, batches.per_epoch())
    interval = validation_interval(cfg, batches.per_epoch())
    job.train_config = dataclasses.replace(cfg, steps=steps, eval_interval=interval)
    stop = (
        f", stopping after {cfg.patience} validations without improvement" if cfg.patience else ""
    )
    job.say(
        f"{job.model_name}: {params:,} parameters, {len(classes)} classes, "
        f"{len(lengths):,} training texts ({texts['train'].tokens.mean():.1f} tokens on "
        f"average, {truncated:.1%} cut to block_size {block}), at most {steps:,} steps, "
        f"validation every {interval:,}{stop}"
    )

    def next_batch(rng) -> Batch:
        rows = batches.next(rng)
        inputs, mask = texts["train"].batch(rows)
        return Batch(inputs, labels["train"][rows], mask, tokens=int(mask.sum()))

    def validate() -> dict:
        probs = probabilities(model, texts["validation"], cfg.eval_batch_size)
        return scores(labels["validation"], probs, classes, "val", detail=False)

    result = train(
        job,
        model,
        next_batch,
        validate=validate,
        score_key="val_accuracy",
        state={"batches": batches},
    )
    job.run.save_weights(model.state_dict())  # the best validation weights, with keep_best

    metrics = {**loop_metrics(result), "epochs": result.steps / batches.per_epoch()}
    correct = {}  # per example, for comparisons that count the test set's own noise
    for role in roles[1:]:  # validation and test
        probs = probabilities(model, texts[role], cfg.eval_batch_size)
        metrics.update(scores(labels[role], probs, classes, PREFIX[role], detail=role == "test"))
        correct[f"{PREFIX[role]}_accuracy"] = probs.argmax(axis=1) == labels[role]
    # the tokenizer's figures over the validation texts, uncut
    chars, tokens = text_chars(job.dataset, "validation"), int(texts["validation"].tokens.sum())
    metrics.update({"vocab_size": tokenizer.vocab_size, "chars_per_token": chars / max(1, tokens)})
    metrics["truncated"] = float(truncated)  # share of training texts cut to block_size
    metrics.update({"num_classes": len(classes), "class_names": classes})
    return RunResult(params, metrics, spec, per_example=correct)


# -- a trained run ---------------------------------------------------------------------
def trained_classes(trained) -> list[str]:
    folder = trained.folder
    if folder.file(CLASSES_FILE).is_file():
        classes = folder.read_classes(CLASSES_FILE)
        expected = (trained.config.get("spec") or {}).get("num_classes")
        if expected is not None and len(classes) != expected:
            raise ZooError(
                f"{folder.file(CLASSES_FILE)}: {len(classes)} class names for a "
                f"model with {expected} classes"
            )
        return classes
    names = trained.row.get("metrics", {}).get("class_names")
    if not names:
        raise ZooError(f"run {trained.run_id} has no class names ({CLASSES_FILE} is missing)")
    return names


@dataclass(frozen=True)
class ClassPrediction(Prediction):
    """The likeliest class of a text, its probability, and every class's probability."""

    label: str
    probability: float
    probabilities: dict[str, float]


def predict(trained, texts: list[str], batch_size: int = 128) -> list[ClassPrediction]:
    """The likeliest class of each text, its probability, and every class's probability."""
    if not texts:
        return []
    classes = trained_classes(trained)
    encoded = encode(trained.tokenizer, list(map(str, texts)), trained.context_length)
    probs = probabilities(trained.model, encoded, batch_size)
    out = []
    for row in probs:
        best = int(row.argmax())
        out.append(
            ClassPrediction(
                classes[best], float(row[best]), {name: float(p) for name, p in zip(classes, row)}
            )
        )
    return out


def split_probabilities(trained, dataset, split: str, batch_size: int = 128) -> SplitProbabilities:
    """A trained run's class probabilities on one split of a labelled dataset, and its
    labels matched to the run's classes by name."""
    check_dataset(dataset)
    classes = trained_classes(trained)
    y_true = class_ids(label_names(dataset, split), classes, f"split {split!r}")
    encoded = encode_split(trained.tokenizer, dataset, split, trained.context_length)
    return SplitProbabilities(probabilities(trained.model, encoded, batch_size), y_true, classes)


def score_probabilities(predicted: SplitProbabilities, split: str) -> dict:
    """The metrics of probabilities on a split, named as a run names them (val_*, test_*);
    the per-class figures and confusion matrix on every split but validation."""
    return scores(
        predicted.targets,
        predicted.probabilities,
        predicted.classes,
        PREFIX.get(split, split),
        detail=split != "validation",
    )


def evaluate(trained, dataset, split: str = "test", batch_size: int = 128) -> dict:
    """Scores of a trained run on one split of a labelled dataset; its labels are matched to
    the run's classes by name."""
    predicted = split_probabilities(trained, dataset, split, batch_size)
    figures = scores(
        predicted.targets, predicted.probabilities, predicted.classes, PREFIX.get(split, split)
    )
    figures["examples"] = len(predicted.targets)
    figures["class_names"] = predicted.classes
    return figures


class Classification:
    """The pipeline object registered for the task."""

    config = ClassificationConfig
    check_dataset = staticmethod(check_dataset)
    run = staticmethod(run)
    predict = staticmethod(predict)
    evaluate = staticmethod(evaluate)
    split_probabilities = staticmethod(split_probabilities)
    score_probabilities = staticmethod(score_probabilities)
