"""TorchModel: makes any ``torch.nn.Module`` meet the ``zoo.train.model.Model`` protocol.

It owns the optimizer (AdamW, decay on matrices only), gradient clipping, mixed precision
(bf16 autocast; fp16 with a gradient scaler on GPUs without bf16), optional
``torch.compile``, optional whole-step CUDA graphs (``zoo.train.cuda_graph``),
DistributedDataParallel under torchrun, and conversion between NumPy arrays and tensors.
The training loop sets the speed options with ``configure_engine``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from zoo.core.limits import DEVICES
from zoo.core.phases import phase
from zoo.errors import ZooError
from zoo.train.layers import attention  # noqa: F401  (its old home: plugins may import it from here)
from zoo.train.losses import count_targets
from zoo.train.model import IGNORE_INDEX, Model, NonFiniteError
from zoo.train.precision import AUTOCAST_DTYPES, resolve_precision


def pick_device(device: str = "auto") -> str:
    if device not in DEVICES:
        raise ZooError(f"device must be {', '.join(DEVICES)}, not {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ZooError("device cuda was asked for, but torch sees no CUDA device", option="device")
    return device


def refuse_missing(precision: str, device: str) -> None:
    """Refuse a device torch does not see, or a precision the device lacks (fp16 on the
    CPU), before a run is recorded."""
    resolve_precision(precision, torch.device(pick_device(device)))


def as_model(built, device: str = "cpu", *, loss, train_loss=None) -> Model:
    """The protocol object for whatever an architecture's build() returned; a torch module
    trains and evaluates with ``loss``, the task's (``zoo.core.loading.task_loss``), and trains
    with ``train_loss`` where given (a model of its own computes its own loss)."""
    if isinstance(built, torch.nn.Module):
        return TorchModel(built, device, loss=loss, train_loss=train_loss)
    return built


class TorchModel:
    """A module and its optimizer; ``loss(outputs, targets, reduction)`` is the task's loss
    (see ``zoo.plugin.Task``), so any module trains on any task without subclassing;
    training steps minimize ``train_loss`` where given (label smoothing)."""

    def __init__(self, module: torch.nn.Module, device: str = "cpu", *, loss, train_loss=None):
        self.device = torch.device(device)
        self.module = module.to(self.device)
        self.loss, self.train_loss = loss, train_loss or loss
        self.optimizer: Any = None
        self.precision = "fp32"  # until configure_engine picks the precision to run at
        self.scaler: Any = None  # torch.amp.GradScaler, for fp16 only
        self.distributed: Any = None  # zoo.train.distributed.Context when training under torchrun
        self._train_module: Any = self.module  # what train_step calls: maybe compiled, maybe DDP
        self._graphed: Any = None  # a zoo.train.cuda_graph.GraphedTrainStep replaying steps
        self._compiling = False  # the next step compiles the module (torch.compile is lazy)
        self._last_auxiliary: torch.Tensor | None = None  # the last step's auxiliary loss
        # Losses read outputs only where targets count (zoo.train.model: optional members)
        self._at_positions = bool(getattr(module, "outputs_at_positions", False))

    def configure_engine(
        self,
        *,
        precision: str = "auto",
        compile: bool = False,
        cuda_graph: bool = False,
        distributed=None,
    ) -> None:
        """Speed options, set once before training: precision, torch.compile, whole-step
        CUDA graphs, and DDP.

        Following the PyTorch docs: compile the inner module, then wrap it in
        DistributedDataParallel; bf16 autocast needs no gradient scaler, fp16 does.
        Evaluation and generation run the plain module (no recompiles for their shapes).
        ``cuda_graph`` applies on CUDA without fp16 or DDP (whose steps decide on the host:
        the loss scale, the gradient all-reduce); elsewhere it changes nothing.
        """
        self.precision = resolve_precision(precision, self.device)
        if self.precision == "fp16":
            self.scaler = torch.amp.GradScaler(self.device.type)
        module: Any = self.module
        if compile:  # a compiled wrapper for training only; weights stay on self.module
            module, self._compiling = torch.compile(module), True
        if distributed is not None and distributed.active:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index or 0] if self.device.type == "cuda" else None
            module = DistributedDataParallel(module, device_ids=ids)  # broadcasts rank 0's weights
            self.distributed = distributed
            torch.manual_seed(torch.initial_seed() + distributed.rank)  # own dropout masks per rank
        self._train_module = module
        if (
            cuda_graph
            and self.device.type == "cuda"
            and self.scaler is None
            and self.distributed is None
        ):
            from zoo.train.cuda_graph import GraphedTrainStep

            self._graphed = GraphedTrainStep(self)
        if compile or self._graphed is not None:  # fixed shapes: no data-dependent count
            self._at_positions = False

    # -- protocol ----------------------------------------------------------------------
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.module.parameters())

    @property
    def fits_training_split(self) -> bool:
        """Whether the module is fitted on the training split before training
        (``zoo.train.model.Model``): it says so with ``fits_training_split = True``."""
        return getattr(self.module, "fits_training_split", False) is True

    def fit(self, inputs, targets, mask=None, vocabulary=None) -> None:
        """The module's ``fit(input_ids, attention_mask, targets, vocabulary)`` on the whole
        training split, without gradients."""
        if not self.fits_training_split:
            raise ZooError(
                f"{type(self.module).__name__} is not fitted before training "
                "(it has no fits_training_split = True)"
            )
        mask = np.ones_like(inputs) if mask is None else mask
        fit: Any = self.module.fit  # declared by the module (fits_training_split)
        with torch.no_grad():
            fit(self._tensor(inputs), self._tensor(mask), self._tensor(targets), vocabulary)

    def freeze(self, patterns: list[str]) -> list[str]:
        from zoo.train.freezing import freeze_matching

        return freeze_matching(self.module, patterns)

    def configure_optimizer(self, lr: float, weight_decay: float, betas=(0.9, 0.95)) -> None:
        params = [p for p in self.module.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        # The fused kernel does AdamW's whole update in one pass over each tensor.
        self.optimizer = torch.optim.AdamW(groups, lr=lr, betas=betas, fused=True)

    def train_step(self, inputs, targets, lr: float, mask=None, grad_clip: float = 1.0) -> float:
        if self._compiling:  # the first step compiles: its time is the compile phase's
            self._compiling = False
            with phase("compile"):
                return self.train_step(inputs, targets, lr, mask, grad_clip)
        if self._graphed is not None:
            return self._graphed.step(inputs, targets, lr, mask, grad_clip)
        return self._eager_step(
            self._tensor(inputs), self._tensor(targets), self._mask(mask), lr, grad_clip
        )

    def _eager_step(self, inputs, targets, mask, lr: float, grad_clip: float) -> float:
        self._set_lr(lr)
        loss, norm = self._loss_and_gradients(inputs, targets, mask, grad_clip)
        # One sync for both checks; a non-finite loss or gradient never reaches the weights.
        # (With fp16 gradient scaling, the scaler itself skips steps with inf gradients.)
        finite = torch.isfinite(loss.detach())
        if self.scaler is None:
            finite = finite & torch.isfinite(norm)
        if not bool(finite):
            self.optimizer.zero_grad(set_to_none=True)
            raise NonFiniteError(loss.item(), float(norm))
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if self.distributed is not None:
            return self._mean_over_ranks(loss.detach())
        return loss.item()

    def _set_lr(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            if torch.is_tensor(group["lr"]):  # read by a CUDA graph: refilled, not replaced
                group["lr"].fill_(lr)
            else:
                group["lr"] = lr

    def _loss_and_gradients(
        self, inputs, targets, mask, grad_clip: float, cache_casts: bool = True
    ):
        """Forward and backward of one batch, gradients clipped: the loss and the gradient
        norm, as tensors on the device (no synchronisation: a CUDA graph captures this)."""
        self.module.train()
        loss = self._task_loss(
            inputs, targets, mask, "mean", self._train_module, cache_casts, self.train_loss
        )
        self.optimizer.zero_grad(set_to_none=True)
        if not loss.requires_grad:  # nothing left to learn (fitted before training)
            return loss, torch.zeros((), device=loss.device)
        # The module's auxiliary loss (experts' load balancing) trains with the task's loss;
        # the task's loss alone is reported, comparable with any other model's.
        auxiliary = self._auxiliary_loss()
        total = loss if auxiliary is None else loss + auxiliary
        self._last_auxiliary = None if auxiliary is None else auxiliary.detach()
        if self.scaler is not None:
            self.scaler.scale(total).backward()
            self.scaler.unscale_(self.optimizer)  # clip the true gradients
        else:
            total.backward()
        if grad_clip:
            norm = torch.nn.utils.clip_grad_norm_(self.module.parameters(), grad_clip, foreach=True)
        else:
            norm = torch.nn.utils.get_total_norm(
                [p.grad for p in self.module.parameters() if p.grad is not None]
            )
        return loss, norm

    def _auxiliary_loss(self):
        """The module's ``auxiliary_loss()`` after its forward pass (zoo.train.model), or None."""
        auxiliary = getattr(self.module, "auxiliary_loss", None)
        return auxiliary() if callable(auxiliary) else None

    def step_figures(self) -> dict[str, float]:
        """The last training step's auxiliary loss as ``train_aux_loss``, for a module that
        has one (zoo.train.model); nothing otherwise."""
        if self._last_auxiliary is None:
            return {}
        return {"train_aux_loss": float(self._last_auxiliary)}

    def _mean_over_ranks(self, loss: torch.Tensor) -> float:
        """The batch loss averaged over ranks, so every rank logs (and stops on) one value.
        The gradients were already averaged by DDP; this is one small all-reduce."""
        import torch.distributed as dist

        total = loss.float().reshape(1).clone()
        dist.all_reduce(total)  # SUM: gloo has no AVG
        return total.item() / self.distributed.world_size

    def optimizer_state(self) -> tuple[dict[str, np.ndarray], dict]:
        """AdamW's tensors (moments, step counts) as arrays; its settings as JSON."""
        state = self.optimizer.state_dict()
        arrays, scalars = {}, {}
        for index, values in state["state"].items():
            for key, value in values.items():
                if torch.is_tensor(value):
                    arrays[f"{index}.{key}"] = value.detach().cpu().contiguous().numpy().copy()
                else:
                    scalars[f"{index}.{key}"] = value
        # A CUDA graph's learning rate is a tensor; the file keeps the number.
        groups = [
            {k: v.item() if torch.is_tensor(v) else v for k, v in group.items()}
            for group in state["param_groups"]
        ]
        meta = {"param_groups": groups, "scalars": scalars}
        if self.scaler is not None:  # fp16: the loss scale and its growth counter
            meta["scaler"] = self.scaler.state_dict()
        return arrays, meta

    def load_optimizer_state(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        state: dict[int, dict] = {}
        for name, value in [*arrays.items(), *meta["scalars"].items()]:
            index, _, key = name.partition(".")
            if isinstance(value, np.ndarray):
                value = torch.from_numpy(np.ascontiguousarray(value))
            state.setdefault(int(index), {})[key] = value
        groups = []
        for saved, current in zip(
            meta["param_groups"], self.optimizer.state_dict()["param_groups"]
        ):
            # JSON turned tuples (betas) into lists; give them back their type.
            groups.append(
                {k: tuple(v) if isinstance(current.get(k), tuple) else v for k, v in saved.items()}
            )
        if self._graphed is not None:
            self._graphed.reset()  # the graph read the tensors this replaces
        try:
            self.optimizer.load_state_dict({"state": state, "param_groups": groups})
            if self.scaler is not None and meta.get("scaler"):
                self.scaler.load_state_dict(meta["scaler"])
        except (ValueError, KeyError, RuntimeError) as exc:
            raise ZooError(f"optimizer state does not fit the model: {exc}") from None

    # inference_mode: no autograd bookkeeping at all (no_grad still tracks versions)
    @torch.inference_mode()
    def loss_sum(self, inputs, targets, mask=None) -> tuple[float, int]:
        self.module.eval()
        targets = self._tensor(targets)
        total = self._task_loss(self._tensor(inputs), targets, self._mask(mask), "sum")
        return float(total.item()), count_targets(targets)

    @torch.inference_mode()
    def loss_per_row(self, inputs, targets, mask=None) -> tuple[np.ndarray, np.ndarray]:
        """loss_sum of each row (zoo.train.model.Model): one forward pass, then the task's
        loss summed over each row's targets, so any declared loss works unchanged."""
        self.module.eval()
        targets = self._tensor(targets)
        outputs, scored = self._task_outputs(
            self.module, self._tensor(inputs), targets, self._mask(mask)
        )
        counts = row_counts(targets)
        if scored is targets:  # outputs for every row: [B, ...]
            pieces = list(zip(outputs.split(1), targets.split(1)))
        else:  # outputs at the counted positions only, row after row
            pieces = list(zip(outputs.split(counts.tolist()), scored.split(counts.tolist())))
        zero = torch.zeros((), device=outputs.device)
        sums = torch.stack(
            [
                self.loss(out.float(), target, "sum") if target.numel() else zero
                for out, target in pieces
            ]
        )
        return sums.double().cpu().numpy(), counts.cpu().numpy().astype(np.int64)

    @torch.inference_mode()
    def logits(self, inputs, mask=None) -> np.ndarray:
        self.module.eval()
        with self._autocast():
            out = self.module(self._tensor(inputs), self._mask(mask))
        return out.float().cpu().numpy()

    @property
    def decodes_incrementally(self) -> bool:
        """Whether the module has a key/value-cached ``decode`` (zoo.train.model.Model)."""
        return callable(getattr(self.module, "decode", None))

    @property
    def _decode(self) -> Any:
        """The module's own ``decode(inputs, cache, pads=None)``, which torch does not type."""
        return self.module.decode

    @torch.inference_mode()
    def start_decoding(self, inputs, pads=None):
        self.module.eval()
        pads = None if pads is None else self._tensor(pads).long()
        with self._decode_autocast():
            logits, cache = self._decode(self._tensor(inputs), None, pads)
        return logits.float().cpu().numpy(), cache

    @torch.inference_mode()
    def decode_step(self, next_ids, cache):
        with self._decode_autocast():
            logits, cache = self._decode(self._tensor(next_ids).reshape(-1, 1), cache)
        return logits.float().cpu().numpy(), cache

    @property
    def reorder_cache(self):
        """The module's ``reorder_cache(cache, rows)`` (zoo.train.model.Model), or None."""
        method = getattr(self.module, "reorder_cache", None)
        return (lambda c, rows: method(c, self._tensor(rows).long())) if callable(method) else None

    def _decode_autocast(self):
        # On the CPU, a step of one position is too small for bf16 to pay: autocast would
        # cast every weight matrix to bf16 on every step (measured 2x slower per linear).
        if self.device.type == "cpu":
            return contextlib.nullcontext()
        return self._autocast()

    def state_dict(self) -> dict[str, np.ndarray]:
        """Weights as NumPy arrays; a tied weight is kept once, under its first name."""
        seen, state = set(), {}
        for name, tensor in self.module.state_dict(keep_vars=False).items():
            if tensor.data_ptr() in seen:
                continue
            seen.add(tensor.data_ptr())
            state[name] = tensor.detach().cpu().contiguous().numpy().copy()
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}
        try:
            result = self.module.load_state_dict(tensors, strict=False)
        except RuntimeError as exc:  # shapes that do not match: a file for another model
            detail = " ".join(str(exc).split())[:300]
            raise ZooError(f"weights do not fit the model: {detail}") from None
        expected = set(self.module.state_dict())
        tied = {k for k in result.missing_keys if self._is_tied(k)}
        missing = set(result.missing_keys) - tied
        if missing or result.unexpected_keys:
            raise ZooError(
                f"weights do not fit the model: missing {sorted(missing)[:5]}, "
                f"unexpected {sorted(result.unexpected_keys)[:5]} "
                f"(model has {len(expected)} tensors)"
            )

    # -- helpers -----------------------------------------------------------------------
    def _is_tied(self, name: str) -> bool:
        target = self.module.state_dict()[name].data_ptr()
        return any(
            t.data_ptr() == target and n != name for n, t in self.module.state_dict().items()
        )

    def _tensor(self, array):
        if isinstance(array, torch.Tensor):
            return array.to(self.device, non_blocking=True)
        return torch.as_tensor(np.asarray(array), device=self.device)

    def _mask(self, mask):
        return None if mask is None else self._tensor(mask)

    def _autocast(self, cache_casts: bool = True):
        # A CUDA graph's capture must not keep autocast's cast weights (PyTorch's AMP docs).
        dtype = AUTOCAST_DTYPES.get(self.precision)
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=dtype, cache_enabled=cache_casts)

    def _task_loss(
        self, inputs, targets, mask, reduction, module=None, cache_casts=True, loss=None
    ):
        module, loss = self.module if module is None else module, loss or self.loss
        outputs, targets = self._task_outputs(module, inputs, targets, mask, cache_casts)
        return loss(outputs.float(), targets, reduction)

    def _task_outputs(self, module, inputs, targets, mask, cache_casts=True):
        """The module's outputs and the targets they answer: all of them, or where the module
        takes ``positions``, those not IGNORE_INDEX ([N, ...] and [N], row-major)."""
        with self._autocast(cache_casts):
            if self._at_positions and per_position(inputs, targets):
                counted = targets != IGNORE_INDEX
                return module(inputs, mask, positions=counted), targets[counted]
            return module(inputs, mask), targets


def row_counts(targets: torch.Tensor) -> torch.Tensor:
    """count_targets of each row of a batch of targets [B, ...]: [B]."""
    if targets.is_floating_point():
        return torch.full((len(targets),), targets[0].numel() if len(targets) else 0)
    return (targets != IGNORE_INDEX).reshape(len(targets), -1).sum(dim=1)


def per_position(inputs: torch.Tensor, targets: torch.Tensor) -> bool:
    """Whether targets are ids, one per input position (language models, masked LM)."""
    return targets.shape == inputs.shape and not targets.is_floating_point()
