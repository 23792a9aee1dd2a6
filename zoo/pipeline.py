"""The pipeline contract: what a task's pipeline implements (``register_pipelines``).

A pipeline is a class or object with ``run``; every other method below is optional, and
zoo offers the commands that need one (``zoo predict``, ``zoo evaluate``, ``zoo generate``,
``zoo ensemble``) only for pipelines that have it. The core asks for an optional method
with ``optional_method``, which knows only the names declared here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from zoo.data.datasets import LoadedDataset
    from zoo.operations.reload import LoadedRun
    from zoo.tasks import Prediction, SplitProbabilities
    from zoo.train.job import Job, RunResult

OPTIONAL_METHODS = (
    "check_dataset",
    "predict",
    "evaluate",
    "generate",
    "split_probabilities",
    "score_probabilities",
    "score_statistics",
)


class Pipeline(Protocol):
    """A task's pipeline: tokenize a dataset, build and train the model, evaluate it.

    ``run`` is required; the other methods are optional (see each). The metrics ``run``
    returns are named as its task declares them (``zoo.plugin.Task.metrics``); besides
    those, ``zoo show`` and ``zoo compare`` read ``vocab_size`` (the trained tokenizer's
    size) and ``chars_per_token`` (characters of text per token, the tokenizer's
    compression) when a pipeline records them."""

    def run(self, job: Job) -> RunResult:
        """Train and evaluate one model: tokenize ``job.dataset`` (``job.tokenizer``, or
        ``job.saved_tokenizer()`` when resuming), build the model (``job.build_model``),
        train it (``zoo.plugin.train``), save the tokenizer and weights in ``job.run`` and
        return the figures. Validation figures are named ``val_*``, test figures ``test_*``.
        Read only the splits ``job.dataset.roles`` names: a run that chooses settings
        (``zoo tune``'s trials) holds the test split out, and reading it is an error.
        A pipeline that can score each example on its own hands those scores back in
        ``RunResult.per_example`` (metric -> one score per example, averaging to the
        figure): comparisons then count the evaluation set's sampling noise too."""
        ...

    def check_dataset(self, dataset: LoadedDataset) -> None:
        """Optional. Raise ``zoo.ZooError`` when the pipeline cannot use ``dataset`` (the
        loaded dataset, before a run is recorded): a missing label column, too few classes."""
        ...

    def predict(self, trained: LoadedRun, texts: list[str], **options: Any) -> list[Prediction]:
        """Optional (``zoo predict``). One prediction per text, of the type the task declares
        (``zoo.plugin.Task.prediction``). ``options``: decoding settings a task takes
        (``beam``, the beam size of a task that writes text), passed only when given."""
        ...

    def evaluate(self, trained: LoadedRun, dataset: LoadedDataset, split: str) -> dict[str, Any]:
        """Optional (``zoo evaluate``). The task's metrics of a finished run on one split of a
        dataset (named with the split's prefix, ``test_*`` for ``test``, as ``run`` names
        them)."""
        ...

    def generate(
        self, trained: LoadedRun, prompt: Any, tokens: int, **options: Any
    ) -> Iterator[str]:
        """Optional (``zoo generate``). The continuation of ``prompt``, ``tokens`` tokens long,
        yielded piece by piece; given a list of prompts (sampled as one batch), ``(row,
        piece)`` pairs. ``options``: ``temperature``, ``top_k``, ``seed``, ``cache``."""
        ...

    def split_probabilities(
        self, trained: LoadedRun, dataset: LoadedDataset, split: str
    ) -> SplitProbabilities:
        """Optional (``zoo ensemble``, with ``score_probabilities``). The class probabilities a
        run gives each example of a split, with the right classes."""
        ...

    def score_probabilities(self, probabilities: Any, split: str) -> dict[str, Any]:
        """Optional (``zoo ensemble``). The split's metrics from combined probabilities,
        named as ``run`` names them (``val_*``, ``test_*``)."""
        ...

    def score_statistics(self, metric: str, totals: Any) -> Any:
        """Optional (comparisons that count the evaluation set's noise in a corpus score).
        ``metric`` (``test_bleu``) from its sufficient statistics summed over a draw of
        examples: ``totals`` is a (draws, k) array of the sums of the per-example
        statistics ``run`` handed back in ``RunResult.per_example_statistics``; the answer
        is one figure per draw, as ``run`` computes the metric from the split's sums."""
        ...


def optional_method(pipeline: Any, name: str) -> Any:
    """The pipeline's optional method ``name`` (one of ``OPTIONAL_METHODS``), or None when
    the pipeline does not implement it."""
    if name not in OPTIONAL_METHODS:
        raise ValueError(f"{name!r} is not an optional pipeline method")
    method = getattr(pipeline, name, None)
    return method if callable(method) else None
