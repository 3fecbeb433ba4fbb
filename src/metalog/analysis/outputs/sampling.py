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

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from metalog.analysis.domain.columns import Ints, int64s
from metalog.analysis.outputs.kernels import cast, kernel, take
from metalog.codec import core

HEARTBEAT_MS = 60_000


@dataclass(frozen=True)
class Samples:
    """A series' samples: their times (epoch ms, increasing) and values."""

    times: list[int]
    values: list[int]


@dataclass(frozen=True)
class Decided:
    """Batch times whose value is known (the next row's time differs): a millisecond's last row each, ``rows``
    their places among the rows they were picked from (the row kept from the chunk before, where there is one,
    then the chunk's), ``nexts`` the batch time after each (after the log's last: none, ``open_end``, later than
    any)."""

    times: Ints
    rows: Ints
    nexts: Ints
    open_end: bool


class Sampler:
    """One cluster's series (``series`` of them), sampled as the module says, from its columns in time order then
    log order: ``add`` a chunk of them (``times`` in epoch ms, ``values`` one column per series: int64 Arrow arrays
    without nulls, ``array('q')``s or sequences of ints) at a time, then ``close``; each returns the samples it
    decided, one ``Samples`` per series. A chunk's last row waits for the next chunk (the same millisecond may go
    on there, and a heartbeat looks at the next batch time). The batch times are compared in Arrow, each series'
    values by ``series_samples`` (compiled where built) over its int64s: Python values are made only for the
    samples."""

    def __init__(self, series: int, *, every_batch: bool = False) -> None:
        self.series, self.every_batch = series, every_batch
        self.batch_times = 0  # decided so far
        self._pending: tuple[int, list[int]] | None = None  # the last row so far: its time, its values
        self._before: list[int | None] = [None] * series  # each series' value at the last batch time decided
        self._last: list[int | None] = [None] * series  # each series' last sample's time

    def add(self, times: Any, values: Sequence[Any]) -> list[Samples]:
        import pyarrow as pa

        n = len(times)
        if len(values) != self.series or any(len(column) != n for column in values):
            raise ValueError(f"{self.series} columns of {n} values expected")
        if not n:
            return [Samples([], []) for _ in range(self.series)]
        t = int64_array(times)
        if steps_back(t) or (self._pending is not None and self._pending[0] > t[0].as_py()):
            raise ValueError("batch times out of order: sort them by time, then log order")
        columns = [int64_view(column) for column in values]
        pending, self._pending = self._pending, (t[n - 1].as_py(), [column[n - 1] for column in columns])
        if pending is not None:  # the row kept from the chunk before, ahead of this one's
            t = pa.concat_arrays([int64_array([pending[0]]), t])
        # a millisecond's last row: a row whose next row is in a later millisecond; the last row waits
        found = kernel("indices_nonzero", kernel("not_equal", t.slice(1), t.slice(0, len(t) - 1)))
        rows, decided = int64s(found), int64s(take(t, found))  # (found: uint64s, below 2^63)
        nexts = decided[1:]
        nexts.append(self._pending[0])
        return self._samples(Decided(decided, rows, nexts, False), columns,
                             [None] * self.series if pending is None else pending[1])

    def close(self) -> list[Samples]:
        """The samples of the last row (the log's last batch time)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return [Samples([], []) for _ in range(self.series)]
        empty = array("q")
        return self._samples(Decided(array("q", [pending[0]]), array("q", [0]), array("q", [0]), True),
                             [empty] * self.series, pending[1])

    def _samples(self, decided: Decided, columns: list[Sequence[int]], heads: Sequence[int | None],
                 ) -> list[Samples]:
        """Each series' samples among ``decided``, its rows the row kept from the chunk before (``heads``: each
        series' value there; None: no row was kept) then its ``columns``'."""
        self.batch_times += len(decided.times)
        if not decided.times:
            return [Samples([], []) for _ in columns]
        sample = series_sampler()
        out = []
        for s, (column, head) in enumerate(zip(columns, heads, strict=True)):
            times, values, self._before[s], self._last[s] = sample(decided, column, head, self._before[s],
                                                                   self._last[s], self.every_batch)
            out.append(Samples(times.tolist(), values.tolist()))
        return out


def series_samples(decided: Decided, column: Sequence[int], head: int | None, before: int | None,
                   last: int | None, every_batch: bool) -> tuple[Ints, Ints, int, int | None]:
    """One series' samples among the batch times ``decided`` (at least one): their times and values, the series'
    value at the last of them and its last sample's time (None: none yet). Its value at a row of ``decided.rows``:
    ``head`` at row 0 where ``head`` is not None (the row kept from the chunk before), else ``column``'s at the
    row (less one, after a head). ``before``: its value at the batch time decided before these (None: none);
    ``last``: its last sample's time. A sample at each change (at every batch time with ``every_batch``) and the
    heartbeats between (``select``). The pure twin of ``compiled.heartbeats.series_samples``."""
    if head is None:
        at = array("q", [column[row] for row in decided.rows])
    else:
        at = array("q", [head if row == 0 else column[row - 1] for row in decided.rows])
    m = len(at)
    if every_batch:
        changes = array("q", range(m))
    else:
        changes = array("q", [0] if at[0] != before else [])
        changes.extend([i for i in range(1, m) if at[i] != at[i - 1]])
    picked, last = heartbeats()(decided.times, decided.nexts, decided.open_end, changes, last, HEARTBEAT_MS)
    return (array("q", [decided.times[j] for j in picked]), array("q", [at[j] for j in picked]), at[m - 1],
            last)


def select(times: Ints, nexts: Ints, open_end: bool, changes: Ints, last: int | None,
           heartbeat: int) -> tuple[Ints, int | None]:
    """A series' samples among batch times: the indices of ``times`` picked, and the last one's time (None: none
    yet). ``nexts``: the batch time after each (the last one's, with ``open_end``, later than any: the log ends
    there); ``changes``: the indices where the series' value changes, in order; ``last``: its previous sample's
    time (None: this is its first batch time). Picked: each change, and before each change (and the end) the
    heartbeats since the previous sample: the latest batch time whose next one is more than ``heartbeat`` ms after
    the previous sample, as long as that comes first. ``compiled.heartbeats.select`` is the compiled twin."""
    m = len(times)
    hi = m - 1 if open_end else m  # the next times a search compares (the open end is later than any)
    picked = array("q")
    start = 0
    for change in chain(changes, (m,)):
        if not 0 <= change <= m:
            raise ValueError(f"a change at {change}, not among {m} batch times")
        while True:
            if last is None:  # the series' first batch time
                beat = start
            elif change > start and (change > hi or nexts[change - 1] > last + heartbeat):  # (nexts never decrease)
                beat = bisect_right(nexts, last + heartbeat, start, hi)  # (none: hi, the open end or m)
            else:
                break
            if beat >= change:
                break
            picked.append(beat)
            last, start = times[beat], beat + 1
        if change >= m:
            break
        picked.append(change)
        last, start = times[change], change + 1
    return picked, last


# The heartbeats' compiled twin (``.compiled`` None: the pure ``select`` runs), in the "analysis" core.
HEARTBEATS = core.register_twin("analysis", "metalog.analysis.outputs.compiled.heartbeats", "select", select)


def heartbeats() -> Any:
    """The ``select`` that runs: the compiled twin where it was built and ``METALOG_PURE`` is not set."""
    return select if HEARTBEATS.compiled is None else HEARTBEATS.compiled


def same_heartbeat(module: Any) -> str | None:
    """Why a built twin is not to run: a heartbeat other than this module's (a stale build), or None."""
    built = getattr(module, "HEARTBEAT", None)
    return None if built == HEARTBEAT_MS else f"a stale build: its heartbeat is {built} ms, not {HEARTBEAT_MS}"


