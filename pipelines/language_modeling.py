"""Language modeling: next-token prediction on the text of a dataset.

Tokenize each split once into one array; train on random windows of block_size tokens with
AdamW, warm-up and cosine decay; evaluate on whole splits; sample text at the end.
Metrics are per token (loss, perplexity) and per character and byte (bits), so models with
different tokenizers compare on one scale.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from zoo import (Batch, Job, RunResult, TaskSpec, TrainConfig, ZooError, compression,
                 dataset_key, train, train_cached)

LN2 = math.log(2)
REPLACEMENT = "\ufffd"  # what decoding gives for incomplete UTF-8


@dataclass
class LanguageModelingConfig(TrainConfig):
    steps: int = 2000
    batch_size: int = 12
    sample_tokens: int = 300  # length of each generated sample at the end
    samples: int = 2
    temperature: float = 0.8
    top_k: int | None = None
    eval_batch_size: int = 64

    def __post_init__(self):
        super().__post_init__()
        if self.eval_batch_size <= 0:
            raise ValueError(f"eval_batch_size must be positive, got {self.eval_batch_size}")
        for name in ("samples", "sample_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be zero or more, got {getattr(self, name)}")


def split_text(dataset, role: str) -> str:
    """All rows of a split's text column, joined by newlines."""
    split = dataset.split(role)
    texts = split[dataset.text_column]
    if any(t is None for t in texts):
        raise ZooError(f"Dataset {dataset.ref.name!r} split {role!r} has empty (None) rows "
                       f"in column {dataset.text_column!r}")
    return "\n".join(texts)


def encode(tokenizer, text: str) -> np.ndarray:
    # Lines encode in parallel batches; the newline stays at the end of its line.
    lines = text.splitlines(keepends=True)
    ids = tokenizer.encode_batch(lines)
    return np.fromiter((i for line in ids for i in line), dtype=np.int64)


def random_batch(ids: np.ndarray, batch: int, block: int, rng: np.random.Generator):
    """Random windows of the one pre-tokenized array, gathered by one fancy index (about
    45 us per reference batch; a torch-side gather measured slower)."""
    starts = rng.integers(0, len(ids) - block - 1, size=batch)
    index = starts[:, None] + np.arange(block + 1)[None, :]  # [B, block + 1]
    windows = ids[index]
    return windows[:, :-1], windows[:, 1:]


def windows(ids: np.ndarray, block: int):
    """A split cut into consecutive windows: inputs and targets [N, block] (views of the one
    array, no copy), and the short tail window (inputs, targets) or None."""
    n = (len(ids) - 1) // block
    inputs = ids[:n * block].reshape(n, block)
    targets = ids[1:n * block + 1].reshape(n, block)
    start = n * block
    tail = (ids[start:-1], ids[start + 1:]) if start < len(ids) - 1 else None
    return inputs, targets, tail


def evaluate(model, ids: np.ndarray, block: int, batch: int) -> tuple[float, int]:
    """Summed NLL (nats) over every token of a split, in consecutive windows."""
    if len(ids) < 2:
        raise ZooError("a split needs at least 2 tokens to evaluate")
    inputs, targets, tail = windows(ids, block)
    total, count = 0.0, 0
    for b in range(0, len(inputs), batch):
        nll, n = model.loss_sum(inputs[b:b + batch], targets[b:b + batch])
        total, count = total + nll, count + n
    if tail is not None:
        nll, n = model.loss_sum(tail[0][None, :], tail[1][None, :])
        total, count = total + nll, count + n
    return total, count


def split_metrics(prefix: str, nll: float, count: int, text: str) -> dict:
    loss = nll / count
    return {f"{prefix}_loss": loss,
            f"{prefix}_ppl": math.exp(min(loss, 700)),
            f"{prefix}_bpc": nll / LN2 / max(1, len(text)),
            f"{prefix}_bpb": nll / LN2 / max(1, len(text.encode("utf-8")))}


def generate(model, tokenizer, prompt: str, tokens: int, block: int, *, temperature: float = 0.8,
             top_k: int | None = None, seed: int = 0):
    """Yield pieces of text as they are sampled, one token at a time."""
    rng = np.random.default_rng(seed)
    # With no prompt, start after a newline (or <unk>, for tokenizers that drop whitespace).
    ids = list(tokenizer.encode(prompt or "\n"))[-block:] or [tokenizer.unk_id]
    shown = tokenizer.decode(ids)
    for _ in range(tokens):
        logits = model.logits(np.asarray([ids[-block:]], dtype=np.int64))[0, -1].astype(np.float64)
        for special in (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id):
            if special is not None:
                logits[special] = -np.inf
        if temperature <= 0:
            next_id = int(np.argmax(logits))
        else:
            logits = logits / temperature
            if top_k:
                cutoff = np.sort(logits)[-min(top_k, len(logits))]
                logits[logits < cutoff] = -np.inf
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            next_id = int(rng.choice(len(probs), p=probs))
        ids.append(next_id)
        # A byte-level token can end inside a multi-byte character, which decodes as U+FFFD
        # until the rest arrives: hold such a tail back rather than print it and stall.
        text = tokenizer.decode(ids).rstrip(REPLACEMENT)
        if text.startswith(shown):
            yield text[len(shown):]
            shown = text


