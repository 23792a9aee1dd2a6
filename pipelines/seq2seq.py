"""Sequence to sequence: read a source text, write its target (translation, transduction).

The source is the dataset's text column and the target its label column (``--text-column``
and ``--label-column``, or ``text_column`` and ``label_column`` in a registry.toml entry).
One vocabulary covers both sides (trained on the training split's sources and targets).
``<cls>`` starts a target and ends it.

Two kinds of model serve it, each trained with teacher forcing, the loss on the target only:

- an encoder-decoder (an architecture that lists ``seq2seq``) gets a packed batch: each
  row's source right-padded to S, then its target input (``<cls>`` and the target)
  right-padded to T; ``attention_mask`` is 1 on source tokens, 2 on target tokens, 0 on
  padding (``zoo.plugin.layers.split_source_target`` takes it apart). It returns logits
  [B, T, V] at the target's positions; the targets are the target and ``<cls>``.
- any language model (an architecture that lists ``language-modeling``), built for
  language modeling, reads ``source <cls> target`` as one causal sequence: a prefix LM
  whose loss counts the target's positions only. Its source keeps its first
  ``context // 2`` tokens, its target the rest of the context.

Decoding is beam search (``beam_size``; 1 is greedy) with the model's key/value cache
(``decode``) where it has one. Metrics: corpus BLEU and chrF by sacreBLEU on the decoded
text against the dataset's own target text (the signatures are recorded with the run),
exact match (the whole output right), and the loss per target token. Each row's exact
match and loss per target token are kept (``RunResult.per_example``, the loss weighted by
the row's target tokens where the model has ``loss_per_row``), and for BLEU and chrF, corpus scores that are no
mean of per-row scores, each row's sufficient statistics (``per_example_statistics``): so
comparisons of runs decoded on the same rows count the test set's noise, the bootstrap
rescoring each draw's summed statistics (``score_statistics``). The training curve
and the choice of the best weights use the validation loss; the test split is decoded and
scored once, at the end.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from zoo.pipelines.common import loop_metrics, run_tokenizer
from zoo.pipelines.seq2seq_decoding import Search, Steps, beam_search

from zoo.plugin import (
    IGNORE_INDEX,
    Batch,
    Job,
    Prediction,
    RunResult,
    TaskSpec,
    TrainConfig,
    ZooError,
    train,
)
from zoo.plugin.config import sized
from zoo.plugin.data import column_of, dataset_key, row_ids, row_texts, unragged
from zoo.plugin.layers import SOURCE, TARGET
from zoo.plugin.losses import label_smoothed

PREFIXES = {"validation": "val", "test": "test"}
LANGUAGE_MODEL = "language-modeling"  # the task a prefix LM is built for


@dataclass
class Seq2SeqConfig(TrainConfig):
    batch_size: int = 64
    eval_batch_size: int = sized(64, role="batch")
    # cross entropy against targets smoothed toward uniform, in training only (0: none)
    label_smoothing: float = 0.0
    # decoding: hypotheses kept per row (1: greedy) and the length normalization of their
    # scores (log-probability / length ** length_penalty)
    beam_size: int = sized(1, at_most=64)
    length_penalty: float = 1.0
    # the longest output in tokens (None: as long as the model's context allows)
    max_new_tokens: int | None = None
    # translations of test sources shown at the end
    samples: int = sized(5, at_most=10_000, incidental=True)
    decode_batch_size: int = sized(64, role="batch", incidental=True)

    def __post_init__(self):
        super().__post_init__()
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be 1 or more, got {self.beam_size}")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be positive, got {self.max_new_tokens}")
        for name in ("eval_batch_size", "decode_batch_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


# -- the layout of a batch -----------------------------------------------------------------
@dataclass
class Layout:
    """How rows reach a model: packed for an encoder-decoder, one causal sequence for a
    prefix LM. ``bos`` (``<cls>``) starts a target, ends it, and separates a prefix LM's
    source from its target."""

    prefix_lm: bool
    block: int
    bos: int
    pad: int

    @property
    def source_limit(self) -> int:
        return self.block // 2 if self.prefix_lm else self.block

    @property
    def target_limit(self) -> int:
        """The longest target, its end token left out."""
        return self.block - self.source_limit - 1 if self.prefix_lm else self.block - 1

    def batch(self, sources: list, targets: list) -> Batch:
        """Teacher forcing: the inputs, the targets (IGNORE_INDEX where nothing is scored)
        and the attention mask of some rows."""
        if self.prefix_lm:
            rows = [
                np.concatenate([s, [self.bos], t, [self.bos]]) for s, t in zip(sources, targets)
            ]
            inputs, mask = self._right_padded([r[:-1] for r in rows])
            labels = np.full(inputs.shape, IGNORE_INDEX, dtype=np.int64)
            for i, (s, r) in enumerate(zip(sources, rows)):
                labels[i, len(s) : len(r) - 1] = r[len(s) + 1 :]
            return Batch(inputs, labels, mask, tokens=int(mask.sum()))
        source, source_mask = self._right_padded(sources)
        target, target_mask = self._right_padded([np.concatenate([[self.bos], t]) for t in targets])
        labels = np.full(target.shape, IGNORE_INDEX, dtype=np.int64)
        for i, t in enumerate(targets):
            labels[i, : len(t) + 1] = np.concatenate([t, [self.bos]])
        inputs = np.concatenate([source, target], axis=1)
        mask = np.concatenate([source_mask * SOURCE, target_mask * TARGET], axis=1)
        return Batch(inputs, labels, mask, tokens=int((mask > 0).sum()))

    def prompts(self, sources: list) -> tuple[np.ndarray, np.ndarray]:
        """Each source and ``<cls>``, left-padded [N, W], and each row's padding [N]: what
        a cached model starts decoding from."""
        rows = [np.concatenate([s, [self.bos]]) for s in sources]
        width = max(len(r) for r in rows)
        out = np.full((len(rows), width), self.pad, dtype=np.int64)
        pads = np.array([width - len(r) for r in rows], dtype=np.int64)
        for i, r in enumerate(rows):
            out[i, pads[i] :] = r
        return out, pads

    def logits_after(self, model, sources: list, prefixes: np.ndarray) -> np.ndarray:
        """The next token's logits [N, V] after each source and its target so far
        (``prefixes`` [N, t]), recomputed from scratch (no cache)."""
        rows = [np.concatenate([s, [self.bos], p]) for s, p in zip(sources, prefixes)]
        if self.prefix_lm:
            inputs, mask = self._right_padded(rows)
            logits = model.logits(inputs, mask)  # [N, L, V]
            return logits[np.arange(len(rows)), mask.sum(axis=1) - 1]
        source, source_mask = self._right_padded(sources)
        target = np.concatenate(
            [np.full((len(rows), 1), self.bos, dtype=np.int64), prefixes], axis=1
        )
        inputs = np.concatenate([source, target], axis=1)
        mask = np.concatenate([source_mask * SOURCE, np.full(target.shape, TARGET)], axis=1)
        return model.logits(inputs, mask)[:, -1]

    def max_new(self, cap: int | None) -> int:
        longest = self.target_limit + 1  # the target and its end token
        return min(longest, cap) if cap else longest

    def _right_padded(self, rows: list) -> tuple[np.ndarray, np.ndarray]:
        width = max(1, max(len(r) for r in rows))
        out = np.full((len(rows), width), self.pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            out[i, : len(r)], mask[i, : len(r)] = r, 1
        return out, mask


def layout_for(spec: TaskSpec, block: int, tokenizer) -> Layout:
    if tokenizer.cls_id is None:
        raise ZooError("seq2seq needs a tokenizer with a <cls> token (it marks a target's ends)")
    return Layout(spec.task == LANGUAGE_MODEL, block, tokenizer.cls_id, tokenizer.pad_id)


# -- pairs ---------------------------------------------------------------------------------
@dataclass
class Pairs:
    """A split's rows: source and target ids (cut to the layout's limits) and texts."""

    sources: list
    targets: list
    source_texts: list[str]
    target_texts: list[str]
    truncated: int  # rows whose source or target was cut

    def __len__(self) -> int:
        return len(self.sources)


def split_pairs(dataset, role: str, tokenizer, layout: Layout) -> Pairs:
    split = dataset.split(role)
    if not dataset.label_column:
        raise ZooError(
            f"dataset {dataset.ref.name!r} has no target column: seq2seq reads the source "
            "from the text column and the target from the label column (label_column)"
        )
    sides = []
    for column, limit in (
        (dataset.text_column, layout.source_limit),
        (dataset.label_column, layout.target_limit),
    ):
        ids, offsets = row_ids(split, column, tokenizer)
        rows = [np.asarray(r, dtype=np.int64) for r in unragged(ids, offsets)]
        sides.append(([r[:limit] for r in rows], sum(len(r) > limit for r in rows)))
    (sources, cut_sources), (targets, cut_targets) = sides
    check_sources(sources, lambda i: f"row {i} of split {role!r} of dataset {dataset.ref.name!r}")
    return Pairs(
        sources,
        targets,
        row_texts(column_of(split, dataset.text_column)),
        row_texts(column_of(split, dataset.label_column)),
        max(cut_sources, cut_targets),
    )


def check_sources(sources: list, where: Callable[[int], str]) -> None:
    """Every source has a token to read; ``where(i)`` names source i when it has none."""
    empty = next((i for i, source in enumerate(sources) if len(source) == 0), None)
    if empty is not None:
        raise ZooError(f"{where(empty)}: the source encodes to no token")


def tokenizer_for(job: Job):
    """One vocabulary over both sides: trained on the training split's sources and targets."""
    dataset = job.dataset
    split = dataset.split("train")
    columns = [dataset.text_column, dataset.label_column or dataset.text_column]
    key = "+".join(dataset_key(dataset, "train", column) for column in columns)

    def texts():
        return list(itertools.chain.from_iterable(row_texts(column_of(split, c)) for c in columns))

    return run_tokenizer(job, texts, key)


