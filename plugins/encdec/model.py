"""The encoder-decoder network (the original transformer, pre-LN). Parameter names:

  tok_emb.weight [V, C]                       one vocabulary for both sides
  enc_pos.weight [T, C]   dec_pos.weight [T, C]
  encoder.{i}: zoo's PreLNBlock (bidirectional)
    ln1, attn.qkv [3C, C], attn.proj [C, C], ln2, mlp.fc [HC, C], mlp.proj [C, HC]
  enc_ln.{weight,bias} [C]                    the encoder's output norm (the memory)
  decoder.{i}: DecoderBlock
    ln1, attn.qkv, attn.proj                  causal self-attention
    ln_cross, cross.qkv [3C, C], cross.proj   cross-attention: q from the target, k and v
                                              from the memory (rows [q; k; v])
    ln2, mlp.fc, mlp.proj
  dec_ln.{weight,bias} [C]
  lm_head.weight [V, C]                       absent when tied to tok_emb

It computes what ``torch.nn.Transformer(norm_first=True, activation="gelu")`` computes
(``attn.qkv`` is MultiheadAttention's ``in_proj``, ``attn.proj`` its ``out_proj``), with
token embeddings and learned positions in front and the output projection behind.

The seq2seq task packs a batch into one array (``zoo.plugin.layers.split_source_target``):
``forward`` returns logits [B, T, V] at the target's positions. ``decode`` generates with a
key/value cache: the memory's keys and values are computed once per source, the
self-attention's grow by one position per token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.plugin import TaskSpec
from zoo.plugin.layers import (
    MLP,
    BlockSettings,
    PreLNBlock,
    SelfAttention,
    attention,
    check_length,
    init_gpt2,
    key_mask,
    modules_of,
    split_source_target,
)


class DecoderBlock(nn.Module):
    """x + self-attention (causal), + cross-attention to the memory, + MLP; each on the
    layer-normed input."""

    def __init__(self, cfg):
        super().__init__()
        C = cfg.n_embd
        self.ln1 = nn.LayerNorm(C, bias=cfg.bias)
        self.attn = SelfAttention(C, cfg.n_head, dropout=cfg.dropout, bias=cfg.bias, causal=True)
        self.ln_cross = nn.LayerNorm(C, bias=cfg.bias)
        self.cross = SelfAttention(C, cfg.n_head, dropout=cfg.dropout, bias=cfg.bias)
        self.ln2 = nn.LayerNorm(C, bias=cfg.bias)
        self.mlp = MLP(C, cfg.mlp_ratio * C, bias=cfg.bias, dropout=cfg.dropout)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, memory, memory_keep):  # [B, T, C], [B, S, C], [B, 1, 1, S]
        x = x + self.drop(self.attn(self.ln1(x)))
        x = x + self.drop(self.cross(self.ln_cross(x), memory_keep, context=memory))
        return x + self.mlp(self.ln2(x))


@dataclass
class DecodeCache:
    """What ``decode`` keeps between tokens. memory_k[i], memory_v[i]: [B, H, S, D], the
    memory's keys and values for layer i's cross-attention; self_k[i], self_v[i]: [B, H, t, D]
    for the t target positions decoded so far; keep [B, 1, 1, S] the real source tokens."""

    memory_k: list
    memory_v: list
    keep: torch.Tensor
    self_k: list
    self_v: list
    length: int = 0

    def select(self, rows: torch.Tensor) -> DecodeCache:
        def pick(tensors):
            return [t.index_select(0, rows) for t in tensors]

        return DecodeCache(
            pick(self.memory_k),
            pick(self.memory_v),
            self.keep.index_select(0, rows),
            pick(self.self_k),
            pick(self.self_v),
            self.length,
        )


def heads(x, n_head: int):  # [B, t, C] -> [B, H, t, C // H]
    B, t, C = x.shape
    return x.view(B, t, n_head, C // n_head).transpose(1, 2)


class EncoderDecoder(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task != "seq2seq":
            raise ValueError(f"the encoder-decoder has no {spec.task} head")
        self.cfg = cfg
        C = cfg.n_embd
        self.tok_emb = nn.Embedding(spec.vocab_size, C)
        self.enc_pos = nn.Embedding(cfg.block_size, C)
        self.dec_pos = nn.Embedding(cfg.block_size, C)
        self.drop = nn.Dropout(cfg.dropout)
        block = BlockSettings(C, cfg.n_head, cfg.mlp_ratio * C, dropout=cfg.dropout, bias=cfg.bias)
        self.encoder = nn.ModuleList(PreLNBlock(block) for _ in range(cfg.encoder_layers))
        self.enc_ln = nn.LayerNorm(C, bias=cfg.bias)
        self.decoder = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.decoder_layers))
        self.dec_ln = nn.LayerNorm(C, bias=cfg.bias)
        self.lm_head = nn.Linear(C, spec.vocab_size, bias=False)
        if cfg.tie_weights:
            self.lm_head.weight = self.tok_emb.weight
        init_gpt2(self, cfg.encoder_layers + cfg.decoder_layers)

    def encode(self, source, source_mask, pads=None):  # [B, S], [B, S] -> [B, S, C]
        """The memory. Rows are right-padded, or left-padded by ``pads`` [B] (then positions
        count from each row's first real token, so a row's memory is the same either way)."""
        S = check_length(source, self.cfg.block_size)
        pos = torch.arange(S, device=source.device)
        if pads is not None:
            pos = (pos[None, :] - pads[:, None]).clamp(min=0)
        x = self.drop(self.tok_emb(source) + self.enc_pos(pos))
        keep = key_mask(source_mask)
        for block in self.encoder:
            x = block(x, keep)
        return self.enc_ln(x)

    def forward(self, input_ids, attention_mask=None):
        """Logits [B, T, V] at the target positions of a packed batch (see the module's
        docstring)."""
        source, source_mask, target, _ = split_source_target(input_ids, attention_mask)
        memory = self.encode(source, source_mask)
        T = check_length(target, self.cfg.block_size)
        x = self.drop(self.tok_emb(target) + self.dec_pos(torch.arange(T, device=target.device)))
        keep = key_mask(source_mask)
        for block in self.decoder:
            x = block(x, memory, keep)
        return self.lm_head(self.dec_ln(x))

    # -- generation with a key/value cache -------------------------------------------------
    def decode(self, input_ids, cache: DecodeCache | None = None, pads=None):
        """Logits [B, V] for the next target token, and the cache. A new cache starts from a
        prompt [B, S + 1]: the source left-padded by ``pads`` [B], then the target's first
        token (``<cls>``); then each call gives one more token per row [B, 1]."""
        if cache is None:
            source, first = input_ids[:, :-1], input_ids[:, -1:]
            pads = torch.zeros_like(first[:, 0]) if pads is None else pads
            source_mask = torch.arange(source.shape[1], device=source.device) >= pads[:, None]
            memory = self.encode(source, source_mask.long(), pads)
            cache = self._start_cache(memory, key_mask(source_mask))
            input_ids = first
        if cache.length + 1 > self.cfg.block_size:
            raise ValueError(f"a target of more than {self.cfg.block_size} tokens")
        pos = self.dec_pos.weight[cache.length]
        x = self.tok_emb(input_ids) + pos  # [B, 1, C]
        H = self.cfg.n_head
        for i, block in enumerate(modules_of(self.decoder, DecoderBlock)):
            h = block.ln1(x)
            q, k, v = (heads(t, H) for t in block.attn.qkv(h).split(x.shape[-1], dim=2))
            cache.self_k[i] = torch.cat([cache.self_k[i], k], dim=2)
            cache.self_v[i] = torch.cat([cache.self_v[i], v], dim=2)
            y = attention(q, cache.self_k[i], cache.self_v[i])  # every earlier position
            x = x + block.attn.proj(y.transpose(1, 2).flatten(2))
            h = block.ln_cross(x)
            C = x.shape[-1]
            q = heads(F.linear(h, block.cross.qkv.weight[:C], _part(block.cross.qkv.bias, 0, C)), H)
            y = attention(q, cache.memory_k[i], cache.memory_v[i], attn_mask=cache.keep)
            x = x + block.cross.proj(y.transpose(1, 2).flatten(2))
            x = x + block.mlp(block.ln2(x))
        cache.length += 1
        return self.lm_head(self.dec_ln(x[:, -1])), cache

    def _start_cache(self, memory, keep) -> DecodeCache:
        C, H = self.cfg.n_embd, self.cfg.n_head
        memory_k, memory_v, self_k, self_v = [], [], [], []
        for block in modules_of(self.decoder, DecoderBlock):
            weight, bias = block.cross.qkv.weight, block.cross.qkv.bias
            k, v = F.linear(memory, weight[C:], _part(bias, C, 3 * C)).split(C, dim=2)
            memory_k.append(heads(k, H))
            memory_v.append(heads(v, H))
            empty = memory.new_zeros(memory.shape[0], H, 0, C // H)
            self_k.append(empty)
            self_v.append(empty)
        return DecodeCache(memory_k, memory_v, keep, self_k, self_v)

    def reorder_cache(self, cache: DecodeCache, rows):
        """The cache of the rows ``rows`` [N] (beam search's surviving hypotheses)."""
        return cache.select(rows)


def _part(bias, start: int, end: int):
    return None if bias is None else bias[start:end]


def build(cfg, spec: TaskSpec) -> EncoderDecoder:
    return EncoderDecoder(cfg, spec)
