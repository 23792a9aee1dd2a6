"""Cells as Ray tasks on a cluster (`--executor ray`). Ray ends a driver's tasks when the
driver dies, so a rerun never meets a task still writing its run folder."""

from __future__ import annotations

from typing import Any

from zoo.core.process import set_threads
from zoo.errors import ZooError, require_extra
from zoo.sweeps.driver import Executor
from zoo.sweeps.warm import WarmWorker
from zoo.sweeps.worker import one_line, run_cell

_warm = WarmWorker()  # what a Ray worker process keeps from cell to cell (zoo.sweeps.warm)


def zoo_sweep_cell(task: dict) -> dict:
    """A cell as a Ray task (module-level, so workers import it by name)."""
    set_threads(task["threads"])
    return run_cell(task, warm=_warm)


class RayExecutor(Executor):
    """Cells as Ray tasks on an existing cluster (`address`), or on a local one started
    here. Each task asks for `cpus` CPUs (its thread count) and `gpus` GPUs; the driver
    keeps as many in flight as the cluster has room for."""

    def __init__(self, address: str | None = None, cpus: int = 1, gpus: float = 0):
        require_extra(("ray",), "ray", "the ray executor")
        import ray

        self.ray, self.address, self.cpus, self.gpus = ray, address, cpus, gpus
        self.owned = False
        self.refs: dict[object, int] = {}  # object ref -> slot
        self.slots = 1

    def describe(self) -> str:
        where = self.address or "a local Ray cluster"
        return (
            f"Ray tasks on {where}: {self.slots} at a time, {self.cpus} CPU(s)"
            + (f" and {self.gpus} GPU(s)" if self.gpus else "")
            + " each"
        )

    def start(self) -> None:
        ray = self.ray
        if not ray.is_initialized():
            wait_for_address(self.address)
            try:
                ray.init(
                    address=self.address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level="warning",
                )
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ZooError(
                    f"cannot connect to the Ray cluster at {self.address}: {one_line(exc)}"
                ) from None
            self.owned = True
        resources = ray.cluster_resources()
        fits = resources.get("CPU", 0) // self.cpus if self.cpus else float("inf")
        if self.gpus:
            fits = min(fits, resources.get("GPU", 0) // self.gpus)
        if fits < 1:
            raise ZooError(
                f"the Ray cluster has {resources.get('CPU', 0):g} CPU(s) and "
                f"{resources.get('GPU', 0):g} GPU(s): no room for a cell asking for "
                f"{self.cpus} CPU(s) and {self.gpus} GPU(s)"
            )
        self.slots = int(min(fits, 1024))
        self.remote = ray.remote(zoo_sweep_cell).options(
            num_cpus=self.cpus, num_gpus=self.gpus, max_retries=0
        )  # the driver records a lost cell

    def free_slot(self) -> int | None:
        used = set(self.refs.values())
        free = [slot for slot in range(1, self.slots + 1) if slot not in used]
        return free[0] if free else None

    def slot_name(self, slot: int) -> str:
        return f"task {slot}"

    def submit(self, slot: int, task: dict) -> None:
        self.refs[self.remote.remote({**task, "threads": max(1, int(self.cpus))})] = slot

    def wait(self) -> list[tuple[str, int, Any]]:
        done, _ = self.ray.wait(list(self.refs), num_returns=1)
        events = []
        for ref in done:
            slot = self.refs.pop(ref)
            try:
                outcome = self.ray.get(ref)
            except Exception as exc:  # the worker died, or its node did
                events.append(("lost", slot, f"Ray task lost: {one_line(exc)}"))
                continue
            events.extend(("op", slot, op) for op in outcome.pop("ops"))
            events.append(("done", slot, outcome))
        return events

    def stop(self) -> None:
        for ref in list(self.refs):
            self.ray.cancel(ref, force=True)

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


CONNECT_TIMEOUT = 30.0  # seconds to reach a cluster's address (ZOO_CONNECT_TIMEOUT changes it)


def wait_for_address(address: str | None, timeout: float | None = None) -> None:
    """Give up on a cluster address nothing answers at within ``timeout`` seconds, with one
    line, rather than let Ray retry for minutes. A local cluster (no address, or "auto") is
    Ray's to find."""
    import os
    import socket
    import time

    if not address or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # a form Ray reads itself
    if timeout is None:
        try:
            timeout = float(os.environ.get("ZOO_CONNECT_TIMEOUT", CONNECT_TIMEOUT))
        except ValueError:
            raise ZooError("ZOO_CONNECT_TIMEOUT must be a number of seconds") from None
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            socket.create_connection((host, int(port)), timeout=max(0.1, min(left, 5.0))).close()
            return
        except OSError as exc:
            if time.monotonic() + 1.0 > deadline:
                raise ZooError(
                    f"cannot connect to the Ray cluster at {address}: nothing answered in "
                    f"{timeout:g} s ({exc.strerror or exc}); check the address, or set "
                    "ZOO_CONNECT_TIMEOUT to wait longer"
                ) from None
            time.sleep(1.0)
