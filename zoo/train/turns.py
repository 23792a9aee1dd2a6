"""Runs that take turns: K functions, each in a thread of its own, of which exactly one runs
at a time, and a shared step that runs once every one of them waits for it.

Seeds trained together (zoo.train.seed_stack) run each seed's ordinary run in such a thread:
the run loads its data, builds its model, validates, checkpoints and records itself as if
it were alone, and its training step waits here until every other seed's has come too;
then one batched step trains them all. Because only one thread runs at a time, each keeps
its own global random generators (Python's, NumPy's, torch's): they are saved when its
turn ends and put back when the next begins, so a run draws the numbers it would draw
alone (its initial weights, say). The shared step draws from a stream of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from zoo.core.phases import current as current_clock
from zoo.train.generators import capture_rng, restore_rng

COORDINATOR = -1  # whose turn it is between the runs' turns: the one that runs the steps


def _put_back(saved: tuple) -> None:
    """Put back the random generators as ``capture_rng({})`` captured them."""
    meta, arrays = saved
    restore_rng(meta, arrays, {})


class Turns:
    """Runs ``functions`` (one per slot) taking turns, and ``step(requests)`` whenever every
    run still going waits in ``wait_for_step``: ``requests`` maps a slot to what it asked,
    and the step returns a slot's answer or the exception that slot raises."""

    def __init__(self, step: Callable[[dict[int, Any]], dict[int, Any]], seed: int = 0):
        self._step = step
        self._changed = threading.Condition()
        self._turn = COORDINATOR
        self._requests: dict[int, Any] = {}
        self._answers: dict[int, Any] = {}
        self._shares: dict[int, float] = {}  # each run's part of the last step's seconds
        self._rngs: dict[int, tuple] = {}
        self._interrupted = False
        self._seed = seed

    def run(self, functions: list[Callable[[], Any]]) -> list[tuple[str, Any]]:
        """Every function's ("result", value) or ("error", exception), in order. A Ctrl-C
        here reaches each run at its next step, as a KeyboardInterrupt of its own, so
        each records itself interrupted; then it goes on up."""
        outer = capture_rng({})
        self._rngs = {slot: outer for slot in range(len(functions))}  # each starts as called
        outcomes: list[tuple[str, Any]] = [("error", RuntimeError("never ran"))] * len(functions)
        alive = set(range(len(functions)))
        threads = [
            threading.Thread(
                target=self._thread,
                args=(slot, function, outcomes, alive),
                name=f"zoo-stacked-{slot}",
                daemon=True,
            )
            for slot, function in enumerate(functions)
        ]
        self._seed_step_stream()
        for thread in threads:
            thread.start()
        try:
            self._coordinate(alive)
        except KeyboardInterrupt:
            self._interrupted = True
            self._coordinate(alive)  # each run ends at its next wait, recording itself
            raise
        finally:
            for thread in threads:
                thread.join(timeout=60)
            _put_back(outer)
        return outcomes

    # -- the coordinator -------------------------------------------------------------------
    def _coordinate(self, alive: set[int]) -> None:
        while True:
            with self._changed:
                runnable = sorted(s for s in alive if s not in self._requests)
            for slot in runnable:  # each run's turn until it waits for a step or ends
                self._give_turn(slot)
            with self._changed:
                if not alive:
                    return
                requests = dict(self._requests)
            if not requests:
                continue
            if self._interrupted:
                answers: dict[int, Any] = {s: KeyboardInterrupt() for s in requests}
            else:
                answers = self._run_step(requests)
            with self._changed:
                self._answers.update(answers)
                for slot in requests:
                    del self._requests[slot]

    def _give_turn(self, slot: int) -> None:
        with self._changed:
            self._turn = slot
            self._changed.notify_all()
            while self._turn != COORDINATOR:
                self._changed.wait()

    def _run_step(self, requests: dict[int, Any]) -> dict[int, Any]:
        _put_back(self._rngs[COORDINATOR])
        began = time.perf_counter()
        try:
            answers = self._step(requests)
        except Exception as exc:  # the step failed for every run in it
            answers = {slot: exc for slot in requests}
        share = (time.perf_counter() - began) / len(requests)
        self._shares.update(dict.fromkeys(requests, share))
        self._rngs[COORDINATOR] = capture_rng({})
        return answers

    def _seed_step_stream(self) -> None:
        """The shared step's random numbers (dropout masks) come from a stream seeded
        by the stack, whatever the runs draw."""
        import torch

        saved = capture_rng({})
        torch.manual_seed(self._seed)
        self._rngs[COORDINATOR] = capture_rng({})
        _put_back(saved)

    # -- a run's thread --------------------------------------------------------------------
    def _thread(self, slot: int, function, outcomes: list, alive: set[int]) -> None:
        self._wait_for_turn(slot)
        try:
            outcomes[slot] = ("result", function())
        except BaseException as exc:  # kept for the caller, who records it
            outcomes[slot] = ("error", exc)
        finally:
            with self._changed:
                alive.discard(slot)
                self._turn = COORDINATOR
                self._changed.notify_all()

    def wait_for_step(self, slot: int, request: Any) -> Any:
        """From run ``slot``'s thread: hand ``request`` to the next shared step, let the other
        runs take their turns, and return this run's answer (or raise its exception)."""
        with self._changed:
            self._requests[slot] = request
        waiting = time.perf_counter()
        self._end_turn(slot)
        self._wait_for_turn(slot)
        clock = current_clock()  # this run's: its time is its turns and its share of steps
        if clock is not None:
            clock.set_aside(time.perf_counter() - waiting, self._shares.pop(slot, 0.0))
        answer = self._answers.pop(slot)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _end_turn(self, slot: int) -> None:
        self._rngs[slot] = capture_rng({})
        with self._changed:
            self._turn = COORDINATOR
            self._changed.notify_all()

    def _wait_for_turn(self, slot: int) -> None:
        with self._changed:
            while self._turn != slot:
                self._changed.wait()
        _put_back(self._rngs[slot])
