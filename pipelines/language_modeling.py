"""Language modeling: next-token prediction on the text of a dataset.

Tokenize each split once into one array; train on random windows of block_size tokens with
AdamW, warm-up and cosine decay; evaluate on whole splits; sample text at the end.
Metrics are per token (loss, perplexity) and per character and byte (bits), so models with
different tokenizers compare on one scale.
"""

from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import dataclass

import numpy as np
from zoo.pipelines.common import loop_metrics, run_tokenizer, special_ids

from zoo.plugin import Batch, Job, RunResult, TaskSpec, TrainConfig, ZooError, train
from zoo.plugin.config import incidental, sized
from zoo.plugin.data import (
    check_ids,
    column_of,
    dataset_key,
    join_rows,
    split_ids,
    split_size,
    text_batches,
)

LN2 = math.log(2)
REPLACEMENT = "\ufffd"  # what decoding gives for incomplete UTF-8


@dataclass
class LanguageModelingConfig(TrainConfig):
    steps: int = 2000
    batch_size: int = 12
    # The samples generated at the end (after every figure is measured): their length, how
    # many, and how they are drawn
    sample_tokens: int = sized(300, at_most=2**20, incidental=True)
    samples: int = sized(2, at_most=10_000, incidental=True)
    temperature: float = incidental(0.8)
    top_k: int | None = incidental(None)
    eval_batch_size: int = sized(64, role="batch")
    # The final evaluation scores every token of validation and test up to this many per
    # split; beyond it, evenly spaced windows of it. Every catalogue dataset stays whole:
    # the largest split, emotion's test, is 195,172 characters (and bytes).
    eval_tokens: int = 200_000

    def __post_init__(self):
        super().__post_init__()
        for name in ("eval_batch_size", "eval_tokens"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("samples", "sample_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be zero or more, got {getattr(self, name)}")
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(
                f"temperature must be 0 (greedy) or a positive number, got {self.temperature}"
            )
        if self.top_k is not None and self.top_k <= 0:
            raise ValueError(f"top_k must be positive (or unset), got {self.top_k}")


def split_text(dataset, role: str) -> str:
    """A split's text: its rows joined by newlines (by Arrow)."""
    return join_rows(column_of(dataset.split(role), dataset.text_column))


def encode(tokenizer, text: str) -> np.ndarray:
    """A text as one array of ids (lines encoded as a batch)."""
    return check_ids(tokenizer, tokenizer.encode_text(text))


@dataclass
class SplitTokens:
    """A split's token ids (memory-mapped, compact dtype) and the size of its text."""

    ids: np.ndarray
    chars: int
    bytes: int

    @classmethod
    def from_text(cls, tokenizer, text: str) -> SplitTokens:
        return cls(encode(tokenizer, text), len(text), len(text.encode("utf-8")))


def split_tokens(dataset, role: str, tokenizer, say=None) -> SplitTokens:
    """Tokenized through the cached, batched ``Dataset.map`` of zoo.data.encoded."""
    split = dataset.split(role)
    chars, size = split_size(split, dataset.text_column)
    return SplitTokens(split_ids(split, dataset.text_column, tokenizer, say=say), chars, size)


def random_batch(ids: np.ndarray, batch: int, block: int, rng: np.random.Generator):
    """Random windows of the one pre-tokenized array, gathered by one fancy index (about
    45 us per reference batch; a torch-side gather measured slower)."""
    starts = rng.integers(0, len(ids) - block - 1, size=batch)
    index = starts[:, None] + np.arange(block + 1)[None, :]  # [B, block + 1]
    windows = ids[index].astype(np.int64)  # from the compact dtype the ids are kept in
    return windows[:, :-1], windows[:, 1:]


def windows(ids: np.ndarray, block: int):
    """A split cut into consecutive windows: inputs and targets [N, block] (views of the one
    array, no copy), and the short tail window (inputs, targets) or None."""
    n = (len(ids) - 1) // block
    inputs = ids[: n * block].reshape(n, block)
    targets = ids[1 : n * block + 1].reshape(n, block)
    start = n * block
    tail = (ids[start:-1], ids[start + 1 :]) if start < len(ids) - 1 else None
    return inputs, targets, tail


@dataclass
class WindowLosses:
    """What scoring a split in windows gave: the summed NLL (nats) and the targets scored;
    where the model scores row by row (``loss_per_row``), each window's nats and targets,
    in order, and a digest of the windows' ids (what pairs two runs' windows)."""

    nats: float
    count: int
    per_window: tuple[np.ndarray, np.ndarray] | None = None
    digest: str | None = None


def scored_windows(
    model, ids: np.ndarray, block: int, batch: int, budget: int | None = None
) -> WindowLosses:
    """NLL over every token of a split, in consecutive windows; with more than ``budget``
    tokens, over evenly spaced windows holding about ``budget`` of them. One score per
    window where the model has ``loss_per_row`` (the same pass), else the sums alone."""
    if len(ids) < 2:
        raise ZooError("a split needs at least 2 tokens to evaluate")
    inputs, targets, tail = windows(ids, block)
    if budget is not None and len(ids) - 1 > budget:
        chosen = np.unique(
            np.linspace(0, len(inputs) - 1, max(1, budget // block)).astype(np.int64)
        )
        inputs, targets, tail = inputs[chosen], targets[chosen], None
    batches = [
        (inputs[b : b + batch], targets[b : b + batch]) for b in range(0, len(inputs), batch)
    ]
    if tail is not None:
        batches.append((tail[0][None, :], tail[1][None, :]))
    per_row = getattr(model, "loss_per_row", None)  # optional (zoo.plugin.Model)
    scored = per_row if callable(per_row) else model.loss_sum
    results = [scored(x.astype(np.int64), y.astype(np.int64)) for x, y in batches]
    if not callable(per_row):
        return WindowLosses(sum(r[0] for r in results), sum(r[1] for r in results))
    nats = np.concatenate([np.asarray(r[0], dtype=np.float64) for r in results])
    counts = np.concatenate([np.asarray(r[1], dtype=np.int64) for r in results])
    digest = hashlib.sha256(str(block).encode())
    for x, y in batches:
        digest.update(x.astype(np.int64).tobytes() + y.astype(np.int64).tobytes())
    return WindowLosses(float(nats.sum()), int(counts.sum()), (nats, counts), digest.hexdigest())


def total_nll(
    model, ids: np.ndarray, block: int, batch: int, budget: int | None = None
) -> tuple[float, int]:
    """Summed NLL (nats) and tokens scored over a split (``scored_windows``)."""
    scored = scored_windows(model, ids, block, batch, budget)
    return scored.nats, scored.count


def scored_text(count: int, tokens: SplitTokens | str) -> tuple[float, float]:
    """Characters and bytes of the text ``count`` targets scored: in proportion, when only
    part of the split was. ``tokens`` may be a text, all of it scored."""
    if isinstance(tokens, str):
        return len(tokens), len(tokens.encode("utf-8"))
    scored = count / max(1, len(tokens.ids) - 1)
    return tokens.chars * scored, tokens.bytes * scored


def split_metrics(prefix: str, nll: float, count: int, tokens: SplitTokens | str) -> dict:
    """Per token, and per character and byte of the text scored (``scored_text``)."""
    chars, size = scored_text(count, tokens)
    loss = nll / count
    return {
        f"{prefix}_loss": loss,
        f"{prefix}_ppl": math.exp(min(loss, 700)),
        f"{prefix}_bpc": nll / LN2 / max(1, chars),
        f"{prefix}_bpb": nll / LN2 / max(1, size),
    }


def window_figures(
    prefix: str, per_window: tuple[np.ndarray, np.ndarray], count: int, tokens: SplitTokens
) -> dict:
    """Each window's loss, bpc and bpb: per token, and per character and byte at the
    split's characters and bytes per scored token, as the figures count them. Weighted by
    the windows' tokens, they average to the split's figures (``RunResult.per_example``)."""
    nats, counts = per_window
    chars, size = scored_text(count, tokens)
    loss = nats / np.maximum(counts, 1)
    return {
        f"{prefix}_loss": loss,
        f"{prefix}_bpc": loss * count / LN2 / max(1, chars),
        f"{prefix}_bpb": loss * count / LN2 / max(1, size),
    }


def split_nll(model, tokens: SplitTokens, block: int, cfg, name: str, say) -> WindowLosses:
    """NLL over a split within the config's evaluation budget (scored_windows), saying
    when only part of it was scored."""
    budget, why = cfg.eval_tokens, f"eval_tokens={cfg.eval_tokens:,}"
    if cfg.eval_limit is not None and cfg.eval_limit * block < budget:  # windows of a smoke run
        budget, why = cfg.eval_limit * block, f"eval_limit={cfg.eval_limit:,} windows"
    scored = scored_windows(model, tokens.ids, block, cfg.eval_batch_size, budget)
    if scored.count < len(tokens.ids) - 1:
        say(
            f"{name}: scored {scored.count:,} of {len(tokens.ids) - 1:,} tokens in evenly "
            f"spaced windows ({why})"
        )
    return scored


def evaluate_splits(model, splits: dict, block: int, cfg, say) -> tuple[dict, dict]:
    """The final figures of validation and test (those ``splits`` holds), and what a
    RunResult keeps of each window: its figures, weighted by its tokens, and what pairs
    two runs' windows (the same ids in the same windows), so comparisons count the test
    set's noise (``RunResult.per_example``)."""
    metrics: dict = {}
    per_example, weights, digests = {}, {}, {}
    for role, prefix in (("validation", "val"), ("test", "test")):
        if role not in splits:
            continue
        scored = split_nll(model, splits[role], block, cfg, role, say)
        metrics.update(split_metrics(prefix, scored.nats, scored.count, splits[role]))
        if scored.per_window is not None and scored.digest is not None:
            figures = window_figures(prefix, scored.per_window, scored.count, splits[role])
            per_example.update(figures)
            weights.update(dict.fromkeys(figures, scored.per_window[1]))
            digests[prefix] = scored.digest
    kept = {"per_example": per_example, "per_example_weights": weights}
    return metrics, {**kept, "examples_digest": digests}


def context_after_slide(block: int) -> int:
    """How many tokens a row keeps when its context is full: half the block. With learned
    absolute positions a slid context must be recomputed from scratch, so it slides by half
    a block at a time rather than by one token (which would cost a whole forward pass per
    token, as without a cache). Keeping three quarters measured 4.8x the uncached speed
    instead of 6x (benchmarks/bench_generate.py)."""
    return max(1, block // 2)


class Contexts:
    """Each row's tokens, and where its context (the window the model sees) starts.

    Cached and uncached generation share it, so both see the same windows and sample the
    same text; the cache holds exactly the tokens of ``window(b)`` for every row."""

    def __init__(self, rows: list[list[int]], block: int):
        self.rows, self.block = rows, block
        self.starts = [max(0, len(r) - block) for r in rows]

    def window(self, b: int) -> list[int]:
        return self.rows[b][self.starts[b] :]

    def full(self) -> bool:
        """True when a row cannot take another token without sliding."""
        return any(len(r) - s >= self.block for r, s in zip(self.rows, self.starts))

    def slide(self) -> None:
        keep = context_after_slide(self.block)
        self.starts = [max(s, len(r) - keep) for r, s in zip(self.rows, self.starts)]

    def padded(self) -> tuple[np.ndarray, np.ndarray]:
        """The windows left-padded into one array [B, T], and each row's padding [B]."""
        windows = [self.window(b) for b in range(len(self.rows))]
        width = max(len(w) for w in windows)
        out = np.zeros((len(windows), width), dtype=np.int64)
        pads = np.array([width - len(w) for w in windows], dtype=np.int64)
        for b, w in enumerate(windows):
            out[b, pads[b] :] = w
        return out, pads


def next_logits(model, contexts: Contexts, state, use_cache: bool):
    """Logits [B, V] for each row's next token, and the cache to carry (None uncached)."""
    if not use_cache:
        return np.stack(
            [
                model.logits(np.asarray([contexts.window(b)], dtype=np.int64))[0, -1]
                for b in range(len(contexts.rows))
            ]
        ), None
    if state is None:
        return model.start_decoding(*contexts.padded())
    last = np.asarray([r[-1] for r in contexts.rows], dtype=np.int64)
    return model.decode_step(last, state)


def sample(logits: np.ndarray, tokenizer, temperature: float, top_k: int | None, rng) -> int:
    logits = logits.astype(np.float64)
    logits[special_ids(tokenizer)] = -np.inf
    if temperature <= 0:
        return int(np.argmax(logits))
    logits = logits / temperature
    if top_k:
        cutoff = np.sort(logits)[-min(top_k, len(logits))]
        logits[logits < cutoff] = -np.inf
    # Inverse-CDF sampling: what rng.choice(p=...) computes, without its checks.
    cdf = np.exp(logits - logits.max()).cumsum()
    return int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))


class TextStream:
    """Turns one row's growing ids into the new text since the last call.

    It decodes only the last few tokens (so each token costs the same however long the text
    grows), with a few already shown ones in front, so that tokenizers whose decoding
    depends on the neighbours (a leading space) still give the right text."""

    LOOKBACK = 8

    def __init__(self, tokenizer, ids: list[int]):
        self.tokenizer, self.ids, self.shown = tokenizer, ids, len(ids)

    def new_text(self) -> str:
        head = self.ids[max(0, self.shown - self.LOOKBACK) : self.shown]
        text = self.tokenizer.decode(head + self.ids[self.shown :])
        before = self.tokenizer.decode(head)
        # A byte-level token can end inside a multi-byte character, which decodes as U+FFFD
        # until the rest arrives: hold such a tail back rather than print it and stall.
        if text.endswith(REPLACEMENT) or not text.startswith(before):
            return ""
        self.shown = len(self.ids)
        return text[len(before) :]


@dataclass(frozen=True)
class Sampling:
    """How generated tokens are drawn."""

    temperature: float = 0.8
    """Softmax temperature (0: always the likeliest token)."""
    top_k: int | None = None
    """Draw from the k likeliest tokens only (None: from all)."""
    seed: int = 0
    """The generator's seed: one seed, one text."""
    cache: bool = True
    """Use the model's key/value cache where it decodes incrementally (the same text,
    each token one position of work); False recomputes the whole context each token."""


def generate_batch(
    model, tokenizer, prompts: list[str], tokens: int, block: int, sampling: Sampling | None = None
):
    """Yield (row, text) pieces as they are sampled (``sampling``), one token per row at a
    time. A row's context is its last ``block`` tokens at most; when one is full, every row
    keeps its last half block and continues."""
    sampling = sampling or Sampling()
    temperature, top_k, cache = sampling.temperature, sampling.top_k, sampling.cache
    rng = np.random.default_rng(sampling.seed)
    # With no prompt, start after a newline (or <unk>, for tokenizers that drop whitespace).
    rows = [
        list(ids) or [tokenizer.unk_id]
        for ids in tokenizer.encode_batch([p or "\n" for p in prompts])
    ]
    contexts = Contexts(rows, block)
    streams = [TextStream(tokenizer, row) for row in rows]
    use_cache = cache and bool(getattr(model, "decodes_incrementally", False))
    state = None
    for _ in range(tokens):
        if contexts.full():
            contexts.slide()
            state = None  # positions changed: the cache is recomputed for the slid window
        logits, state = next_logits(model, contexts, state, use_cache)
        for b, row in enumerate(rows):
            row.append(sample(logits[b], tokenizer, temperature, top_k, rng))
        for b, stream in enumerate(streams):
            piece = stream.new_text()
            if piece:
                yield b, piece


def generate(
    model, tokenizer, prompt: str, tokens: int, block: int, sampling: Sampling | None = None
):
    """Yield pieces of text as they are sampled, one token at a time (one prompt)."""
    for _, piece in generate_batch(model, tokenizer, [prompt], tokens, block, sampling):
        yield piece


def run(job: Job[LanguageModelingConfig]) -> RunResult:

    cfg = job.train_config
    block = job.context_length
    column = job.dataset.text_column
    tokenizer = run_tokenizer(
        job,
        lambda: text_batches(job.dataset.split("train"), column),
        dataset_key(job.dataset, "train"),
    )
    splits = {
        role: split_tokens(job.dataset, role, tokenizer, say=job.say) for role in job.dataset.roles
    }  # all three, but for one held out while tuning
    ids = {role: tokens.ids for role, tokens in splits.items()}
    for role, array in ids.items():
        if len(array) <= block + 1:
            raise ZooError(
                f"split {role!r} has {len(array)} tokens; it needs more than "
                f"the context length + 1 = {block + 1}"
            )

    spec = TaskSpec("language-modeling", tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    model = job.build_model(spec)
    params = model.num_parameters()
    job.say(f"{job.model_name}: {params:,} parameters, {len(ids['train']):,} training tokens")

    eval_rng = np.random.default_rng(job.seed + 1)  # eval batches never shift training batches

    def next_batch(rng) -> Batch:
        x, y = random_batch(ids["train"], cfg.batch_size, block, rng)
        return Batch(x, y, tokens=x.size)

    def validate() -> dict:
        return {"val_loss": sampled_loss(model, ids["validation"], cfg, block, eval_rng)}

    # With keep_best the model comes back with the weights of the lowest validation estimate,
    # so val_* and test_* below are both figures of those weights.
    result = train(
        job,
        model,
        next_batch,
        validate=validate,
        score_key="val_loss",
        higher_is_better=False,
        rngs={"eval": eval_rng},
    )
    metrics = loop_metrics(result)
    figures, kept = evaluate_splits(model, splits, block, cfg, job.say)
    metrics.update(figures)
    # The tokenizer's own figures: vocabulary size and characters per token on validation.
    metrics.update(
        {
            "vocab_size": tokenizer.vocab_size,
            "chars_per_token": splits["validation"].chars / max(1, len(ids["validation"])),
        }
    )
    job.run.save_weights(model.state_dict())

    samples = [
        "".join(
            generate(
                model,
                tokenizer,
                "",
                cfg.sample_tokens,
                block,
                Sampling(cfg.temperature, cfg.top_k, seed=job.seed + i),
            )
        )
        for i in range(cfg.samples)
    ]
    job.run.write_text("samples.txt", "\n\n-----\n\n".join(samples) + "\n")
    return RunResult(params, metrics, spec, samples, **kept)


def sampled_loss(model, ids: np.ndarray, cfg: LanguageModelingConfig, block: int, rng) -> float:
    """Validation loss on a few random batches, for the training curve."""
    total, count = 0.0, 0
    for _ in range(cfg.eval_batches):
        x, y = random_batch(ids, cfg.eval_batch_size, block, rng)
        nll, n = model.loss_sum(x, y)
        total, count = total + nll, count + n
    return total / count


def evaluate_trained(trained, dataset, split: str = "test") -> dict:
    """Score a trained run on a split of any text dataset (`zoo eval`).

    Metric names carry no split prefix (the eval row records the split): loss and ppl per
    token, bpc and bpb per character and byte, and the fraction of tokens that are <unk>
    (characters the tokenizer never saw in training, which the model cannot predict).
    """
    tokens = split_tokens(dataset, split, trained.tokenizer)
    ids = tokens.ids
    if len(ids) < 2:
        raise ZooError(f"split {split!r} of {dataset.ref.name!r} has fewer than 2 tokens")
    cfg = trained.train_config or LanguageModelingConfig()  # the run's eval settings
    scored = split_nll(
        trained.model,
        tokens,
        trained.context_length,
        cfg,
        split,
        lambda message: print(message, file=sys.stderr),
    )
    nll, count = scored.nats, scored.count
    metrics = {
        key.removeprefix("eval_"): value
        for key, value in split_metrics("eval", nll, count, tokens).items()
    }
    unk = trained.tokenizer.unk_id
    metrics["unk_rate"] = float(np.mean(ids == unk)) if unk is not None else 0.0
    metrics["tokens"] = int(len(ids))
    metrics["tokens_scored"] = int(count)  # fewer than tokens - 1 when eval_tokens sampled
    metrics["characters"] = tokens.chars
    return metrics


def generate_trained(
    trained,
    prompt: str | list[str],
    tokens: int = 300,
    *,
    temperature: float = 0.8,
    top_k: int | None = None,
    seed: int = 0,
    cache: bool = True,
):
    """Stream text from a trained run (`zoo generate`), continuing `prompt`: pieces of text;
    or, given a list of prompts (sampled as one batch), (row, piece) pairs. ``cache=False``
    recomputes the whole context for every token."""
    model, tokenizer, block = trained.model, trained.tokenizer, trained.context_length
    sampling = Sampling(temperature, top_k, seed, cache)
    if isinstance(prompt, str):
        return generate(model, tokenizer, prompt, tokens, block, sampling)
    return generate_batch(model, tokenizer, list(prompt), tokens, block, sampling)


class LanguageModeling:
    """The pipeline object registered for the task: run, and evaluate a trained run or
    generate text with it."""

    config = LanguageModelingConfig
    run = staticmethod(run)
    evaluate = staticmethod(evaluate_trained)
    generate = staticmethod(generate_trained)
