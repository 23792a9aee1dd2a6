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

A module is called with ``input_ids`` [B, T] and ``attention_mask`` [B, T] (1 = real), or
None where every token is real (windows cut from running text), and returns what its task
declares (``zoo.Task.output``; ``zoo list pipelines`` shows each); the engine trains it
with the task's declared loss.

An auxiliary loss (optional): a module whose forward pass also computes a loss to train on
beside the task's (a mixture of experts' load-balancing loss) has ``auxiliary_loss()``,
returning that of its last forward pass as a scalar tensor (already weighted), or None.
``TorchModel`` adds it to the task's loss in every training step (never in evaluation),
reports the task's loss as the step's loss, and gives the auxiliary one through
``step_figures``, which the training loop records as ``train_aux_loss``.

Outputs only where targets count (optional): a module whose task has a target per position
may say ``outputs_at_positions = True`` and take a keyword ``positions``, a bool [B, T];
it then returns the outputs at those positions only, [N, ...] in row-major order. The
engine passes the positions whose targets are not ``IGNORE_INDEX`` when it computes a loss
(training and evaluation, not ``logits``), so a masked-LM head projects the 15% of positions
the loss reads instead of all of them. Compiled and CUDA-graphed steps call the module
without it, since the number of positions changes from batch to batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

IGNORE_INDEX = -100
"""A target with this value adds nothing to the loss (an unmasked position, padding)."""


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
    """The task's name."""
    vocab_size: int
    """The trained tokenizer's vocabulary size (the embedding's rows)."""
    num_classes: int | None = None
    """The number of classes a classifier's head predicts (None for tasks without classes)."""
    pad_id: int = 0
    """The padding token's id (padded positions have mask 0)."""

    @property
    def class_count(self) -> int:
        """``num_classes``, for a task that has classes (what a classifier's head is sized by)."""
        if not self.num_classes:
            raise ValueError(f"the {self.task} task gives a model no classes")
        return self.num_classes


