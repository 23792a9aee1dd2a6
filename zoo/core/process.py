"""Processes: the settings of one that trains (the `zoo` program, sweep workers: its
garbage collector and its thread count), ending with a parent, and whether a recorded
process still runs."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from zoo.core.threads import THREAD_VARIABLES, settle_threads  # noqa: F401 (re-exported)


def set_threads(threads: int) -> None:
    """Threads for this worker's torch (the count its driver gave it); the variables matter
    for pools not yet started. torch is loaded first, so settling sets its count too."""
    import torch  # noqa: F401

    settle_threads(threads, source="sweep worker")


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


# A sweep worker ends when its driver ends, however the driver ends (SIGKILL included): a
# worker left running would keep writing run folders that a rerun of the sweep resumes.
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_SECONDS = 1.0


def die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid`` (its parent) ends. On Linux the kernel sends
    SIGKILL at the parent's death (prctl PR_SET_PDEATHSIG); elsewhere a daemon thread polls
    the parent once a second and ends the process, mid-step if need be, when it is gone
    (a run is resumable from any point: its checkpoints and curve are written atomically)."""
    import signal
    import sys

    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        import threading

        threading.Thread(
            target=_watch_parent, args=(parent_pid,), daemon=True, name="zoo-parent-watch"
        ).start()


def _watch_parent(parent_pid: int) -> None:
    import time

    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


def process_alive(pid, proc_start=None) -> bool:
    """Whether the process that wrote a row still runs: its pid exists and, where the start
    time was recorded, started at that time (so a pid reused by another process is dead)."""
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    except PermissionError:
        pass
    return proc_start is None or process_start_time(pid) in (None, proc_start)


def process_start_time(pid) -> str | None:
    """The process's start time in clock ticks since boot (Linux /proc), or None."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError):
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22; the name before ")" may hold spaces
