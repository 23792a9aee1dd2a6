"""The Mamba network: a selective state-space language model and classifier, in plain torch.

Each block is x + Mixer(RMSNorm(x)). The mixer (Gu and Dao, 2023, section 3) widens the
input to D = expand * C channels in two branches: one goes through a depthwise causal
convolution and SiLU, then the selective state-space recurrence, per channel d and state
number n,

    h_t[d, n] = exp(delta_t[d] * A[d, n]) * h_{t-1}[d, n] + delta_t[d] * B_t[n] * u_t[d]
    y_t[d]    = sum_n C_t[n] * h_t[d, n] + D[d] * u_t[d]

where the step size delta_t (softplus of a rank-r projection), B_t and C_t are computed
from the token itself (that is what "selective" means), and A (negative) and D are learned
per channel; the other branch gates y with SiLU. The recurrence is linear in h, so it is
computed a chunk of positions at a time, the chunks in parallel (``selective_scan``);
``sequential_scan`` is the step-by-step reference it is tested against.

Parameter names (the layout of transformers' MambaForCausalLM, under other prefixes):

  tok_emb.weight [V, C]
  blocks.{i}.norm.weight [C]
  blocks.{i}.mixer.in_proj.weight [2D, C]          rows [u; gate]
  blocks.{i}.mixer.conv1d.{weight [D, 1, K], bias [D]}
  blocks.{i}.mixer.x_proj.weight [r + 2N, C]       rows [delta; B; C]
  blocks.{i}.mixer.dt_proj.{weight [D, r], bias [D]}
  blocks.{i}.mixer.A_log [D, N]                    A = -exp(A_log)
  blocks.{i}.mixer.D [D]
  blocks.{i}.mixer.out_proj.weight [C, D]
  norm_f.weight [C]                lm_head.weight [V, C] (absent when tied to tok_emb)
  cls_head.{weight [K, C], bias [K]} (classification only)

The model is causal: a position reads only the positions before it, so padding at the end
of a row (classification batches) never changes a real position's state.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.plugin import TaskSpec
from zoo.plugin.layers import RMSNorm, check_length, last_real, modules_of


def sequential_scan(dA, dBu, C):
    """The recurrence one position at a time (the reference): h_t = dA_t * h_{t-1} + dBu_t,
    y_t = h_t . C_t. dA, dBu: [B, T, D, N]; C: [B, T, N] -> y [B, T, D]."""
    h = torch.zeros_like(dBu[:, 0])  # [B, D, N]
    ys = []
    for t in range(dA.shape[1]):
        h = dA[:, t] * h + dBu[:, t]
        ys.append((h * C[:, t, None, :]).sum(-1))  # [B, D]
    return torch.stack(ys, dim=1)


def selective_scan(dA, dBu, C, chunk: int, longest: int | None = None):
    """``sequential_scan``'s result, computed in chunks of ``chunk`` positions: first every
    chunk is scanned from a zero state, all chunks at once (``chunk`` steps over
    [B, T / chunk, D, N] tensors); then the state carried into each chunk is found by
    stepping from chunk to chunk (T / chunk steps over [B, D, N]) and added in, decayed by
    the chunk's running product of dA. chunk + T / chunk sequential steps instead of T.
    ``longest``: scan as many chunks as that length needs, whatever T is (a graph traced
    from it then holds at every length up to ``longest``; the padded steps are identities).
    dA, dBu: [B, T, D, N]; C: [B, T, N] -> y [B, T, D]."""
    B, T, D, N = dA.shape
    chunks = -(-(longest or T) // chunk)
    extra = chunks * chunk - T  # the last chunk is filled with identity steps (a = 1, b = 0)
    a = F.pad(dA, (0, 0, 0, 0, 0, extra), value=1.0).view(B, chunks, chunk, D, N)
    b = F.pad(dBu, (0, 0, 0, 0, 0, extra)).view(B, chunks, chunk, D, N)
    # 1. within chunks, from a zero state: the running product of a and the state.
    #    (unbind and stack, not indexing: their backward is one tensor, not one per step)
    steps_a, steps_b = a.unbind(2), b.unbind(2)  # chunk x [B, chunks, D, N]
    products, states = [steps_a[0]], [steps_b[0]]
    for a_t, b_t in zip(steps_a[1:], steps_b[1:]):
        products.append(a_t * products[-1])
        states.append(a_t * states[-1] + b_t)
    # 2. between chunks: the state each chunk starts from
    h = torch.zeros_like(dBu[:, 0])  # [B, D, N]
    starts = []
    for product, state in zip(products[-1].unbind(1), states[-1].unbind(1)):
        starts.append(h)
        h = product * h + state
    start = torch.stack(starts, dim=1)[:, :, None]  # [B, chunks, 1, D, N]
    # 3. every position's state, and its output
    full = torch.stack(states, dim=2) + torch.stack(products, dim=2) * start
    full = full.view(B, chunks * chunk, D, N)[:, :T]  # [B, T, D, N]
    return (full * C[:, :, None, :]).sum(-1)  # [B, T, D]


def traced() -> bool:
    """Whether the network is being traced (by an ONNX exporter). A trace records Python
    loops unrolled, so the scan then runs the chunks of the whole context at every length:
    the graph holds for any length, where one traced at T chunks would keep T."""
    return torch.jit.is_tracing() or torch.compiler.is_exporting()


class Mixer(nn.Module):
    """The selective state-space mixer: [B, T, C] -> [B, T, C]."""

    def __init__(self, cfg):
        super().__init__()
        C, D, N = cfg.n_embd, cfg.expand * cfg.n_embd, cfg.d_state
        self.rank, self.state, self.chunk = cfg.rank, N, cfg.scan_chunk
        self.longest = cfg.block_size
        self.in_proj = nn.Linear(C, 2 * D, bias=cfg.bias)
        self.conv1d = nn.Conv1d(
            D, D, cfg.d_conv, groups=D, padding=cfg.d_conv - 1, bias=cfg.conv_bias
        )
        self.x_proj = nn.Linear(D, cfg.rank + 2 * N, bias=False)
        self.dt_proj = nn.Linear(cfg.rank, D, bias=True)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1).float()).repeat(D, 1))
        self.D = nn.Parameter(torch.ones(D))
        self.out_proj = nn.Linear(D, C, bias=cfg.bias)

    def forward(self, x):  # [B, T, C]
        T = x.shape[1]
        u, gate = self.in_proj(x).chunk(2, dim=-1)  # [B, T, D] each
        # depthwise convolution over time, padded on the left only: causal
        u = F.silu(self.conv1d(u.transpose(1, 2))[..., :T].transpose(1, 2))  # [B, T, D]
        dt, B, C = self.x_proj(u).split([self.rank, self.state, self.state], dim=-1)
        dt = F.softplus(self.dt_proj(dt)).float()  # [B, T, D]: the step size, positive
        A = -torch.exp(self.A_log.float())  # [D, N]: negative, so the state decays
        dA = torch.exp(dt[..., None] * A)  # [B, T, D, N], in (0, 1)
        dBu = (dt * u.float())[..., None] * B.float()[:, :, None, :]  # [B, T, D, N]
        y = selective_scan(dA, dBu, C.float(), self.chunk, self.longest if traced() else None)
        y = (y + u.float() * self.D.float()).to(x.dtype)
        return self.out_proj(y * F.silu(gate))  # [B, T, C]


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm = RMSNorm(cfg.n_embd)
        self.mixer = Mixer(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):  # [B, T, C] -> [B, T, C]
        return x + self.drop(self.mixer(self.norm(x)))


class Mamba(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        self.cfg, self.task = cfg, spec.task
        self.tok_emb = nn.Embedding(spec.vocab_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm_f = RMSNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, spec.vocab_size, bias=False)
        if spec.task == "classification":
            self.cls_head = nn.Linear(cfg.n_embd, spec.class_count)
        init_mamba(self, cfg)
        if cfg.tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    def hidden(self, input_ids):  # [B, T] -> [B, T, C]
        check_length(input_ids, self.cfg.block_size)
        x = self.drop(self.tok_emb(input_ids))
        for block in self.blocks:
            x = block(x)
        return self.norm_f(x)

    def forward(self, input_ids, attention_mask=None):
        h = self.hidden(input_ids)
        if self.task == "language-modeling":
            return self.lm_head(h)  # [B, T, V]
        if self.task == "classification" and self.cfg.pooling == "mean":
            weights = (
                torch.ones_like(h[..., :1])
                if attention_mask is None
                else attention_mask.to(h.dtype).unsqueeze(-1)
            )  # [B, T, 1]
            pooled = (h * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        else:  # causal: the last real token's state has read the whole (right-padded) row
            pooled = last_real(h, attention_mask)  # [B, C]
        head = self.cls_head if self.task == "classification" else self.lm_head
        return head(pooled)


def init_mamba(model: Mamba, cfg) -> None:
    """Mamba's initialisation: embeddings N(0, 0.02), linear layers torch's default, the
    output projections scaled by 1 / sqrt(n_layer) (the residual stream's variance then
    does not grow with depth), and step sizes drawn log-uniformly in [0.001, 0.1] (the
    projection's bias is softplus's inverse of them). A_log = log(1..N) and D = 1 are set
    where they are made."""
    nn.init.normal_(model.tok_emb.weight, std=0.02)
    for block in modules_of(model.blocks, Block):
        mixer = block.mixer
        with torch.no_grad():
            mixer.out_proj.weight /= math.sqrt(cfg.n_layer)
            bound = cfg.rank**-0.5
            nn.init.uniform_(mixer.dt_proj.weight, -bound, bound)
            low, high = math.log(1e-3), math.log(1e-1)
            dt = torch.exp(torch.rand(mixer.dt_proj.bias.shape) * (high - low) + low)
            mixer.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)


def build(cfg, spec: TaskSpec) -> Mamba:
    return Mamba(cfg, spec)
