"""The CPU a run or a figure was made on: its model and the instruction sets that change
zoo's speed and its figures' last digits (AVX2, AVX-512, AVX-512 BF16, AMX). Read from
/proc/cpuinfo without importing torch, so listing commands stay light."""

from __future__ import annotations

import functools
import platform
from pathlib import Path

# The flags that decide which kernels torch and oneDNN run: AVX2 alone, AVX-512, and native
# bf16 (AVX-512 BF16, AMX). Without native bf16, bf16 is emulated and about ten times slower.
FLAGS_THAT_MATTER = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "amx_tile"})

# How a machine with AVX-512 or AMX is made to compute as an AVX2-only CPU does: torch's own
# kernels (ATen), oneDNN's and MKL's (torch's BLAS: its fp32 matrix products) each held at AVX2.
AVX2_HOLD = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


@functools.cache
def cpu() -> dict:
    """``{"model": ..., "flags": [...]}``: the CPU's name and which of FLAGS_THAT_MATTER it has."""
    name, flags = _cpuinfo()
    return {"model": name, "flags": [flag for flag in FLAGS_THAT_MATTER if flag in flags]}


def kind(flags) -> str:
    """A short name for a CPU's kind by its flags: what tells two machines' figures apart."""
    flags = set(flags or ())
    if flags & NATIVE_BF16_FLAGS:
        return "AVX-512 BF16" if "amx_tile" not in flags else "AMX"
    if "avx512f" in flags:
        return "AVX-512"
    if "avx2" in flags:
        return "AVX2"
    return "other"


def _cpuinfo() -> tuple[str, set[str]]:
    name, flags = "", set[str]()
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not name:
            name = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return name or platform.processor() or platform.machine() or "unknown", flags
