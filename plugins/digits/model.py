"""The digits network: a minimal post-LN transformer that predicts the next item.

  embed.weight [V, C]                      (positions are fixed sinusoids, not parameters)
  blocks.{i}.attn.qkv.{weight [3C, C], bias [3C]}  blocks.{i}.attn.proj.{weight [C, C], bias [C]}
  blocks.{i}.norm1.{weight,bias} [C]
  blocks.{i}.ff.0.{weight [F, C], bias [F]}  blocks.{i}.ff.2.{weight [C, F], bias [C]}  (ReLU)
  blocks.{i}.norm2.{weight,bias} [C]
  head.{weight [V, C], bias [V]}

Attention (zoo.train.layers.SelfAttention) is bidirectional over the real tokens (padding is
masked out as keys); the output is read at the last real position, so right-padded batches
of mixed lengths work, and the last block computes that position alone (its query attends
over every position): the same output for less work. The block is post-LN, unlike the
decoder's and encoder's. With ``positions = "end"`` the sinusoids count back from each
row's last real token. The LayerNorms are zoo.train.layers.ThreadInvariantLayerNorm (and the
last block's attention zoo.train.layers.attention_at_rows), so a run's metrics do not depend
on its thread count (a `zoo sweep --jobs 2` cell equals the same cell in a two-thread process).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from zoo.plugin import TaskSpec
from zoo.plugin.layers import (
    SelfAttention,
    ThreadInvariantLayerNorm,
    check_length,
    key_mask,
    last_real,
)


def sinusoids(length: int, width: int) -> torch.Tensor:
    """Fixed positional encoding: sin on even, cos on odd channels, wavelengths 2pi..10000*2pi."""
    position = torch.arange(length, dtype=torch.float32)[:, None]  # [T, 1]
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)
    return table  # [T, C]


class PostLNBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = SelfAttention(cfg.width, cfg.heads, dropout=cfg.dropout)
        self.norm1 = ThreadInvariantLayerNorm(cfg.width)
        self.ff = nn.Sequential(
            nn.Linear(cfg.width, cfg.ff_ratio * cfg.width),
            nn.ReLU(),
            nn.Linear(cfg.ff_ratio * cfg.width, cfg.width),
        )
        self.norm2 = ThreadInvariantLayerNorm(cfg.width)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, keep, context=None):  # context: keys and values (default x)
        x = self.norm1(x + self.drop(self.attn(x, keep, context)))  # attention, add & norm
        return self.norm2(x + self.drop(self.ff(x)))  # feed-forward, add & norm


class DigitsTransformer(nn.Module):
    positions: torch.Tensor  # [T, C] sinusoids, a buffer

    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task != "next-item":
            raise ValueError(f"the digits architecture serves next-item only, not {spec.task}")
        self.cfg = cfg
        self.embed = nn.Embedding(spec.vocab_size, cfg.width)
        nn.init.normal_(self.embed.weight, std=cfg.width**-0.5)  # scaled by sqrt(C) in forward
        self.register_buffer("positions", sinusoids(cfg.block_size, cfg.width), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(PostLNBlock(cfg) for _ in range(cfg.blocks))
        self.head = nn.Linear(cfg.width, spec.vocab_size)

    def forward(self, input_ids, attention_mask=None):  # [B, T] -> logits [B, V]
        T = check_length(input_ids, self.cfg.block_size)
        x = self.embed(input_ids) * math.sqrt(self.cfg.width) + self.position_table(
            attention_mask, T
        )
        x = self.drop(x)  # [B, T, C]
        keep = key_mask(attention_mask)
        *early, last = self.blocks
        for block in early:
            x = block(x, keep)
        # Only the last real position is read: the last block computes that row alone,
        # attending over every row (the same output as the whole block, less work).
        read = last_real(x, attention_mask)[:, None]  # [B, 1, C]
        return self.head(last(read, keep, context=x)[:, 0])  # [B, V]

    def position_table(self, attention_mask, T: int):  # -> [T, C] or [B, T, C]
        if self.cfg.positions == "start":
            return self.positions[:T]
        if attention_mask is None:  # every token is real
            return self.positions[:T].flip(0)
        last = attention_mask.sum(dim=1, keepdim=True) - 1  # [B, 1]
        back = (last - torch.arange(T, device=attention_mask.device)).clamp(min=0)  # [B, T]
        return self.positions[back]  # padding gets position 0; it is never attended to


def build(cfg, spec: TaskSpec) -> DigitsTransformer:
    return DigitsTransformer(cfg, spec)
