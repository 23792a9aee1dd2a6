"""The one training loop every pipeline uses: budgets (steps or wall time), warm-up and
cosine decay, a progress bar, periodic validation, a divergence stop, keeping the best
weights by a validation score (``keep_best``) and stopping when it no longer improves
(``patience``), and checkpoints to resume from (zoo/checkpoint.py). Pipelines supply how to
draw a batch, how to validate and which validation figure is the score.

Resume is bit-identical on the CPU only if every random stream the pipeline uses is one the
loop checkpoints: the batch generator handed to ``next_batch``, the global Python, NumPy and
torch generators, and the NumPy generators a pipeline passes as ``rngs`` (an evaluation
sampler held in a closure, say). Any other state the batches depend on (a queue of the
epoch's remaining batches) goes in ``state``: objects with ``state_dict()`` (JSON) and
``load_state_dict()``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from zoo.core.phases import phase
from zoo.errors import ContractBroken, ZooError
from zoo.train import distributed
from zoo.train.job import Job, TrainConfig, runner_state
from zoo.train.model import NonFiniteError, optional_member


class Diverged(Exception):
    """The loss or gradient became non-finite; training stopped before the optimizer step.

    ``checkpoint_step`` is the step of the last good checkpoint, which is kept (or None)."""

    def __init__(
        self,
        step: int,
        loss: float,
        grad_norm: float | None = None,
        checkpoint_step: int | None = None,
    ):
        what = f"loss {loss}" + (f", gradient norm {grad_norm}" if grad_norm is not None else "")
        super().__init__(
            f"training diverged at step {step} ({what}); stopped before the optimizer step"
        )
        self.step, self.loss, self.grad_norm = step, loss, grad_norm
        self.checkpoint_step = checkpoint_step


def warmup_of(cfg: TrainConfig, total: int) -> int:
    """The warm-up's steps: ``warmup_fraction`` of the budget ``total`` where set, else
    ``warmup_steps``."""
    fraction = getattr(cfg, "warmup_fraction", None)
    return cfg.warmup_steps if fraction is None else round(fraction * total)


def lr_at(step: int, cfg: TrainConfig, total: int, progress: float | None = None) -> float:
    """Linear warm-up, then cosine decay from lr to min_lr over the remaining steps, or, where
    ``progress`` is given, over that share (0 to 1) of the decay's span."""
    warmup = warmup_of(cfg, total)
    if step < warmup:
        return cfg.lr * (step + 1) / warmup
    if progress is None:
        progress = (step - warmup) / max(1, total - warmup)
    progress = min(1.0, progress)
    return cfg.min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)


def warmup_outlasts_training(cfg) -> str | None:
    """Why a step budget that ends inside the learning-rate warm-up trains poorly (the rate
    never reaches ``lr``, nor decays), or None when the schedule runs its course."""
    steps = getattr(cfg, "steps", None)
    if getattr(cfg, "time", None) is not None or not steps:
        return None
    warmup = warmup_of(cfg, steps)
    if not warmup or steps > warmup:
        return None
    shorter = f"warmup_steps={max(1, steps // 10)}"  # (a warmup_fraction is below 1)
    return (
        f"training ends at step {steps:,}, inside the {warmup:,}-step learning-rate "
        f"warm-up: the rate climbs only to {cfg.lr * steps / warmup:.2g} of lr {cfg.lr:g} and "
        f"never decays; train longer or shorten the warm-up (--set {shorter})"
    )


@dataclass
class Batch:
    """One training batch, as a pipeline's ``next_batch(rng)`` returns it to ``train``:
    ``inputs`` [B, T] token ids, ``targets`` as the task's loss takes them (next tokens
    [B, T], class ids [B], ...), ``mask`` [B, T] (1 = real token) or None, and ``tokens``,
    the real tokens in the batch, for the throughput figure."""

    inputs: np.ndarray
    """Token ids [B, T] (NumPy)."""
    targets: np.ndarray
    """What the task's loss scores the output against: token ids [B, T], class ids [B], ..."""
    mask: np.ndarray | None = None
    """1 for real tokens, 0 for padding [B, T] (None: no padding)."""
    tokens: int = 0
    """Tokens in the batch, for throughput."""


