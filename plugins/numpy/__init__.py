"""`numpy` architecture plugin: the decoder written in plain NumPy, as a reference.

The same network as the torch ``decoder`` (same config fields, parameter names and shapes,
initialisation), with every matmul, mask, softmax and their gradients written out. It trains
through the same pipelines and is what ``zoo verify`` checks torch runs against.

The config lives here (no torch, no heavy imports); the network is in ``model.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zoo import hookimpl
from zoo.plugins.decoder import DecoderConfig


@dataclass
class NumpyConfig(DecoderConfig):
    dtype: Literal["float32", "float64"] = "float32"  # float64 for gradient checks and `zoo verify`


@hookimpl
def register_architectures(register):
    register("numpy", "zoo.plugins.numpy.model:build", config=NumpyConfig,
             tasks=("language-modeling", "classification", "next-item"),
             description="the decoder in plain NumPy: hand-written backward and AdamW, no torch")
