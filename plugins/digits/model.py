"""The digits network: a minimal post-LN transformer that predicts the next item.

  embed.weight [V, C]                      (positions are fixed sinusoids, not parameters)
  blocks.{i}.attn.qkv.{weight [3C, C], bias [3C]}  blocks.{i}.attn.proj.{weight [C, C], bias [C]}
  blocks.{i}.norm1.{weight,bias} [C]
  blocks.{i}.ff.0.{weight [F, C], bias [F]}  blocks.{i}.ff.2.{weight [C, F], bias [C]}  (ReLU)
  blocks.{i}.norm2.{weight,bias} [C]
  head.{weight [V, C], bias [V]}

Attention is bidirectional over the real tokens (padding is masked out as keys); the
output is read at the last real position, so right-padded batches of mixed lengths work.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from zoo import TaskSpec, attention


def sinusoids(length: int, width: int) -> torch.Tensor:
    """Fixed positional encoding: sin on even, cos on odd channels, wavelengths 2pi..10000*2pi."""
    position = torch.arange(length, dtype=torch.float32)[:, None]  # [T, 1]
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)
    return table  # [T, C]


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads, self.dropout = cfg.heads, cfg.dropout
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.proj = nn.Linear(cfg.width, cfg.width)

    def forward(self, x, keep):  # x: [B, T, C]; keep: [B, 1, 1, T] bool (True = real key) or None
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # [B, T, C] -> [B, heads, T, C // heads]
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = attention(q, k, v, attn_mask=keep, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class PostLNBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = SelfAttention(cfg)
        self.norm1 = nn.LayerNorm(cfg.width)
        self.ff = nn.Sequential(nn.Linear(cfg.width, cfg.ff_ratio * cfg.width), nn.ReLU(),
                                nn.Linear(cfg.ff_ratio * cfg.width, cfg.width))
        self.norm2 = nn.LayerNorm(cfg.width)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, keep):
        x = self.norm1(x + self.drop(self.attn(x, keep)))  # attention, add & norm
        return self.norm2(x + self.drop(self.ff(x)))  # feed-forward, add & norm


class DigitsTransformer(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task != "next-item":
            raise ValueError(f"the digits architecture serves next-item only, not {spec.task}")
        self.cfg = cfg
        self.embed = nn.Embedding(spec.vocab_size, cfg.width)
        nn.init.normal_(self.embed.weight, std=cfg.width ** -0.5)  # scaled by sqrt(C) in forward
        self.register_buffer("positions", sinusoids(cfg.block_size, cfg.width), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(PostLNBlock(cfg) for _ in range(cfg.blocks))
        self.head = nn.Linear(cfg.width, spec.vocab_size)

    def forward(self, input_ids, attention_mask=None):  # [B, T] -> logits [B, V]
        B, T = input_ids.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} tokens exceeds block_size {self.cfg.block_size}")
        x = self.embed(input_ids) * math.sqrt(self.cfg.width) + self.positions[:T]
        x = self.drop(x)  # [B, T, C]
        if attention_mask is None:
            keep, last = None, torch.full((B,), T - 1, device=input_ids.device)
        else:
            keep = attention_mask.bool()[:, None, None, :]  # [B, 1, 1, T]
            last = attention_mask.long().sum(dim=1) - 1
        for block in self.blocks:
            x = block(x, keep)
        return self.head(x[torch.arange(B, device=x.device), last])  # [B, V]


def build(cfg, spec: TaskSpec) -> DigitsTransformer:
    return DigitsTransformer(cfg, spec)