# A series' samples' compiled twin (``.compiled`` None: the pure ``series_samples`` runs), in the "analysis" core.
SERIES_SAMPLES = core.register_twin("analysis", "metalog.analysis.outputs.compiled.heartbeats", "series_samples",
                                    series_samples, check=same_heartbeat)


def series_sampler() -> Any:
    """The ``series_samples`` that runs: the compiled twin where it was built and ``METALOG_PURE`` is not set."""
    return series_samples if SERIES_SAMPLES.compiled is None else SERIES_SAMPLES.compiled


def steps_back(column: Any) -> bool:
    """Whether an int64 Arrow array (``int64_array``) has a value less than the one before it."""
    n = len(column)
    return n > 1 and bool(kernel("any", kernel("less", column.slice(1), column.slice(0, n - 1))).as_py())


def int64_view(values: Any) -> Sequence[int]:
    """``values`` as int64s that index as Python ints and read as an int64 buffer: an ``array('q')`` as it is, an
    int64 Arrow array without nulls (times as their epoch ms) as a view of its buffer (no copy), other ints
    through a copy."""
    import pyarrow as pa

    if isinstance(values, array) and values.typecode == "q":
        return values
    if isinstance(values, pa.Array):
        values = int64_array(values)
        if values.null_count:
            raise ValueError("a series without a value at a batch time")
        if not len(values):
            return array("q")
        return memoryview(values.buffers()[1]).cast("q")[values.offset:values.offset + len(values)]
    return array("q", values)


def int64_array(values: Any) -> Any:
    """``values`` as an int64 Arrow array: an Arrow array as it is (times as their epoch ms), an ``array('q')``
    without a copy, other ints through one (``pa.array`` on a Python sequence imports pandas: see
    ``layout.arrow_array``)."""
    import pyarrow as pa

    if isinstance(values, pa.Array):
        return cast(values, pa.int64()) if values.type != pa.int64() else values
    ints = values if isinstance(values, array) and values.typecode == "q" else array("q", values)
    return pa.Array.from_buffers(pa.int64(), len(ints), [None, pa.py_buffer(ints)])