@dataclass
class TrainingOutcome:
    """How training went, as ``train`` returns it (API 1.1: ``TrainResult``): the steps
    trained, the last training loss, the tokens seen, the time spent (validation included,
    and its part), the best validation's score and step (and, with ``average_best``, the
    runners-up averaged), the curve, and whether patience stopped the run early.
    ``tokens_per_s`` is training tokens per second of optimizer steps, validation excluded."""

    steps: int = 0
    """Optimizer steps taken (a resumed run counts its earlier ones)."""
    train_loss: float = float("nan")
    """The mean training loss of the last steps (nats per target)."""
    tokens: int = 0
    """Tokens trained on (the batches' ``tokens``)."""
    train_time: float = 0.0
    """Wall time of the loop, validation estimates included."""
    validate_time: float = 0.0
    """The part of it spent in validation estimates."""
    last_validate_time: float = 0.0
    """The newest estimate's duration."""
    best_score: float | None = None
    """The best periodic validation figure (the task's curve metric), if any."""
    best_step: int | None = None
    """The step of ``best_score``."""
    best_state: dict | None = None
    """The best weights, when the loop keeps them."""
    runners_up: list = field(default_factory=list)
    """With average_best = k > 1: the next k - 1 best validations, best first, as (score, step,
    weights); the reported weights are the mean of these and best_state."""
    curve: list = field(default_factory=list)
    """Every periodic validation: ``step`` and its figures."""
    stopped_early: bool = False
    """Patience ran out before the budget."""
    stopped: str | None = None
    """Set when the job's per-validation callback stopped training: the status it gave
    ("pruned", say) and the step it stopped at."""
    stopped_step: int | None = None
    """The step at which training stopped early, if it did."""
    decay_start: float | None = None
    """With ``schedule = "time"``: the training seconds at which the warm-up ended and the
    decay began."""

    @property
    def tokens_per_s(self) -> float:
        """Training throughput: tokens over the time spent in optimizer steps."""
        stepping = self.train_time - self.validate_time
        return self.tokens / stepping if stepping > 0 else 0.0


def _configure(model, cfg, ranks) -> None:
    """The model's engine (precision, compilation, CUDA graphs, ranks) and optimizer."""
    configure = optional_member(model, "configure_engine")
    if configure is not None:
        configure(
            precision=getattr(cfg, "precision", "auto"),
            compile=getattr(cfg, "compile", False),
            cuda_graph=getattr(cfg, "cuda_graph", False),
            distributed=ranks,
        )
    elif ranks.active:
        raise ZooError("torchrun training needs a torch model; this architecture has none")
    model.configure_optimizer(cfg.lr, cfg.weight_decay, betas=(cfg.beta1, cfg.beta2))


