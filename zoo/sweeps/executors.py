"""Which executor runs a sweep's or a search's cells: worker processes on this machine
(`--jobs N`, zoo.sweeps.local), Ray tasks on a cluster (`--executor ray`,
zoo.sweeps.ray_tasks), or none (cells in this process). Neither torch nor ray is imported
until one is chosen."""

from __future__ import annotations

from zoo.errors import ZooError


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
                "cluster has room for (see cell_cpus)",
                option="jobs",
            )
        if gpus is None:  # Ray hides the GPUs from a task that asks for none
            gpus = 1 if device == "cuda" else 0
        from zoo.sweeps.ray_tasks import RayExecutor

        return RayExecutor(address, cpus or 1, gpus)
    if address is not None:
        raise ZooError("address is for the ray executor", option="address")
    if cpus is not None or gpus is not None:
        raise ZooError("cell_cpus and cell_gpus are for the ray executor", option="cell_cpus")
    if jobs == "auto" or int(jobs) > 1:
        from zoo.sweeps.local import ProcessExecutor

        return ProcessExecutor(jobs, device=device)
    return None
