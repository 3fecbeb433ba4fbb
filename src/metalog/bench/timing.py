"""Timing: best-of-N of this process's CPU time, so other work on a shared machine skews figures less."""

from __future__ import annotations

import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Op = Callable[[], Any]


@dataclass
class Timer:
    min_time: float  # seconds per timed repeat
    repeat: int
    clock: Callable[[], float] = time.process_time  # CPU time: other processes on the machine do not count

    def rate(self, fn: Op) -> float:
        return self.rates({"": fn})[""]

    def rates(self, fns: dict[str, Op]) -> dict[str, float]:
        """Best-of-``repeat`` operations per second of each function, each timed repeat running for at
        least ``min_time``; the repeats of the functions alternate, so all see the same machine load."""
        timers = {k: timeit.Timer(fn, timer=self.clock) for k, fn in fns.items()}
        loops = {k: self.loops(t) for k, t in timers.items()}
        best = dict.fromkeys(fns, float("inf"))
        for _ in range(self.repeat):
            for k, t in timers.items():
                best[k] = min(best[k], t.timeit(loops[k]) / loops[k])
        return {k: 1 / b for k, b in best.items()}

    def loops(self, t: timeit.Timer) -> int:
        n = 1
        while (elapsed := t.timeit(n)) < self.min_time / 4:
            n *= 4 if elapsed < self.min_time / 40 else 2
        return max(1, int(n * self.min_time / max(elapsed, 1e-9)))



def best_cpu(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """(fewest CPU seconds of ``repeat`` runs, the last result)."""
    times, result = [], None
    for _ in range(repeat):
        t = time.process_time()
        result = fn()
        times.append(time.process_time() - t)
    return min(times), result