class Model(Protocol):
    """What zoo trains, evaluates, saves and reloads. A ``torch.nn.Module`` that an
    architecture's ``build`` returns is wrapped into one by zoo (trained with the task's
    declared loss); a model written without torch, such as the ``numpy`` architecture,
    implements these methods itself. Inputs and outputs are NumPy arrays: ``inputs`` and
    ``targets`` token or class ids, ``mask`` 1 for real tokens and 0 for padding.

    The members marked *Optional* may be left out; zoo asks for one only through
    ``optional_member``, which knows the names declared here (``OPTIONAL_MEMBERS``)."""

    def num_parameters(self) -> int:
        """The number of trainable parameters (the ``params`` of a run's row)."""
        ...

    def configure_optimizer(self, lr: float, weight_decay: float, betas=(0.9, 0.95)) -> None:
        """Create the optimizer (AdamW for zoo's torch models) before the first
        ``train_step``; the learning rate of each step is passed to ``train_step``."""
        ...

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
        ...

    def loss_sum(
        self, inputs: np.ndarray, targets: np.ndarray, mask: np.ndarray | None = None
    ) -> tuple[float, int]:
        """Summed negative log-likelihood (nats) and number of targets, without training."""
        ...

    def loss_per_row(
        self, inputs: np.ndarray, targets: np.ndarray, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Optional. ``loss_sum`` row by row, in one pass: the summed negative log-likelihood
        (nats) of each row of the batch [B] (float64) and its number of targets [B]. A
        pipeline that scores its evaluation windows with it keeps one score per window, so
        comparisons count the evaluation set's sampling noise (``RunResult.per_example``);
        without it they count the seeds only. ``TorchModel`` has it for every torch module."""
        ...

    def logits(self, inputs: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """The model's output for a batch, without training: what its task declares
        (``zoo.plugin.Task.output``), e.g. [B, T, V] per-token logits or [B, C] class
        logits, as float32."""
        ...

    def state_dict(self) -> dict[str, np.ndarray]:
        """Every weight (and whatever ``fit`` fitted) by name, as arrays: what the run folder
        saves as ``model.safetensors``."""
        ...

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Load weights that ``state_dict`` returned (the same names and shapes)."""
        ...

    def optimizer_state(self) -> tuple[dict[str, np.ndarray], dict]:
        """Training state beyond the weights: (arrays for safetensors, JSON-able meta)."""
        ...

    def load_optimizer_state(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        """Restore what ``optimizer_state`` returned (after ``configure_optimizer``)."""
        ...

    def freeze(self, patterns: list[str]) -> list[str]:
        """Optional. Keep the weights whose names match any of the globs ``patterns`` as
        they are (before ``configure_optimizer``); returns the names frozen. Raises
        ``ZooError`` for a pattern that matches no weight."""
        ...

    def configure_engine(
        self,
        *,
        precision: str = "auto",
        compile: bool = False,
        cuda_graph: bool = False,
        distributed: Any = None,
    ) -> None:
        """Optional. Speed options, set once before training (from the pipeline's
        ``TrainConfig``: ``precision``, ``compile``, ``cuda_graph``; ``distributed`` under
        torchrun) and when a run is reloaded (its ``precision``). A model without it runs
        as it is."""
        ...

    def step_figures(self) -> dict[str, float]:
        """Optional. Figures of the last ``train_step`` beyond its loss (an auxiliary loss,
        say), by name; the training loop records them beside ``train_loss``."""
        ...

    @property
    def decodes_incrementally(self) -> bool:
        """Optional. True for a language model that generates without recomputing its whole
        context each token: it has ``start_decoding`` and ``decode_step`` (a class attribute
        ``decodes_incrementally = True`` will do)."""
        ...

    def start_decoding(
        self, inputs: np.ndarray, pads: np.ndarray | None = None
    ) -> tuple[np.ndarray, Any]:
        """Optional (with ``decodes_incrementally``). The logits [B, V] after each row's last
        token of ``inputs`` [B, T], and a cache; row b's first ``pads[b]`` positions are
        padding (left-padded prompts), which nothing attends to."""
        ...

    def decode_step(self, next_ids: np.ndarray, cache: Any) -> tuple[np.ndarray, Any]:
        """Optional (with ``decodes_incrementally``). The logits [B, V] after one more token
        per row (``next_ids`` [B]), and the cache. The cache never holds more than the
        context length: the caller starts again on a shorter context before it would."""
        ...

    def reorder_cache(self, cache: Any, rows: np.ndarray) -> Any:
        """Optional (with ``decodes_incrementally``). The cache of the rows ``rows`` [N]
        (indices into the cache's rows, repeats allowed), for beam search, which keeps the
        rows of its best hypotheses at each step. A torch module gets it through
        ``TorchModel`` by having ``reorder_cache(cache, rows)`` with ``rows`` a long tensor.
        Without it, beam search recomputes each hypothesis's whole prefix every step."""
        ...

    @property
    def fits_training_split(self) -> bool:
        """Optional. True for a model fitted on the whole training split before the training
        loop (it has ``fit``); pipelines never call ``fit`` on a model without it (a class
        attribute ``fits_training_split = True`` will do)."""
        ...

    def fit(
        self,
        inputs: np.ndarray,
        targets: np.ndarray,
        mask: np.ndarray | None = None,
        vocabulary: list[str] | None = None,
    ) -> None:
        """Optional (with ``fits_training_split``). Fit on the whole training split at once
        (inputs [N, T], targets [N]); ``vocabulary`` is each token id's text ("" for special
        tokens), for models that read inside tokens. What it fits is part of
        ``state_dict``."""
        ...


OPTIONAL_MEMBERS = (
    "loss_per_row",
    "configure_engine",
    "step_figures",
    "freeze",
    "decodes_incrementally",
    "start_decoding",
    "decode_step",
    "reorder_cache",
    "fits_training_split",
    "fit",
)


def optional_member(model: Any, name: str) -> Any:
    """The model's optional member ``name`` (one of ``OPTIONAL_MEMBERS``): the method, or the
    flag's value; None (False for a flag) when the model does not have it."""
    if name not in OPTIONAL_MEMBERS:
        raise ValueError(f"{name!r} is not an optional Model member")
    value = getattr(model, name, None)
    if name in ("decodes_incrementally", "fits_training_split"):
        return value is True
    return value if callable(value) else None
