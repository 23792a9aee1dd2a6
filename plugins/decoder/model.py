"""The decoder network (nanoGPT-shaped). Parameter names, documented for the NumPy twin:

  tok_emb.weight [V, C]            pos_emb.weight [T, C]
  blocks.{i}.ln1.{weight,bias} [C] blocks.{i}.attn.qkv.{weight [3C, C], bias [3C]}
  blocks.{i}.attn.proj.{weight [C, C], bias [C]}
  blocks.{i}.ln2.{weight,bias} [C] blocks.{i}.mlp.fc.{weight [4C, C], bias [4C]}
  blocks.{i}.mlp.proj.{weight [C, 4C], bias [C]}
  ln_f.{weight,bias} [C]           lm_head.weight [V, C] (absent when tied to tok_emb)
  cls_head.{weight [K, C], bias [K]} (classification only)
qkv rows are [q; k; v], heads split C into n_head slices of C // n_head. GELU is the tanh
approximation, or the exact form with config.gelu = "exact"; LayerNorm eps is 1e-5. Biases
are absent when config.bias is false. The blocks are zoo.layers.PreLNBlock, causal.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from zoo.layers import PreLNBlock, check_length, init_gpt2, last_real
from zoo import TaskSpec


class Decoder(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        self.cfg, self.task = cfg, spec.task
        self.tok_emb = nn.Embedding(spec.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            PreLNBlock(cfg.n_embd, cfg.n_head, 4 * cfg.n_embd, dropout=cfg.dropout,
                       bias=cfg.bias, causal=True, gelu=cfg.gelu)
            for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.n_embd, spec.vocab_size, bias=False)
        if cfg.tie_weights:
            self.lm_head.weight = self.tok_emb.weight
        if spec.task == "classification":
            self.cls_head = nn.Linear(cfg.n_embd, spec.num_classes)
        init_gpt2(self, cfg.n_layer)

    def hidden(self, input_ids):  # [B, T] -> [B, T, C]
        pos = torch.arange(check_length(input_ids, self.cfg.block_size), device=input_ids.device)
        x = self.drop(self.tok_emb(input_ids) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    def forward(self, input_ids, attention_mask=None):
        h = self.hidden(input_ids)
        if self.task == "language-modeling":
            return self.lm_head(h)  # [B, T, V]
        # Causal attention: the last real token has seen the whole (right-padded) input.
        pooled = last_real(h, attention_mask)  # [B, C]
        head = self.cls_head if self.task == "classification" else self.lm_head
        return head(pooled)


def build(cfg, spec: TaskSpec) -> Decoder:
    return Decoder(cfg, spec)
