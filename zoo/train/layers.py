"""Torch layers shared by the architectures (built-in and any plugin's): attention under the
engine's precision rule, fused-qkv self-attention (grouped-query, rotary positions), the MLP,
SwiGLU, a mixture of experts, the pre-norm block, LayerNorm and RMSNorm, GPT-2 style
initialisation, and token + hashed bigram features for bag-of-n-grams models.

Imported only by model modules (never on the path of `zoo list`). Parameter names are part
of every saved run: ``attn.qkv``, ``attn.proj``, ``mlp.fc``, ``mlp.proj``, ``ln1``, ``ln2``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TypeVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.errors import ZooDeprecationWarning

M = TypeVar("M", bound=nn.Module)


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


class Rotary(nn.Module):
    """Rotary position embeddings (Su et al., RoFormer), in Llama's layout: each head's
    feature i is paired with feature i + D/2 and the pair turned by the angle
    position / base^(2i / D). Queries and keys so turned score by their relative position.
    The angles are buffers, kept out of the saved weights."""

    cos: torch.Tensor
    """[T, D]: each position's cosines, a buffer."""
    sin: torch.Tensor
    """[T, D]: each position's sines, a buffer."""

    def __init__(self, width: int, context: int, base: float = 10000.0):  # width: a head's
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, width, 2).float() / width)  # [D/2]
        angles = torch.outer(torch.arange(context).float(), inv_freq)  # [T, D/2]
        angles = torch.cat([angles, angles], dim=-1)  # [T, D]
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x):
        """[B, H, T, D] -> [B, H, T, D]: each row turned by its position, 0 to T - 1."""
        T = x.shape[-2]
        first, second = x.chunk(2, dim=-1)
        turned = torch.cat([-second, first], dim=-1)
        return x * self.cos[:T].to(x.dtype) + turned * self.sin[:T].to(x.dtype)