# -- evaluation ----------------------------------------------------------------------------
def loss_of(model, layout: Layout, pairs: Pairs, rows: np.ndarray, batch_size: int) -> float:
    """Mean loss per target token (its end included) over some rows."""
    return row_losses(model, layout, pairs, rows, batch_size)[0]


def row_losses(model, layout: Layout, pairs: Pairs, rows: np.ndarray, batch_size: int):
    """loss_of, and where the model scores row by row (its optional ``loss_per_row``, in
    the same pass) each row's loss per target token and its target tokens; else None."""
    per_row = getattr(model, "loss_per_row", None)  # optional (zoo.plugin.Model)
    scored = per_row if callable(per_row) else model.loss_sum
    results = []
    for begin in range(0, len(rows), batch_size):
        chosen = rows[begin : begin + batch_size]
        batch = layout.batch([pairs.sources[i] for i in chosen], [pairs.targets[i] for i in chosen])
        results.append(scored(batch.inputs, batch.targets, batch.mask))
    total = float(sum(np.sum(nll) for nll, _ in results))
    count = int(sum(np.sum(n) for _, n in results))
    if not callable(per_row):
        return total / max(1, count), None
    nats = np.concatenate([np.asarray(r[0], dtype=np.float64) for r in results])
    tokens = np.concatenate([np.asarray(r[1], dtype=np.float64) for r in results])
    return total / max(1, count), (nats / np.maximum(tokens, 1), tokens)


