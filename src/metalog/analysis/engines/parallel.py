"""Parallel replay: ranges of a log replayed independently, with a result identical to sequential replay.

1. ``range_delta`` (per range, in parallel): the range's RangeDelta, from its own records only.
2. ``plan``/``prefixes`` (cheap, on the driver): each range starts from the last snapshot or state image
   before it (else from the state before the log: empty, or the snapshot below a truncated log) and the
   composition of the deltas of the pieces between that point and the range; no deltas when a point lies
   right before it.
3. ``replay_range`` (per range, in parallel): a loader set to that start state replays the range batch by
   batch through the per-batch step, exactly as the python engine does sequentially. A range's start state is
   the state after the batch before it, which the step starts from (``log_start=False``): its rows go on from
   the range before's, and the ranges' rows join as they are.

A range is an offset interval; a batch belongs to the range holding its base offset. Workers open the log
directory themselves: only offsets, deltas and column chunks travel. ``ParallelEngine`` runs the algorithm in
this process; ``engines.spark`` on Spark's executors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from metalog.analysis.domain.columns import Chunk
from metalog.analysis.engines.replay import TimelineReplay
from metalog.analysis.engines.request import (
    AnalysisRequest,
    AnalysisSummary,
    Progress,
    Stage,
    T,
    here,
    write_growth_tables,
)
from metalog.errors import DecodeError, LogError
from metalog.log import MetadataLog
from metalog.replay.gc import gc_paused
from metalog.replay.history import MetadataHistory
from metalog.replay.points import StartPoint
from metalog.state.image import MetadataImage
from metalog.state.loader import OpenTransaction
from metalog.state.overlay import RangeBuilder, RangeDelta, StartState, start_state, then

__all__ = ["Origin", "ParallelEngine", "Piece", "batch_offsets", "log_bounds", "open_transaction", "origin_image",
           "plan", "prefixes", "range_delta", "range_start", "replay_range", "split_ranges", "start_points",
           "start_states"]

R = TypeVar("R")


# ---- ranges -----------------------------------------------------------------------------------------------
def split_ranges(first: int, last: int, n: int) -> list[tuple[int, int]]:
    """``n`` offset intervals [lo, hi] covering [first, last] (fewer when there are fewer offsets)."""
    size = last - first + 1
    if size <= 0:
        return []
    n = max(1, min(n, size))
    bounds = [first + size * i // n for i in range(n + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(n)]


def log_bounds(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(log start offset, last offset) of a log directory."""
    with MetadataLog.open(path) as log:
        return log.log_start_offset, log.log_end_offset - 1


def _batches(log: MetadataLog, lo: int, hi: int) -> Iterator[tuple[int, int, int, bool, list[bytes | None]]]:
    """The batches whose base offset lies in [lo, hi]; from the log's start, also the batch holding it (a log may
    start inside a batch, after a snapshot: its records before ``lo`` are in the snapshot)."""
    for batch in log.scan(lo):
        base = batch[0]  # the batch's base offset
        if base > hi:
            return
        if base >= lo or lo == log.log_start_offset:
            yield batch


def batch_offsets(log: MetadataLog, lo: int, hi: int) -> tuple[int, int]:
    """The offsets of ``_batches(log, lo, hi)`` as [first, last] (first > last: none): from the first batch
    starting at ``lo`` or later (from the log's start, ``lo`` itself) to the end of the batch holding ``hi``."""
    if lo > hi or lo >= log.log_end_offset:
        return lo, lo - 1
    holding = next(log.batches(lo))
    first = lo if holding.base_offset == lo or lo == log.log_start_offset else holding.last_offset + 1
    return first, next(log.batches(min(hi, log.log_end_offset - 1))).last_offset


# ---- 1. a range's delta -----------------------------------------------------------------------------------
def range_delta(path: str | os.PathLike[str], lo: int, hi: int) -> RangeDelta:
    """What the batches with base offsets in [lo, hi] do, knowing nothing of the state before them."""
    builder = RangeBuilder()
    add = builder.add
    with MetadataLog.open(path) as log, gc_paused():
        for base, last, _, control, values in _batches(log, lo, hi):
            if base < lo:
                values, base = values[lo - base:], lo
            offset = base
            try:
                for offset, value in enumerate(() if control else values, base):
                    add(value, offset)
            except DecodeError as e:
                raise LogError(f"offset {offset}: {e}", file=log.directory) from None
            builder.end_batch(last)  # a batch end: where a state is published (a control batch's too)
    return builder.finish()


# ---- 2. start states --------------------------------------------------------------------------------------
Piece = tuple[int, int]  # an offset interval whose delta a start state needs


@dataclass(frozen=True)
class Origin:
    """Where a range's start state comes from: ``point``, a snapshot or state image holding the state through
    its offset (None: the state before the log's first offset), then the deltas of ``pieces``, in order."""

    point: StartPoint | None
    pieces: tuple[Piece, ...]


def start_points(path: str | os.PathLike[str]) -> list[StartPoint]:
    """Snapshots and state images a range can start from: inside the log and at a batch boundary (so the
    batches after one are whole), ordered by offset (an image after a snapshot at the same offset)."""
    out = []
    with MetadataHistory(path) as history:
        log, end = history.log, history.end_offset
        for p in history.start_points():
            if p.kind != "empty" and log.log_start_offset <= p.offset + 1 <= end \
                    and next(log.scan(p.offset + 1))[0] == p.offset + 1:
                out.append(p)
    return out


