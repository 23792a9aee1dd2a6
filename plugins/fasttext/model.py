"""The fastText network. Parameter names:

  emb.weight [V + buckets, dim]   rows 0..V-1: tokens; rows V..: hashed bigrams
  head.{weight [K, dim], bias [K]}

Features of a text: its token ids (``<cls>`` included, padding excluded) and, with
``ngrams = 2``, one id per pair of adjacent real tokens, ``V + hash(a, b) % buckets``. An
``EmbeddingBag`` averages their embeddings (the padding id is left out of the mean), and the
head maps the mean to class logits. As in fastText, embeddings start uniform in
[-1/dim, 1/dim] and the head at zero.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from zoo.plugin import TaskSpec
from zoo.plugin.layers import token_bigram_ids


class FastText(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task != "classification" or not spec.num_classes:
            raise ValueError(f"fasttext serves classification only, not {spec.task}")
        self.cfg, self.vocab, self.pad_id = cfg, spec.vocab_size, spec.pad_id
        rows = spec.vocab_size + (cfg.buckets if cfg.ngrams == 2 else 0)
        self.emb = nn.EmbeddingBag(rows, cfg.dim, mode="mean", padding_idx=spec.pad_id)
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(cfg.dim, spec.num_classes)
        nn.init.uniform_(self.emb.weight, -1.0 / cfg.dim, 1.0 / cfg.dim)
        with torch.no_grad():
            self.emb.weight[spec.pad_id].zero_()
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def features(self, input_ids, attention_mask):  # [B, T] -> [B, F] ids, pad where absent
        buckets = self.cfg.buckets if self.cfg.ngrams == 2 else 0
        return token_bigram_ids(input_ids, attention_mask, self.vocab, buckets, self.pad_id)

    def forward(self, input_ids, attention_mask=None):  # [B, T] -> [B, K]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if input_ids.shape[1] > self.cfg.block_size:
            raise ValueError(
                f"sequence of {input_ids.shape[1]} tokens exceeds block_size {self.cfg.block_size}"
            )
        mean = self.emb(self.features(input_ids, attention_mask))  # [B, dim]
        return self.head(self.drop(mean))


def build(cfg, spec: TaskSpec) -> FastText:
    return FastText(cfg, spec)