def translate(model, layout: Layout, tokenizer, sources: list, cfg, beam=None) -> list[str]:
    """The decoded text of each source, in batches of ``decode_batch_size`` rows."""
    search = Search(
        beam or cfg.beam_size,
        cfg.length_penalty,
        layout.max_new(cfg.max_new_tokens),
        layout.bos,
        [i for i in (tokenizer.pad_id, tokenizer.unk_id) if i is not None],
    )
    cached = bool(getattr(model, "decodes_incrementally", False)) and (
        search.beam == 1 or getattr(model, "reorder_cache", None) is not None
    )
    out: list[str] = []
    for begin in range(0, len(sources), cfg.decode_batch_size):
        group = sources[begin : begin + cfg.decode_batch_size]
        expanded = [s for s in group for _ in range(search.beam)]

        def logits_after(rows, prefixes, expanded=expanded):
            return layout.logits_after(model, [expanded[r] for r in rows], prefixes)

        steps = Steps(model, layout.prompts(expanded), logits_after, cached)
        out += tokenizer.decode_batch(beam_search(steps, len(group), search))
    return out


def text_metrics(hypotheses: list[str], references: list[str]) -> dict:
    """Corpus BLEU and chrF (sacreBLEU, its default settings: 13a tokenization, exponential
    smoothing; chrF with character 6-grams), their signatures, and exact match."""
    return text_scores(hypotheses, references)[0]


