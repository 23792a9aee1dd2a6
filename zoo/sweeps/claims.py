"""Which sweep trains a cell: an OS lock per config hash (zoo.records.ownership.cell_lock),
held by the sweep's process while the cell trains. Two identical sweeps started together
then train each cell once: the second finds a cell taken, does the others first, and when
the lock comes free finds the cell finished and takes that run as its own ("reused")."""

from __future__ import annotations

from collections import deque
from typing import Any

from zoo.records.ownership import cell_lock
from zoo.records.store import Store, home


class CellClaims:
    def __init__(self):
        self.held: dict[str, Any] = {}  # config hash -> FileLock

    def next_cell(self, todo: deque, say=None):
        """The first cell of ``todo`` that no other process trains, removed from it and
        claimed; cells another sweep finished meanwhile are marked done and dropped. None
        when every remaining cell is taken by another process (wait, then ask again)."""
        for _ in range(len(todo)):
            cell = todo.popleft()
            claimed = self.claim(cell, say)
            if claimed is None:
                todo.append(cell)  # another sweep trains it: come back to it later
            elif claimed:
                return cell
        return None

    def claim(self, cell, say=None) -> bool | None:
        """Claim one cell: True, or None when another process trains it now, or False
        when another process finished it since this sweep planned (``cell.done`` is set)."""
        lock = cell_lock(home(), cell.config_hash)
        if not lock.try_acquire():
            return None
        with Store() as store:
            finished = store.finished_by_hash().get(cell.config_hash)
        if finished is not None and finished != cell.stale:  # trained since this sweep planned
            lock.release()
            cell.done = finished
            if say is not None:
                say(
                    f"    {cell.name}: finished meanwhile by another process (run "
                    f"{finished}); not trained again"
                )
            return False
        self.held[cell.config_hash] = lock
        return True

    def release(self, cell) -> None:
        lock = self.held.pop(cell.config_hash, None)
        if lock is not None:
            lock.release()

    def release_all(self) -> None:
        for lock in self.held.values():
            lock.release()
        self.held.clear()
