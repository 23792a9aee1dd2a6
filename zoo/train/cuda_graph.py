"""Whole training steps replayed as one CUDA graph (the ``cuda_graph`` training setting).

On a GPU, a small model's step is bound by the host: Python, autograd and the launch of
hundreds of small kernels take longer than the GPU needs to run them (at nanoGPT's GPU
shape the H100 was busy about 7 of every 13 ms; docs/benchmarks.md). Capturing the
forward pass, the backward pass, gradient clipping and the AdamW update once, and replaying
that graph for every later batch of the same shape, takes the host out of the loop.

What the captured step keeps from the eager one:
- the same arithmetic, in the same order (the parity test compares losses and weights);
- a non-finite loss or gradient never reaches the weights: the check runs on the GPU and
  tells the fused AdamW kernel to skip its update (``found_inf``, as the gradient scaler
  does), and the step then raises ``NonFiniteError`` as the eager step would;
- the learning rate of every step: it lives in a GPU tensor the graph reads, refilled before
  each replay.

The first ``WARMUP_STEPS`` steps run eagerly on a side stream (the PyTorch recipe: the
optimizer's state and cuBLAS's workspaces exist before capture, and ``torch.compile``, if
on, has compiled). A batch of another shape than the captured one runs eagerly.
"""

from __future__ import annotations

import torch

from zoo.core.phases import phase
from zoo.train.model import NonFiniteError

WARMUP_STEPS = 3


def _shapes(*tensors) -> tuple:
    return tuple(None if t is None else (tuple(t.shape), t.dtype) for t in tensors)


class GraphedTrainStep:
    """Train steps of a ``zoo.train.torch_model.TorchModel`` on CUDA, captured once and replayed."""

    def __init__(self, model):
        self.model = model
        self.reset()

    def reset(self) -> None:
        """Forget the graph (the optimizer's state was replaced, say): capture again."""
        self.graph: torch.cuda.CUDAGraph | None = None
        self.key = None
        self.warm_steps = 0

    def step(self, inputs, targets, lr: float, mask, grad_clip: float) -> float:
        model = self.model
        x, y, m = model._tensor(inputs), model._tensor(targets), model._mask(mask)
        key = (_shapes(x, y, m), grad_clip)
        if self.graph is None and self.warm_steps < WARMUP_STEPS:
            self.warm_steps += 1
            side = torch.cuda.Stream(model.device)
            side.wait_stream(torch.cuda.current_stream(model.device))
            with torch.cuda.stream(side):
                loss = model._eager_step(x, y, m, lr, grad_clip)
            torch.cuda.current_stream(model.device).wait_stream(side)
            return loss
        if self.graph is None:
            with phase("compile"):  # the capture is the graph's one-off cost
                self.graph = self._capture(x, y, m, grad_clip, key)
        elif key != self.key:  # another shape (a last, shorter batch, say)
            return model._eager_step(x, y, m, lr, grad_clip)
        else:
            for static, batch in zip(self.batch, (x, y, m)):
                if static is not None:
                    static.copy_(batch, non_blocking=True)
        model._set_lr(lr)
        self.graph.replay()
        loss, norm, finite = self.report.tolist()  # the step's one synchronisation
        if not finite:
            raise NonFiniteError(loss, norm)
        return loss

    def _capture(self, x, y, m, grad_clip: float, key) -> torch.cuda.CUDAGraph:
        model, optimizer = self.model, self.model.optimizer
        self.batch = tuple(None if t is None else t.clone() for t in (x, y, m))
        for group in optimizer.param_groups:  # read by the graph; _set_lr refills it
            group["lr"] = torch.tensor(float(group["lr"]), device=model.device)
        optimizer.zero_grad(set_to_none=True)  # gradients are allocated by the capture
        graph = torch.cuda.CUDAGraph()
        for group in optimizer.param_groups:
            group["capturable"] = True  # only the capture checks it; fused AdamW's kernels
        try:
            with torch.cuda.graph(graph):
                loss, norm = model._loss_and_gradients(*self.batch, grad_clip, cache_casts=False)
                finite = torch.isfinite(loss.detach()) & torch.isfinite(norm)
                optimizer.found_inf = (~finite).float()  # skips the update on the GPU
                optimizer.step()
                self.report = torch.stack([loss.detach().float(), norm.float(), finite.float()])
        finally:
            optimizer.__dict__.pop("found_inf", None)
            for group in optimizer.param_groups:
                group["capturable"] = False
        self.key = key
        return graph
