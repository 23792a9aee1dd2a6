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
are absent when config.bias is false. The blocks are zoo.train.layers.PreLNBlock, causal.

The modern settings change these: position = "rotary" drops pos_emb (queries and keys are
turned by their positions instead); norm = "rms" makes every ln* an RMSNorm (weight only);
mlp = "swiglu" adds blocks.{i}.mlp.gate.weight [H, C] beside fc [H, C] and proj [C, H]
(H = mlp_width, 4C by default); n_kv_head = G gives qkv [C + 2 G C / n_head, C] (rows
[q; k; v], k and v G heads each); n_expert = E puts blocks.{i}.mlp.router.weight [E, C]
and E MLPs blocks.{i}.mlp.experts.{e}.* in place of the MLP. ``llama.py`` maps these
weights to transformers' Llama and Mixtral layouts.

Incremental decoding (``Decoder.decode``) keeps each layer's keys and values in a
``KVCache``, so a generated token costs one position's work instead of the whole context's.
Rows may be left-padded (prompts of different lengths in one batch): padding is masked out
of attention and each row's positions count from its first real token, so a padded row's
logits equal those of the same row alone.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.plugin import TaskSpec
from zoo.plugin.layers import (
    MLP,
    BlockSettings,
    MixtureOfExperts,
    PreLNBlock,
    Rotary,
    SwiGLU,
    attention,
    check_length,
    init_gpt2,
    last_real,
    modules_of,
    norm_layer,
)


