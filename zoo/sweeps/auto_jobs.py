"""`--jobs auto`: how many worker processes share the machine's GPU (or its cores).

On a GPU the sweep's first cell runs alone, in one worker, and measures itself: the most
GPU memory it held (``torch.cuda.max_memory_reserved``, the caching allocator's peak), the
memory still free beside it, and how busy it kept the GPU while it trained
(``torch.cuda.utilization``, sampled through NVML where the ``nvidia-ml-py`` package is
installed; unknown elsewhere). Then the sweep grows to as many workers as

- fit in the free memory, each taking that peak and a CUDA context (CONTEXT_BYTES),
  keeping HEADROOM of the free memory in reserve;
- are needed to keep the GPU busy (BUSY percent over one cell's share), when measured;
- the machine has cores, one per worker: a small model's step is paced by its host
  process, so two workers on one core only take turns;
- and no more than the cells left to train (and than the host's memory holds).

On the CPU, ``--jobs auto`` is one worker per idle core, each on one thread. Every worker
runs on one thread either way, so the cells sum in the same order whatever was chosen.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

CONTEXT_BYTES = 512 * 2**20  # a CUDA context and cuBLAS's workspace, beside the allocator's
HEADROOM = 0.1  # of the free GPU memory, left unused
BUSY = 90  # percent of the time the workers together aim to keep the GPU running kernels
SAMPLE_SECONDS = 0.2  # how often the utilisation is read while the probing cell trains


def choose_gpu_workers(probe: dict, *, cores: int, cells: int, host_most: int | None) -> tuple:
    """The number of workers to run, and the figures that decided it (for the message and
    the record): ``probe`` is what the first cell measured (``gpu_probe``)."""
    per_worker = probe["peak_bytes"] + CONTEXT_BYTES
    room = int(probe["free_bytes"] * (1 - HEADROOM))
    by_memory = 1 + max(0, room // per_worker)  # the probing worker holds its own already
    busy = probe.get("utilization")
    by_use = None if busy is None else max(1, int(BUSY // max(busy, 1.0)))
    limits = {"memory": by_memory, "cores": max(1, cores), "cells": max(1, cells)}
    if by_use is not None:
        limits["utilisation"] = by_use
    if host_most is not None:
        limits["host memory"] = host_most
    jobs = min(limits.values())
    bound = [name for name, most in limits.items() if most == jobs][0]
    return jobs, {
        "jobs": jobs,
        "bound_by": bound,
        "limits": limits,
        "peak_bytes": probe["peak_bytes"],
        "free_bytes": probe["free_bytes"],
        "total_bytes": probe.get("total_bytes"),
        "utilization": busy,
        "gpu": probe.get("name"),
    }


def describe_choice(choice: dict) -> str:
    """One line: what --jobs auto chose, and why."""
    gib = 2**30
    use = (
        f"kept it {choice['utilization']:.0f}% busy"
        if choice["utilization"] is not None
        else "its utilisation unknown (no NVML)"
    )
    limits = ", ".join(f"{most:,} by {name}" for name, most in choice["limits"].items())
    return (
        f"--jobs auto: {choice['jobs']} worker{'s' if choice['jobs'] > 1 else ''} share the GPU "
        f"(bound by {choice['bound_by']}): one cell held {choice['peak_bytes'] / gib:.2f} GiB "
        f"of GPU memory with {choice['free_bytes'] / gib:.1f} GiB free beside it and {use}; "
        f"at most {limits}"
    )


def cuda_device_wanted(device: str) -> bool:
    """Whether the sweep's cells train on a GPU."""
    if device == "cuda":
        return True
    if device != "auto":
        return False
    import torch

    return torch.cuda.is_available()


@contextmanager
def gpu_probe(clock=None):
    """Measure the cell run inside on the current GPU; yields the dict it fills at the end
    (peak_bytes, free_bytes, total_bytes, utilization or None, name). Utilisation is
    sampled only while ``clock`` (zoo.core.phases) has its train phase open."""
    import torch

    report: dict = {}
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    samples: list[float] = []
    stop = threading.Event()

    def sample():
        while not stop.wait(SAMPLE_SECONDS):
            if clock is not None and "train" not in clock.open_phases():
                continue
            try:
                samples.append(float(torch.cuda.utilization()))
            except Exception:  # no NVML (nvidia-ml-py): utilisation stays unknown
                return

    sampler = threading.Thread(target=sample, daemon=True, name="zoo-gpu-probe")
    sampler.start()
    try:
        yield report
    finally:
        stop.set()
        sampler.join(timeout=5)
        free, total = torch.cuda.mem_get_info()
        report.update(
            peak_bytes=int(torch.cuda.max_memory_reserved()),
            free_bytes=int(free),
            total_bytes=int(total),
            utilization=sum(samples) / len(samples) if samples else None,
            name=torch.cuda.get_device_name(),
            measured_at=time.time(),
        )
