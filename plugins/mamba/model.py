"""The Mamba network: a selective state-space language model and classifier, in plain torch.

Each block is x + Mixer(RMSNorm(x)). The mixer (Gu and Dao, 2023, section 3) widens the
input to D = expand * C channels in two branches: one goes through a depthwise causal
convolution and SiLU, then the selective state-space recurrence, per channel d and state
number n,

    h_t[d, n] = exp(delta_t[d] * A[d, n]) * h_{t-1}[d, n] + delta_t[d] * B_t[n] * u_t[d]
    y_t[d]    = sum_n C_t[n] * h_t[d, n] + D[d] * u_t[d]

where the step size delta_t (softplus of a rank-r projection), B_t and C_t are computed
from the token itself (that is what "selective" means), and A (negative) and D are learned
per channel; the other branch gates y with SiLU. On the CPU, ``SelectiveScan`` computes the
recurrence one position at a time on one [B, D, N] state, and keeps only its inputs and
every ``scan_chunk``-th state for the backward pass, which recomputes one chunk's states at
a time: no [B, T, D, N] tensor is ever formed. On an accelerator, and in a trace for ONNX
(whose graph then holds at every length), ``selective_scan`` computes it a chunk of
positions at a time, the chunks in parallel. ``sequential_scan`` is the step-by-step
reference both are tested against. ``Mamba.decode`` carries each layer's state and the
convolution's last inputs from token to token.

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
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.plugin import TaskSpec
from zoo.plugin.layers import RMSNorm, check_length, last_real, modules_of


def sequential_scan(dA, dBu, C):
    """The recurrence one position at a time (the reference): h_t = dA_t * h_{t-1} + dBu_t,
    y_t = h_t . C_t. dA, dBu: [B, T, D, N]; C: [B, T, N] -> y [B, T, D] and the last state
    [B, D, N]."""
    h = torch.zeros_like(dBu[:, 0])  # [B, D, N]
    ys = []
    for t in range(dA.shape[1]):
        h = dA[:, t] * h + dBu[:, t]
        ys.append((h * C[:, t, None, :]).sum(-1))  # [B, D]
    return torch.stack(ys, dim=1), h


def selective_scan(dA, dBu, C, chunk: int, longest: int | None = None):
    """``sequential_scan``'s result, computed in chunks of ``chunk`` positions: first every
    chunk is scanned from a zero state, all chunks at once (``chunk`` steps over
    [B, T / chunk, D, N] tensors); then the state carried into each chunk is found by
    stepping from chunk to chunk (T / chunk steps over [B, D, N]) and added in, decayed by
    the chunk's running product of dA. chunk + T / chunk sequential steps instead of T.
    ``longest``: scan as many chunks as that length needs, whatever T is (a graph traced
    from it then holds at every length up to ``longest``; the padded steps are identities).
    dA, dBu: [B, T, D, N]; C: [B, T, N] -> y [B, T, D] and the last state [B, D, N]."""
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
    return (full * C[:, :, None, :]).sum(-1), full[:, -1]  # [B, T, D], the last state


def scan_step(h, dt, A, x, B):
    """One position of the recurrence: the decay exp(dt A) and the next state
    exp(dt A) * h + x B, both [B, D, N]. dt, x: [B, D]; A: [D, N]; B: [B, N]."""
    decay = torch.exp(dt[:, :, None] * A)
    return decay, torch.addcmul(decay * h, x[:, :, None], B[:, None, :])


class SelectiveScan(torch.autograd.Function):
    """``sequential_scan`` of dA = exp(dt A), dBu = x B without forming them: y [B, T, D] and
    the last state [B, D, N] from dt, x [B, T, D], A [D, N], B, C [B, T, N]. One position at
    a time, on one [B, D, N] state; the backward pass runs the recurrence
    in reverse, recomputing the states of one ``chunk`` of positions at a time from the
    state saved at the chunk's start. In fp32 whatever autocast says: the state accumulates."""

    @staticmethod
    def forward(ctx, dt, A, x, B, C, chunk: int):
        with torch.autocast(dt.device.type, enabled=False):
            h, y, starts = x.new_zeros(x.shape[0], *A.shape), torch.empty_like(x), []
            for t in range(x.shape[1]):
                if t % chunk == 0:
                    starts.append(h)
                _, h = scan_step(h, dt[:, t], A, x[:, t], B[:, t])
                y[:, t] = torch.bmm(h, C[:, t, :, None])[..., 0]
        ctx.chunk = chunk
        ctx.save_for_backward(dt, A, x, B, C, *starts)
        return y, h

    @staticmethod
    def backward(ctx, dy, dh):
        dt, A, x, B, C, *starts = ctx.saved_tensors
        T = x.shape[1]
        d_dt, dx, dB, dC = (torch.empty_like(t) for t in (dt, x, B, C))
        dA = torch.zeros_like(A)
        g = dh.clone()  # the loss's gradient with respect to the state at t
        with torch.autocast(dt.device.type, enabled=False):
            for c in reversed(range(len(starts))):
                first, end = c * ctx.chunk, min(T, (c + 1) * ctx.chunk)
                states, decays = [starts[c]], []
                for t in range(first, end):
                    decay, h = scan_step(states[-1], dt[:, t], A, x[:, t], B[:, t])
                    states.append(h)
                    decays.append(decay)
                for t in reversed(range(first, end)):
                    before, h, decay = states[t - first], states[t - first + 1], decays[t - first]
                    g = torch.addcmul(g, dy[:, t, :, None], C[:, t, None, :])
                    dC[:, t] = torch.bmm(dy[:, t, None, :], h)[:, 0]
                    dx[:, t] = torch.bmm(g, B[:, t, :, None])[..., 0]
                    dB[:, t] = torch.bmm(x[:, t, None, :], g)[:, 0]
                    d_exponent = g * before * decay  # d loss / d (dt_t A)
                    d_dt[:, t] = (d_exponent * A).sum(-1)
                    dA += torch.einsum("bdn,bd->dn", d_exponent, dt[:, t])
                    g = g * decay
        return d_dt, dA, dx, dB, dC, None