class SelfAttention(nn.Module):
    """Multi-head self-attention with one fused projection: ``qkv.weight`` has rows
    [q; k; v], and the heads split C into ``heads`` slices of C // heads. With ``kv_heads``
    fewer than ``heads`` (grouped-query attention) k and v have kv_heads slices each, every
    one shared by heads / kv_heads query heads: qkv.weight is [C + 2 kv_heads C / heads, C].
    ``rotary`` turns queries and keys by their positions (``Rotary``)."""

    def __init__(
        self,
        width: int,
        heads: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        causal: bool = False,
        kv_heads: int | None = None,
        rotary: Rotary | None = None,
    ):
        super().__init__()
        self.heads, self.dropout, self.causal = heads, dropout, causal
        self.kv_heads = kv_heads or heads
        if heads % self.kv_heads:
            raise ValueError(f"{heads} heads do not split into groups of {self.kv_heads} kv heads")
        kv_width = self.kv_heads * (width // heads)
        self.qkv = nn.Linear(width, width + 2 * kv_width, bias=bias)
        self.proj = nn.Linear(width, width, bias=bias)
        self.rotary = rotary

    def forward(self, x, keep=None, context=None):  # x: [B, T, C]; keep: [B, 1, 1, S] bool
        """[B, T, C] -> [B, T, C]: each position attends to the kept keys (True = a real
        key; and, when causal, to no later one). With ``context`` [B, S, C] the queries are
        x's rows and the keys and values context's: a model that reads a few positions of
        its last block computes that block at those rows only, with the same weights."""
        B, T, C = x.shape
        D = C // self.heads
        kv_width = self.kv_heads * D
        if context is None:
            q, k, v = self.qkv(x).split([C, kv_width, kv_width], dim=2)
        elif self.causal or self.rotary is not None:
            raise ValueError("causal or rotary attention takes its queries from every position")
        else:
            weight, bias = self.qkv.weight, self.qkv.bias  # rows [q; k; v]
            q = F.linear(x, weight[:C], None if bias is None else bias[:C])
            k, v = F.linear(context, weight[C:], None if bias is None else bias[C:]).split(
                kv_width, 2
            )
        # [B, T or S, C] -> [B, heads, T or S, D]; k and v: [B, kv_heads, T or S, D]
        q = q.view(B, -1, self.heads, D).transpose(1, 2)
        k, v = (t.view(B, -1, self.kv_heads, D).transpose(1, 2) for t in (k, v))
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        if self.kv_heads != self.heads:  # each kv head serves its group of query heads
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
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


class SwiGLU(nn.Module):
    """The gated MLP of PaLM and Llama: proj(SiLU(gate(x)) * fc(x)), then dropout. Three
    matrices, so a hidden width of 8/3 C has the parameters of a 4 C GELU MLP."""

    def __init__(self, width: int, hidden: int, *, bias: bool = False, dropout: float = 0.0):
        super().__init__()
        self.gate = nn.Linear(width, hidden, bias=bias)
        self.fc = nn.Linear(width, hidden, bias=bias)
        self.proj = nn.Linear(hidden, width, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        """[B, T, C] -> [B, T, C]."""
        return self.drop(self.proj(F.silu(self.gate(x)) * self.fc(x)))


def load_balancing_loss(probs, chosen, experts: int):
    """Switch Transformer's auxiliary loss, experts x sum_e f_e P_e: f_e the share of the
    tokens' top-k choices that picked expert e (summing to k), P_e the mean router
    probability of e. It is smallest (k) when both are uniform. probs [N, E], chosen [N, k]."""
    share = F.one_hot(chosen, experts).sum(1).float().mean(0)  # [E]
    return experts * (share * probs.mean(0)).sum()


class MixtureOfExperts(nn.Module):
    """A sparse MLP (Shazeer et al.; Mixtral's routing): a router scores the ``experts`` for
    each token, the token goes to its ``top_k`` best, and their outputs are summed with the
    router's softmax probabilities renormalised over the chosen ones. ``router.weight``
    [E, C]; ``experts.{e}`` any MLP. Each forward pass keeps its load-balancing loss
    (``load_balancing_loss``) in ``aux_loss``, for the model to add to its training loss."""

    def __init__(self, width: int, experts: list[nn.Module], top_k: int):
        super().__init__()
        if not 1 <= top_k <= len(experts):
            raise ValueError(f"top_k must be between 1 and {len(experts)} experts, got {top_k}")
        self.top_k = top_k
        self.router = nn.Linear(width, len(experts), bias=False)
        self.experts = nn.ModuleList(experts)
        self.aux_loss: torch.Tensor | None = None

    def forward(self, x):
        """[B, T, C] -> [B, T, C]: each token through its top-k experts, weighted."""
        shape = x.shape
        x = x.reshape(-1, shape[-1])  # [N, C]: every token on its own
        probs = self.router(x).float().softmax(dim=-1)  # [N, E]
        weights, chosen = probs.topk(self.top_k, dim=-1)  # [N, k]
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, pick = torch.where(chosen == e)  # the tokens routed to e, and which choice
            y = expert(x[rows]) * weights[rows, pick, None]  # [n_e, C]
            out.index_add_(0, rows, y.to(out.dtype))
        self.aux_loss = load_balancing_loss(probs, chosen, len(self.experts))
        return out.view(shape)


@dataclass(frozen=True)
class BlockSettings:
    """The shape of a pre-norm block (``PreLNBlock``), the same for every block of a model."""

    width: int
    """C, the width of the residual stream."""
    heads: int
    """Attention heads (queries)."""
    hidden: int
    """The GELU MLP's hidden width (unused when the block is given its own ``mlp``)."""
    dropout: float = 0.0
    """Dropout on attention weights, the residual branches and the MLP."""
    bias: bool = True
    """Biases in the linear layers and LayerNorms."""
    causal: bool = False
    """Each position attends to itself and earlier ones only."""
    gelu: str = "exact"
    """The MLP's GELU: ``"exact"`` or ``"tanh"`` (GPT-2's approximation)."""
    norm: str = "layer"
    """``"layer"`` (LayerNorm) or ``"rms"`` (RMSNorm)."""
    kv_heads: int | None = None
    """Heads for keys and values (grouped-query attention); None: as many as ``heads``."""


class PreLNBlock(nn.Module):
    """x + attention(norm(x)), then + MLP(norm(x)): GPT-2's and the encoder's block with
    LayerNorm; Llama's with ``norm="rms"``, a SwiGLU ``mlp``, ``kv_heads`` and ``rotary``.
    ``mlp`` replaces the GELU MLP (``hidden`` wide) with any module [B, T, C] -> [B, T, C].
    The settings are one ``BlockSettings``, the same for every block of a model."""

    def __init__(
        self,
        settings: BlockSettings | int,
        *old,
        rotary: Rotary | None = None,
        mlp: nn.Module | None = None,
        **old_keywords,
    ):
        super().__init__()
        if not isinstance(settings, BlockSettings):  # API 1.1's (width, heads, hidden, ...)
            warnings.warn(
                "PreLNBlock(width, heads, hidden, ...) is deprecated: pass "
                "PreLNBlock(BlockSettings(width, heads, hidden, ...), rotary=..., mlp=...)",
                ZooDeprecationWarning,
                stacklevel=2,
            )
            settings = BlockSettings(settings, *old, **old_keywords)
        s = settings
        self.ln1 = norm_layer(s.norm, s.width, s.bias)
        self.attn = SelfAttention(
            s.width,
            s.heads,
            dropout=s.dropout,
            bias=s.bias,
            causal=s.causal,
            kv_heads=s.kv_heads,
            rotary=rotary,
        )
        self.ln2 = norm_layer(s.norm, s.width, s.bias)
        if mlp is None:
            mlp = MLP(s.width, s.hidden, bias=s.bias, dropout=s.dropout, gelu=s.gelu)
        self.mlp = mlp
        self.drop = nn.Dropout(s.dropout)

    def forward(self, x, keep=None):
        """[B, T, C] -> [B, T, C]: attention then the MLP, each on the normed input and
        added to the residual stream; ``keep`` as for ``SelfAttention``."""
        x = x + self.drop(self.attn(self.ln1(x), keep))
        return x + self.mlp(self.ln2(x))


def norm_layer(kind: str, width: int, bias: bool = True) -> nn.Module:
    """LayerNorm (``"layer"``, with a bias unless ``bias`` is false) or RMSNorm (``"rms"``)."""
    if kind == "rms":
        return RMSNorm(width)
    if kind == "layer":
        return nn.LayerNorm(width, bias=bias)
    raise ValueError(f"norm must be 'layer' or 'rms', got {kind!r}")


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


def modules_of(stack: nn.ModuleList, kind: type[M]) -> list[M]:
    """The modules of ``stack`` as the ``kind`` each is (``for block in modules_of(self.blocks,
    Block)``): a ModuleList gives plain Modules, whose attributes a type checker cannot tell
    from tensors. A module of another kind raises TypeError."""
    typed = [module for module in stack if isinstance(module, kind)]
    if len(typed) != len(stack):
        raise TypeError(f"{type(stack).__name__} holds modules that are not {kind.__name__}")
    return typed


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