def text_scores(hypotheses: list[str], references: list[str]) -> tuple[dict, dict]:
    """text_metrics, and what each row adds to them: its exact match, and its BLEU and
    chrF sufficient statistics (sacreBLEU's per-sentence n-gram matches and totals, as its
    own paired bootstrap resamples them), whose sums over the split give the corpus
    scores (score_statistics)."""
    figures: dict[str, float | str] = {}
    kept = {"exact_match": exact_matches(hypotheses, references)}
    for name, metric in _corpus_metrics().items():
        table = np.asarray(
            metric._extract_corpus_statistics(hypotheses, [references]), dtype=np.float64
        )
        kept[name] = table
        figures[name] = float(metric._compute_score_from_stats(table.sum(axis=0)).score)
        figures[f"{name}_signature"] = str(metric.get_signature())
    figures["exact_match"] = float(np.mean(kept["exact_match"]))
    return figures, kept


def _corpus_metrics() -> dict:
    from sacrebleu.metrics import BLEU, CHRF

    return {"bleu": BLEU(), "chrf": CHRF()}


def score_statistics(metric: str, totals) -> np.ndarray:
    """BLEU or chrF (``test_bleu``) from sufficient statistics summed over each draw of
    rows: one corpus score per row of ``totals`` (draws, k), sacreBLEU's own computation."""
    scorer = _corpus_metrics()[metric.partition("_")[2]]
    return np.array([scorer._compute_score_from_stats(row).score for row in totals])


def exact_matches(hypotheses: list[str], references: list[str]) -> np.ndarray:
    """1.0 where an output is its reference exactly, else 0.0: one score per row, in the
    split's order, whose mean is exact_match."""
    return np.array([h == r for h, r in zip(hypotheses, references)], dtype=np.float64)


def score_pairs(model, layout, tokenizer, pairs: Pairs, cfg) -> tuple[dict, list[str], dict]:
    """A split's metrics (unprefixed), its decoded outputs and what each row adds to them
    (text_scores)."""
    outputs = translate(model, layout, tokenizer, pairs.sources, cfg)
    metrics, kept = text_scores(outputs, pairs.target_texts)
    everything = np.arange(len(pairs))
    metrics["loss"], losses = row_losses(model, layout, pairs, everything, cfg.eval_batch_size)
    if losses is not None:
        kept["loss"] = losses
    return metrics, outputs, kept


