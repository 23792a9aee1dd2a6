"""The encoder network (BERT-shaped, pre-LN). Parameter names:

  tok_emb.weight [V, C]            pos_emb.weight [T, C]          emb_ln.{weight,bias} [C]
  blocks.{i}.ln1.{weight,bias} [C] blocks.{i}.attn.qkv.{weight [3C, C], bias [3C]}
  blocks.{i}.attn.proj.{weight [C, C], bias [C]}
  blocks.{i}.ln2.{weight,bias} [C] blocks.{i}.mlp.fc.{weight [HC, C], bias [HC]}
  blocks.{i}.mlp.proj.{weight [C, HC], bias [C]}                  (H = mlp_ratio)
  ln_f.{weight,bias} [C]
  head.{weight [K, C], bias [K]}   classification: K = num_classes
  head.{weight [V, C], bias [V]}   next-item: K = vocab size; weight tied to tok_emb when
                                   config.tie_weights (kept once, as tok_emb.weight)
  head.{weight [V, C], bias [V]}   masked-language-modeling: the same head at every position
                                   (so a classifier started from it gets every tensor but
                                   the head)

The blocks are zoo.train.layers.PreLNBlock with exact GELU. Attention is bidirectional; padded
positions (attention_mask 0) are never attended to and never pooled, so padding a batch
leaves every example's output unchanged. Pooling takes the hidden state at position 0
("cls": the classification pipeline puts <cls> there), the mean over real tokens ("mean") or
each feature's largest value over them ("max").

The modern settings (the decoder's, built from the same layers) change these:
position = "rotary" drops pos_emb (queries and keys are turned by their positions); norm =
"rms" makes emb_ln, every ln* and ln_f an RMSNorm (weight only); mlp = "swiglu" adds
blocks.{i}.mlp.gate.weight [H, C] beside fc and proj (H = mlp_width, else mlp_ratio C);
n_kv_head = G gives qkv [C + 2 G C / n_head, C], k and v G heads each. With bias = false
the blocks are Llama's (``zoo.plugins.decoder.llama`` names them), without the causal mask.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from zoo.plugin import TaskSpec
from zoo.plugin.layers import (
    BlockSettings,
    PreLNBlock,
    Rotary,
    SwiGLU,
    check_length,
    init_gpt2,
    key_mask,
    norm_layer,
)


class Encoder(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task not in ("classification", "next-item", "masked-language-modeling"):
            raise ValueError(f"the encoder has no {spec.task} head")
        if spec.task == "classification" and not spec.num_classes:
            raise ValueError("classification needs num_classes")
        self.cfg, self.task = cfg, spec.task
        self.outputs_at_positions = spec.task == "masked-language-modeling"
        self.tok_emb = nn.Embedding(spec.vocab_size, cfg.n_embd)
        rotary = cfg.position == "rotary"
        self.pos_emb = None if rotary else nn.Embedding(cfg.block_size, cfg.n_embd)
        self.rotary = (
            Rotary(cfg.n_embd // cfg.n_head, cfg.block_size, cfg.rope_base) if rotary else None
        )
        self.emb_ln = norm_layer(cfg.norm, cfg.n_embd, cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)
        hidden = cfg.mlp_width or cfg.mlp_ratio * cfg.n_embd
        block = BlockSettings(
            cfg.n_embd,
            cfg.n_head,
            hidden,
            dropout=cfg.dropout,
            bias=cfg.bias,
            norm=cfg.norm,
            kv_heads=cfg.n_kv_head or None,
        )
        self.blocks = nn.ModuleList(
            PreLNBlock(
                block,
                rotary=self.rotary,
                mlp=SwiGLU(cfg.n_embd, hidden, bias=cfg.bias, dropout=cfg.dropout)
                if cfg.mlp == "swiglu"
                else None,
            )
            for _ in range(cfg.n_layer)
        )
        self.ln_f = norm_layer(cfg.norm, cfg.n_embd, cfg.bias)
        outputs = spec.class_count if spec.task == "classification" else spec.vocab_size
        self.head = nn.Linear(cfg.n_embd, outputs)
        init_gpt2(self, cfg.n_layer)
        if spec.task in ("next-item", "masked-language-modeling") and cfg.tie_weights:
            self.head.weight = self.tok_emb.weight

    def hidden(self, input_ids, attention_mask):  # [B, T], [B, T] -> [B, T, C]
        pos = torch.arange(check_length(input_ids, self.cfg.block_size), device=input_ids.device)
        x = self.tok_emb(input_ids)
        if self.pos_emb is not None:  # else rotary: positions turn queries and keys instead
            x = x + self.pos_emb(pos)
        x = self.drop(self.emb_ln(x))
        keep = key_mask(attention_mask)
        for block in self.blocks:
            x = block(x, keep)
        return self.ln_f(x)

    def pool(self, h, attention_mask):  # [B, T, C] -> [B, C]
        if self.cfg.pooling == "cls":
            return h[:, 0]
        if self.cfg.pooling == "max":  # each feature's largest value over the real tokens
            real = attention_mask.bool().unsqueeze(-1)
            return h.masked_fill(~real, torch.finfo(h.dtype).min).amax(dim=1)
        weights = attention_mask.to(h.dtype).unsqueeze(-1)  # [B, T, 1]
        return (h * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)

    def forward(self, input_ids, attention_mask=None, positions=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        h = self.hidden(input_ids, attention_mask)
        if self.task == "masked-language-modeling":
            if positions is not None:  # only where the loss reads (zoo.train.model)
                h = h[positions]  # [N, C]
            return self.head(self.drop(h))  # [B, T, V], or [N, V]
        return self.head(self.drop(self.pool(h, attention_mask)))  # [B, K]


def build(cfg, spec: TaskSpec) -> Encoder:
    return Encoder(cfg, spec)
