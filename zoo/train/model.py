"""The model protocol pipelines train against, whatever framework computes the model.

An architecture's target is ``build(config, spec) -> model``. It returns either a
``torch.nn.Module`` (wrapped by ``zoo.train.torch_model.TorchModel``, which owns the optimizer) or any
object with the methods of ``Model`` below (the NumPy reference does this).

Resume: a model that is to be checkpointed also has ``optimizer_state()`` and
``load_optimizer_state(arrays, meta)`` (below). They carry everything beyond the weights that
``train_step`` depends on: optimizer moments and step counts, and any random generator the
model owns (dropout masks). Arrays go to safetensors and meta to JSON, so nothing is pickled;
restoring them after ``configure_optimizer`` must make the next steps bit-identical.

Divergence: ``train_step`` checks the loss and the gradient norm before the optimizer step;
if either is not finite it raises ``NonFiniteError`` and leaves the weights untouched.

Incremental decoding (optional): a language model that can generate without recomputing
its whole context each token says so with ``decodes_incrementally = True`` and has
``start_decoding`` and ``decode_step`` (below). Pipelines fall back to ``logits`` on the
whole context when a model lacks them. A torch module gets them through ``TorchModel`` by
having ``decode(input_ids, cache, pads) -> (logits [B, V], cache)`` (plugins/decoder).

Fitting before training (optional): a model fitted on the whole training split before the
training loop (NBSVM's regressions, a count-based model's statistics) says so with
``fits_training_split = True`` and has ``fit`` (below); pipelines call it once, after
building the model and before training, and never on a model without the flag. What it fits
is part of ``state_dict``. A torch module gets both through ``TorchModel`` by having the
attribute and ``fit(input_ids, attention_mask, targets, vocabulary)`` (plugins/nbsvm). A
model whose fit leaves nothing to learn keeps no trainable parameters: ``train_step`` then
measures the loss and changes nothing.

A module is called with ``input_ids`` [B, T] and ``attention_mask`` [B, T] (1 = real) and
returns what its task declares (``zoo.Task.output``; ``zoo list pipelines`` shows each);
the engine trains it with the task's declared loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

IGNORE_INDEX = -100  # targets with this value add nothing to the loss


class NonFiniteError(ArithmeticError):
    """The loss or the gradient norm is NaN or infinite; the optimizer step was not taken."""

    def __init__(self, loss: float, grad_norm: float | None = None):
        what = f"loss {loss}" + (f", gradient norm {grad_norm}" if grad_norm is not None else "")
        super().__init__(f"non-finite {what}")
        self.loss, self.grad_norm = loss, grad_norm


@dataclass(frozen=True)
class TaskSpec:
    """What a model must fit: the task, the vocabulary, and the classes if any."""

    task: str
    vocab_size: int
    num_classes: int | None = None
    pad_id: int = 0


@runtime_checkable
class Model(Protocol):
    """What zoo trains, evaluates, saves and reloads. A ``torch.nn.Module`` that an
    architecture's ``build`` returns is wrapped into one by zoo (trained with the task's
    declared loss); a model written without torch, such as the ``numpy`` architecture,
    implements these methods itself. Inputs and outputs are NumPy arrays: ``inputs`` and
    ``targets`` token or class ids, ``mask`` 1 for real tokens and 0 for padding.
    ``optimizer_state`` and ``load_optimizer_state`` are needed for checkpoints; incremental
    decoding (``start_decoding``, ``decode_step``) is optional, see below."""

    def num_parameters(self) -> int: ...

    def configure_optimizer(self, lr: float, weight_decay: float, betas=(0.9, 0.95)) -> None: ...

    def train_step(
        self,
        inputs: np.ndarray,
        targets: np.ndarray,
        lr: float,
        mask: np.ndarray | None = None,
        grad_clip: float = 1.0,
    ) -> float:
        """One optimizer step on a batch; returns the mean loss (nats per target).

        Raises ``NonFiniteError`` without stepping if the loss or gradient norm is not finite."""

    def loss_sum(
        self, inputs: np.ndarray, targets: np.ndarray, mask: np.ndarray | None = None
    ) -> tuple[float, int]:
        """Summed negative log-likelihood (nats) and number of targets, without training."""

    def logits(self, inputs: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray: ...

    def state_dict(self) -> dict[str, np.ndarray]: ...

    # Incremental decoding, optional (see the module docstring):
    #   start_decoding(inputs [B, T], pads [B] | None) -> (logits [B, V], cache)
    #       the logits after each row's last token; row b's first pads[b] positions are
    #       padding (left-padded prompts), which nothing attends to;
    #   decode_step(next_ids [B], cache) -> (logits [B, V], cache)
    #       one more token per row. The cache never holds more than block_size positions:
    #       the caller starts again on a shorter context before it would.

    # Fitting before training, optional (see the module docstring):
    #   fits_training_split: bool = True
    #   fit(inputs [N, T], targets [N], mask [N, T] | None, vocabulary: list[str] | None)
    #       the whole training split at once; vocabulary is each token id's text ("" for
    #       special tokens), for models that read inside tokens.

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None: ...

    def optimizer_state(self) -> tuple[dict[str, np.ndarray], dict]:
        """Training state beyond the weights: (arrays for safetensors, JSON-able meta)."""

    def load_optimizer_state(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        """Restore what ``optimizer_state`` returned (after ``configure_optimizer``)."""
