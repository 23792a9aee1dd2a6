"""The encoder ensemble's naive Bayes member (NBSVM, Wang and Manning 2012): a linear model
over a text's tokens and hashed token bigrams whose weight for feature f and class c is
scaled by f's log-count ratio r[f, c] for c against the other classes in the training
split. Two ways to train it:

- ``NaiveBayesBag`` (``nb_c = 0``) learns with the encoders, starting as naive Bayes.
- ``FittedNaiveBayes`` (``nb_c > 0``) is fitted to convergence before training, as NBSVM's
  logistic regressions are, then kept fixed; it may also read each token's characters.

Both take their counts from the training split in ``prepare`` and keep what they learn as
buffers or parameters saved with the weights.
"""
from __future__ import annotations

import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.plugin import TaskSpec
from zoo.plugins.fasttext.model import feature_ids

SMOOTHING = 1.0  # add-one counts
CHAR_NGRAMS = range(2, 6)  # character n-gram lengths, read within " token " (word boundaries)
FIT_ITERATIONS = 300  # L-BFGS iterations at most


def log_count_ratios(counts: torch.Tensor) -> torch.Tensor:
    """[F, K] counts of texts holding each feature, per class -> [F, K] log-count ratios of
    each class against the other classes, add-one smoothed."""
    ours = counts + SMOOTHING
    rest = counts.sum(dim=1, keepdim=True) - counts + SMOOTHING
    return torch.log(ours / ours.sum(dim=0)) - torch.log(rest / rest.sum(dim=0))


class NaiveBayesBag(nn.Module):
    """Learns with the encoders: logit_c = b_c + sum_f (1 + delta[f, c]) r[f, c] / sqrt(n)
    over the text's n features. The ratios are a buffer; delta starts at zero and weight
    decay pulls it back, so the member starts as naive Bayes and learns only what the data
    adds to it. Features never seen in training have ratio 0. Its steps go ``nb_lr_scale``
    times further than the encoders'."""

    trains = True  # its parameters learn in the training loop

    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        self.vocab, self.pad_id, self.buckets = spec.vocab_size, spec.pad_id, cfg.nb_buckets
        self.scale = cfg.nb_lr_scale
        rows = spec.vocab_size + cfg.nb_buckets
        self.register_buffer("ratios", torch.zeros(rows, spec.num_classes))
        self.delta = nn.Parameter(torch.zeros(rows, spec.num_classes))
        self.bias = nn.Parameter(torch.zeros(spec.num_classes))

    def features(self, input_ids, attention_mask):  # [B, T] -> [B, F]
        return feature_ids(input_ids, attention_mask, self.vocab, self.buckets, self.pad_id)

    @torch.no_grad()
    def prepare(self, input_ids, attention_mask, targets, vocabulary=None) -> None:
        """The log-count ratios of the training split: in how many texts of class c, and of
        the other classes, each feature occurs (once per text)."""
        ids = self.features(input_ids, attention_mask)  # [N, F]
        rows, classes = self.ratios.shape
        device = self.ratios.device
        texts = torch.arange(len(ids), device=ids.device)[:, None]
        pairs = torch.unique((texts * rows + ids).flatten()).to(device)
        text, feature = pairs // rows, pairs % rows
        keep = feature != self.pad_id
        targets = targets.to(device).long()
        counts = torch.zeros(rows, classes, device=device)
        counts.index_put_((feature[keep], targets[text[keep]]),
                          torch.ones(int(keep.sum()), device=device), accumulate=True)
        ratios = log_count_ratios(counts)
        self.ratios.copy_(ratios.masked_fill(counts.sum(dim=1, keepdim=True) == 0, 0.0))
        prior = torch.bincount(targets, minlength=classes).float() + SMOOTHING
        self.bias.copy_(torch.log(prior / prior.sum()) / self.scale)

    def forward(self, input_ids, attention_mask):  # [B, T] -> [B, K]
        ids = self.features(input_ids, attention_mask)
        weight = (1.0 + self.delta * self.scale) * self.ratios
        summed = F.embedding_bag(ids, weight, mode="sum", padding_idx=self.pad_id)
        count = (ids != self.pad_id).sum(dim=1, keepdim=True).clamp(min=1)
        return summed / count.sqrt() + self.bias * self.scale


