"""Parallel replay: ranges of a log replayed independently, with a result identical to sequential replay.

1. Each range's start state, the state after the batch before it, from the last snapshot or state image before
   the range (else from the state before the log: empty, or the snapshot below a truncated log), in one of two
   ways (``plan``):
   - ``caught_up`` (a range near its origin: at most ``CATCH_UP`` times its own size after it): the range's task
     replays the batches between the origin and the range itself, with the loader alone (no per-batch step, no
     rows), about a sixth of what replaying them through the step costs;
   - ``range_delta`` (per piece between range starts, in parallel) then ``prefixes`` (cheap, on the driver): the
     composition of the deltas of the pieces between the origin and the range, each computed from its own records
     only, knowing nothing of the state before it (more work per record than the catch-up, but spread over every
     core: for ranges far from any origin).
2. ``replay_range`` (per range, in parallel): a loader set to that start state replays the range batch by batch
   through the per-batch step, exactly as the python engine does sequentially. The step starts from the range's
   start state (``log_start=False``): its rows go on from the range before's, and the ranges' rows join as they
   are.

A range is an offset interval; a batch belongs to the range holding its base offset. Workers open the log
directory themselves: only offsets, deltas and column chunks travel. ``ParallelEngine`` runs the algorithm in
this process; ``engines.spark`` on Spark's executors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from metalog.analysis.domain.columns import Chunk
from metalog.analysis.engines.replay import TimelineReplay
from metalog.analysis.engines.request import AnalysisRequest, AnalysisSummary, Progress, Stage, T, here
from metalog.analysis.engines.start_files import read_start
from metalog.analysis.outputs.growth import ClusterGrowth, part_growth, type_order
from metalog.analysis.outputs.growth_parts import GrowthPart, joined
from metalog.analysis.outputs.growth_tables import write_growth_tables
from metalog.errors import DecodeError, LogError
from metalog.log import MetadataLog
from metalog.replay.gc import gc_paused
from metalog.replay.history import MetadataHistory
from metalog.replay.points import StartPoint
from metalog.state.image import MetadataImage
from metalog.state.loader import OpenTransaction
from metalog.state.overlay import RangeBuilder, RangeDelta, StartState, start_state, then

__all__ = ["CATCH_UP", "LogOutline", "Origin", "ParallelEngine", "Piece", "RangeReplay", "batch_offsets",
           "catch_up_ranges", "caught_up", "log_bounds", "log_outline", "open_transaction", "origin_offset", "plan",
           "prefixes", "range_delta", "range_start", "replay_from", "replay_range", "split_ranges", "start_points",
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


def catch_up_ranges(first: int, last: int, n: int, ratio: float) -> list[tuple[int, int]]:
    """``n`` offset intervals covering [first, last] that take equally long when each range catches up from
    ``first`` (``caught_up``): a range costs its own records, plus ``ratio`` of one for each record before it, so each
    range is (1 - ``ratio``) times as long as the one before; ``ratio`` 0 gives ``split_ranges``' equal ones."""
    size = last - first + 1
    if size <= 0 or ratio <= 0:
        return split_ranges(first, last, n)
    n = max(1, min(n, size))
    weights = [(1 - ratio) ** j for j in range(n)]
    ends: list[int] = []
    total, run = sum(weights), 0.0
    for j, weight in enumerate(weights):
        run += weight
        at_least = (ends[-1] if ends else first) + 1  # each range keeps an offset, and leaves one to each after it
        ends.append(min(max(first + round(size * run / total), at_least), last + 1 - (n - j - 1)))
    starts = [first, *ends[:-1]]
    return [(lo, end - 1) for lo, end in zip(starts, ends, strict=True)]


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


# a range catches up from its origin (``caught_up``) when the batches between them are at most this many times the
# range's own size: the catch-up replays them with the loader alone, about 0.16 of a whole task's CPU per record
# (0.20 s for 500k records, against 2.45 s for the whole 1M-record task, tables written), where a piece's delta
# costs 0.7 of it (1.71 s for the same 500k); so a range 3 sizes from its origin catches up for about what its own
# replay costs, and ranges farther out are started from deltas computed on every core
CATCH_UP = 3


@dataclass(frozen=True)
class Origin:
    """Where a range's start state comes from: ``point``, a snapshot or state image holding the state through
    its offset (None: the state before the log's first offset), then either the batches up to the range replayed
    by its own task (``catch_up``), or the deltas of ``pieces``, in order. ``image``: with ``catch_up``, a file
    another process of this machine writes that catch-up into (``start_files``; the Spark driver's while its JVM
    starts, ``spark_starts``), which the range's task reads rather than catching up itself, unless its writer
    ended without it."""

    point: StartPoint | None
    pieces: tuple[Piece, ...]
    catch_up: bool = False
    image: str | None = None


def start_points(path: str | os.PathLike[str]) -> list[StartPoint]:
    """Snapshots and state images a range can start from: inside the log and at a batch boundary (so the
    batches after one are whole), ordered by offset (an image after a snapshot at the same offset)."""
    with MetadataHistory(path) as history:
        return _start_points(history)


