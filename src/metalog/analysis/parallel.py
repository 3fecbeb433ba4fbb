"""Parallel replay: ranges of a log replayed independently, with a result identical to sequential replay.

1. ``range_delta`` (per range, in parallel): the range's RangeDelta, from its own records only.
2. ``plan``/``prefixes`` (cheap, on the driver): each range starts from the last snapshot or state image
   before it (else from the state before the log: empty, or the snapshot below a truncated log) and the
   composition of the deltas of the pieces between that point and the range; no deltas when a point lies
   right before it.
3. ``replay_range`` (per range, in parallel): a loader set to that start state replays the range batch by
   batch through the per-batch step, exactly as ``analyze_log`` does sequentially. A range's start state is the
   state after the batch before it, which the step starts from (``log_start=False``): its rows go on from the
   range before's, and the ranges' rows join as they are.

A range is an offset interval; a batch belongs to the range holding its base offset. Workers open the log
directory themselves: only offsets, deltas and rows travel.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from metalog.analysis.brokers import BrokerTables
from metalog.analysis.pipeline import TimelineReplay, add_chunks
from metalog.analysis.result import Analysis, cluster_name
from metalog.errors import DecodeError, LogError
from metalog.log import MetadataLog
from metalog.replay.gc import gc_paused
from metalog.replay.history import MetadataHistory
from metalog.replay.points import StartPoint
from metalog.state.image import MetadataImage
from metalog.state.loader import OpenTransaction
from metalog.state.overlay import RangeBuilder, RangeDelta, StartState, fold, start_state, then

__all__ = ["Origin", "Part", "Piece", "RangeDelta", "StartState", "analyze_parallel", "assemble", "fold",
           "log_bounds", "open_transaction", "origin_image", "plan", "prefixes", "range_delta", "range_start",
           "replay_range", "split_ranges", "start_points", "start_state", "start_states"]


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
    with MetadataLog.open(path, writable=False) as log:
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


# ---- 1. a range's delta -----------------------------------------------------------------------------------
def range_delta(path: str | os.PathLike[str], lo: int, hi: int) -> RangeDelta:
    """What the batches with base offsets in [lo, hi] do, knowing nothing of the state before them."""
    builder = RangeBuilder()
    add = builder.add
    with MetadataLog.open(path, writable=False) as log, gc_paused():
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
@dataclass
class Part:
    """A range's rows (dicts in their columns' order), events and the data records it replayed."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    by_broker: BrokerTables = field(default_factory=BrokerTables)
    records: int = 0


def replay_range(path: str | os.PathLike[str], cluster: str, lo: int, hi: int, start: StartState, *,
                 log_start: bool) -> Part:
    """The rows and events of each batch (data or control) with a base offset in [lo, hi]; ``log_start``: the
    range is the log's first (else ``start`` is the state after the range before)."""
    with MetadataLog.open(path, writable=False) as log, gc_paused():
        replay = TimelineReplay(log, cluster, start.image, open_transaction(start), log_start=log_start)
        replay.run(_batches(log, lo, hi), lo)
    out = Analysis()
    add_chunks(out, replay.step.take())
    return Part(out.rows, out.events, out.by_broker, replay.records)


def assemble(parts: Sequence[Part]) -> Analysis:
    """The rows of consecutive ranges of one cluster, joined as they are."""
    result = Analysis()
    for part in parts:
        result.rows += part.rows
        result.events += part.events
        result.by_broker.extend(part.by_broker)
        result.records += part.records
    return result


def analyze_parallel(path: str | os.PathLike[str], ranges: int | Sequence[tuple[int, int]],
                     cluster: str | None = None, *, points: bool = True) -> Analysis:
    """The parallel algorithm run in one process (the Spark engine runs the same steps on executors):
    ``ranges`` is how many equal offset ranges, or the [lo, hi] ranges themselves; ``points``: start ranges
    from snapshots and state images where there are some."""
    cluster = cluster or cluster_name(path)
    first, last = log_bounds(path)
    bounds = split_ranges(first, last, ranges) if isinstance(ranges, int) else list(ranges)
    starts = start_states(path, bounds, points=points)
    result = assemble([replay_range(path, cluster, lo, hi, s, log_start=i == 0)
                       for i, ((lo, hi), s) in enumerate(zip(bounds, starts, strict=True))])
    return result
