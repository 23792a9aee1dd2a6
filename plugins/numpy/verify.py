"""`zoo verify RUN_ID` (a command of the numpy plugin): recompute a trained decoder run with
the NumPy reference.

The run's model (as ``load_trained`` rebuilds it) and the NumPy decoder in float64, loaded
from the same ``model.safetensors``, score one validation batch. The largest logit
difference says whether the run computes what the textbook transformer computes.
The command's options are declared in the plugin's ``__init__`` (imported at every start);
this module is imported only when the command runs.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass

import numpy as np
from zoo.pipelines import LANGUAGE_MODELING
from zoo.pipelines.language_modeling import encode, random_batch, split_text
from zoo.plugins.decoder import DecoderConfig
from zoo.plugins.numpy import DEFAULT_TOLERANCE, NumpyConfig
from zoo.plugins.numpy.model import NumpyDecoder

from zoo.plugin import TaskSpec, ZooError, load_trained
from zoo.plugin.data import load_dataset

MAX_VERIFY_TOKENS = 2**18


@dataclass
class Verification:
    run_id: str
    model: str
    architecture: str
    dataset: str
    batch_shape: tuple[int, int]
    max_logit_diff: float
    max_abs_logit: float  # the scale the difference is measured against
    loss_model: float
    loss_reference: float
    tolerance: float

    @property
    def passed(self) -> bool:
        return bool(self.max_logit_diff <= self.tolerance)


def verify(
    run_id: str, *, batch: int = 8, seed: int = 0, tolerance: float = DEFAULT_TOLERANCE, zoo=None
) -> Verification:
    if seed < 0:
        raise ZooError(f"--seed must be zero or more, not {seed}")
    trained = load_trained(run_id, zoo, device="cpu", precision="fp32")  # as the reference
    config = trained.config
    if not isinstance(trained.model_config, DecoderConfig):
        raise ZooError(
            f"zoo verify checks runs of the decoder (or numpy) architecture; run "
            f"{trained.run_id} is a {config['architecture']} run"
        )
    if trained.task != LANGUAGE_MODELING.name:
        raise ZooError(
            f"zoo verify checks {LANGUAGE_MODELING.name} runs; run {trained.run_id} "
            f"is a {trained.task} run"
        )

    fields = {f.name for f in dataclasses.fields(DecoderConfig)}
    saved = {k: v for k, v in (config["configs"]["model"] or {}).items() if k in fields}
    reference = NumpyDecoder(
        NumpyConfig(**saved, dtype="float64"), TaskSpec(**config["spec"]), seed=0
    )
    reference.load_state_dict(trained.folder.load_weights())

    block = trained.model_config.block_size  # a decoder's context length
    if batch * block > MAX_VERIFY_TOKENS:  # float64 logits for both models: bound them first
        raise ZooError(
            f"--batch {batch} windows of {block} tokens is {batch * block:,} tokens; "
            f"at most {MAX_VERIFY_TOKENS:,} (a smaller --batch)"
        )
    dataset = _load_dataset(config, zoo)
    ids = encode(trained.tokenizer, split_text(dataset, "validation"))
    if len(ids) <= block + 1:
        raise ZooError(
            f"the validation split has {len(ids)} tokens; a batch needs more than {block + 1}"
        )
    inputs, targets = random_batch(ids, batch, block, np.random.default_rng(seed))

    ours = trained.model.logits(inputs).astype(np.float64)
    expected = reference.logits(inputs)
    nll, count = trained.model.loss_sum(inputs, targets)
    ref_nll, ref_count = reference.loss_sum(inputs, targets)
    return Verification(
        trained.run_id,
        config["model"],
        config["architecture"],
        config["dataset"],
        inputs.shape,
        float(np.abs(ours - expected).max()),
        float(np.abs(expected).max()),
        nll / count,
        ref_nll / ref_count,
        tolerance,
    )


def _load_dataset(config: dict, zoo):
    """The run's dataset by the name it was run with, else by its resolved location."""
    for name in dict.fromkeys((config["dataset"], config.get("dataset_id"))):
        if not name:
            continue
        try:
            return load_dataset(name, zoo)
        except ZooError as exc:
            error = exc
    raise ZooError(f"cannot reload the dataset of run {config['run_id']}: {error}")


def report(result: Verification) -> str:
    rows, block = result.batch_shape
    return "\n".join(
        [
            f"run {result.run_id}  {result.model} ({result.architecture}) on {result.dataset}",
            f"  batch                  {rows} validation windows of {block} tokens",
            "  reference              NumPy decoder, float64, same model.safetensors",
            f"  max |logit difference| {result.max_logit_diff:.3e}  (largest |logit| "
            f"{result.max_abs_logit:.3f}, tolerance {result.tolerance:.1e})",
            f"  loss (model)           {result.loss_model:.6f}",
            f"  loss (reference)       {result.loss_reference:.6f}  (difference "
            f"{abs(result.loss_model - result.loss_reference):.3e})",
        ]
    )


def command(args) -> int:
    """`zoo verify`: print the report; exit 1 past the tolerance."""
    result = verify(args.run_id, batch=args.batch, seed=args.seed, tolerance=args.tolerance)
    if args.json:
        print(json.dumps({**dataclasses.asdict(result), "passed": result.passed}))
    else:
        print(report(result))
    if not result.passed:
        print(
            f"zoo verify: FAILED: run {result.run_id} logits differ from the NumPy reference "
            f"by {result.max_logit_diff:.3e}, more than the tolerance {result.tolerance:.1e}",
            file=sys.stderr,
        )
        return 1
    if not args.json:
        print("verified: the run computes what the NumPy reference computes")
    return 0