def _start_points(history: MetadataHistory) -> list[StartPoint]:
    log, end = history.log, history.end_offset
    return [p for p in history.start_points()
            if p.kind != "empty" and log.log_start_offset <= p.offset + 1 <= end
            and next(log.scan(p.offset + 1))[0] == p.offset + 1]


@dataclass(frozen=True)
class LogOutline:
    """What a plan needs of a log directory: its first and last offsets (``log_bounds``) and the points its
    ranges can start from (``start_points``)."""

    first: int
    last: int
    points: list[StartPoint]


def log_outline(path: str | os.PathLike[str], *, points: bool = True) -> LogOutline:
    """``log_bounds`` and (with ``points``) ``start_points`` from one opening of the log (each opening reads the
    active segment's index files: about 9 ms for a 1M-record log)."""
    with MetadataHistory(path) as history:
        log = history.log
        return LogOutline(log.log_start_offset, log.log_end_offset - 1, _start_points(history) if points else [])


def origin_offset(first: int, point: StartPoint | None) -> int:
    """The first offset replayed after a range's origin ``point``: the one after the point's, or for None the
    log's first (``first``)."""
    return first if point is None else point.offset + 1


def plan(ranges: Sequence[tuple[int, int]], first: int, points: Sequence[StartPoint] = (),
         catch_up: float = CATCH_UP) -> list[Origin]:
    """Each range's origin: the last point before its first offset, else the log's start (``first``); then a
    range at most ``catch_up`` times its size after it catches up (0: none does), and any other gets the pieces
    between the origin and the range: cut at range starts, so one piece's delta serves several ranges."""
    starts = [lo for lo, _ in ranges]
    out = []
    for lo, hi in ranges:
        point = None
        for p in points:
            if p.offset < lo:
                point = p
        origin = origin_offset(first, point)
        if origin < lo <= origin + catch_up * (hi - lo + 1):
            out.append(Origin(point, (), catch_up=True))
            continue
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


def _origin_image(history: MetadataHistory, point: StartPoint | None) -> MetadataImage:
    """The state a point holds; for None, the state before the log (empty, or the snapshot below a truncated
    log)."""
    return history.state_before_log() if point is None else history.state_at(point.offset).image


def caught_up(path: str | os.PathLike[str], point: StartPoint | None, lo: int) -> StartState:
    """The start state of the range starting at ``lo``: the batches from ``point`` (None: the log's start) to the
    range, those with a base offset before ``lo``, replayed by the loader alone (the fused path: no image and no
    step per batch); a transaction still open there with its records so far (what ``start_state`` makes of a
    prefix)."""
    with MetadataHistory(path) as history:
        return _caught_up(history, point, lo)


def _caught_up(history: MetadataHistory, point: StartPoint | None, lo: int) -> StartState:
    with gc_paused():
        log = history.log
        _, last = batch_offsets(log, origin_offset(log.log_start_offset, point), lo - 1)
        loader = history.loader_through(point, last)
        begin = loader.transaction_start
        if begin is None or not loader.in_transaction:
            return StartState(loader.image, None)
        # its records wait in the loader's delta, over the state published at its Begin
        return StartState(loader.image, (begin, replace(loader.delta.apply(), offset=last)))


def range_start(path: str | os.PathLike[str], lo: int, origin: Origin, prefix: RangeDelta) -> StartState:
    """A range's start state, where the range is replayed (so images travel as file names, not bytes): caught up
    from its origin, or its origin's state and ``prefix``, the composition of its pieces' deltas."""
    with MetadataHistory(path) as history:
        return _range_start(history, lo, origin, prefix)


def _range_start(history: MetadataHistory, lo: int, origin: Origin, prefix: RangeDelta) -> StartState:
    if origin.catch_up:
        written = read_start(Path(origin.image)) if origin.image is not None else None
        return written if written is not None else _caught_up(history, origin.point, lo)
    return start_state(_origin_image(history, origin.point), prefix)


def start_states(path: str | os.PathLike[str], ranges: Sequence[tuple[int, int]], *, points: bool = True,
                 catch_up: float = CATCH_UP) -> list[StartState]:
    """The state before each range, from snapshots and images where there are some (``points``), caught up or
    from deltas as ``plan`` says for ``catch_up``."""
    outline = log_outline(path, points=points)
    origins = plan(ranges, outline.first, outline.points, catch_up)
    deltas = {piece: range_delta(path, *piece) for piece in sorted({p for o in origins for p in o.pieces})}
    return [range_start(path, lo, o, d)
            for (lo, _), o, d in zip(ranges, origins, prefixes(origins, deltas), strict=True)]


def open_transaction(start: StartState) -> OpenTransaction | None:
    """The transaction open at a range's start, for a loader to start inside it as sequential replay has it."""
    return None if start.transaction is None else OpenTransaction(*start.transaction)


