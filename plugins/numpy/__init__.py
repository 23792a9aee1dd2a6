"""`numpy` architecture plugin: the decoder written in plain NumPy, as a reference.

The same network as the torch ``decoder`` (same config fields, parameter names and shapes,
initialisation), with every matmul, mask, softmax and their gradients written out. It trains
through the same pipelines and is what ``zoo verify`` checks torch runs against.

The config and the ``zoo verify`` command's options live here (no torch, no heavy imports);
the network is in ``model.py`` and the command in ``verify.py``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Literal

from zoo.plugins.decoder import DecoderConfig

from zoo.plugin import hookimpl

# A float32 torch model against a float64 reference differs by rounding: about 1e-6 on the
# logits of a trained char model. A wrong op (mask, scale, norm) moves them by far more.
DEFAULT_TOLERANCE = 1e-4


@dataclass
class NumpyConfig(DecoderConfig):
    dtype: Literal["float32", "float64"] = "float32"  # float64 for gradient checks and `zoo verify`


@hookimpl
def register_architectures(register):
    register(
        "numpy",
        "zoo.plugins.numpy.model:build",
        config=NumpyConfig,
        tasks=("language-modeling", "classification", "next-item"),
        description="the decoder in plain NumPy: hand-written backward and AdamW, no torch",
    )


@hookimpl
def register_commands(register):
    register(
        "verify",
        "zoo.plugins.numpy.verify:command",
        arguments=verify_arguments,
        help="check a decoder run against the NumPy reference",
        description="Reload a trained decoder run, score a validation batch with it and "
        "with the NumPy reference (float64, same weights), print the largest logit "
        "difference and both losses, and exit 1 when the difference exceeds the tolerance.",
    )


def verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_id", help="run id (or a unique prefix) of a decoder language-modeling run"
    )
    parser.add_argument(
        "--batch", type=_positive(int), default=8, help="validation windows (default 8)"
    )
    parser.add_argument("--seed", type=int, default=0, help="which windows (default 0)")
    parser.add_argument(
        "--tolerance",
        type=_positive(float),
        default=DEFAULT_TOLERANCE,
        help=f"largest allowed logit difference (default {DEFAULT_TOLERANCE:g})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _positive(kind):
    """An argparse type: a positive (finite) number of `kind`."""
    what = "integer" if kind is int else "number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"expected a positive {what}, got {text!r}")
        return value

    return parse