def train(
    job: Job,
    model,
    next_batch: Callable[[np.random.Generator], Batch],
    *,
    validate: Callable[[], dict] | None = None,
    score_key: str | None = None,
    higher_is_better: bool = True,
    rngs: dict[str, np.random.Generator] | None = None,
    state: dict | None = None,
) -> TrainingOutcome:
    """Run the optimizer until the step or time budget is spent.

    ``validate()`` returns a dict of validation figures, logged every ``eval_interval``
    steps and at the end. ``score_key`` names the figure that decides which validation is
    best (``best_step``); with ``keep_best`` (the default) the loop keeps those weights and
    puts them back into the model at the end, so the caller's final evaluation reports
    them; with ``patience`` it stops after that many validations without improvement.
    ``rngs`` are further NumPy generators the pipeline draws from (checkpointed and
    restored in place), ``state`` further objects with ``state_dict()``/``load_state_dict()``.
    With a checkpoint to resume (the runner's ``runner_state(job).resume_from``), the loop
    continues it.

    The runner's ``on_validate(step, validation, figures)``, when set, sees every periodic validation
    (``validation`` counts them from 1, resumed runs included); it returns None to go on,
    or a status word ("pruned", say) to stop training there: the loop keeps the status and
    step in ``result.stopped`` and in the runner's state for the run's record.
    """
    from zoo.train.checkpoints import Checkpointer

    cfg = job.train_config
    ranks = distributed.current()
    rng = np.random.default_rng(job.seed + ranks.rank)  # each rank draws its own batches
    _configure(model, cfg, ranks)
    step_figures = optional_member(model, "step_figures")
    _warn_of_a_short_run(job)
    result = TrainingOutcome()
    checkpoints = Checkpointer(job, model, result, {"batches": rng, **(rngs or {})}, state)
    start = time.perf_counter() - checkpoints.restore()
    with job.progress(cfg.steps, "train") as progress, phase("train"):
        progress.skip(result.steps)
        while result.steps < cfg.steps:
            if _stop_for_patience(result, cfg):  # resumed from the checkpoint of the last one
                break
            budget = _time_budget(cfg, result)
            # The first step always runs: a budget too small for one step still trains one,
            # instead of recording a finished run with no steps and no loss.
            if budget is not None and result.steps > 0 and _out_of_time(start, budget, ranks):
                break
            lr = _learning_rate(cfg, result, start)
            batch = next_batch(rng)
            loss = _optimizer_step(model, batch, lr, cfg.grad_clip, result, checkpoints.last_step)
            result.tokens += batch.tokens * ranks.world_size  # every rank trained on a batch
            elapsed = time.perf_counter() - start
            record = {"step": result.steps, "train_loss": loss, "lr": lr, "elapsed": elapsed}
            if step_figures is not None:  # an auxiliary loss, say: a curve of its own
                record.update(step_figures())
            last = result.steps == cfg.steps or (budget is not None and elapsed >= budget)
            figures = None
            if validate is not None and (last or _validation_due(cfg, result.steps)):
                figures = _validate(validate, result, score_key, higher_is_better, model, cfg)
                record.update(figures)
            job.run.log(record)
            if figures is not None and _told_to_stop(job, result, figures):
                break
            checkpoints.maybe_save(time.perf_counter() - start)
            elapsed = time.perf_counter() - start  # validation and checkpoint included
            stepping = elapsed - result.validate_time  # throughput without validation
            progress.step(
                result.steps, loss, lr, result.tokens / max(stepping, 1e-9), elapsed, figures
            )
            if _stop_for_patience(result, cfg):
                break
    result.train_time = time.perf_counter() - start
    if validate is not None and (not result.curve or result.curve[-1]["step"] != result.steps):
        figures = _validate(validate, result, score_key, higher_is_better, model, cfg)
        job.run.log({"step": result.steps, **figures})
    _load_reported_weights(model, result)
    return result


def _warn_of_a_short_run(job: Job) -> None:
    """Say, as a new run starts (after every refusal), that its warm-up outlasts training."""
    short = warmup_outlasts_training(job.train_config)
    if short and runner_state(job).resume_from is None:
        job.say(f"zoo: warning: {short}")


def _learning_rate(cfg, result: TrainingOutcome, start: float) -> float:
    """The rate for the next step of a loop that started at ``start``. With ``schedule =
    "time"`` the decay's progress is the share of the time budget spent since the warm-up
    ended (the budget less the closing validation's reserve, so the rate reaches min_lr as
    the loop stops); only then is the clock read."""
    if getattr(cfg, "schedule", "steps") != "time" or result.steps < warmup_of(cfg, cfg.steps):
        return lr_at(result.steps, cfg, cfg.steps)
    elapsed = time.perf_counter() - start
    if result.decay_start is None:
        result.decay_start = elapsed
    span = (_time_budget(cfg, result) or 0.0) - result.decay_start  # set: schedule=time needs it
    progress = (elapsed - result.decay_start) / span if span > 0 else 1.0
    return lr_at(result.steps, cfg, cfg.steps, progress=progress)


def _time_budget(cfg, result: TrainingOutcome) -> float | None:
    """The seconds training may take, if ``time`` is set. It covers the validation that
    closes the curve too: the last estimate's duration is kept in reserve, so the loop ends
    within the budget."""
    return None if cfg.time is None else cfg.time - result.last_validate_time


def _stop_for_patience(result: TrainingOutcome, cfg) -> bool:
    """Whether patience is spent; if so, the result says training stopped early."""
    if not _patience_spent(result, cfg):
        return False
    result.stopped_early = True
    return True