def joined_growth(path: str | os.PathLike[str], name: str, parts: Sequence[GrowthPart]) -> ClusterGrowth:
    """A cluster's growth tables from its ranges' counts, in order (``growth_parts.joined``), its control batches
    and snapshots read from its log at ``path``."""
    with MetadataLog.open(path) as log:
        return part_growth(log, name, joined(parts, type_order))


# ---- 3. replaying a range ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class RangeReplay:
    """A range to replay: the batches with a base offset in [``lo``, ``hi``] of cluster ``cluster``'s log at
    ``path``; ``log_start``: the range is the log's first (else it starts from the state after the range
    before)."""

    path: str | os.PathLike[str]
    cluster: str
    lo: int
    hi: int
    log_start: bool


# told a range's growth count (``outputs.growth_parts``) with the log it counted, still open, after its replay
Counted = Callable[[MetadataLog, GrowthPart], object]


def replay_range(job: RangeReplay, start: StartState, sink: Callable[[Chunk], object],
                 growth: Counted | None = None) -> int:
    """The rows of each batch (data or control) of the range, from its start state ``start``, handed to ``sink``
    as chunks in log order; the data records replayed. ``growth``: told the range's growth count, counted from the
    replay's own scan (``TimelineReplay.run_counted``, through a tee: the log is read once)."""
    with MetadataLog.open(job.path) as log:
        return _replay(log, job, start, sink, growth)


def replay_from(job: RangeReplay, origin: Origin, prefix: RangeDelta, sink: Callable[[Chunk], object],
                growth: Counted | None = None) -> int:
    """``range_start`` then ``replay_range``, with the log opened once for both (each opening reads the active
    segment's index files: about 9 ms for a 1M-record log)."""
    with MetadataHistory(job.path) as history:
        return _replay(history.log, job, _range_start(history, job.lo, origin, prefix), sink, growth)


def _replay(log: MetadataLog, job: RangeReplay, start: StartState, sink: Callable[[Chunk], object],
            growth: Counted | None) -> int:
    with gc_paused():
        replay = TimelineReplay(log, job.cluster, start.image, open_transaction(start), log_start=job.log_start)
        first, last = batch_offsets(log, job.lo, job.hi)
        if growth is None:
            return replay.run(first, last, sink)
        records, part = replay.run_counted(first, last, sink)
        growth(log, part)
        return records


@dataclass(frozen=True)
class ParallelEngine:
    """The parallel algorithm run in this process (the Spark engine runs the same steps on executors), each
    cluster's ranges one after another into its tables: ``ranges`` is how many equal offset ranges per cluster,
    ``points``: start ranges from snapshots and state images where there are some; ``catch_up``: as ``plan``'s (0:
    every range from deltas). Its tables are the python engine's, byte for byte (the ranges' rows join as they
    are)."""

    ranges: int = 2
    points: bool = True
    name: str = "parallel"
    catch_up: float = CATCH_UP

    def analyze(self, request: AnalysisRequest, progress: Progress | None = None,
                stage: Stage | None = None) -> AnalysisSummary:
        from metalog.analysis.outputs.tables import claim_output
        from metalog.analysis.outputs.writers import TableWriters

        claim_output(request.out)
        records = 0
        grown: list[ClusterGrowth] = []  # each cluster's growth, counted by its ranges as they replay
        with TableWriters(request.out, request.bucket_ms, csv=request.csv,
                          metrics_every_batch=request.metrics_every_batch) as writers:
            for cluster in request.clusters:
                writers.cluster(cluster.name)
                records += self.replay_cluster(cluster.path, cluster.name, writers.add, growth=grown.append)
                writers.end_cluster()
            written = writers.close()
            batches, events = writers.batches, writers.events_written
        written += write_growth_tables(request.out, grown, csv=request.csv)
        return AnalysisSummary(request.out, tuple(request.names), records, batches, events, tuple(written))

    def replay_cluster(self, path: str | os.PathLike[str], name: str, sink: Callable[[Chunk], object],
                       bounds: Sequence[tuple[int, int]] | None = None,
                       growth: Callable[[ClusterGrowth], object] | None = None) -> int:
        """One cluster's ranges (``bounds``, default ``ranges`` equal ones), in order, into ``sink``; its data
        records. ``growth``: told the cluster's growth tables, its ranges' counts joined (``growth_parts``)."""
        bounds = split_ranges(*log_bounds(path), self.ranges) if bounds is None else bounds
        starts = start_states(path, bounds, points=self.points, catch_up=self.catch_up)
        parts: list[GrowthPart] = []
        records = sum(replay_range(RangeReplay(path, name, lo, hi, log_start=i == 0), start, sink,
                                   None if growth is None else lambda _, part: parts.append(part))
                      for i, ((lo, hi), start) in enumerate(zip(bounds, starts, strict=True)))
        if growth is not None:
            growth(joined_growth(path, name, parts))
        return records

    @property
    def cores(self) -> int:
        """``run``'s tasks run one after another, here."""
        return 1

    def run(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return here(fn, items)
