"""The random number generators a run depends on, captured into a checkpoint and put back
when it resumes, so a resumed run draws the numbers it would have drawn: Python's, NumPy's
legacy global one, the run's own NumPy generators, and torch's (CPU and CUDA)."""

from __future__ import annotations

import random
import sys

import numpy as np

from zoo.errors import ZooError


def capture_rng(generators: dict[str, np.random.Generator]) -> tuple[dict, dict[str, np.ndarray]]:
    """Every RNG state a run depends on: Python's, NumPy's legacy global one, the given
    NumPy generators, and torch's (CPU and CUDA) if torch is in use. JSON plus arrays."""
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    meta = {
        "python": [version, list(internal), gauss],
        "numpy_global": [kind, int(pos), int(has_gauss), float(cached)],
        "generators": {name: g.bit_generator.state for name, g in generators.items()},
    }
    arrays = {"numpy_global_keys": np.asarray(keys, dtype=np.uint32)}
    torch = sys.modules.get("torch")
    if torch is not None:
        arrays["torch"] = torch.get_rng_state().numpy().copy()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            for i, state in enumerate(torch.cuda.get_rng_state_all()):
                arrays[f"torch_cuda.{i}"] = state.numpy().copy()
    return meta, arrays


def restore_rng(
    meta: dict, arrays: dict[str, np.ndarray], generators: dict[str, np.random.Generator]
) -> None:
    """Put every RNG back as captured; generators are restored in place, so code holding
    a reference to one (a pipeline's closure) continues its stream."""
    version, internal, gauss = meta["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, pos, has_gauss, cached = meta["numpy_global"]
    np.random.set_state((kind, arrays["numpy_global_keys"], pos, has_gauss, cached))
    saved = meta["generators"]
    missing = set(generators) - set(saved)
    if missing:
        raise ZooError(f"checkpoint has no state for the random generator(s) {sorted(missing)}")
    for name, generator in generators.items():
        generator.bit_generator.state = saved[name]
    if "torch" in arrays:
        import torch

        torch.set_rng_state(torch.from_numpy(np.ascontiguousarray(arrays["torch"])))
        cuda = [
            arrays[k]
            for k in sorted(
                (k for k in arrays if k.startswith("torch_cuda.")),
                key=lambda k: int(k.split(".")[1]),
            )
        ]
        if cuda and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([torch.from_numpy(np.ascontiguousarray(a)) for a in cuda])
