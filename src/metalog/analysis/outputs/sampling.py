"""Which batch times of a cluster's metric series are samples in ``controller_metrics.om``: as few as keep each
series, read as a step function, equal to its value at every batch time, with at most a minute of log time from
one sample to the next wherever the log has batches in between.

A series' value at a batch time is its value after the last batch of that millisecond (batches in time order,
then log order: a log's batch times may step back). Over a cluster's batch times t_0 < t_1 < ... < t_n, a series
has a sample at t_i when
  1. i = 0 (its first batch time), or
  2. its value at t_i differs from its value at t_{i-1}, or
  3. i = n (its last batch time: the series ends where the log does), or
  4. t_{i+1} is more than ``HEARTBEAT_MS`` (60 s) after the series' previous sample (a heartbeat).
So after each sample the next is the series' next change or, if none comes first, the latest batch time at most
60 s later (the next batch time where there is none): the fewest samples that meet the rule. Read by Prometheus (a
sample's value holds until the next one), each series gives its value at every batch time, and it is never
stale (5 minutes without a sample) while the log's batches are at most 60 s apart. Where two consecutive batch
times are more than 60 s apart the log has nothing in between, and neither has the file: no sample is made at a
time Kafka never published. With ``every_batch``, every batch time is a sample of every series (the older form,
about 30 times the bytes).

``Sampler`` takes a cluster's columns a chunk at a time (the Spark engine's executors get them as Arrow batches
cut wherever Spark cuts them); the samples do not depend on the cuts. It keeps a row and a few values per series
between chunks: its memory is flat in the log's size.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, compress, islice
from operator import gt, itemgetter, ne

HEARTBEAT_MS = 60_000


@dataclass(frozen=True)
class Samples:
    """A series' samples: their times (epoch ms, increasing) and values."""

    times: list[int]
    values: list[int]


@dataclass(frozen=True)
class _Decided:
    """Batch times whose value is known (the next row's time differs): a millisecond's last row each."""

    times: list[int]
    values: list[list[int]]  # per series
    nexts: list[float]  # the batch time after each (infinity after the log's last)


class Sampler:
    """One cluster's series (``series`` of them), sampled as the module says, from its columns in time order then
    log order: ``add`` a chunk of them (``times`` in epoch ms, ``values`` one column per series) at a time, then
    ``close``; each returns the samples it decided, one ``Samples`` per series. A chunk's last row waits for the
    next chunk (the same millisecond may go on there, and a heartbeat looks at the next batch time)."""

    def __init__(self, series: int, *, every_batch: bool = False) -> None:
        self.series, self.every_batch = series, every_batch
        self.batch_times = 0  # decided so far
        self._pending: tuple[int, list[int]] | None = None  # the last row so far: its time, its values
        self._before: list[int | None] = [None] * series  # each series' value at the last batch time decided
        self._last: list[int | None] = [None] * series  # each series' last sample's time

    def add(self, times: Sequence[int], values: Sequence[Sequence[int]]) -> list[Samples]:
        n = len(times)
        if len(values) != self.series or any(len(column) != n for column in values):
            raise ValueError(f"{self.series} columns of {n} values expected")
        if any(map(gt, times, islice(times, 1, None))) or (
                n and self._pending is not None and self._pending[0] > times[0]):
            raise ValueError("batch times out of order: sort them by time, then log order")
        if not n:
            return [Samples([], []) for _ in range(self.series)]
        # a millisecond's last row: a row whose next row is in a later millisecond; the chunk's last row waits
        ends = list(compress(range(n - 1), map(ne, times, islice(times, 1, None))))
        pending, self._pending = self._pending, (times[-1], [column[-1] for column in values])
        head = pending if pending is not None and pending[0] != times[0] else None

        def pick(column: Sequence[int], first: Sequence[int]) -> list[int]:
            if len(ends) == n - 1:  # no two rows in one millisecond
                return [*first, *islice(column, n - 1)]
            return [*first, *(itemgetter(*ends)(column) if len(ends) > 1 else (column[i] for i in ends))]

        decided_times = pick(times, () if head is None else (head[0],))
        columns = [pick(column, () if head is None else (head[1][s],)) for s, column in enumerate(values)]
        return self._samples(_Decided(decided_times, columns, [*decided_times[1:], times[-1]]))

    def close(self) -> list[Samples]:
        """The samples of the last row (the log's last batch time)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return [Samples([], []) for _ in range(self.series)]
        return self._samples(_Decided([pending[0]], [[v] for v in pending[1]], [float("inf")]))

    def _samples(self, decided: _Decided) -> list[Samples]:
        self.batch_times += len(decided.times)
        out = []
        for s, column in enumerate(decided.values):
            if self.every_batch:
                out.append(Samples(decided.times, column))
                continue
            picked = self._select(s, decided, column)
            out.append(Samples([decided.times[j] for j in picked], [column[j] for j in picked]))
            if column:
                self._before[s] = column[-1]
        return out

    def _select(self, s: int, decided: _Decided, column: list[int]) -> list[int]:
        """The indices of series ``s``'s samples among the decided batch times: each change, else the latest
        batch time whose next one is more than HEARTBEAT_MS after the previous sample."""
        m = len(column)
        changes = list(compress(range(m), map(ne, chain((self._before[s],), column), column)))
        picked: list[int] = []
        last, start, c = self._last[s], 0, 0
        while True:
            change = changes[c] if c < len(changes) else m
            beat = start if last is None else bisect_right(decided.nexts, last + HEARTBEAT_MS, start)
            j = min(change, beat)
            if j >= m:
                break
            picked.append(j)
            last, start = decided.times[j], j + 1
            if j == change:
                c += 1
        self._last[s] = last
        return picked