def traced() -> bool:
    """Whether the network is being traced (by an ONNX exporter). A trace records Python
    loops unrolled, so the scan then runs the chunks of the whole context at every length:
    the graph holds for any length, where one traced at T chunks would keep T."""
    return torch.jit.is_tracing() or torch.compiler.is_exporting()


class Mixer(nn.Module):
    """The selective state-space mixer: [B, T, C] -> [B, T, C], and the state a next token
    would start from (``step``)."""

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

    def forward(self, x, real=None):
        """x [B, T, C] -> [B, T, C], and the state after the last position: the convolution's
        last inputs [B, D, d_conv - 1] and the recurrence's [B, D, N].
        real [B, T] (1 = a real token) or None: positions that are not real (a left-padded
        prompt's) leave the state as it was, as if the row started after them."""
        T = x.shape[1]
        u, gate = self.in_proj(x).chunk(2, dim=-1)  # [B, T, D] each
        if real is not None:  # the convolution reads zeros there, as left of the first token
            u = u * real[..., None]
        window = F.pad(u.transpose(1, 2), (self.conv1d.kernel_size[0] - 1, 0))[..., T:]
        # depthwise convolution over time, padded on the left only: causal
        u = F.silu(self.conv1d(u.transpose(1, 2))[..., :T].transpose(1, 2))  # [B, T, D]
        dt, B, C = self.selection(u)
        if real is not None:  # a step of size 0 leaves the state unchanged
            dt = dt * real[..., None]
        A = -torch.exp(self.A_log.float())  # [D, N]: negative, so the state decays
        if traced() or x.device.type != "cpu":
            # the chunked parallel form: a few large steps, as an accelerator wants them (and
            # a trace's graph then holds at every length); on the CPU a position at a time
            # is faster (benchmarks/bench_mamba_scan.py)
            dA = torch.exp(dt[..., None] * A)  # [B, T, D, N], in (0, 1)
            dBu = (dt * u.float())[..., None] * B[:, :, None, :]  # [B, T, D, N]
            longest = self.longest if traced() else None
            y, h = selective_scan(dA, dBu, C, self.chunk, longest)
        else:
            y, h = SelectiveScan.apply(dt, A, dt * u.float(), B, C, self.chunk)
        y = (y + u.float() * self.D.float()).to(x.dtype)
        return self.out_proj(y * F.silu(gate)), (window, h)

    def step(self, x, state):
        """One more token: x [B, C] -> [B, C], and the next state (``forward``'s)."""
        window, h = state
        u, gate = self.in_proj(x).chunk(2, dim=-1)  # [B, D] each
        window = torch.cat([window, u[:, :, None]], dim=-1)  # [B, D, d_conv]
        u = (window * self.conv1d.weight[:, 0]).sum(-1)
        if self.conv1d.bias is not None:
            u = u + self.conv1d.bias
        u = F.silu(u)
        dt, B, C = self.selection(u)
        _, h = scan_step(h, dt, -torch.exp(self.A_log.float()), dt * u.float(), B)
        y = (h * C[:, None, :]).sum(-1) + u.float() * self.D.float()
        return self.out_proj(y.to(x.dtype) * F.silu(gate)), (window[..., 1:], h)

    def selection(self, u):
        """The token's own step size (positive) [..., D], B and C [..., N], in fp32."""
        dt, B, C = self.x_proj(u).split([self.rank, self.state, self.state], dim=-1)
        return F.softplus(self.dt_proj(dt)).float(), B.float(), C.float()


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm = RMSNorm(cfg.n_embd)
        self.mixer = Mixer(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):  # [B, T, C] -> [B, T, C]
        return x + self.drop(self.mixer(self.norm(x))[0])


@dataclass
class MambaCache:
    """What decoding carries from token to token: each layer's state (``Mixer.forward``) and
    how many positions it has read (a row's padding included)."""

    states: list
    length: int


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

    def decode(self, input_ids, cache: MambaCache | None = None, pads=None):
        """Logits [B, V] after the last of ``input_ids`` [B, t], given the state in ``cache``
        (a new one when None, from the whole prompt at once, its first ``pads`` [B] positions
        per row padding that leaves the state unread); returns them with the next cache."""
        t = input_ids.shape[1]
        length = (cache.length if cache else 0) + t
        if length > self.cfg.block_size:
            raise ValueError(
                f"sequence of {length} tokens exceeds block_size {self.cfg.block_size}"
            )
        if cache is None:
            positions = torch.arange(t, device=input_ids.device)[None, :]
            real = None if pads is None else (positions >= pads[:, None]).float()
            x, states = self.tok_emb(input_ids), []
            for block in self.blocks:
                out, state = block.mixer(block.norm(x), real)
                x = x + out
                states.append(state)
            cache, x = MambaCache(states, length), x[:, -1]
        else:
            for position in input_ids.unbind(1):
                x = self.tok_emb(position)
                for i, block in enumerate(self.blocks):
                    out, cache.states[i] = block.mixer.step(block.norm(x), cache.states[i])
                    x = x + out
            cache.length = length
        return self.lm_head(self.norm_f(x)), cache

    def reorder_cache(self, cache: MambaCache, rows):
        """The cache of the rows ``rows`` [N] (beam search's surviving hypotheses)."""
        cache.states = [
            (window.index_select(0, rows), h.index_select(0, rows)) for window, h in cache.states
        ]
        return cache

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
