"""The NBSVM network. Parameter names (fixed after the fit; nothing in them trains):

  coef [V + buckets, K]   the weight of each token (rows 0..V-1) and hashed bigram (rows V..)
                          for each class, its character grams' weights folded in
  intercept [K]

A text's score for class c is ``intercept[c] + sum of coef[f, c]`` over the distinct features
f it holds; ``sigmoid`` of it is the one-against-the-rest regression's probability of c, and
the module returns the log of those probabilities normalised to sum to 1 [B, K].

``fit`` (declared by ``fits_training_split``, see ``zoo.plugin.Model``) fits the regressions
on the whole training split: features scaled by their log-count ratios ``r[f, c]`` (Wang and
Manning 2012), an L2 penalty ``|w|^2 / (2 c)`` on the weights of the scaled features, L-BFGS
to convergence; the weights on the features themselves, ``w * r``, are kept.

With ``char_buckets > 0`` each distinct token of a text also brings its hashed character 2- to
5-grams, read within spaces (a gram knows where a word starts and ends). A token's grams only
ever appear with it, so after the fit their weights are added to the token's row: the saved
model has the same shape whatever the number of character buckets.
"""

from __future__ import annotations

import zlib

import torch
import torch.nn.functional as F
from torch import nn

from zoo.plugin import TaskSpec
from zoo.plugin.layers import check_length, token_bigram_ids

SMOOTHING = 1.0  # add-one counts in the log-count ratios
CHAR_NGRAMS = range(2, 6)  # character n-gram lengths
FIT_ITERATIONS = 300  # L-BFGS iterations at most


class NBSVM(nn.Module):
    fits_training_split = True  # zoo.plugin.Model: fit() sees the training split first

    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task != "classification" or not spec.num_classes:
            raise ValueError(f"nbsvm serves classification only, not {spec.task}")
        self.cfg, self.vocab, self.pad_id = cfg, spec.vocab_size, spec.pad_id
        rows, classes = spec.vocab_size + cfg.buckets, spec.num_classes
        self.coef = nn.Parameter(torch.zeros(rows, classes), requires_grad=False)
        self.intercept = nn.Parameter(torch.zeros(classes), requires_grad=False)

    def features(self, input_ids, attention_mask):  # [B, T] -> [B, F], each feature once
        ids = token_bigram_ids(input_ids, attention_mask, self.vocab, self.cfg.buckets, self.pad_id)
        ids, _ = ids.sort(dim=1)
        repeated = torch.zeros_like(ids, dtype=torch.bool)
        repeated[:, 1:] = ids[:, 1:] == ids[:, :-1]
        return ids.masked_fill(repeated, self.pad_id)

    @torch.no_grad()
    def fit(self, input_ids, attention_mask, targets, vocabulary=None) -> None:
        """Fit the regressions to the training split: ``input_ids`` [N, T] with their
        ``attention_mask``, class ids ``targets`` [N], and each token id's text
        (``vocabulary``; read only for character grams)."""
        char_buckets = self.cfg.char_buckets
        if char_buckets and vocabulary is None:
            raise ValueError("char_buckets needs the vocabulary's texts")
        device = self.coef.device
        ids = self.features(input_ids, attention_mask).to(device)  # [N, F]
        classes = self.coef.shape[1]
        real = ids != self.pad_id
        text = torch.arange(len(ids), device=device)[:, None].expand_as(ids)[real]
        feature = ids[real]
        first_gram = self.vocab + self.cfg.buckets  # character grams' rows follow the bigrams'
        if char_buckets:  # each (text, token) pair brings the token's grams
            gram_token, gram = (
                t.to(device) for t in token_char_grams(vocabulary, char_buckets, self.vocab)
            )
            start = torch.searchsorted(gram_token, feature)
            count = torch.searchsorted(gram_token, feature, right=True) - start
            within = torch.arange(int(count.sum()), device=device) - (
                count.cumsum(0) - count
            ).repeat_interleave(count)
            text = torch.cat([text, text.repeat_interleave(count)])
            feature = torch.cat(
                [feature, first_gram + gram[start.repeat_interleave(count) + within]]
            )
        columns = first_gram + char_buckets
        keys, value = torch.unique(text * columns + feature, return_counts=True)  # by text
        text, feature = keys // columns, keys % columns
        used, column = torch.unique(feature, return_inverse=True)
        y = F.one_hot(targets.to(device).long(), classes).double()  # [N, K]
        counts = torch.zeros(len(used), classes, dtype=torch.float64, device=device)
        counts.index_add_(0, column, y[text])  # texts holding each feature, per class
        fitted, intercept = fit_logistic(
            text, column, value.double(), y, log_count_ratios(counts), self.cfg.c
        )
        full = torch.zeros(columns, classes, dtype=torch.float64, device=device)
        full[used] = fitted
        coef = full[:first_gram]
        if char_buckets:  # each token carries its grams' weights, once per occurrence
            coef.index_add_(0, gram_token, full[first_gram + gram])
        self.coef.copy_(coef)
        self.intercept.copy_(intercept)

    def forward(self, input_ids, attention_mask=None):  # [B, T] -> [B, K] log-probabilities
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        check_length(input_ids, self.cfg.block_size)
        ids = self.features(input_ids, attention_mask)
        scores = F.embedding_bag(ids, self.coef.float(), mode="sum", padding_idx=self.pad_id)
        each = F.logsigmoid(scores + self.intercept.float())  # log P(class c | c or not c)
        return each - torch.logsumexp(each, dim=-1, keepdim=True)


