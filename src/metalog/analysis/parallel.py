"""Parallel replay: ranges of a log replayed independently, with a result identical to sequential replay.

1. ``range_delta`` (per range, in parallel): the range's RangeDelta, from its own records only.
2. ``start_states`` (cheap, on the driver): the state at each range's start, as the prefix composition of
   the deltas before it over the state the log starts from (empty, or the snapshot below a truncated log).
3. ``replay_range`` (per range, in parallel): a loader set to that start state replays the range batch by
   batch and yields each batch's timeline row and events, exactly as ``analyze_log`` does sequentially.

A range is an offset interval; a batch belongs to the range holding its base offset. Workers open the log
directory themselves: only offsets, deltas and rows travel.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from metalog.analysis.events import aborted, directory_failures, row_events
from metalog.analysis.overlay import Overlay, RangeDelta, apply, entity_key, published, then
from metalog.analysis.pipeline import Analysis, _WatchingLoader, cluster_name
from metalog.analysis.timeline import RowCounter
from metalog.codec.framing import decode_metadata_record
from metalog.errors import LogError, MetalogError, ReplayError
from metalog.log import MetadataLog
from metalog.replay.history import MetadataHistory, gc_paused, replay_values
from metalog.state import versions as V
from metalog.state.delta import MetadataDelta
from metalog.state.image import EMPTY, MetadataImage

_MARKERS = {"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"}


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
    """The batches whose base offset lies in [lo, hi]."""
    for batch in log.scan(lo):
        if batch[0] > hi:
            return
        if batch[0] >= lo:
            yield batch


# ---- 1. a range's delta -----------------------------------------------------------------------------------
class _Block:
    """An overlay built from consecutive records between transaction markers.

    Keys the block wrote whole live in a real MetadataDelta (so partition changes to a topic created here
    cost what they cost in sequential replay); records on keys it never wrote whole wait in ``partial``.
    """

    def __init__(self) -> None:
        self.live = MetadataDelta(EMPTY)
        self.known: set[tuple[Any, ...]] = set()
        self.overlay = Overlay()

    def add(self, offset: int, record: Any) -> None:
        o = self.overlay
        o.offset = offset
        name = record.NAME
        if name == "NoOpRecord":
            return
        if name == "ConfigRecord":
            self._config(offset, record)
            return
        key, full = entity_key(record)
        if full or key in self.known:
            if name == "RemoveTopicRecord":
                topic = self.live.topics.get(key[1])
                if topic is not None:
                    self._clear((V.TOPIC_RESOURCE, topic.name), offset)
            self.live.replay(record, offset)
            self.known.add(key)
            o.partial.pop(key, None)
        else:
            o.partial.setdefault(key, []).append((offset, record))

    def _config(self, offset: int, record: Any) -> None:
        if record.resource_type not in V.CONFIG_RESOURCE_TYPES:
            raise ReplayError(f"unknown config resource type {record.resource_type}", offset=offset,
                              record="CONFIG_RECORD")
        resource = (record.resource_type, record.resource_name)
        cleared, records = self.overlay.configs.get(resource, (None, []))
        self.overlay.configs[resource] = (cleared, [*records, (offset, record)])

    def _clear(self, resource: tuple[int, str], at: int) -> None:
        self.overlay.configs[resource] = (at, [])

    def finish(self) -> Overlay:
        image = self.live.apply()
        for key in self.known:
            self.overlay.full[key] = _value(image, key)
        return self.overlay


def _value(image: MetadataImage, key: tuple[Any, ...]) -> Any:
    kind = key[0]
    if kind == "features":
        if key[1] == V.METADATA_VERSION_FEATURE:
            return image.features.metadata_version
        return image.features.finalized.get(key[1])
    if kind == "zk_migration_state":
        return image.features.zk_migration_state
    if kind == "next_producer_id":
        return image.next_producer_id
    return getattr(image, kind).get(key[1])


def range_delta(path: str | os.PathLike[str], lo: int, hi: int) -> RangeDelta:
    """What the batches with base offsets in [lo, hi] do, knowing nothing of the state before them."""
    delta, block = RangeDelta(), _Block()
    with MetadataLog.open(path, writable=False) as log, gc_paused():
        for base, _, _, control, values in _batches(log, lo, hi):
            if control:
                continue
            for i, value in enumerate(values):
                offset = base + i
                try:
                    record = decode_metadata_record(value)[0]  # type: ignore[arg-type]
                except (MetalogError, TypeError) as e:
                    raise LogError(f"offset {offset}: {e}", file=log.directory) from None
                if record.NAME in _MARKERS:
                    delta = then(then(delta, RangeDelta(head=block.finish())), _marker(record.NAME, offset))
                    block = _Block()
                else:
                    block.add(offset, record)
    return then(delta, RangeDelta(head=block.finish()))


def _marker(name: str, offset: int) -> RangeDelta:
    if name == "BeginTransactionRecord":
        return RangeDelta(open=(offset, Overlay()), begun=True)
    return RangeDelta(close=("end" if name == "EndTransactionRecord" else "abort", offset))


# ---- 2. start states --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StartState:
    image: MetadataImage  # published
    transaction: tuple[int, MetadataImage] | None  # (begin offset, the image with the open transaction's records)


def start_states(base: MetadataImage, deltas: Sequence[RangeDelta]) -> list[StartState]:
    """The state before each range: ``base`` and the composition of the deltas before it."""
    states, prefix = [], RangeDelta()
    for d in deltas:
        visible, open_tx = published(prefix)
        image = apply(base, visible)
        tx = None if open_tx is None else (open_tx[0], apply(image, open_tx[1]))
        states.append(StartState(image, tx))
        prefix = then(prefix, d)
    return states


def loader_at(start: StartState) -> _WatchingLoader:
    """A loader in exactly the state sequential replay has there (inside an open transaction, too)."""
    loader = _WatchingLoader(start.image)
    if start.transaction is not None:
        begin, pending = start.transaction
        loader._delta = MetadataDelta(pending)  # noqa: SLF001 - the pending records, unpublished
        loader._pending = True  # noqa: SLF001
        loader.in_transaction, loader.transaction_start = True, begin
    return loader


# ---- 3. replaying a range ---------------------------------------------------------------------------------
def replay_range(path: str | os.PathLike[str], cluster: str, lo: int, hi: int,
                 start: StartState) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(row, its aborts and directory failures) of each data batch with a base offset in [lo, hi]."""
    out = []
    loader, counter = loader_at(start), RowCounter(cluster)
    brokers = start.image.brokers
    with MetadataLog.open(path, writable=False) as log, gc_paused():
        end = log.log_end_offset - 1
        for base, last, max_ts, control, values in _batches(log, lo, hi):
            if control or not replay_values(loader, base, values, base, end, log.directory):
                continue
            image = loader.image
            row = counter.row(image, last, max_ts, loader.in_transaction)
            events = [aborted(row, at, began) for at, began in loader.aborts]
            loader.aborts.clear()
            if image.brokers is not brokers:
                events += directory_failures(brokers, image.brokers, row)
                brokers = image.brokers
            out.append((row, events))
    return out