# -- the pipeline --------------------------------------------------------------------------
def run(job: Job[Seq2SeqConfig]) -> RunResult:
    cfg = job.train_config
    tokenizer = tokenizer_for(job)
    encoder_decoder = "seq2seq" in job.architecture.tasks
    spec = TaskSpec(
        "seq2seq" if encoder_decoder else LANGUAGE_MODEL,
        tokenizer.vocab_size,
        pad_id=tokenizer.pad_id,
    )
    layout = layout_for(spec, job.context_length, tokenizer)
    data = {role: split_pairs(job.dataset, role, tokenizer, layout) for role in job.dataset.roles}
    smoothing = label_smoothed(cfg.label_smoothing) if cfg.label_smoothing else None
    model = job.build_model(spec, train_loss=smoothing)
    params = model.num_parameters()
    kind = "encoder-decoder" if encoder_decoder else "prefix LM"
    job.say(f"{job.model_name} ({kind}): {params:,} parameters, {len(data['train']):,} pairs")

    train_pairs = data["train"]
    curve_rows = np.arange(min(len(data["validation"]), cfg.eval_batches * cfg.eval_batch_size))

    def next_batch(rng) -> Batch:
        rows = rng.integers(0, len(train_pairs), size=cfg.batch_size)
        return layout.batch(
            [train_pairs.sources[i] for i in rows], [train_pairs.targets[i] for i in rows]
        )

    def validate() -> dict:
        loss = loss_of(model, layout, data["validation"], curve_rows, cfg.eval_batch_size)
        return {"val_loss": loss}

    result = train(
        job, model, next_batch, validate=validate, score_key="val_loss", higher_is_better=False
    )
    metrics = loop_metrics(result)
    metrics["truncated"] = train_pairs.truncated / max(1, len(train_pairs))
    outputs: dict[str, list[str]] = {}
    # each row's exact match and BLEU and chrF statistics: comparisons count the test
    # set's noise, the corpus scores recomputed from each draw's sums
    per_example, weights, statistics = {}, {}, {}
    for role in ("validation", "test"):
        if role in data:
            scored = score_pairs(model, layout, tokenizer, data[role], cfg)
            figures, outputs[role], kept = scored
            prefix = PREFIXES[role]
            metrics.update({f"{prefix}_{k}": v for k, v in figures.items()})
            per_example[f"{prefix}_exact_match"] = kept.pop("exact_match")
            if "loss" in kept:  # each row's loss per target token, weighted by its tokens
                per_example[f"{prefix}_loss"], weights[f"{prefix}_loss"] = kept.pop("loss")
            statistics.update({f"{prefix}_{k}": table for k, table in kept.items()})
    metrics["vocab_size"] = tokenizer.vocab_size
    job.run.save_weights(model.state_dict())

    role = "test" if "test" in outputs else "validation"
    samples = [
        f"{source!r} -> {output!r}; reference {reference!r}"
        for source, output, reference in zip(
            data[role].source_texts, outputs[role], data[role].target_texts
        )
    ][: cfg.samples]
    if samples:
        job.run.write_text("samples.txt", "\n".join(samples) + "\n")
    return RunResult(
        params,
        metrics,
        spec,
        ["\n".join(samples)] if samples else [],
        per_example=per_example,
        per_example_weights=weights,
        per_example_statistics=statistics,
    )


def trained_layout(trained) -> Layout:
    spec = TaskSpec(**trained.config["spec"])
    return layout_for(spec, trained.context_length, trained.tokenizer)


@dataclass(frozen=True)
class Translation(Prediction):
    """The decoded target of one source text."""

    output: str


def predict(trained, texts: list[str], beam: int | None = None) -> list[Translation]:
    """Each text's translation (``beam``: the beam size, else the run's ``beam_size``)."""
    if beam is not None and beam < 1:
        raise ZooError(f"beam must be 1 or more, got {beam}", option="beam")
    layout = trained_layout(trained)
    cfg = trained.train_config or Seq2SeqConfig()
    ids, offsets = trained.tokenizer.encode_rows(list(texts))
    sources = [np.asarray(r, dtype=np.int64)[: layout.source_limit] for r in unragged(ids, offsets)]
    check_sources(sources, lambda i: f"text {i + 1}")
    outputs = translate(trained.model, layout, trained.tokenizer, sources, cfg, beam)
    return [Translation(output) for output in outputs]


def evaluate(trained, dataset, split: str = "test") -> dict:
    """BLEU, chrF (with their signatures), exact match and loss of a trained run on one
    split of a dataset (``zoo eval``), named without a split prefix."""
    layout = trained_layout(trained)
    cfg = trained.train_config or Seq2SeqConfig()
    pairs = split_pairs(dataset, split, trained.tokenizer, layout)
    figures, _, _ = score_pairs(trained.model, layout, trained.tokenizer, pairs, cfg)
    return figures


def check_dataset(dataset) -> None:
    if not dataset.label_column:
        raise ZooError(
            f"dataset {dataset.ref.name!r} has no target column: seq2seq reads the source "
            "from the text column and the target from the label column (label_column)"
        )


class Seq2Seq:
    """The pipeline object registered for the task: run, predict and evaluate."""

    config = Seq2SeqConfig
    run = staticmethod(run)
    predict = staticmethod(predict)
    evaluate = staticmethod(evaluate)
    check_dataset = staticmethod(check_dataset)
    score_statistics = staticmethod(score_statistics)
