"""Which executor runs a sweep's or a search's cells: worker processes on this machine
(`--jobs N`, zoo.sweeps.local), Ray tasks on a cluster (`--executor ray`,
zoo.sweeps.ray_tasks), or none (cells in this process). Neither torch nor ray is imported
until one is chosen."""

from __future__ import annotations

import dataclasses

from zoo.errors import ZooError


@dataclasses.dataclass(frozen=True)
class Workers:
    """Where a sweep's cells or a search's trials train (``zoo.sweep(workers=...)``,
    ``zoo.tune(workers=...)``; the commands' --jobs, --executor, --address and
    --cell-/--trial-cpus and -gpus)."""

    jobs: int | str = 1
    """Worker processes on this machine (local executor); ``"auto"`` (sweeps only): as
    many as the machine has room for (zoo.sweeps.auto_jobs)."""
    executor: str = "local"
    """``"local"`` (this machine) or ``"ray"`` (tasks on a Ray cluster; the ``ray`` extra)."""
    address: str | None = None
    """The Ray cluster to use (default: a local one); Ray only."""
    cpus: int | None = None
    """CPUs each cell or trial asks Ray for (default 1); Ray only."""
    gpus: float | None = None
    """GPUs each cell or trial asks Ray for (default: 1 on device cuda, else 0); Ray only."""

    def start(self, device: str = "auto"):
        """The executor these workers make (None: cells in this process), checked now."""
        if self.executor not in ("local", "ray"):
            raise ZooError(
                f"executor must be local or ray, not {self.executor!r}", option="executor"
            )
        return make_executor(self.jobs, self.executor, self.address, self.cpus, self.gpus, device)


def make_executor(
    jobs: int | str,
    executor: str,
    address: str | None,
    cpus: int | None,
    gpus: float | None,
    device: str = "auto",
):
    """The executor the command line asks for, or None: cells in this process. ``jobs``
    is a number, or "auto" (zoo.sweeps.auto_jobs)."""
    if executor == "ray":
        if jobs == "auto" or int(jobs) > 1:
            raise ZooError(
                "jobs is for the local executor; Ray runs as many cells as the "
                "cluster has room for",
                option="jobs",
            )
        if gpus is None:  # Ray hides the GPUs from a task that asks for none
            gpus = 1 if device == "cuda" else 0
        from zoo.sweeps.ray_tasks import RayExecutor

        return RayExecutor(address, cpus or 1, gpus)
    if address is not None:
        raise ZooError("address is for the ray executor", option="address")
    if cpus is not None:
        raise ZooError("cpus is for the ray executor", option="cpus")
    if gpus is not None:
        raise ZooError("gpus is for the ray executor", option="gpus")
    if jobs == "auto" or int(jobs) > 1:
        from zoo.sweeps.local import ProcessExecutor

        return ProcessExecutor(jobs, device=device)
    return None