class KVCache:
    """Keys and values of every layer for the positions decoded so far.

    k[i], v[i]: [B, heads, block_size, head_dim], filled up to ``length``; ``pads`` [B]
    counts each row's leading padding positions."""

    def __init__(self, cfg, pads: torch.Tensor, dtype, device):
        B, H = pads.shape[0], cfg.n_head
        shape = (B, H, cfg.block_size, cfg.n_embd // H)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.n_layer)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.n_layer)]
        self.pads = pads
        self.padded = bool(pads.any())
        self.length = 0
        self.weights: tuple = ()  # the decoder's, gathered once per cache (Decoder.decode)

    def mask(self, start: int, end: int):
        """[B, 1, t, end] True where a new position may attend: real keys, not in its
        future. None when nothing is masked (one new position, no padding)."""
        if end - start == 1 and not self.padded:
            return None
        keys = torch.arange(end, device=self.pads.device)
        queries = torch.arange(start, end, device=self.pads.device)
        causal = keys[None, :] <= queries[:, None]  # [t, end]
        real = keys[None, None, :] >= self.pads[:, None, None]  # [B, 1, end]
        # A padding query sees itself, so no row is wholly masked (that would give NaN).
        itself = keys[None, :] == queries[:, None]
        return ((causal & real) | itself)[:, None]


class Decoder(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        self.cfg, self.task = cfg, spec.task
        self.tok_emb = nn.Embedding(spec.vocab_size, cfg.n_embd)
        rotary = cfg.position == "rotary"
        self.pos_emb = None if rotary else nn.Embedding(cfg.block_size, cfg.n_embd)
        self.rotary = (
            Rotary(cfg.n_embd // cfg.n_head, cfg.block_size, cfg.rope_base) if rotary else None
        )
        self.drop = nn.Dropout(cfg.dropout)
        block = BlockSettings(
            cfg.n_embd,
            cfg.n_head,
            cfg.mlp_width or 4 * cfg.n_embd,
            dropout=cfg.dropout,
            bias=cfg.bias,
            causal=True,
            gelu=cfg.gelu,
            norm=cfg.norm,
            kv_heads=cfg.n_kv_head or None,
        )
        self.blocks = nn.ModuleList(
            PreLNBlock(
                block,
                rotary=self.rotary,
                mlp=feed_forward(cfg) if cfg.mlp != "gelu" or cfg.n_expert else None,
            )
            for _ in range(cfg.n_layer)
        )
        self.ln_f = norm_layer(cfg.norm, cfg.n_embd, cfg.bias)
        self.lm_head = nn.Linear(cfg.n_embd, spec.vocab_size, bias=False)
        if cfg.tie_weights:
            self.lm_head.weight = self.tok_emb.weight
        if spec.task == "classification":
            self.cls_head = nn.Linear(cfg.n_embd, spec.class_count)
        init_gpt2(self, cfg.n_layer)

    def hidden(self, input_ids):  # [B, T] -> [B, T, C]
        pos = torch.arange(check_length(input_ids, self.cfg.block_size), device=input_ids.device)
        x = self.tok_emb(input_ids)
        if self.pos_emb is not None:  # else rotary: positions turn queries and keys instead
            x = x + self.pos_emb(pos)
        x = self.drop(x)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    def decode(self, input_ids, cache: KVCache | None = None, pads=None):
        """Logits [B, V] after the last of ``input_ids`` [B, t], given the positions in
        ``cache`` before them (a new cache when None, with ``pads`` [B] leading padding
        positions per row); returns them with the updated cache.

        The same computation as ``forward``, in functional calls on the weights gathered
        once per cache: at one position per step, module calls and attribute lookups
        would cost as much as the arithmetic."""
        B, t = input_ids.shape
        cfg = self.cfg
        if cache is None:
            pads = (
                torch.zeros(B, dtype=torch.long, device=input_ids.device) if pads is None else pads
            )
            cache = KVCache(cfg, pads, self.tok_emb.weight.dtype, input_ids.device)
            cache.weights = self._decode_weights()
        start, end = cache.length, cache.length + t
        if end > cfg.block_size:
            raise ValueError(f"sequence of {end} tokens exceeds block_size {cfg.block_size}")
        tok_emb, pos_emb, layers, ln_f, lm_head = cache.weights
        if cache.padded:  # positions count from each row's first real token (pads clamp to 0)
            pos = torch.arange(start, end, device=input_ids.device)[None, :] - cache.pads[:, None]
            x = F.embedding(input_ids, tok_emb) + F.embedding(pos.clamp(min=0), pos_emb)
        else:
            x = F.embedding(input_ids, tok_emb) + pos_emb[start:end]  # [B, t, C]
        mask = cache.mask(start, end)
        C, H = cfg.n_embd, cfg.n_head
        for i, (ln1, qkv, proj, ln2, fc, fc_proj, approximate) in enumerate(layers):
            h = F.layer_norm(x, (C,), *ln1)
            q, k, v = F.linear(h, *qkv).view(B, t, 3, H, C // H).transpose(1, 3).unbind(2)
            cache.k[i][:, :, start:end] = k  # [B, H, t, D]
            cache.v[i][:, :, start:end] = v
            y = attention(q, cache.k[i][:, :, :end], cache.v[i][:, :, :end], attn_mask=mask)
            x = x + F.linear(y.transpose(1, 2).reshape(B, t, C), *proj)
            h = F.gelu(F.linear(F.layer_norm(x, (C,), *ln2), *fc), approximate=approximate)
            x = x + F.linear(h, *fc_proj)
        cache.length = end
        h = F.layer_norm(x[:, -1], (C,), *ln_f)  # [B, C]
        return F.linear(h, lm_head), cache

    def reorder_cache(self, cache: KVCache, rows):
        """The cache of the rows ``rows`` [N] (beam search's surviving hypotheses)."""
        cache.k = [k.index_select(0, rows) for k in cache.k]
        cache.v = [v.index_select(0, rows) for v in cache.v]
        cache.pads = cache.pads.index_select(0, rows)
        return cache

    def _decode_weights(self):
        """The weights ``decode`` reads, gathered once per cache: GPT-2's block only (a
        ModernDecoder runs its whole context at each token)."""

        def pair(module):
            return module.weight, module.bias

        if self.pos_emb is None:
            raise TypeError("the key/value cache computes GPT-2's block, with learned positions")
        layers = []
        for b in modules_of(self.blocks, PreLNBlock):
            if not isinstance(b.mlp, MLP):
                raise TypeError("the key/value cache computes GPT-2's block, with its GELU MLP")
            layers.append(
                (
                    pair(b.ln1),
                    pair(b.attn.qkv),
                    pair(b.attn.proj),
                    pair(b.ln2),
                    pair(b.mlp.fc),
                    pair(b.mlp.proj),
                    b.mlp.approximate,
                )
            )
        return (
            self.tok_emb.weight,
            self.pos_emb.weight,
            layers,
            pair(self.ln_f),
            self.lm_head.weight,
        )

    def forward(self, input_ids, attention_mask=None):
        h = self.hidden(input_ids)
        if self.task == "language-modeling":
            return self.lm_head(h)  # [B, T, V]
        # Causal attention: the last real token has seen the whole (right-padded) input.
        pooled = last_real(h, attention_mask)  # [B, C]
        head = self.cls_head if self.task == "classification" else self.lm_head
        return head(pooled)

    def auxiliary_loss(self):
        """The experts' load-balancing loss of the last forward pass, the mean over blocks
        times aux_loss_weight, which training adds to the task's loss; None without experts."""
        experts = [b.mlp for b in modules_of(self.blocks, PreLNBlock)]
        losses = [m.aux_loss for m in experts if isinstance(m, MixtureOfExperts)]
        kept = [loss for loss in losses if loss is not None]
        if not losses or len(kept) < len(losses):
            return None
        return self.cfg.aux_loss_weight * torch.stack(kept).mean()


class ModernDecoder(Decoder):
    """The decoder with modern blocks (rotary positions, RMSNorm, SwiGLU, grouped-query
    attention, experts). Generation runs the whole context at each token: ``decode``'s
    key/value cache computes GPT-2's block only."""

    decode = None  # type: ignore[assignment]
    reorder_cache = None  # type: ignore[assignment]


def feed_forward(cfg) -> nn.Module:
    """The MLP of a block: GELU or SwiGLU, or n_expert of them behind a router."""
    hidden = cfg.mlp_width or 4 * cfg.n_embd

    def one() -> nn.Module:
        if cfg.mlp == "swiglu":
            return SwiGLU(cfg.n_embd, hidden, bias=cfg.bias, dropout=cfg.dropout)
        return MLP(cfg.n_embd, hidden, bias=cfg.bias, dropout=cfg.dropout, gelu=cfg.gelu)

    if cfg.n_expert:
        return MixtureOfExperts(cfg.n_embd, [one() for _ in range(cfg.n_expert)], cfg.expert_top_k)
    return one()


def build(cfg, spec: TaskSpec) -> Decoder:
    return ModernDecoder(cfg, spec) if cfg.modern else Decoder(cfg, spec)