def log_count_ratios(counts: torch.Tensor) -> torch.Tensor:
    """[F, K] counts of texts holding each feature, per class -> [F, K] log-count ratios of
    each class against the other classes, add-one smoothed."""
    ours = counts + SMOOTHING
    rest = counts.sum(dim=1, keepdim=True) - counts + SMOOTHING
    return torch.log(ours / ours.sum(dim=0)) - torch.log(rest / rest.sum(dim=0))


def token_char_grams(vocabulary, buckets: int, vocab_size: int):
    """Each token's hashed character n-grams, one pair per occurrence: (token ids, gram
    buckets), sorted by token id. A gram's bucket is the crc32 of its text, the same in every
    process. Special tokens ("") have none."""
    token_ids, gram_ids = [], []
    for token_id, token in enumerate(vocabulary[:vocab_size]):
        padded = f" {token.strip()} "
        if padded.strip():
            for n in CHAR_NGRAMS:
                for start in range(len(padded) - n + 1):
                    token_ids.append(token_id)
                    gram_ids.append(zlib.crc32(padded[start : start + n].encode()) % buckets)
    return torch.tensor(token_ids, dtype=torch.long), torch.tensor(gram_ids, dtype=torch.long)


def fit_logistic(text, column, value, y, ratios, c: float):
    """One-against-the-rest logistic regressions on features scaled by each class's
    log-count ratios [U, K]. The training texts' features are the entries (text, column,
    value), sorted by text; y [N, K] says which class each text is. Minimises the summed log
    loss plus |w|^2 / (2 c) over the weights w on the scaled features (the intercepts are
    not penalised) and returns the weights on the features themselves, w * ratios [U, K],
    and the intercepts [K]. The gradient is written out (X^T times the residuals), as two
    embedding_bag sums, one over each text's entries and one over each feature's."""
    n, features = len(y), len(ratios)
    by_text = torch.searchsorted(text, torch.arange(n, device=text.device))
    order = torch.argsort(column, stable=True)
    by_feature = torch.searchsorted(column[order], torch.arange(features, device=text.device))
    weight = torch.zeros_like(ratios, requires_grad=True)
    prior = y.mean(dim=0).clamp(1e-6, 1 - 1e-6)
    intercept = torch.log(prior / (1 - prior)).requires_grad_(True)
    optimizer = torch.optim.LBFGS(
        [weight, intercept],
        max_iter=FIT_ITERATIONS,
        history_size=10,
        tolerance_grad=1e-7,
        tolerance_change=1e-10,
        line_search_fn="strong_wolfe",
    )

    @torch.no_grad()
    def objective():
        scores = (
            F.embedding_bag(column, weight * ratios, by_text, mode="sum", per_sample_weights=value)
            + intercept
        )  # [N, K]
        loss = (
            F.binary_cross_entropy_with_logits(scores, y, reduction="sum")
            + (weight * weight).sum() / (2 * c)
        ) / n  # / n: the same optimum, tamer steps
        residual = (torch.sigmoid(scores) - y) / n
        weight.grad = F.embedding_bag(
            text[order],
            residual,
            by_feature,
            mode="sum",
            per_sample_weights=value[order],
        ) * ratios + weight / (c * n)
        intercept.grad = residual.sum(dim=0)
        return loss

    optimizer.step(objective)
    return (weight * ratios).detach(), intercept.detach()


def build(cfg, spec: TaskSpec) -> NBSVM:
    return NBSVM(cfg, spec)