def base_image(path: str | os.PathLike[str]) -> MetadataImage:
    """The state before the log's first offset: empty, or from the snapshot below a truncated log."""
    with MetadataHistory(path) as history:
        start = history.log.log_start_offset
        return history.state_at(start - 1).image if start > 0 else EMPTY


def assemble(parts: Sequence[list[tuple[dict[str, Any], list[dict[str, Any]]]]]) -> Analysis:
    """Rows and events of consecutive ranges, with the row-to-row events across range boundaries."""
    result, prev = Analysis(), None
    for part in parts:
        for row, events in part:
            result.rows.append(row)
            result.events += events
            result.events += row_events(prev, row)
            prev = row
    return result


def analyze_parallel(path: str | os.PathLike[str], ranges: int | Sequence[tuple[int, int]],
                     cluster: str | None = None) -> Analysis:
    """The parallel algorithm run in one process (the Spark engine runs the same steps on executors):
    ``ranges`` is how many equal offset ranges, or the [lo, hi] ranges themselves."""
    cluster = cluster or cluster_name(path)
    first, last = log_bounds(path)
    bounds = split_ranges(first, last, ranges) if isinstance(ranges, int) else list(ranges)
    deltas = [range_delta(path, lo, hi) for lo, hi in bounds]
    starts = start_states(base_image(path), deltas)
    result = assemble([replay_range(path, cluster, lo, hi, s) for (lo, hi), s in zip(bounds, starts, strict=True)])
    result.records = last - first + 1 if last >= first else 0
    return result
