"""Multi-process training under torchrun (DistributedDataParallel).

`torchrun --nproc_per_node=N -m zoo run MODEL DATASET` starts N copies of `zoo run` with
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set. `setup()` joins them into one
process group (gloo on the CPU, NCCL on CUDA). A single-process run never imports
torch.distributed: every helper here answers from the environment until `setup()` ran.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

_context: Context | None = None


@dataclass(frozen=True)
class Context:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None  # "gloo" or "nccl" once the process group is up

    @property
    def active(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


SINGLE = Context()


def launched() -> bool:
    """True when started by torchrun (or any launcher that sets WORLD_SIZE > 1)."""
    return _int_env("WORLD_SIZE", 1) > 1


def current() -> Context:
    """The process group this process belongs to (a single-process context by default)."""
    return _context or SINGLE


def setup(device: str) -> Context:
    """Join the process group torchrun described; returns the context (idempotent)."""
    global _context
    if _context is not None:
        return _context
    if not launched():
        _context = SINGLE
        return _context
    import torch
    import torch.distributed as dist

    from zoo.errors import ZooError

    rank, world, local = _int_env("RANK", 0), _int_env("WORLD_SIZE", 1), _int_env("LOCAL_RANK", 0)
    if device.startswith("cuda"):
        if local >= torch.cuda.device_count():
            raise ZooError(
                f"LOCAL_RANK {local} has no GPU: torch sees "
                f"{torch.cuda.device_count()} (start at most one process per GPU of a node)"
            )
        torch.cuda.set_device(local)  # "cuda" below then means this rank's GPU
        backend = "nccl"
    else:
        backend = "gloo"
    if not dist.is_initialized():
        # device_id binds NCCL to this rank's GPU at init, as the PyTorch docs advise.
        extra: dict[str, Any] = (
            {"device_id": torch.device("cuda", local)} if backend == "nccl" else {}
        )
        dist.init_process_group(backend=backend, **extra)
    _context = Context(rank, world, local, backend)
    return _context


def teardown() -> None:
    global _context
    if _context is not None and _context.active:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    _context = None


def broadcast_object(value, src: int = 0):
    """Rank `src`'s value on every rank (the value itself when single-process)."""
    if not current().active:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def rank0_flag(flag: bool) -> bool:
    """Rank 0's answer on every rank: one tiny tensor broadcast, cheap enough per step."""
    if not current().active:
        return flag
    import torch
    import torch.distributed as dist

    device = (
        torch.device("cuda", torch.cuda.current_device()) if current().backend == "nccl" else "cpu"
    )
    box = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    dist.broadcast(box, src=0)
    return bool(box.item())


def all_gather_object(value) -> list:
    if not current().active:
        return [value]
    import torch.distributed as dist

    out = [None] * current().world_size
    dist.all_gather_object(out, value)
    return out


def _int_env(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def join_ranks(device: str):
    """The torchrun process group (gloo on the CPU, NCCL on CUDA), or the single process."""
    if not launched():
        return current()
    from zoo.train.torch_model import pick_device

    return setup(pick_device(device))


def rank_scratch():
    """Where a rank other than 0 keeps the files a pipeline writes (a Path, removed at the
    end)."""
    import tempfile
    from pathlib import Path

    return Path(tempfile.mkdtemp(prefix=f"zoo-rank{current().rank}-"))


def same_weights_on_all_ranks(run) -> list[str]:
    """The SHA-256 of every rank's saved weights (``run``: its RunFolder); DDP keeps them equal, and a run whose
    ranks disagree is not recorded as finished."""
    import hashlib

    path = run.file("model.safetensors")
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    digests = all_gather_object(digest)
    if len(set(digests)) != 1:
        from zoo.errors import ZooError

        raise ZooError(f"ranks ended with different weights: {digests}")
    return digests
