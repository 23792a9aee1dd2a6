"""The decoder in plain NumPy: forward, hand-written backward, AdamW. No torch anywhere.

It mirrors the torch decoder op for op and uses the same parameter names and shapes (listed
in ``zoo.plugins.decoder.model``: ``tok_emb``, ``pos_emb``, ``blocks.{i}.ln1``,
``.attn.qkv``, ``.attn.proj``, ``.ln2``, ``.mlp.fc``, ``.mlp.proj``, ``ln_f``, ``lm_head``
when untied, ``cls_head``), so weights move between the two through ``model.safetensors``
unchanged.

Linear weights are [out, in] (y = x W^T + b), fused qkv rows are [q; k; v], heads split C
into n_head slices of C // n_head. GELU is the tanh approximation, or the exact form (erf)
with config.gelu = "exact"; LayerNorm eps is 1e-5.
Shapes in comments: B batch, T time, C channels, H heads, D = C // H, V vocabulary.

The class meets ``zoo.train.model.Model`` directly, so the pipelines train it like a torch model.
"""

from __future__ import annotations

import math

import numpy as np

from zoo.plugin import IGNORE_INDEX, NonFiniteError, TaskSpec, ZooError

LN_EPS = 1e-5
GELU_K = math.sqrt(2.0 / math.pi)
ADAM_EPS = 1e-8


# -- the operations, each a forward returning a cache and a backward using it --------------
def layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    rstd = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + LN_EPS)
    xhat = centred * rstd
    y = xhat * weight
    if bias is not None:
        y = y + bias
    return y, (xhat, rstd, weight)


def layer_norm_backward(dy, cache):
    xhat, rstd, weight = cache
    axes = tuple(range(dy.ndim - 1))
    dweight = (dy * xhat).sum(axis=axes)
    dbias = dy.sum(axis=axes)
    dxhat = dy * weight
    dx = rstd * (
        dxhat
        - dxhat.mean(axis=-1, keepdims=True)
        - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
    )
    return dx, dweight, dbias


def linear(x, weight, bias):  # x [..., in], weight [out, in] -> [..., out]
    # one 2-D matmul: NumPy's stacked (3-D) matmul path is several times slower
    y = x.reshape(-1, x.shape[-1]) @ weight.T
    if bias is not None:
        y += bias
    return y.reshape(*x.shape[:-1], weight.shape[0])


def linear_backward(dy, x, weight):
    dy2 = dy.reshape(-1, dy.shape[-1])
    dweight = dy2.T @ x.reshape(-1, x.shape[-1])
    dx = (dy2 @ weight).reshape(*dy.shape[:-1], weight.shape[1])
    return dx, dweight, dy2.sum(axis=0)


def gelu(x):  # tanh approximation, as torch's approximate="tanh"
    # t = tanh(k (x + 0.044715 x^3)), computed in place: this is the widest tensor [B, T, 4C]
    t = x * x
    t *= 0.044715
    t += 1.0
    t *= x
    t *= GELU_K
    np.tanh(t, out=t)
    y = t + 1.0
    y *= x
    y *= 0.5
    return y, t


def gelu_backward(dy, x, t):
    # d/dx 0.5 x (1 + t) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 0.044715 x^2)
    du = x * x
    du *= 3 * 0.044715
    du += 1.0
    du *= GELU_K
    du *= x
    du *= 1.0 - t * t
    du += 1.0 + t
    du *= 0.5
    du *= dy
    return du


def erf(x):
    """erf elementwise. float64 is exact (math.erf, for the reference checks); float32 uses
    Abramowitz & Stegun 7.1.26 (absolute error at most 1.5e-7, float32's own resolution
    near 1), which keeps training at NumPy speed. NumPy itself has no erf."""
    if x.dtype == np.float64:
        return _exact_erf(x).astype(np.float64)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(x.dtype)


_exact_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_exact(x):  # 0.5 x (1 + erf(x / sqrt 2)), as torch's approximate="none"
    cdf = erf(x * (1.0 / math.sqrt(2.0)))
    cdf += 1.0
    cdf *= 0.5  # the normal CDF, kept for the backward pass
    return x * cdf, cdf


def gelu_exact_backward(dy, x, cdf):
    # d/dx x cdf(x) = cdf(x) + x pdf(x)
    du = np.exp(-0.5 * x * x)
    du *= x * (1.0 / math.sqrt(2.0 * math.pi))
    du += cdf
    du *= dy
    return du