class FittedNaiveBayes(nn.Module):
    """NBSVM as Wang and Manning fit it, one logistic regression per class (one against the
    rest) on the text's features scaled by their log-count ratios, fitted in
    ``prepare`` to convergence (L-BFGS; an L2 penalty with inverse strength ``nb_c``, as
    scikit-learn's C) and fixed afterwards. Its class probabilities are the regressions'
    probabilities, normalised to sum to 1.

    Features: the tokens and hashed token bigrams the text holds (each counted once), and
    with ``nb_char_buckets > 0`` the hashed character 2- to 5-grams of each of its distinct
    tokens (read within spaces, so a gram knows where a word starts and ends; a gram counts
    once per token that holds it). A token's character grams
    only ever appear with it, so after the fit their weights are folded into the token's:
    the saved member is ``coef`` [V + nb_buckets, K] and ``intercept`` [K], whatever the
    number of character buckets."""

    trains = False  # fitted before training; no parameters

    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        self.vocab, self.pad_id, self.buckets = spec.vocab_size, spec.pad_id, cfg.nb_buckets
        self.char_buckets, self.c = cfg.nb_char_buckets, cfg.nb_c
        self.register_buffer("coef", torch.zeros(spec.vocab_size + cfg.nb_buckets,
                                                 spec.num_classes))
        self.register_buffer("intercept", torch.zeros(spec.num_classes))

    def features(self, input_ids, attention_mask):  # [B, T] -> [B, F], each feature once
        ids = feature_ids(input_ids, attention_mask, self.vocab, self.buckets, self.pad_id)
        ids, _ = ids.sort(dim=1)
        repeated = torch.zeros_like(ids, dtype=torch.bool)
        repeated[:, 1:] = ids[:, 1:] == ids[:, :-1]
        return ids.masked_fill(repeated, self.pad_id)

    def prepare(self, input_ids, attention_mask, targets, vocabulary=None) -> None:
        """Fit the regressions to the training split. ``vocabulary`` is each token id's text
        ("" for special tokens); it is needed only for character grams."""
        if self.char_buckets and vocabulary is None:
            raise ValueError("nb_char_buckets needs the vocabulary's texts in prepare")
        device = self.coef.device
        ids = self.features(input_ids, attention_mask).to(device)  # [N, F]
        n, classes = len(ids), self.coef.shape[1]
        real = ids != self.pad_id
        text = torch.arange(n, device=device)[:, None].expand_as(ids)[real]
        feature = ids[real]
        first_gram = self.vocab + self.buckets  # character grams' rows follow the bigrams'
        if self.char_buckets:  # each (text, token) pair brings the token's grams
            gram_token, gram = (t.to(device) for t in
                                token_char_grams(vocabulary, self.char_buckets, self.vocab))
            start = torch.searchsorted(gram_token, feature)
            count = torch.searchsorted(gram_token, feature, right=True) - start
            within = torch.arange(int(count.sum()), device=device) - \
                (count.cumsum(0) - count).repeat_interleave(count)
            text = torch.cat([text, text.repeat_interleave(count)])
            feature = torch.cat([feature, first_gram + gram[start.repeat_interleave(count) + within]])
        columns = first_gram + self.char_buckets
        keys, value = torch.unique(text * columns + feature, return_counts=True)  # by text
        text, feature = keys // columns, keys % columns
        used, column = torch.unique(feature, return_inverse=True)
        y = F.one_hot(targets.to(device).long(), classes).double()  # [N, K]
        counts = torch.zeros(len(used), classes, dtype=torch.float64, device=device)
        counts.index_add_(0, column, y[text])  # texts holding each feature, per class
        fitted, intercept = fit_logistic(text, column, value.double(), y,
                                         log_count_ratios(counts), self.c)
        full = torch.zeros(columns, classes, dtype=torch.float64, device=device)
        full[used] = fitted
        coef = full[:first_gram]
        if self.char_buckets:  # each token carries its grams' weights, once per occurrence
            coef.index_add_(0, gram_token, full[first_gram + gram])
        self.coef.copy_(coef)
        self.intercept.copy_(intercept)

    def forward(self, input_ids, attention_mask):  # [B, T] -> [B, K] log-probabilities
        ids = self.features(input_ids, attention_mask)
        scores = F.embedding_bag(ids, self.coef.float(), mode="sum", padding_idx=self.pad_id)
        each = F.logsigmoid(scores + self.intercept.float())  # log P(class c | c or not c)
        return each - torch.logsumexp(each, dim=-1, keepdim=True)


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
                    gram_ids.append(zlib.crc32(padded[start:start + n].encode()) % buckets)
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
    optimizer = torch.optim.LBFGS([weight, intercept], max_iter=FIT_ITERATIONS, history_size=10,
                                  tolerance_grad=1e-7, tolerance_change=1e-10,
                                  line_search_fn="strong_wolfe")

    @torch.no_grad()
    def objective():
        scores = F.embedding_bag(column, weight * ratios, by_text, mode="sum",
                                 per_sample_weights=value) + intercept  # [N, K]
        loss = (F.binary_cross_entropy_with_logits(scores, y, reduction="sum")
                + (weight * weight).sum() / (2 * c)) / n  # / n: the same optimum, tamer steps
        residual = (torch.sigmoid(scores) - y) / n
        weight.grad = F.embedding_bag(text[order], residual, by_feature, mode="sum",
                                      per_sample_weights=value[order]) * ratios + weight / (c * n)
        intercept.grad = residual.sum(dim=0)
        return loss

    optimizer.step(objective)
    return (weight * ratios).detach(), intercept.detach()
