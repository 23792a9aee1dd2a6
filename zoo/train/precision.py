"""Which precision a run trains at: what ``precision="auto"`` means on the device."""

from __future__ import annotations

import torch

from zoo.errors import ZooError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}  # fp32: no autocast


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX: bf16 matrix products run about 2.5x faster than fp32 ones here.
    Without them bf16 is emulated and slower than fp32."""
    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:  # torch builds without these probes
        return False


def resolve_precision(precision: str, device: torch.device) -> str:
    """What "auto" means on a device: bf16 autocast on CUDA (fp16 where the GPU lacks bf16);
    on the CPU bf16 where it has native bf16 instructions (1.3x the training throughput of
    fp32 at the same validation loss, benchmarks/bench_train.py), fp32 elsewhere."""
    if precision not in PRECISIONS:
        raise ZooError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if device.type == "cuda":
        if precision == "auto":
            return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        return precision
    if precision == "fp16":
        raise ZooError("precision fp16 needs a CUDA device; on the CPU use bf16 or fp32")
    if precision == "auto":
        return "bf16" if cpu_has_native_bf16() else "fp32"
    return precision
