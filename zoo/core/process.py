"""Settings of a zoo process that trains (the `zoo` program, sweep workers): its garbage
collector and its thread count."""
from __future__ import annotations

import gc
import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

def set_threads(threads: int) -> None:
    """Threads for this worker's torch; the variables matter for pools not yet started."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)


# The garbage collector of a process that trains (the `zoo` program and sweep workers). Such a
# process holds some 400,000 long-lived objects from torch, datasets and matplotlib that every
# full collection walks again, and once more at exit. Collecting the youngest generation every
# 10,000 allocations rather than 700 (so full collections come rarer), and freezing what is
# left before the process ends, took about 2 CPU seconds off a 9-second `zoo run`, and a sweep
# worker's exit from 3 s to 0.3 s on a loaded machine.
YOUNG_GC_THRESHOLD = 10_000


def tune_gc_for_training() -> None:
    gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])


def freeze_gc_before_exit() -> None:
    gc.freeze()  # nothing to gain from walking every object once more at exit