def run(job: Job) -> RunResult:

    cfg: LanguageModelingConfig = job.train_config
    block = job.model_config.block_size
    texts = {role: split_text(job.dataset, role) for role in ("train", "validation", "test")}
    tokenizer = job.saved_tokenizer()  # resuming: the run keeps the vocabulary it started with
    if tokenizer is None:
        tokenizer = train_cached(job.tokenizer.load(), job.tokenizer.name, job.tokenizer_config,
                                 lambda: job.dataset.split("train")[job.dataset.text_column],
                                 dataset_key(job.dataset, "train"), say=job.say)
        tokenizer.save(job.run.file("tokenizer.json"))
    ids = {role: encode(tokenizer, text) for role, text in texts.items()}
    for role, array in ids.items():
        if len(array) <= block + 1:
            raise ZooError(f"split {role!r} has {len(array)} tokens; it needs more than "
                           f"block_size + 1 = {block + 1}")

    spec = TaskSpec("language-modeling", tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    model = job.build_model(spec)
    params = model.num_parameters()
    job.say(f"{job.model_name}: {params:,} parameters, {len(ids['train']):,} training tokens")

    eval_rng = np.random.default_rng(job.seed + 1)  # eval batches never shift training batches

    def next_batch(rng) -> Batch:
        x, y = random_batch(ids["train"], cfg.batch_size, block, rng)
        return Batch(x, y, tokens=x.size)

    def validate() -> dict:
        return {"val_loss": estimate(model, ids["validation"], cfg, block, eval_rng)}

    # With keep_best the model comes back with the weights of the lowest validation estimate,
    # so val_* and test_* below are both figures of those weights.
    result = train(job, model, next_batch, validate=validate, score_key="val_loss",
                   higher_is_better=False, rngs={"eval": eval_rng})
    metrics = {"steps": result.steps, "best_step": result.best_step, "train_loss": result.train_loss,
               "tokens_per_s": result.tokens_per_s, "train_time": result.train_time}
    for role, prefix in (("validation", "val"), ("test", "test")):
        nll, count = evaluate(model, ids[role], block, cfg.eval_batch_size)
        metrics.update(split_metrics(prefix, nll, count, texts[role]))
    # The tokenizer's own figures: vocabulary size and characters per token on validation.
    metrics.update(compression(tokenizer, [texts["validation"]], [ids["validation"]]))
    job.run.save_weights(model.state_dict())

    samples = ["".join(generate(model, tokenizer, "", cfg.sample_tokens, block,
                                temperature=cfg.temperature, top_k=cfg.top_k, seed=job.seed + i))
               for i in range(cfg.samples)]
    job.run.write_text("samples.txt", "\n\n-----\n\n".join(samples) + "\n")
    return RunResult(params, metrics, spec, samples)


def estimate(model, ids: np.ndarray, cfg: TrainConfig, block: int, rng) -> float:
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
    text = split_text(dataset, split)
    ids = encode(trained.tokenizer, text)
    if len(ids) < 2:
        raise ZooError(f"split {split!r} of {dataset.ref.name!r} has fewer than 2 tokens")
    train_config = (trained.config.get("configs") or {}).get("train") or {}
    batch = int(train_config.get("eval_batch_size") or LanguageModelingConfig.eval_batch_size)
    nll, count = evaluate(trained.model, ids, trained.block_size, batch)
    metrics = {key.removeprefix("eval_"): value
               for key, value in split_metrics("eval", nll, count, text).items()}
    unk = trained.tokenizer.unk_id
    metrics["unk_rate"] = float(np.mean(ids == unk)) if unk is not None else 0.0
    metrics["tokens"] = int(len(ids))
    metrics["characters"] = len(text)
    return metrics


def generate_trained(trained, prompt: str, tokens: int = 300, *, temperature: float = 0.8,
                     top_k: int | None = None, seed: int = 0):
    """Stream text from a trained run (`zoo generate`), continuing `prompt`."""
    return generate(trained.model, trained.tokenizer, prompt, tokens, trained.block_size,
                    temperature=temperature, top_k=top_k, seed=seed)


class LanguageModeling:
    """The pipeline object registered for the task: run, and evaluate a trained run or
    generate text with it."""

    config = LanguageModelingConfig
    run = staticmethod(run)
    evaluate = staticmethod(evaluate_trained)
    generate = staticmethod(generate_trained)
