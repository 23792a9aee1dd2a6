"""Seeds trained together (train_together): runs of one plan that differ only in their seed,
trained as one batched model with ``torch.func`` (``stack_module_state``, ``functional_call`` and
``vmap(..., randomness="different")``).

Each seed's run is an ordinary run (zoo.train.runner.execute) in a thread of its own, taking
turns with the others (zoo.train.turns): it builds its model from its own seed, draws its
own batches, validates, checkpoints, and records its run folder and store rows itself. Its
model is a StackMember: a TorchModel whose weights, once training starts, are views into
the stacked weights, and whose ``train_step`` waits for the other seeds' steps; then one
vmapped forward and backward trains every seed at once, with each seed's own loss, its
own gradient clipping (by its own gradient norm) and AdamW on the stacked tensors (AdamW is
element-wise, so one optimizer over stacked tensors is each seed's own optimizer).

What differs from training each seed alone: dropout masks (drawn by the batched step from a
stream of the stack's own) and the order of floating-point sums in batched kernels. The
initial weights and every seed's data order are those of the run alone.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from typing import Any

import numpy as np
import torch

from zoo.errors import ZooError
from zoo.train.job import RunOptions
from zoo.train.model import IGNORE_INDEX, NonFiniteError
from zoo.train.precision import AUTOCAST_DTYPES, resolve_precision
from zoo.train.torch_model import TorchModel
from zoo.train.turns import Turns


class SeedStack:
    """The batched model of the seeds trained together, and the step that trains them."""

    def __init__(self, seed: int = 0):
        self.turns = Turns(self._step, seed)
        self.members: dict[int, StackMember] = {}  # slot -> its run's model
        self.settings: dict[int, tuple] = {}  # slot -> (weight decay, betas)
        self.params: dict[str, torch.Tensor] | None = None  # name -> [K, ...] (a leaf)
        self.buffers: dict[str, torch.Tensor] = {}  # name -> [K, ...], or one shared copy
        self.shared_buffers = True
        self.position: dict[int, int] = {}  # slot -> its index in the stacked tensors
        self.optimizer: Any = None
        self.base: Any = None  # a copy of one member's module, which functional_call runs
        self.linear_biases: set[str] = set()  # cast as autocast casts them (_step)

    def slot(self, slot: int) -> StackSlot:
        return StackSlot(self, slot)

    def join(self, slot: int, model) -> StackMember:
        """Run ``slot``'s model as a member of the stack."""
        if not isinstance(model, TorchModel):
            raise ZooError(
                f"seeds can be trained together only as torch modules, not as a "
                f"{type(model).__name__}"
            )
        if model.fits_training_split:
            raise ZooError("a model fitted on the training split cannot be trained stacked")
        member = StackMember(
            model.module, str(model.device), loss=model.loss, train_loss=model.train_loss
        )
        member.stack, member.slot = self, slot
        self.members[slot] = member
        return member

    # -- the batched model -----------------------------------------------------------------
    def _build(self) -> None:
        """Stack every member's weights (as each was built from its seed) and point each
        member's parameters at its slice, so validation and saving see the trained ones."""
        from torch.func import stack_module_state

        slots = sorted(self.members)
        modules = [self.members[s].module for s in slots]
        shapes = {tuple((n, tuple(p.shape)) for n, p in m.state_dict().items()) for m in modules}
        if len(shapes) > 1:
            raise ZooError("the stacked seeds' models differ in their tensors' names or shapes")
        self.position = {slot: i for i, slot in enumerate(slots)}
        self.base = copy.deepcopy(modules[0])
        self.linear_biases = {
            f"{name}.bias"
            for name, module in self.base.named_modules()
            if isinstance(module, torch.nn.Linear) and module.bias is not None
        }
        params, buffers = stack_module_state(modules)
        self.params = params
        for i, module in enumerate(modules):
            for name, p in module.named_parameters():
                p.data = params[name].detach()[i]
        self.shared_buffers = all(  # constants (a position table): one copy, not batched
            torch.equal(b, dict(m.named_buffers())[name])
            for name, b in modules[0].named_buffers()
            for m in modules[1:]
        )
        if self.shared_buffers:
            self.buffers = dict(modules[0].named_buffers())
        else:
            self.buffers = buffers
            for i, module in enumerate(modules):
                for name, b in module.named_buffers():
                    b.data = buffers[name][i]
        decay_settings = {self.settings[s] for s in slots if s in self.settings}
        if len(decay_settings) != 1:
            raise ZooError("the stacked seeds' optimizers are configured differently")
        weight_decay, betas = decay_settings.pop()
        trained = [p for p in params.values() if p.requires_grad]
        groups = [  # as TorchModel: decay on each seed's matrices only
            {"params": [p for p in trained if p.dim() >= 3], "weight_decay": weight_decay},
            {"params": [p for p in trained if p.dim() < 3], "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(groups, lr=0.0, betas=betas, fused=True)

    @property
    def _stacked(self) -> dict[str, torch.Tensor]:
        """The seeds' weights, stacked [K, ...] by ``_build`` at the first step."""
        if self.params is None:
            raise RuntimeError("the seeds' weights are stacked at the first step")
        return self.params

    def _step(self, requests: dict[int, tuple]) -> dict[int, Any]:
        """One optimizer step for every seed that asked: (inputs, targets, mask, lr, clip)."""
        from torch.func import functional_call, vmap

        if self.params is None:
            self._build()
        stacked = self._stacked
        slots = sorted(requests)
        lrs = {requests[s][3] for s in slots}
        clips = {requests[s][4] for s in slots}
        if len(lrs) > 1 or len(clips) > 1:
            raise ZooError("the stacked seeds asked for different learning rates or clipping")
        lr, clip = lrs.pop(), clips.pop()
        first = self.members[slots[0]]
        inputs, targets, mask, counts = _batched([requests[s][:3] for s in slots], first.device)
        every = len(slots) == len(self.position) and all(
            self.position[s] == i for i, s in enumerate(slots)
        )
        params, buffers = stacked, self.buffers
        if not every:  # some seeds have stopped: train the others only
            index = torch.tensor([self.position[s] for s in slots], device=first.device)
            params = {n: p.index_select(0, index) for n, p in stacked.items()}
            if not self.shared_buffers:
                buffers = {n: b.index_select(0, index) for n, b in self.buffers.items()}
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.base.train()

        def forward(p, b, x, m):
            return functional_call(self.base, (p, b), (x, m))

        batched = vmap(
            forward,
            in_dims=(0, None if self.shared_buffers else 0, 0, None if mask is None else 0),
            randomness="different",
        )
        with first._autocast():
            outputs = batched(self._as_autocast_casts(params, first), buffers, inputs, mask)
        losses = torch.stack(  # each seed's loss over its own rows, not the padding rows
            [
                first.train_loss(outputs[i][: counts[i]].float(), targets[i], "mean")
                for i in range(len(slots))
            ]
        )
        self.optimizer.zero_grad(set_to_none=True)
        losses.sum().backward()
        norms = _clip(stacked, clip)
        norms = norms[[self.position[s] for s in slots]]
        finite = (torch.isfinite(losses) & torch.isfinite(norms)).tolist()
        values, norm_values = losses.detach().tolist(), norms.tolist()
        answers: dict[int, Any] = {}
        for i, slot in enumerate(slots):
            if finite[i]:
                answers[slot] = values[i]
            else:  # that seed's run stops before the step; the others go on
                answers[slot] = NonFiniteError(values[i], norm_values[i])
                for p in stacked.values():
                    if p.grad is not None:
                        p.grad[self.position[slot]].zero_()
        if any(finite):
            self.optimizer.step()
        return answers

    def _as_autocast_casts(self, params: dict, member) -> dict:
        """The weights as autocast casts them for a linear layer run alone: under vmap it
        multiplies in the low precision but adds the bias after, in fp32, so every linear's
        output (and what follows it) would be fp32 where the run alone has bf16. Casting the
        biases keeps the stacked step's arithmetic that of a run alone, and spares the casts
        of fp32 activations back to bf16 at the next linear."""
        dtype = AUTOCAST_DTYPES.get(member.precision)
        if dtype is None:
            return params
        return {n: p.to(dtype) if n in self.linear_biases else p for n, p in params.items()}

    def optimizer_state(self, slot: int) -> tuple[dict[str, np.ndarray], dict]:
        """One seed's AdamW state, laid out as TorchModel.optimizer_state lays out a model
        trained alone's (so the run resumes alone)."""
        if self.optimizer is None:
            return {}, {"param_groups": [], "scalars": {}}
        state = self.optimizer.state_dict()
        position = self.position[slot]
        arrays = {}
        for index, values in state["state"].items():
            for key, value in values.items():
                one = value[position] if value.dim() > 0 else value
                arrays[f"{index}.{key}"] = one.detach().cpu().contiguous().numpy().copy()
        return arrays, {"param_groups": state["param_groups"], "scalars": {}}


class StackSlot:
    """What a stacked run's Job holds: its slot in the stack."""

    def __init__(self, stack: SeedStack, slot: int):
        self.stack, self.slot = stack, slot

    def join(self, model):
        return self.stack.join(self.slot, model)


class StackMember(TorchModel):
    """One seed's model in a stack: evaluates and saves like a TorchModel; trains through
    the stack's batched step."""

    stack: SeedStack
    slot: int

    def configure_engine(
        self, *, precision="auto", compile=False, cuda_graph=False, distributed=None
    ):
        if compile or cuda_graph or (distributed is not None and distributed.active):
            raise ZooError(
                "seeds trained together run eager on one process: no compile, "
                "cuda_graph or torchrun"
            )
        self.precision = resolve_precision(precision, self.device)

    def configure_optimizer(self, lr: float, weight_decay: float, betas=(0.9, 0.95)) -> None:
        self.stack.settings[self.slot] = (weight_decay, tuple(betas))

    def freeze(self, patterns: list[str]) -> list[str]:
        # the batched step trains stacked copies of every weight, whatever the member's flags
        raise ZooError("seeds trained together train every weight: freeze needs runs trained alone")

    def train_step(self, inputs, targets, lr: float, mask=None, grad_clip: float = 1.0) -> float:
        return self.stack.turns.wait_for_step(self.slot, (inputs, targets, mask, lr, grad_clip))

    def optimizer_state(self):
        return self.stack.optimizer_state(self.slot)

    def load_optimizer_state(self, arrays, meta) -> None:
        raise ZooError("a run trained with other seeds resumes alone, not in a stack")


def _clip(params: dict[str, torch.Tensor], clip: float) -> torch.Tensor:
    """Each seed's gradient norm [K] over the stacked ``params``; with ``clip``, each seed's
    gradients scaled down to it as torch.nn.utils.clip_grad_norm_ scales one model's."""
    grads = [p.grad for p in params.values() if p.grad is not None]
    count = next(iter(params.values())).shape[0]
    squares = torch.zeros(count, device=grads[0].device if grads else "cpu")
    for g in grads:
        squares += g.float().pow(2).reshape(count, -1).sum(1)
    norms = squares.sqrt()
    if clip:
        scale = (clip / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.to(g.dtype).reshape(-1, *([1] * (g.dim() - 1))))
    return norms


def _batched(batches: list[tuple], device) -> tuple[torch.Tensor, list, torch.Tensor | None, list]:
    """Each seed's batch (inputs, targets, mask) as one [K, B, T] tensor of inputs and mask,
    the list of targets, and each seed's count of rows. Rows are right-padded to the longest
    T (padding masked out, its targets ignored); a seed with fewer rows (a partial batch at
    the end of an epoch) repeats its first row to the largest count, and its loss is taken
    over its own rows only, so the repeated rows add nothing to its gradient."""
    inputs = [np.asarray(b[0]) for b in batches]
    targets = [np.asarray(b[1]) for b in batches]
    masks = [None if b[2] is None else np.asarray(b[2]) for b in batches]
    counts = [len(x) for x in inputs]
    if len({x.shape[1:] for x in inputs}) > 1:
        if inputs[0].ndim != 2:
            raise ZooError("the stacked seeds' batches differ in shape; train them alone")
        width = max(x.shape[1] for x in inputs)
        for i, x in enumerate(inputs):
            more = width - x.shape[1]
            mask = masks[i]
            mask = np.ones_like(x) if mask is None else mask
            if targets[i].shape == x.shape:  # a target per token: padding counts for nothing
                targets[i] = np.pad(targets[i], ((0, 0), (0, more)), constant_values=IGNORE_INDEX)
            inputs[i] = np.pad(x, ((0, 0), (0, more)))
            masks[i] = np.pad(mask, ((0, 0), (0, more)))
    if any(m is None for m in masks) and not all(m is None for m in masks):
        masks = [np.ones_like(x) if m is None else m for x, m in zip(inputs, masks)]
    rows = max(counts)
    for i, count in enumerate(counts):
        if count < rows:  # real rows repeated: finite outputs, and no part of the loss
            extra = np.repeat(inputs[i][:1], rows - count, axis=0)
            inputs[i] = np.concatenate([inputs[i], extra])
            mask = masks[i]
            if mask is not None:
                masks[i] = np.concatenate([mask, np.repeat(mask[:1], rows - count, 0)])
    present = [m for m in masks if m is not None]  # every seed's mask, or none
    stacked = torch.as_tensor(np.stack(present), device=device) if present else None
    return (
        torch.as_tensor(np.stack(inputs), device=device),
        [torch.as_tensor(t, device=device) for t in targets],
        stacked,
        counts,
    )


def train_together(plans, run_ids, options: RunOptions, *, zoo=None, stores=None, extras=None):
    """Train ``plans`` (one plan at several seeds) as one stack, each recorded as its own
    run with the id given and the ``options`` (each progress label naming its seed);
    ``stores`` and ``extras`` are each run's, as ``execute`` takes them. Each run's
    ("result", summary) or ("error", exception), in order."""
    from zoo.core.loading import get_zoo
    from zoo.data import datasets as zoo_data
    from zoo.train.runner import execute

    zoo = zoo or get_zoo()
    seeds = [plan.seed for plan in plans]
    first = plans[0]
    if first.loaded is None:  # one dataset for every seed, loaded once
        try:
            dataset = zoo_data.load(
                first.dataset_ref, zoo, quiet=options.quiet, held_out=tuple(first.held_out)
            )
        except Exception as exc:
            return [("error", exc)] * len(plans)
        plans = [dataclasses.replace(p, loaded=dataset) for p in plans]
    digest = hashlib.sha256(repr(sorted(seeds)).encode()).hexdigest()
    stack = SeedStack(seed=int(digest[:8], 16))  # the batched step's dropout stream
    record = {"seeds": seeds, "runs": list(run_ids)}  # in each run's provenance
    extras = extras or [None] * len(plans)

    def one(slot):
        label = options.label and f"{options.label}, seed {plans[slot].seed}"
        return lambda: execute(
            plans[slot],
            dataclasses.replace(options, label=label),
            zoo=zoo,
            run_id=run_ids[slot],
            store=None if stores is None else stores[slot],
            extra={**(extras[slot] or {}), "stack": record},
            stack=stack.slot(slot),
        )

    return stack.turns.run([one(slot) for slot in range(len(plans))])
