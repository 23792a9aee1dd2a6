"""Torch layers shared by the architectures (built-in and any plugin's): attention under the
engine's precision rule, fused-qkv self-attention, the MLP, the pre-LN block, GPT-2 style
initialisation, and token + hashed bigram features for bag-of-n-grams models.

Imported only by model modules (never on the path of `zoo list`). Parameter names are part
of every saved run: ``attn.qkv``, ``attn.proj``, ``mlp.fc``, ``mlp.proj``, ``ln1``, ``ln2``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def attention(q, k, v, **options):
    """``F.scaled_dot_product_attention`` under the engine's precision rule; architectures
    call this rather than SDPA itself. Under bf16 autocast on the CPU it computes in fp32:
    the CPU kernels' bf16 backward is several times slower than their fp32 one at zoo sizes
    (measured with benchmarks/bench_train.py), and autocast would otherwise run them in bf16."""
    if q.device.type == "cpu" and q.dtype == torch.bfloat16:
        with torch.autocast("cpu", enabled=False):
            return attention(q.float(), k.float(), v.float(), **options)
    if q.device.type == "cpu" and _batched_over_seeds(q):
        return _attention_in_matrix_products(q, k, v, **options)
    return F.scaled_dot_product_attention(q, k, v, **options)


def attention_at_rows(q, k, v, attn_mask=None, dropout_p=0.0):
    """``attention`` for queries at a few rows over every key (``SelfAttention`` with a
    context). On the CPU it computes in matrix products, in fp32: there SDPA's kernel, given
    fewer queries than keys, splits its gradient sums by thread count, so a run's metrics
    would depend on its thread count; at a few query rows the products cost as little."""
    if q.device.type != "cpu":
        return attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
    if q.dtype != torch.float32:
        with torch.autocast("cpu", enabled=False):
            return attention_at_rows(q.float(), k.float(), v.float(), attn_mask, dropout_p)
    return _attention_in_matrix_products(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)


def _batched_over_seeds(q) -> bool:
    """Whether ``q`` is batched by ``torch.func.vmap`` (seeds trained together,
    zoo.train.seed_stack): the CPU's SDPA kernel has no batching rule, so vmap would run it
    once per seed."""
    try:
        return bool(torch._C._functorch.is_batchedtensor(q))
    except AttributeError:  # a torch without this probe: SDPA it is
        return False


KEY_LANES = 16  # fp32 numbers in an AVX-512 register


def _attention_in_matrix_products(
    q, k, v, attn_mask=None, is_causal=False, dropout_p=0.0, scale=None
):
    """SDPA's math, in operations vmap batches over seeds in one call each. Fewer keys than
    KEY_LANES are padded with masked ones: torch's CPU softmax over a row shorter than its
    vector width runs a scalar loop, 9x slower at 15 keys than at 16 (bench_attention.py)."""
    keys = k.shape[-2]
    if keys < KEY_LANES and (attn_mask is None or attn_mask.dtype == torch.bool):
        extra = KEY_LANES - keys
        k, v = F.pad(k, (0, 0, 0, extra)), F.pad(v, (0, 0, 0, extra))
        if attn_mask is None:
            attn_mask = torch.ones(keys, dtype=torch.bool, device=k.device)
        attn_mask = F.pad(attn_mask.expand(*attn_mask.shape[:-1], keys), (0, extra), value=False)
    scores = (q @ k.transpose(-2, -1)) * (scale or q.shape[-1] ** -0.5)
    if is_causal:
        T, S = scores.shape[-2:]
        causal = torch.ones(T, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = scores.softmax(dim=-1)
    if dropout_p:
        weights = F.dropout(weights, dropout_p)
    return weights @ v


class SelfAttention(nn.Module):
    """Multi-head self-attention with one fused projection: ``qkv.weight`` [3C, C] has rows
    [q; k; v], and the heads split C into ``heads`` slices of C // heads."""

    def __init__(
        self,
        width: int,
        heads: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        causal: bool = False,
    ):
        super().__init__()
        self.heads, self.dropout, self.causal = heads, dropout, causal
        self.qkv = nn.Linear(width, 3 * width, bias=bias)
        self.proj = nn.Linear(width, width, bias=bias)

    def forward(self, x, keep=None, context=None):  # x: [B, T, C]; keep: [B, 1, 1, S] bool
        """[B, T, C] -> [B, T, C]: each position attends to the kept keys (True = a real
        key; and, when causal, to no later one). With ``context`` [B, S, C] the queries are
        x's rows and the keys and values context's: a model that reads a few positions of
        its last block computes that block at those rows only, with the same weights."""
        B, T, C = x.shape
        if context is None:
            q, k, v = self.qkv(x).split(C, dim=2)
        elif self.causal:
            raise ValueError("causal attention takes its queries from every position")
        else:
            weight, bias = self.qkv.weight, self.qkv.bias  # rows [q; k; v]
            q = F.linear(x, weight[:C], None if bias is None else bias[:C])
            k, v = F.linear(context, weight[C:], None if bias is None else bias[C:]).split(C, 2)
        # [B, T or S, C] -> [B, heads, T or S, C // heads]
        q, k, v = (t.view(B, -1, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        if context is None:
            y = attention(q, k, v, attn_mask=keep, is_causal=self.causal, dropout_p=dropout)
        else:
            y = attention_at_rows(q, k, v, attn_mask=keep, dropout_p=dropout)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    """Linear, GELU (exact, or the tanh approximation), Linear, dropout."""

    def __init__(
        self,
        width: int,
        hidden: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        gelu: str = "exact",
    ):
        super().__init__()
        self.fc = nn.Linear(width, hidden, bias=bias)
        self.proj = nn.Linear(hidden, width, bias=bias)
        self.drop = nn.Dropout(dropout)
        self.approximate = "tanh" if gelu == "tanh" else "none"

    def forward(self, x):
        """[B, T, C] -> [B, T, C]."""
        return self.drop(self.proj(F.gelu(self.fc(x), approximate=self.approximate)))


class PreLNBlock(nn.Module):
    """x + attention(LayerNorm(x)), then + MLP(LayerNorm(x)): GPT-2's and the encoder's block."""

    def __init__(
        self,
        width: int,
        heads: int,
        hidden: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        causal: bool = False,
        gelu: str = "exact",
    ):
        super().__init__()
        self.ln1 = nn.LayerNorm(width, bias=bias)
        self.attn = SelfAttention(width, heads, dropout=dropout, bias=bias, causal=causal)
        self.ln2 = nn.LayerNorm(width, bias=bias)
        self.mlp = MLP(width, hidden, bias=bias, dropout=dropout, gelu=gelu)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, keep=None):
        """[B, T, C] -> [B, T, C]: attention then the MLP, each on the layer-normed input
        and added to the residual stream; ``keep`` as for ``SelfAttention``."""
        x = x + self.drop(self.attn(self.ln1(x), keep))
        return x + self.mlp(self.ln2(x))


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps), times a learned gain: no centring and no bias (Llama's and
    Mamba's norm). Computed in fp32 whatever the input's precision; ``weight`` [C]."""

    def __init__(self, width: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        """[..., C] -> [..., C]."""
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


class ThreadInvariantLayerNorm(nn.LayerNorm):
    """nn.LayerNorm (same parameters and names) whose gradients do not depend on torch's
    thread count. The fused CPU kernel sums the weight and bias gradients in one partial sum
    per thread, so one and two threads round differently and a run's metrics depend on its
    thread count. Here the kernel only normalizes (its input gradient is row by row) and
    autograd's sums of the affine gradients come out the same on any number of threads.
    Measured on digits-char: identical metrics at 1 and 2 threads after 150 steps, for
    11 to 13% more time per training step (benchmarks/bench_layer_norm.py)."""

    def forward(self, x):
        """Layer norm over the last dimension, then the weight and bias."""
        x = F.layer_norm(x, self.normalized_shape, None, None, self.eps)
        if self.weight is not None:
            x = x * self.weight
        return x if self.bias is None else x + self.bias


# Multiplier of the bigram hash (as fastText combines word hashes: h = h * 116049371 + id);
# int64 arithmetic wraps around, then the remainder picks a bucket.
BIGRAM_HASH_MULTIPLIER = 116_049_371


def token_bigram_ids(input_ids, attention_mask, vocab: int, buckets: int, pad_id: int):
    """Bag-of-n-grams features (fastText, NBSVM): [B, T] token ids -> [B, F] feature ids, the
    real tokens, then (with buckets > 0) one id per pair of adjacent real tokens,
    ``vocab + hash(a, b) % buckets``; pad_id where absent."""
    real = attention_mask.bool()
    ids = input_ids.masked_fill(~real, pad_id)
    if not buckets or ids.shape[1] < 2:
        return ids
    a, b = ids[:, :-1], ids[:, 1:]
    both = real[:, :-1] & real[:, 1:]
    bigrams = vocab + torch.remainder(a * BIGRAM_HASH_MULTIPLIER + b, buckets)
    return torch.cat([ids, bigrams.masked_fill(~both, pad_id)], dim=1)


def check_length(input_ids, context: int) -> int:
    """The sequence length T of [B, T] input ids, at most ``context`` (the architecture's
    context length, which its position table covers)."""
    T = input_ids.shape[1]
    if T > context:
        raise ValueError(f"sequence of {T} tokens exceeds the context length {context}")
    return T


SOURCE, TARGET = 1, 2
"""attention_mask values of an encoder-decoder's packed batch: source and target tokens."""


def split_source_target(input_ids, attention_mask):
    """An encoder-decoder's packed batch taken apart (the sequence-to-sequence pipeline's). ``input_ids`` [B, S + T] hold each row's
    source right-padded to S, then its target input (``<cls>`` and the target) right-padded
    to T; ``attention_mask`` is SOURCE (1) on source tokens, TARGET (2) on target tokens and
    0 on padding. Returns source [B, S], its mask [B, S] (1 = real), target [B, T] and its
    mask [B, T]. Every row's target starts with a token, so column S is the first column
    holding a TARGET."""
    if attention_mask is None:
        raise ValueError("a packed batch needs its attention mask (1 source, 2 target)")
    is_target = attention_mask == TARGET
    S = int(is_target.any(dim=0).to(torch.int8).argmax())
    source_mask = (attention_mask[:, :S] == SOURCE).long()
    return input_ids[:, :S], source_mask, input_ids[:, S:], is_target[:, S:].long()


def key_mask(attention_mask):
    """[B, T] attention mask (1 = real token) -> [B, 1, 1, T] bool for SDPA, broadcast over
    heads and queries: padding is never attended to. None stays None (no padding)."""
    return None if attention_mask is None else attention_mask.bool()[:, None, None, :]


def last_real(h, attention_mask):
    """[B, T, C] -> [B, C]: the hidden state at each row's last real (unpadded) position,
    for right-padded batches; the last position when there is no mask."""
    B, T = h.shape[:2]
    if attention_mask is None:
        last = torch.full((B,), T - 1, device=h.device)
    else:
        last = attention_mask.long().sum(dim=1) - 1
    return h[torch.arange(B, device=h.device), last]


def init_gpt2(model: nn.Module, depth: int) -> None:
    """GPT-2's initialisation: Linear and Embedding weights N(0, 0.02), zero biases, and the
    residual projections (``*proj.weight``) N(0, 0.02 / sqrt(2 depth)), where ``depth`` is
    the number of blocks, so the residual stream's variance does not grow with depth.
    LayerNorms keep their unit gains."""
    model.apply(_init_gpt2_module)
    for name, p in model.named_parameters():
        if name.endswith("proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * depth))


def _init_gpt2_module(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