def dropout(x, p: float, rng):
    """Inverted dropout; returns the output and the scaled keep mask (None when off)."""
    if p == 0.0 or rng is None:
        return x, None
    keep = (rng.random(x.shape) >= p).astype(x.dtype) / x.dtype.type(1.0 - p)
    return x * keep, keep


def dropout_backward(dy, keep):
    return dy if keep is None else dy * keep


def causal_mask(T: int, dtype):
    """[T, T]: 0 where position t may look (0..t), -inf above the diagonal."""
    return np.triu(np.full((T, T), -np.inf, dtype=dtype), k=1)


def causal_attention(qkv, n_head: int, p_drop: float, rng):
    """qkv [B, T, 3C] -> y [B, T, C]: softmax(q k^T / sqrt(D) + causal mask) v per head."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    D = C // n_head

    def heads(t):  # [B, T, C] -> [B, H, T, D]
        return t.reshape(B, T, n_head, D).transpose(0, 2, 1, 3)

    q, k, v = heads(qkv[..., :C]), heads(qkv[..., C : 2 * C]), heads(qkv[..., 2 * C :])
    scale = qkv.dtype.type(1.0 / math.sqrt(D))
    scores = (q @ k.transpose(0, 1, 3, 2)) * scale  # [B, H, T, T]
    scores += causal_mask(T, scores.dtype)
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    dropped, keep = dropout(probs, p_drop, rng)
    y = dropped @ v  # [B, H, T, D]
    return y.transpose(0, 2, 1, 3).reshape(B, T, C), (q, k, v, probs, dropped, keep, scale)


def causal_attention_backward(dy, cache):
    q, k, v, probs, dropped, keep, scale = cache
    B, H, T, D = q.shape
    dy = dy.reshape(B, T, H, D).transpose(0, 2, 1, 3)  # [B, H, T, D]
    ddropped = dy @ v.transpose(0, 1, 3, 2)  # [B, H, T, T]
    dv = dropped.transpose(0, 1, 3, 2) @ dy
    dprobs = dropout_backward(ddropped, keep)
    # softmax backward; masked entries have probability 0, so their gradient is 0 too
    dscores = probs * (dprobs - (dprobs * probs).sum(axis=-1, keepdims=True))
    dq = (dscores @ k) * scale
    dk = (dscores.transpose(0, 1, 3, 2) @ q) * scale

    def merge(t):  # [B, H, T, D] -> [B, T, C]
        return t.transpose(0, 2, 1, 3).reshape(B, T, H * D)

    return np.concatenate([merge(dq), merge(dk), merge(dv)], axis=-1)


def cross_entropy(logits, targets, reduction: str = "mean"):
    """Loss over the last axis, skipping IGNORE_INDEX targets, and d(loss)/d(logits)."""
    z = logits.reshape(-1, logits.shape[-1])
    t = targets.reshape(-1)
    valid = t != IGNORE_INDEX
    safe = np.where(valid, t, 0)
    rows = np.arange(len(t))
    shifted = z - z.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=-1, keepdims=True)
    nll = np.log(total[:, 0]) - shifted[rows, safe]
    count = int(valid.sum())
    loss_sum = float((nll * valid).sum(dtype=np.float64))
    grad = exp / total
    grad[rows, safe] -= 1.0
    grad *= valid[:, None]
    if reduction == "sum":
        return loss_sum, count, grad.reshape(logits.shape)
    grad /= max(count, 1)
    loss = loss_sum / count if count else float("nan")
    return loss, count, grad.reshape(logits.shape)


def decode_mask(pads, start: int, end: int):
    """[B, 1, t, end] True where a new position may attend: real keys (not the row's
    leading padding), not in its future. A padding query sees itself, so no row is wholly
    masked."""
    keys = np.arange(end)
    queries = np.arange(start, end)
    causal = keys[None, :] <= queries[:, None]  # [t, end]
    real = keys[None, None, :] >= np.asarray(pads)[:, None, None]  # [B, 1, end]
    itself = keys[None, :] == queries[:, None]
    return ((causal & real) | itself)[:, None]


class KVCache:
    """Keys and values of every layer for the positions decoded so far: k[i], v[i] are
    [B, H, block_size, D], filled up to ``length``; ``pads`` [B] counts each row's leading
    padding positions."""

    def __init__(self, cfg, pads: np.ndarray, dtype):
        H = cfg.n_head
        shape = (len(pads), H, cfg.block_size, cfg.n_embd // H)
        self.k = [np.zeros(shape, dtype=dtype) for _ in range(cfg.n_layer)]
        self.v = [np.zeros(shape, dtype=dtype) for _ in range(cfg.n_layer)]
        self.pads = pads
        self.length = 0


# -- the model ---------------------------------------------------------------------------
def parameter_shapes(cfg, spec: TaskSpec) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in the torch decoder's state_dict order."""
    C, V = cfg.n_embd, spec.vocab_size
    shapes: dict[str, tuple[int, ...]] = {
        "tok_emb.weight": (V, C),
        "pos_emb.weight": (cfg.block_size, C),
    }

    def add(name, out, inp, bias=cfg.bias):
        shapes[f"{name}.weight"] = (out, inp)
        if bias:
            shapes[f"{name}.bias"] = (out,)

    def norm(name):
        shapes[f"{name}.weight"] = (C,)
        if cfg.bias:
            shapes[f"{name}.bias"] = (C,)

    for i in range(cfg.n_layer):
        norm(f"blocks.{i}.ln1")
        add(f"blocks.{i}.attn.qkv", 3 * C, C)
        add(f"blocks.{i}.attn.proj", C, C)
        norm(f"blocks.{i}.ln2")
        add(f"blocks.{i}.mlp.fc", 4 * C, C)
        add(f"blocks.{i}.mlp.proj", C, 4 * C)
    norm("ln_f")
    if not cfg.tie_weights:
        shapes["lm_head.weight"] = (V, C)
    if spec.task == "classification":
        add("cls_head", spec.class_count, C, bias=True)
    return shapes


