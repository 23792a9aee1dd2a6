"""The encoder network (BERT-shaped, pre-LN). Parameter names:

  tok_emb.weight [V, C]            pos_emb.weight [T, C]          emb_ln.{weight,bias} [C]
  blocks.{i}.ln1.{weight,bias} [C] blocks.{i}.attn.qkv.{weight [3C, C], bias [3C]}
  blocks.{i}.attn.proj.{weight [C, C], bias [C]}
  blocks.{i}.ln2.{weight,bias} [C] blocks.{i}.mlp.fc.{weight [HC, C], bias [HC]}
  blocks.{i}.mlp.proj.{weight [C, HC], bias [C]}                  (H = mlp_ratio)
  ln_f.{weight,bias} [C]
  bigrams.weight [bigram_buckets, C]  only with bigram_buckets > 0
  head.{weight [K, C], bias [K]}   classification: K = num_classes
  head.{weight [V, C], bias [V]}   next-item: K = vocab size; weight tied to tok_emb when
                                   config.tie_weights (kept once, as tok_emb.weight)

Attention is bidirectional; padded positions (attention_mask 0) are never attended to and
never pooled, so padding a batch leaves every example's output unchanged. Pooling takes the
hidden state at position 0 ("cls": the classification pipeline puts <cls> there) or the
mean over real tokens ("mean"). With ``bigram_buckets``, the mean embedding of the text's
hashed token bigrams is added to the pooled vector; with ``token_dropout``, training drops
random real tokens (never <cls>) from attention, pooling and the bigram bag.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.engine import attention
from zoo.model import TaskSpec

BIGRAM_HASH = 116_049_371  # pairs of ids hash to (a * BIGRAM_HASH + b) mod bigram_buckets


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head, self.dropout = cfg.n_head, cfg.dropout
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)

    def forward(self, x, keep):  # x: [B, T, C]; keep: [B, 1, 1, T] bool, True = a real key
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # [B, T, C] -> [B, heads, T, C // heads]
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = attention(q, k, v, attn_mask=keep, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, cfg.mlp_ratio * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.n_embd, cfg.n_embd, bias=cfg.bias)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, keep):
        x = x + self.drop(self.attn(self.ln1(x), keep))
        return x + self.drop(self.mlp(self.ln2(x)))


class Encoder(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task not in ("classification", "next-item"):
            raise ValueError(f"the encoder has no {spec.task} head")
        if spec.task == "classification" and not spec.num_classes:
            raise ValueError("classification needs num_classes")
        self.cfg, self.task = cfg, spec.task
        self.tok_emb = nn.Embedding(spec.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.emb_ln = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        if cfg.bigram_buckets:
            self.bigrams = nn.EmbeddingBag(cfg.bigram_buckets + 1, cfg.n_embd, mode="mean",
                                           padding_idx=cfg.bigram_buckets)  # last row: no pair
        outputs = spec.num_classes if spec.task == "classification" else spec.vocab_size
        self.head = nn.Linear(cfg.n_embd, outputs)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):  # residual projections, scaled as in GPT-2
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))
        if spec.task == "next-item" and cfg.tie_weights:
            self.head.weight = self.tok_emb.weight

    @staticmethod
    def _init(module):
        if isinstance(module, (nn.Linear, nn.Embedding, nn.EmbeddingBag)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def hidden(self, input_ids, attention_mask):  # [B, T], [B, T] -> [B, T, C]
        B, T = input_ids.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} tokens exceeds block_size {self.cfg.block_size}")
        pos = torch.arange(T, device=input_ids.device)
        x = self.drop(self.emb_ln(self.tok_emb(input_ids) + self.pos_emb(pos)))
        keep = attention_mask.bool()[:, None, None, :]  # [B, 1, 1, T], broadcast over heads and queries
        for block in self.blocks:
            x = block(x, keep)
        return self.ln_f(x)

    def pool(self, h, attention_mask):  # [B, T, C] -> [B, C]
        if self.cfg.pooling == "cls":
            return h[:, 0]
        weights = attention_mask.to(h.dtype).unsqueeze(-1)  # [B, T, 1]
        return (h * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)

    def bigram_bag(self, input_ids, attention_mask):  # [B, T] -> [B, C]
        buckets = self.cfg.bigram_buckets
        both = (attention_mask[:, :-1] * attention_mask[:, 1:]).bool()
        pairs = torch.remainder(input_ids[:, :-1] * BIGRAM_HASH + input_ids[:, 1:], buckets)
        return self.bigrams(pairs.masked_fill(~both, buckets))

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if self.training and self.cfg.token_dropout:
            drop = torch.rand(input_ids.shape, device=input_ids.device) < self.cfg.token_dropout
            drop[:, 0] = False  # <cls> (or the first token) stays, so no text is empty
            attention_mask = attention_mask * (~drop).to(attention_mask.dtype)
        h = self.hidden(input_ids, attention_mask)
        pooled = self.pool(h, attention_mask)
        if self.cfg.bigram_buckets and input_ids.shape[1] > 1:
            pooled = pooled + self.bigram_bag(input_ids, attention_mask)
        return self.head(self.drop(pooled))  # [B, K]


def build(cfg, spec: TaskSpec) -> Encoder:
    return Encoder(cfg, spec)
