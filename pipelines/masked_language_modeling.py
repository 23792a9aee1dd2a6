"""Masked language modeling: BERT's pretraining objective, on the text of any dataset (the
text column of a labelled one too: pretraining on a task's own text).

A split's text is tokenized once into one stream of ids (rows joined by newlines) and cut
into windows of block_size tokens less the tokenizer's frame (``<cls>`` for zoo's own
tokenizers, ``[CLS] ... [SEP]`` for a BERT checkpoint's), each framed as the model expects.
In every window 15% of the tokens are chosen (``mask_rate``); of those, 80% are replaced
by the mask token, 10% by a random token and 10% are kept (Devlin et al. 2019), and the
model predicts the original token at each chosen position (the others are not scored).
Training draws random windows and fresh masks from the run's generator, so a resumed run
draws what it would have. Validation and test are scored on fixed windows and fixed masks
(the same for every run on the split): the masked-token loss and accuracy.

zoo's own tokenizers have no mask token: they lend their padding id (``Tokenizer.mask_id``),
which a model otherwise never reads, since padding is masked out of attention.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from zoo.pipelines.common import log_softmax, loop_metrics, run_tokenizer

from zoo.plugin import IGNORE_INDEX, Batch, Job, RunResult, TaskSpec, TrainConfig, ZooError, train
from zoo.plugin.config import sized
from zoo.plugin.data import dataset_key, split_ids, text_batches

EVAL_SEED = 0  # the masks of validation and test: the same for every run on a split
PREFIX = {"validation": "val", "test": "test"}


@dataclass
class MaskedLanguageModelingConfig(TrainConfig):
    steps: int = 2000
    batch_size: int = 32
    mask_rate: float = 0.15  # share of each window's tokens the model must predict
    eval_batch_size: int = sized(16, role="batch")
    # The final evaluation scores at most this many windows per split (evenly spaced).
    eval_windows: int = sized(2000, at_most=2**20)

    def __post_init__(self):
        super().__post_init__()
        if not 0 < self.mask_rate < 1:
            raise ValueError(f"mask_rate must be between 0 and 1, got {self.mask_rate}")
        for name in ("eval_batch_size", "eval_windows"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


@dataclass
class Framing:
    """How windows become model inputs: the frame around each, the mask token, the vocabulary."""

    before: tuple[int, ...]
    after: tuple[int, ...]
    mask_id: int
    vocab_size: int
    rate: float

    @property
    def body(self) -> int:
        return len(self.before) + len(self.after)

    def mask(self, windows: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Inputs and targets [B, T] of token windows [B, L]: BERT's 80/10/10 corruption of
        the chosen tokens (at least one per window), targets IGNORE_INDEX elsewhere."""
        chosen = rng.random(windows.shape) < self.rate
        none = ~chosen.any(axis=1)
        chosen[none, rng.integers(0, windows.shape[1], size=int(none.sum()))] = True
        roll = rng.random(windows.shape)
        inputs = windows.astype(np.int64, copy=True)
        inputs[chosen & (roll < 0.8)] = self.mask_id
        swap = chosen & (roll >= 0.8) & (roll < 0.9)
        inputs[swap] = rng.integers(0, self.vocab_size, size=int(swap.sum()))
        targets = np.where(chosen, windows, IGNORE_INDEX).astype(np.int64)
        return self.framed(inputs), self.framed(targets, scored=False)

    def framed(self, body: np.ndarray, scored: bool = True) -> np.ndarray:
        """[B, L] -> [B, L + frame]: the frame's ids around the body (for targets,
        ``scored=False``: IGNORE_INDEX there, the frame is never predicted)."""

        def side(ids):
            ids = ids if scored else (IGNORE_INDEX,) * len(ids)
            return np.broadcast_to(np.asarray(ids, dtype=np.int64), (len(body), len(ids)))

        return np.concatenate([side(self.before), body, side(self.after)], axis=1)


def framing_of(tokenizer, rate: float) -> Framing:
    before, after = tokenizer.frame
    return Framing(tuple(before), tuple(after), tokenizer.mask_id, tokenizer.vocab_size, rate)


def random_windows(ids: np.ndarray, count: int, length: int, rng) -> np.ndarray:
    starts = rng.integers(0, len(ids) - length + 1, size=count)
    return np.stack([ids[s : s + length] for s in starts]).astype(np.int64)


def fixed_windows(ids: np.ndarray, length: int, limit: int) -> np.ndarray:
    """Consecutive windows covering the split; at most ``limit``, evenly spaced."""
    count = len(ids) // length
    picked = np.linspace(0, count - 1, num=min(count, limit)).round().astype(np.int64)
    return np.stack([ids[i * length : (i + 1) * length] for i in picked]).astype(np.int64)


@dataclass
class Scored:
    """A split's fixed windows and masks, ready to score."""

    inputs: np.ndarray
    targets: np.ndarray

    @classmethod
    def of(cls, ids: np.ndarray, framing: Framing, length: int, limit: int, role: str):
        windows = fixed_windows(ids, length, limit)
        rng = np.random.default_rng([EVAL_SEED, ("validation", "test").index(role)])
        return cls(*framing.mask(windows, rng))

    def head(self, rows: int) -> Scored:
        return Scored(self.inputs[:rows], self.targets[:rows])