def plan(ranges: Sequence[tuple[int, int]], first: int, points: Sequence[StartPoint] = ()) -> list[Origin]:
    """Each range's origin: the last point before its first offset, else the log's start (``first``), and the
    pieces between that and the range: cut at range starts, so one piece's delta serves several ranges."""
    starts = [lo for lo, _ in ranges]
    out = []
    for lo in starts:
        point = None
        for p in points:
            if p.offset < lo:
                point = p
        origin = first if point is None else point.offset + 1
        cuts = [origin, *(s for s in starts if origin < s < lo), lo]
        out.append(Origin(point, tuple((a, b - 1) for a, b in zip(cuts, cuts[1:], strict=False) if b > a)))
    return out


def prefixes(origins: Sequence[Origin], deltas: dict[Piece, RangeDelta]) -> list[RangeDelta]:
    """The composition of each origin's piece deltas; a prefix shared with an earlier origin is reused."""
    memo: dict[tuple[Any, ...], RangeDelta] = {}
    out = []
    for origin in origins:
        key: tuple[Any, ...] = (origin.point,)
        composed = RangeDelta()
        for piece in origin.pieces:
            key = (*key, piece)
            if key not in memo:
                memo[key] = then(composed, deltas[piece])
            composed = memo[key]
        out.append(composed)
    return out


def origin_image(path: str | os.PathLike[str], point: StartPoint | None) -> MetadataImage:
    """The state a point holds; for None, the state before the log (empty, or the snapshot below a truncated
    log)."""
    with MetadataHistory(path) as history:
        if point is not None:
            return history.state_at(point.offset).image
        return history.state_before_log()


def range_start(path: str | os.PathLike[str], point: StartPoint | None, prefix: RangeDelta) -> StartState:
    """A range's start state, where the range is replayed (so images travel as file names, not bytes)."""
    return start_state(origin_image(path, point), prefix)


def start_states(path: str | os.PathLike[str], ranges: Sequence[tuple[int, int]], *,
                 points: bool = True) -> list[StartState]:
    """The state before each range, from snapshots and images where there are some (``points``)."""
    origins = plan(ranges, log_bounds(path)[0], start_points(path) if points else ())
    deltas = {piece: range_delta(path, *piece) for piece in sorted({p for o in origins for p in o.pieces})}
    return [range_start(path, o.point, d) for o, d in zip(origins, prefixes(origins, deltas), strict=True)]


def open_transaction(start: StartState) -> OpenTransaction | None:
    """The transaction open at a range's start, for a loader to start inside it as sequential replay has it."""
    return None if start.transaction is None else OpenTransaction(*start.transaction)


# ---- 3. replaying a range ---------------------------------------------------------------------------------
def replay_range(path: str | os.PathLike[str], cluster: str, lo: int, hi: int, start: StartState,
                 sink: Callable[[Chunk], object], *, log_start: bool) -> int:
    """The rows of each batch (data or control) with a base offset in [lo, hi], handed to ``sink`` as chunks in
    log order; the data records replayed. ``log_start``: the range is the log's first (else ``start`` is the
    state after the range before)."""
    with MetadataLog.open(path) as log, gc_paused():
        replay = TimelineReplay(log, cluster, start.image, open_transaction(start), log_start=log_start)
        return replay.run(*batch_offsets(log, lo, hi), sink)


@dataclass(frozen=True)
class ParallelEngine:
    """The parallel algorithm run in this process (the Spark engine runs the same steps on executors), each
    cluster's ranges one after another into its tables: ``ranges`` is how many equal offset ranges per cluster,
    ``points``: start ranges from snapshots and state images where there are some. Its tables are the python
    engine's, byte for byte (the ranges' rows join as they are)."""

    ranges: int = 2
    points: bool = True
    name: str = "parallel"

    def analyze(self, request: AnalysisRequest, progress: Progress | None = None,
                stage: Stage | None = None) -> AnalysisSummary:
        from metalog.analysis.outputs.tables import claim_output
        from metalog.analysis.outputs.writers import TableWriters

        claim_output(request.out)
        records = 0
        with TableWriters(request.out, request.bucket_ms, csv=request.csv,
                          metrics_every_batch=request.metrics_every_batch) as writers:
            for cluster in request.clusters:
                writers.cluster(cluster.name)
                records += self.replay_cluster(cluster.path, cluster.name, writers.add)
                writers.end_cluster()
            written = writers.close()
            batches, events = writers.batches, writers.events_written
        written += write_growth_tables(request, self.run)
        return AnalysisSummary(request.out, tuple(request.names), records, batches, events, tuple(written))

    def replay_cluster(self, path: str | os.PathLike[str], name: str, sink: Callable[[Chunk], object],
                       bounds: Sequence[tuple[int, int]] | None = None) -> int:
        """One cluster's ranges (``bounds``, default ``ranges`` equal ones), in order, into ``sink``; its data
        records."""
        bounds = split_ranges(*log_bounds(path), self.ranges) if bounds is None else bounds
        starts = start_states(path, bounds, points=self.points)
        return sum(replay_range(path, name, lo, hi, start, sink, log_start=i == 0)
                   for i, ((lo, hi), start) in enumerate(zip(bounds, starts, strict=True)))

    def run(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return here(fn, items)
