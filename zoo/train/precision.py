"""Which precision a run trains at: what ``precision="auto"`` means on the device."""

from __future__ import annotations

import os

import torch

from zoo.errors import ZooError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}  # fp32: no autocast


# oneDNN's instruction-set caps (ONEDNN_MAX_CPU_ISA) under which its bf16 kernels still run
# natively; a lower cap (AVX2, say) makes bf16 as slow as on a CPU without it.
ONEDNN_BF16_ISAS = ("ALL", "DEFAULT", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX10_1_512")


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX, and torch allowed to use them: bf16 matrix products run about 2.5x
    faster than fp32 ones there. Without them bf16 is emulated and about ten times slower.
    ATEN_CPU_CAPABILITY=avx2 or ONEDNN_MAX_CPU_ISA=AVX2 (how a machine is made to compute as
    an AVX2-only CPU does) count as without."""
    try:
        probed = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    except AttributeError:  # torch builds without these probes
        return False
    return bool(probed) and not isa_capped()


def isa_capped() -> bool:
    """Whether torch's kernels are held below AVX-512 (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA)."""
    if not torch.backends.cpu.get_cpu_capability().startswith("AVX512"):
        return True
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").strip().upper()
    return not cap.startswith(ONEDNN_BF16_ISAS) and not cap.startswith("AVX512_CORE_AMX")


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