def _optimizer_step(model, batch: Batch, lr: float, grad_clip: float, result, checkpoint_step):
    """One optimizer step on ``batch``, counted in ``result``: its training loss. A loss or
    gradient that is not finite stops the run (``Diverged``, naming the last checkpoint)."""
    try:
        loss = model.train_step(batch.inputs, batch.targets, lr, batch.mask, grad_clip)
    except NonFiniteError as exc:
        raise Diverged(result.steps + 1, exc.loss, exc.grad_norm, checkpoint_step) from None
    if not math.isfinite(loss):
        raise Diverged(result.steps + 1, loss, None, checkpoint_step)
    result.steps += 1
    result.train_loss = loss
    return loss


def _validation_due(cfg, step: int) -> bool:
    """Whether ``step`` ends an ``eval_interval`` (the last step always validates)."""
    every = cfg.eval_interval
    return bool(every) and step % every == 0


def _load_reported_weights(model, result: TrainingOutcome) -> None:
    """Put the weights the final evaluation reports into the model: the best validation's,
    or the mean of the best few (``average_best``); the last step's are there already."""
    if result.best_state is None:
        return
    if result.runners_up:
        model.load_state_dict(
            mean_weights([result.best_state, *(state for _, _, state in result.runners_up)])
        )
    elif result.best_step != result.steps:
        model.load_state_dict(result.best_state)


def mean_weights(states: list[dict]) -> dict:
    """The element-wise mean of several snapshots of one model's weights (what is not a
    float, a counter say, is the first snapshot's)."""
    mean = {}
    for name, first in states[0].items():
        if np.issubdtype(first.dtype, np.floating):
            mean[name] = np.mean([state[name] for state in states], axis=0).astype(first.dtype)
        else:
            mean[name] = first
    return mean


def _patience_spent(result: TrainingOutcome, cfg) -> bool:
    """Whether the last ``patience`` validations all failed to beat the best one. Counted
    from the curve and best_step, which checkpoints keep, so a resumed run stops alike."""
    patience = getattr(cfg, "patience", 0)
    if not patience or result.best_step is None:
        return False
    # Validations inside the warm-up do not count: the learning rate is still rising there,
    # and a run stopped before it reached its peak has not been trained by its recipe.
    after = max(result.best_step, warmup_of(cfg, cfg.steps))
    return sum(1 for point in result.curve if point["step"] > after) >= patience


def _told_to_stop(job: Job, result: TrainingOutcome, figures: dict) -> bool:
    """Ask the job's per-validation callback, if any, whether training goes on."""
    state = runner_state(job)
    callback = state.on_validate
    if callback is None:
        return False
    status = callback(result.steps, len(result.curve), dict(figures))
    if not status:
        return False
    result.stopped, result.stopped_step = str(status), result.steps
    state.stopped = (result.stopped, result.steps)
    return True


def _out_of_time(start: float, budget: float, ranks) -> bool:
    """Whether the wall-clock budget is spent; under torchrun every rank stops together
    (rank 0's clock decides), or the others would wait forever in the next all-reduce."""
    spent = time.perf_counter() - start >= budget
    return distributed.rank0_flag(spent)


def _validate(
    validate, result: TrainingOutcome, score_key, higher_is_better, model, cfg=None
) -> dict:
    start = time.perf_counter()
    with phase("evaluate"):
        figures = validate()
    result.last_validate_time = time.perf_counter() - start
    result.validate_time += result.last_validate_time
    result.curve.append({"step": result.steps, **figures})
    if score_key is not None:
        if score_key not in figures:
            raise ContractBroken(
                f"validate() returned no {score_key!r}, the score_key given to train() "
                f"(it returned {', '.join(map(repr, figures)) or 'nothing'})"
            )
        score = figures[score_key]
        better = result.best_score is None or (
            score > result.best_score if higher_is_better else score < result.best_score
        )
        keep = cfg is None or cfg.keep_best
        averaged = getattr(cfg, "average_best", 1) if keep else 1
        if averaged > 1:  # the former best, or this validation, may be among the runners-up
            entry = (
                (result.best_score, result.best_step, result.best_state)
                if better
                else (score, result.steps, model.state_dict())
            )
            if entry[2] is not None:  # (the first validation has no former best)
                ranked = sorted(
                    [*result.runners_up, entry],  # best first; on a tie the earlier
                    key=lambda e: (-e[0] if higher_is_better else e[0], e[1]),
                )
                result.runners_up = ranked[: averaged - 1]
        if better:
            result.best_score, result.best_step = score, result.steps
            if keep:
                result.best_state = model.state_dict()
    return figures