def init_parameters(cfg, spec: TaskSpec, rng: np.random.Generator, dtype) -> dict[str, np.ndarray]:
    """The torch decoder's scheme: N(0, 0.02) for matrices, N(0, 0.02 / sqrt(2 n_layer)) for
    the residual projections (GPT-2), zero biases, LayerNorm weights one."""
    params = {}
    for name, shape in parameter_shapes(cfg, spec).items():
        if name.endswith("proj.weight"):
            value = rng.normal(0.0, 0.02 / math.sqrt(2 * cfg.n_layer), shape)
        elif name.endswith(".bias"):
            value = np.zeros(shape)
        elif len(shape) == 1:  # LayerNorm weight
            value = np.ones(shape)
        else:
            value = rng.normal(0.0, 0.02, shape)
        params[name] = value.astype(dtype)
    return params


class NumpyDecoder:
    """GPT-style decoder (pre-LN, fused qkv, causal attention) meeting ``zoo.train.model.Model``."""

    def __init__(self, cfg, spec: TaskSpec, seed: int | None = None):
        if spec.task == "classification" and not spec.num_classes:
            raise ZooError("classification needs num_classes")
        self.cfg, self.spec = cfg, spec
        self.dtype = np.dtype(getattr(cfg, "dtype", "float32"))
        if seed is None:  # follows the global NumPy seed that `zoo run --seed` sets
            seed = int(np.random.randint(0, 2**31 - 1))
        self.rng = np.random.default_rng(seed)  # initial weights, then dropout masks
        self.params = init_parameters(cfg, spec, self.rng, self.dtype)
        self.optimizer: AdamW | None = None
        exact = cfg.gelu == "exact"
        self.gelu = gelu_exact if exact else gelu
        self.gelu_backward = gelu_exact_backward if exact else gelu_backward

    # -- protocol ----------------------------------------------------------------------
    def num_parameters(self) -> int:
        return sum(p.size for p in self.params.values())

    def configure_optimizer(self, lr: float, weight_decay: float, betas=(0.9, 0.95)) -> None:
        self.optimizer = AdamW(self.params, weight_decay, betas)

    def _configured(self) -> AdamW:
        if self.optimizer is None:
            raise RuntimeError("configure_optimizer() must be called before training")
        return self.optimizer

    def train_step(self, inputs, targets, lr: float, mask=None, grad_clip: float = 1.0) -> float:
        optimizer = self._configured()
        loss, grads = self.loss_and_grads(inputs, targets, mask, train=True)
        if not math.isfinite(loss):
            return loss  # the trainer stops; the weights stay as they were
        norm = clip_grad_norm(grads, grad_clip or math.inf)  # inf: measure, never scale
        if not math.isfinite(norm):
            raise NonFiniteError(loss, norm)  # before the step: the weights stay as they were
        optimizer.step(self.params, grads, lr, skip=set(self.params) - self.used_parameters())
        return loss

    def optimizer_state(self) -> tuple[dict[str, np.ndarray], dict]:
        """AdamW's moments and step count, and the dropout generator (for resume)."""
        optimizer = self._configured()
        arrays = {
            f"{moment}.{name}": value
            for moment, table in (("m", optimizer.m), ("v", optimizer.v))
            for name, value in table.items()
        }
        return arrays, {"t": optimizer.t, "rng": self.rng.bit_generator.state}

    def load_optimizer_state(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        optimizer = self._configured()
        for name, value in arrays.items():
            moment, _, param = name.partition(".")
            table = {"m": optimizer.m, "v": optimizer.v}.get(moment)
            if table is None or param not in table or table[param].shape != value.shape:
                raise ZooError(f"optimizer state does not fit the model: {name} {value.shape}")
            table[param] = np.array(value, dtype=table[param].dtype)
        optimizer.t = int(meta["t"])
        self.rng.bit_generator.state = meta["rng"]

    def loss_sum(self, inputs, targets, mask=None) -> tuple[float, int]:
        logits, _ = self.forward(inputs, mask)
        total, count, _ = cross_entropy(logits, np.asarray(targets), "sum")
        return total, count

    def logits(self, inputs, mask=None) -> np.ndarray:
        return self.forward(inputs, mask)[0]

    @property
    def decodes_incrementally(self) -> bool:
        return self.spec.task == "language-modeling"

    def start_decoding(self, inputs, pads=None):
        ids = np.asarray(inputs)
        pads = np.zeros(len(ids), dtype=np.int64) if pads is None else np.asarray(pads)
        return self._decode(ids, KVCache(self.cfg, pads, self.dtype))

    def decode_step(self, next_ids, cache):
        return self._decode(np.asarray(next_ids).reshape(-1, 1), cache)

    def state_dict(self) -> dict[str, np.ndarray]:
        return {name: value.copy() for name, value in self.params.items()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        shapes = parameter_shapes(self.cfg, self.spec)
        missing = sorted(set(shapes) - set(state))
        unexpected = sorted(set(state) - set(shapes))
        wrong = [
            f"{k} {tuple(state[k].shape)} (expected {shapes[k]})"
            for k in shapes
            if k in state and tuple(state[k].shape) != shapes[k]
        ]
        if missing or unexpected or wrong:
            raise ZooError(
                f"weights do not fit the model: missing {missing[:5]}, "
                f"unexpected {unexpected[:5]}, wrong shape {wrong[:5]}"
            )
        # copies in the model's dtype; like torch, the optimizer keeps its moments
        self.params = {k: np.array(state[k], dtype=self.dtype) for k in shapes}

    # -- forward and backward ----------------------------------------------------------
    def loss_and_grads(self, inputs, targets, mask=None, *, train=False, rng=None):
        """Mean loss and the gradient of every parameter (a dict like ``params``).

        With ``train`` dropout is on, its masks drawn from ``rng`` (default: the model's)."""
        logits, cache = self.forward(inputs, mask, train=train, rng=rng)
        loss, _, dlogits = cross_entropy(logits, np.asarray(targets), "mean")
        return loss, self.backward(dlogits, cache)

    def forward(self, inputs, mask=None, *, train=False, rng=None):
        """Logits and the cache the backward pass needs."""
        cfg, p = self.cfg, self.params
        ids = np.asarray(inputs)
        B, T = ids.shape
        if T > cfg.block_size:
            raise ValueError(f"sequence of {T} tokens exceeds block_size {cfg.block_size}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.spec.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.spec.vocab_size})")
        p_drop = cfg.dropout if train else 0.0
        rng = (rng or self.rng) if p_drop else None

        x, keep = dropout(p["tok_emb.weight"][ids] + p["pos_emb.weight"][:T], p_drop, rng)
        cache = {"ids": ids, "emb_keep": keep, "blocks": []}
        for i in range(cfg.n_layer):
            x, block_cache = self._block(x, f"blocks.{i}.", p_drop, rng)
            cache["blocks"].append(block_cache)
        h, cache["ln_f"] = layer_norm(x, p["ln_f.weight"], p.get("ln_f.bias"))  # [B, T, C]

        if self.spec.task == "language-modeling":
            cache["h"] = h
            return linear(h, self._lm_head(), None), cache  # [B, T, V]
        # Causal attention: the last real token has seen the whole (right-padded) input.
        last = (
            np.full(B, T - 1) if mask is None else np.asarray(mask).astype(np.int64).sum(axis=1) - 1
        )
        pooled = h[np.arange(B), last]  # [B, C]
        cache.update(h_shape=h.shape, last=last, pooled=pooled)
        if self.spec.task == "classification":
            return linear(pooled, p["cls_head.weight"], p["cls_head.bias"]), cache  # [B, K]
        return pooled @ self._lm_head().T, cache  # [B, V]

    def _decode(self, ids, kv: KVCache):
        """Logits [B, V] after the last of ``ids`` [B, t], appending their keys and values
        to ``kv``; positions count from each row's first real token."""
        cfg, p = self.cfg, self.params
        get = p.get
        B, t = ids.shape
        start, end = kv.length, kv.length + t
        if end > cfg.block_size:
            raise ValueError(f"sequence of {end} tokens exceeds block_size {cfg.block_size}")
        H, D = cfg.n_head, cfg.n_embd // cfg.n_head
        pos = np.maximum(np.arange(start, end)[None, :] - kv.pads[:, None], 0)  # [B, t]
        x = p["tok_emb.weight"][ids] + p["pos_emb.weight"][pos]  # [B, t, C]
        allowed = decode_mask(kv.pads, start, end)
        scale = self.dtype.type(1.0 / math.sqrt(D))
        for i in range(cfg.n_layer):
            prefix = f"blocks.{i}."
            h1, _ = layer_norm(x, p[prefix + "ln1.weight"], get(prefix + "ln1.bias"))
            qkv = linear(h1, p[prefix + "attn.qkv.weight"], get(prefix + "attn.qkv.bias"))
            q, k, v = (
                qkv[..., j * cfg.n_embd : (j + 1) * cfg.n_embd]
                .reshape(B, t, H, D)
                .transpose(0, 2, 1, 3)
                for j in range(3)
            )
            kv.k[i][:, :, start:end], kv.v[i][:, :, start:end] = k, v
            scores = (q @ kv.k[i][:, :, :end].transpose(0, 1, 3, 2)) * scale  # [B, H, t, end]
            scores = np.where(allowed, scores, -np.inf)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            a = (probs @ kv.v[i][:, :, :end]).transpose(0, 2, 1, 3).reshape(B, t, cfg.n_embd)
            x = x + linear(a, p[prefix + "attn.proj.weight"], get(prefix + "attn.proj.bias"))
            h2, _ = layer_norm(x, p[prefix + "ln2.weight"], get(prefix + "ln2.bias"))
            f = linear(h2, p[prefix + "mlp.fc.weight"], get(prefix + "mlp.fc.bias"))
            x = x + linear(
                self.gelu(f)[0], p[prefix + "mlp.proj.weight"], get(prefix + "mlp.proj.bias")
            )
        kv.length = end
        h, _ = layer_norm(x[:, -1], p["ln_f.weight"], p.get("ln_f.bias"))  # [B, C]
        return linear(h, self._lm_head(), None), kv

    def backward(self, dlogits, cache) -> dict[str, np.ndarray]:
        cfg, p = self.cfg, self.params
        grads = {name: np.zeros_like(value) for name, value in self.params.items()}
        head = "tok_emb.weight" if cfg.tie_weights else "lm_head.weight"
        if self.spec.task == "language-modeling":
            h = cache["h"]
            grads[head] += dlogits.reshape(-1, dlogits.shape[-1]).T @ h.reshape(-1, h.shape[-1])
            dh = (dlogits.reshape(-1, dlogits.shape[-1]) @ self._lm_head()).reshape(h.shape)
        else:
            if self.spec.task == "classification":
                dpooled, grads["cls_head.weight"], grads["cls_head.bias"] = linear_backward(
                    dlogits, cache["pooled"], p["cls_head.weight"]
                )
            else:
                grads[head] += dlogits.T @ cache["pooled"]
                dpooled = dlogits @ self._lm_head()
            dh = np.zeros(cache["h_shape"], dtype=self.dtype)
            dh[np.arange(len(dpooled)), cache["last"]] = dpooled
        dx, grads["ln_f.weight"], dbias = layer_norm_backward(dh, cache["ln_f"])
        if cfg.bias:
            grads["ln_f.bias"] = dbias
        for i in reversed(range(cfg.n_layer)):
            dx = self._block_backward(dx, cache["blocks"][i], f"blocks.{i}.", grads)
        dx = dropout_backward(dx, cache["emb_keep"])
        ids = cache["ids"]
        np.add.at(grads["tok_emb.weight"], ids.reshape(-1), dx.reshape(-1, dx.shape[-1]))
        grads["pos_emb.weight"][: ids.shape[1]] += dx.sum(axis=0)
        return grads

    def used_parameters(self) -> set[str]:
        """Parameters the task's output depends on (an untied lm_head is idle in classification)."""
        names = set(self.params)
        if self.spec.task == "classification":
            names.discard("lm_head.weight")
        return names

    def _lm_head(self):
        return self.params["tok_emb.weight" if self.cfg.tie_weights else "lm_head.weight"]

    def _block(self, x, prefix: str, p_drop: float, rng):
        p = self.params
        get = p.get
        c = {}
        h1, c["ln1"] = layer_norm(x, p[prefix + "ln1.weight"], get(prefix + "ln1.bias"))
        qkv = linear(h1, p[prefix + "attn.qkv.weight"], get(prefix + "attn.qkv.bias"))
        a, c["attn"] = causal_attention(qkv, self.cfg.n_head, p_drop, rng)
        o = linear(a, p[prefix + "attn.proj.weight"], get(prefix + "attn.proj.bias"))
        o, c["attn_keep"] = dropout(o, p_drop, rng)
        x = x + o
        h2, c["ln2"] = layer_norm(x, p[prefix + "ln2.weight"], get(prefix + "ln2.bias"))
        f = linear(h2, p[prefix + "mlp.fc.weight"], get(prefix + "mlp.fc.bias"))  # [B, T, 4C]
        g, c["gelu_t"] = self.gelu(f)
        m = linear(g, p[prefix + "mlp.proj.weight"], get(prefix + "mlp.proj.bias"))
        m, c["mlp_keep"] = dropout(m, p_drop, rng)
        c.update(h1=h1, a=a, h2=h2, f=f, g=g)
        return x + m, c

    def _block_backward(self, dx, c, prefix: str, grads):
        p, bias = self.params, self.cfg.bias

        def put(name, dweight, dbias):
            grads[prefix + name + ".weight"] = dweight
            if bias:
                grads[prefix + name + ".bias"] = dbias

        dm = dropout_backward(dx, c["mlp_keep"])
        dg, dw, db = linear_backward(dm, c["g"], p[prefix + "mlp.proj.weight"])
        put("mlp.proj", dw, db)
        df = self.gelu_backward(dg, c["f"], c["gelu_t"])
        dh2, dw, db = linear_backward(df, c["h2"], p[prefix + "mlp.fc.weight"])
        put("mlp.fc", dw, db)
        dln, dw, db = layer_norm_backward(dh2, c["ln2"])
        put("ln2", dw, db)
        dx = dx + dln
        do = dropout_backward(dx, c["attn_keep"])
        da, dw, db = linear_backward(do, c["a"], p[prefix + "attn.proj.weight"])
        put("attn.proj", dw, db)
        dqkv = causal_attention_backward(da, c["attn"])
        dh1, dw, db = linear_backward(dqkv, c["h1"], p[prefix + "attn.qkv.weight"])
        put("attn.qkv", dw, db)
        dln, dw, db = layer_norm_backward(dh1, c["ln1"])
        put("ln1", dw, db)
        return dx + dln


# -- optimisation ------------------------------------------------------------------------
def clip_grad_norm(grads: dict, max_norm: float) -> float:
    """Scale all gradients so their global L2 norm is at most max_norm (torch's formula)."""
    total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        for g in grads.values():
            g *= coef
    return total


class AdamW:
    """Adam with decoupled weight decay on matrices only, as torch.optim.AdamW computes it."""

    def __init__(self, params: dict, weight_decay: float, betas=(0.9, 0.95), eps: float = ADAM_EPS):
        self.weight_decay, self.betas, self.eps = weight_decay, betas, eps
        self.t = 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict, grads: dict, lr: float, skip=()) -> None:
        b1, b2 = self.betas
        self.t += 1
        bc1, bc2 = 1 - b1**self.t, 1 - b2**self.t
        for name, param in params.items():
            if name in skip:
                continue
            g, m, v = grads[name], self.m[name], self.v[name]
            if param.ndim >= 2 and self.weight_decay:
                param *= 1 - lr * self.weight_decay
            m += (1 - b1) * (g - m)
            v *= b2
            v += (1 - b2) * g * g
            param -= (lr / bc1) * m / (np.sqrt(v) / math.sqrt(bc2) + self.eps)


def build(cfg, spec: TaskSpec) -> NumpyDecoder:
    return NumpyDecoder(cfg, spec)