@dataclass
class WindowScores:
    """Each scored window's masked-token loss (nats, summed), right answers and masked
    tokens [N], in the split's window order."""

    nll: np.ndarray
    right: np.ndarray
    count: np.ndarray

    def figures(self, prefix: str) -> dict:
        """The split's loss per masked token and accuracy (ratios of the windows' sums)."""
        count = max(1, int(self.count.sum()))
        return {
            f"{prefix}_loss": float(self.nll.sum()) / count,
            f"{prefix}_accuracy": int(self.right.sum()) / count,
        }

    def per_window(self, prefix: str) -> tuple[dict, dict]:
        """Each window's loss and accuracy and its weight, its masked tokens: weighted,
        they average to ``figures`` (``RunResult.per_example``, ``per_example_weights``)."""
        count = np.maximum(self.count, 1)
        scores = {f"{prefix}_loss": self.nll / count, f"{prefix}_accuracy": self.right / count}
        return scores, dict.fromkeys(scores, self.count)


def score(model, data: Scored, batch_size: int) -> WindowScores:
    """The masked-token loss (nats), right answers and masked tokens of each window."""
    parts = []
    for start in range(0, len(data.inputs), batch_size):
        inputs = data.inputs[start : start + batch_size]
        targets = data.targets[start : start + batch_size]
        chosen = targets != IGNORE_INDEX
        rows = np.nonzero(chosen)[0]  # the window of each masked token, row-major
        logits = model.logits(inputs)[chosen].astype(np.float64)  # [M, V]
        truth = targets[chosen]
        nll = -log_softmax(logits)[np.arange(len(truth)), truth]
        right = (logits.argmax(axis=1) == truth).astype(np.float64)
        parts.append(
            [np.bincount(rows, weights=w, minlength=len(inputs)) for w in (nll, right)]
            + [chosen.sum(axis=1)]
        )
    nll, right, count = (np.concatenate(column) for column in zip(*parts))
    return WindowScores(nll, right, count)


def windows_digest(data: Scored) -> str:
    """What pairs two runs' windows: the same ids and the same masks."""
    return hashlib.sha256(data.inputs.tobytes() + data.targets.tobytes()).hexdigest()


def run(job: Job[MaskedLanguageModelingConfig]) -> RunResult:
    cfg = job.train_config
    block = job.context_length
    column = job.dataset.text_column
    tokenizer = run_tokenizer(
        job,
        lambda: text_batches(job.dataset.split("train"), column),
        dataset_key(job.dataset, "train"),
    )
    framing = framing_of(tokenizer, cfg.mask_rate)
    length = block - framing.body
    if length < 1:
        raise ZooError(
            f"the context length must be at least {framing.body + 1} for masked language "
            f"modeling (the tokenizer's {framing.body} special tokens and a token), "
            f"got {block}"
        )
    roles = job.dataset.roles  # all three, but for one held out while tuning
    ids = {
        role: np.asarray(split_ids(job.dataset.split(role), column, tokenizer, say=job.say))
        for role in roles
    }
    for role, array in ids.items():
        if len(array) < length:
            raise ZooError(
                f"split {role!r} has {len(array)} tokens; masked language modeling "
                f"needs at least one window of {length}"
            )
    scored = {
        role: Scored.of(ids[role], framing, length, cfg.eval_windows, role) for role in roles[1:]
    }
    estimate_on = scored["validation"].head(cfg.eval_batches * cfg.eval_batch_size)

    spec = TaskSpec("masked-language-modeling", tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    model = job.build_model(spec)
    params = model.num_parameters()
    job.say(
        f"{job.model_name}: {params:,} parameters, {len(ids['train']):,} training tokens "
        f"in windows of {length} (+{framing.body} special), {cfg.mask_rate:.0%} masked"
    )

    def next_batch(rng) -> Batch:
        inputs, targets = framing.mask(
            random_windows(ids["train"], cfg.batch_size, length, rng), rng
        )
        return Batch(inputs, targets, tokens=inputs.size)

    def validate() -> dict:
        return score(model, estimate_on, cfg.eval_batch_size).figures("val")

    result = train(
        job, model, next_batch, validate=validate, score_key="val_loss", higher_is_better=False
    )
    job.run.save_weights(model.state_dict())
    metrics = loop_metrics(result)
    per_example, weights, digests = {}, {}, {}  # one score per window: see RunResult
    for role in roles[1:]:  # validation and test
        windows = score(model, scored[role], cfg.eval_batch_size)
        metrics.update(windows.figures(PREFIX[role]))
        scores, weighed = windows.per_window(PREFIX[role])
        per_example.update(scores)
        weights.update(weighed)
        digests[PREFIX[role]] = windows_digest(scored[role])
    metrics["vocab_size"] = tokenizer.vocab_size
    return RunResult(
        params,
        metrics,
        spec,
        per_example=per_example,
        per_example_weights=weights,
        examples_digest=digests,
    )


class MaskedLanguageModeling:
    """The pipeline object registered for the task."""

    config = MaskedLanguageModelingConfig
    run = staticmethod(run)
