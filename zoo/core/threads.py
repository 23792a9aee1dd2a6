"""How many threads a training process gives torch, chosen from the CPUs it may use and the
load on them, before torch starts its thread pools.

torch's default (one intra-op thread per core, OpenMP waiting actively) is the fastest on a
quiet machine and loses more than half its speed as soon as one other busy process shares the
cores: its threads spin waiting for a thread that the scheduler has put aside. So zoo counts
the CPUs this process may use (its affinity mask and a cgroup quota), samples how busy they
are over a fifth of a second, and gives torch the idle ones; when it shares the CPUs with
others, OpenMP waits passively. A user's `--threads N` or `OMP_NUM_THREADS` wins.

Nothing here imports torch: the choice is made before torch loads (the wait policy is read
once, when the OpenMP runtime starts).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from zoo.errors import ZooError, shown

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
SAMPLE_SECONDS = 0.2  # in SAMPLE_WINDOWS windows: /proc/stat counts in 10 ms ticks
SAMPLE_WINDOWS = 4
# Below this many idle CPUs out of those usable, the CPUs count as shared: threads that wait
# for each other sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE).
SHARED_MARGIN = 0.5


@dataclass(frozen=True)
class ThreadChoice:
    """The threads one process trains with, and why."""

    threads: int  # torch's intra-op threads
    wait_policy: str | None  # OMP_WAIT_POLICY zoo set ("PASSIVE"), or None: OpenMP's default
    usable: int  # CPUs this process may run on (affinity mask, cgroup quota)
    idle: float | None  # of those, how many were idle when sampled (None: not sampled)
    source: str  # "auto", "--threads", "OMP_NUM_THREADS" or "recorded" (a resumed run)

    def record(self) -> dict:
        """What a run keeps in its provenance."""
        return asdict(self)

    def describe(self) -> str:
        if self.source == "auto":
            idle = "unknown" if self.idle is None else f"{self.idle:.1f}"
            wait = f", OpenMP waits {self.wait_policy.lower()}ly" if self.wait_policy else ""
            return (
                f"threads: {self.threads} ({idle} of {self.usable} usable CPU(s) idle{wait}; "
                "--threads N or OMP_NUM_THREADS to choose)"
            )
        return f"threads: {self.threads} (from {self.source})"


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask, capped by a cgroup CPU quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota)))
    return max(1, cpus)


def cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPUs a cgroup quota allows (cgroup v2 `cpu.max`, or v1's cfs files), or None."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


def _cpu_times(stat: str, cpus: set[int]) -> tuple[int, int]:
    """(idle, total) jiffies summed over ``cpus`` from the text of /proc/stat."""
    idle = total = 0
    for line in stat.splitlines():
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
            continue
        values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
        idle += values[3] + values[4]
        total += sum(values)
    return idle, total


def idle_cpus(windows: int = SAMPLE_WINDOWS, seconds: float = SAMPLE_SECONDS) -> float | None:
    """How many of this process's CPUs were idle: the most idle of ``windows`` short windows
    of /proc/stat (stolen time counts as busy). A neighbour that keeps a CPU busy is busy in
    every window; a passing command (a shell, an editor's linter) in one or two, and a single
    sample would take it for a neighbour. The load average where /proc is missing; None if
    neither."""
    try:
        cpus = os.sched_getaffinity(0)
        before = _cpu_times(Path("/proc/stat").read_text(), cpus)
        most = None
        for _ in range(windows):
            time.sleep(seconds / windows)
            after = _cpu_times(Path("/proc/stat").read_text(), cpus)
            total = after[1] - before[1]
            if total > 0:
                idle = len(cpus) * (after[0] - before[0]) / total
                most = idle if most is None else max(most, idle)
            before = after
        return most
    except (OSError, AttributeError, ValueError, IndexError):
        try:
            return max(0.0, (os.cpu_count() or 1) - os.getloadavg()[0])
        except (OSError, AttributeError):
            return None


def check_thread_count(requested: int | None, usable: int | None = None) -> None:
    """--threads at most the CPUs this process may use: more threads than CPUs only wait
    for each other, and a count such as 10**9 would be recorded with the run."""
    usable = usable_cpus() if usable is None else usable
    if requested is not None and requested > usable:
        raise ZooError(
            f"threads {shown(requested)}: this process may use {usable} CPU(s); at most {usable}",
            option="threads",
        )


def choose_threads(
    requested: int | None = None, environ=None, sample=idle_cpus, usable=None
) -> ThreadChoice:
    """The threads for a process about to train: ``requested`` (`--threads`), else the user's
    OMP_NUM_THREADS, else the idle CPUs among those usable (at least one)."""
    environ = os.environ if environ is None else environ
    usable = usable_cpus() if usable is None else usable
    if requested is not None:
        return ThreadChoice(requested, None, usable, None, "--threads")
    given = environ.get("OMP_NUM_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return ThreadChoice(int(given), None, usable, None, "OMP_NUM_THREADS")
    idle = sample()
    if idle is None:
        return ThreadChoice(usable, None, usable, None, "auto")
    threads = max(1, min(usable, math.floor(idle + 0.5)))
    shared = threads > 1 and idle < usable - SHARED_MARGIN
    wait = "PASSIVE" if shared and "OMP_WAIT_POLICY" not in environ else None
    return ThreadChoice(threads, wait, usable, round(idle, 2), "auto")


def apply_threads(choice: ThreadChoice) -> None:
    """Give torch and the BLAS libraries ``choice``'s threads: the variables for pools not yet
    started (and for child processes), torch's setting if torch is already loaded."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(choice.threads)
    if choice.wait_policy:
        os.environ["OMP_WAIT_POLICY"] = choice.wait_policy
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(choice.threads)


_chosen: ThreadChoice | None = None


def settle_threads(requested: int | None = None, source: str = "--threads") -> ThreadChoice:
    """The process's thread choice, made (and applied) once: the `zoo` program settles it
    before torch loads, a sweep worker with the count its driver gave it (``requested``),
    the Python API when it first trains."""
    global _chosen
    if _chosen is None or requested is not None:
        _chosen = choose_threads(requested)
        if requested is not None and source != _chosen.source:
            _chosen = ThreadChoice(requested, None, _chosen.usable, None, source)
        apply_threads(_chosen)
    return _chosen


def use_recorded_threads(recorded: dict | None) -> ThreadChoice | None:
    """A resumed run trains on the thread count it started with, so its numbers continue
    bit-identically; None when the run recorded none (older runs)."""
    global _chosen
    if not recorded or not isinstance(recorded.get("threads"), int) or recorded["threads"] < 1:
        return None
    _chosen = ThreadChoice(recorded["threads"], None, usable_cpus(), None, "recorded")
    apply_threads(_chosen)
    return _chosen
