"""Point-in-time replay of a metadata log directory.

``MetadataHistory`` opens a log directory read-only and answers "what was the state at offset N
(or at time T)?": the state Kafka's loader published last at or before N (see ``metalog.replay.points``),
found by starting from the nearest Kafka snapshot or metalog state image (``metalog.replay.images``) before
it and replaying the tail of the log.

A single ``.checkpoint`` file opens as the log it is (``MetadataLog.snapshot_file``): one published state, the
snapshot's, at its end offset - 1 (where Kafka's loader publishes a snapshot), at the time its header names. It
is read whole on open, with every check ``snapshot verify`` makes: damage is an error naming the file and byte.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from metalog.codec.definitions import MESSAGES
from metalog.codec.framing import decode_metadata_record, metadata_api_key
from metalog.errors import DecodeError, LogError, MetalogError, PointError
from metalog.log import MetadataLog
from metalog.log.scan import ScannedBatch
from metalog.replay.gc import gc_paused
from metalog.replay.images import image_points, read_image, write_image
from metalog.replay.points import BatchSpan, Point, ReplayResult, StartPoint, format_time
from metalog.snapshots import SnapshotReader, SnapshotSummary
from metalog.state import MetadataLoader
from metalog.state.image import EMPTY, MetadataImage

__all__ = ["MetadataHistory", "PublishedState", "load_scanned"]

_BEGIN_TRANSACTION = MESSAGES["BeginTransactionRecord"].api_key


class PublishedState(NamedTuple):
    """A state Kafka's loader published at the end of a batch."""

    offset: int  # the batch's last offset
    timestamp: int  # the batch's max timestamp
    image: MetadataImage


ProgressCallback = Callable[[int, int], None]  # (records replayed, records to replay about)


class MetadataHistory:
    """The states a metadata log directory went through. Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.log = MetadataLog.open(path)
        self.root = self.log.root
        self.snapshot: SnapshotSummary | None = None  # opened as a single snapshot file: what reading it found
        if self.log.snapshot_file is not None:
            try:
                self.snapshot = SnapshotReader(self.log.snapshot_file).verify()
            except BaseException:
                self.log.close()
                raise

    def __enter__(self) -> MetadataHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.log.close()

    # ---- what there is ---------------------------------------------------------------------------
    @property
    def end_offset(self) -> int:
        """The last offset in the log (-1 when empty)."""
        return self.log.log_end_offset - 1

    def start_points(self) -> list[StartPoint]:
        points = [StartPoint("empty", -1)]
        if self.log.snapshot_file is not None:  # that file alone: no other snapshot, no state image
            return [*points, StartPoint("checkpoint", self.log.log_start_offset - 1, self.log.snapshot_file)]
        for sid in self.log.snapshot_ids():
            points.append(StartPoint("checkpoint", sid.end_offset - 1, self.log.directory / sid.file_name))
        points += image_points(self.root)
        # images load faster than checkpoints: at equal offsets prefer them
        return sorted(points, key=lambda p: (p.offset, p.kind == "image"))

    def batch_at(self, offset: int) -> BatchSpan:
        """The batch holding ``offset``."""
        if not self.log.log_start_offset <= offset <= self.end_offset:
            raise PointError(f"offset {offset} is not in the log (offsets {self.log.log_start_offset} to "
                             f"{self.end_offset})")
        batch = next(self.log.batches(offset, validate=False))
        return BatchSpan(batch.base_offset, batch.last_offset, batch.max_timestamp, batch.is_control)

    def is_batch_end(self, offset: int) -> bool:
        """``offset`` ends a batch (or is the offset just before the log, where a snapshot below it ends)."""
        if offset == self.log.log_start_offset - 1 or offset == self.end_offset:
            return True
        return self.log.log_start_offset <= offset < self.end_offset and self.batch_at(offset).last_offset == offset

    def offset_at_time(self, timestamp_ms: int) -> int:
        """The last offset of the last batch whose timestamp is at or before ``timestamp_ms`` (a snapshot file: its
        state's, if its header's lastContainedLogTimestamp is at or before it)."""
        if self.snapshot is not None:
            return self._snapshot_offset_at(timestamp_ms)
        after = next((b for b in self.log.batches_from_timestamp(timestamp_ms + 1)
                      if b.max_timestamp > timestamp_ms), None)
        last = self.end_offset if after is None else after.base_offset - 1
        if last < self.log.log_start_offset:
            first = self.batch_at(self.log.log_start_offset) if self.end_offset >= self.log.log_start_offset \
                else None
            since = "" if first is None else f" (offset {first.base_offset}, at {format_time(first.timestamp)})"
            raise PointError(f"{format_time(timestamp_ms)} is before the log's first batch{since}")
        return last

    def _snapshot_offset_at(self, timestamp_ms: int) -> int:
        assert self.snapshot is not None
        taken = self.snapshot.last_contained_log_timestamp
        if timestamp_ms < taken:
            raise PointError(f"{format_time(timestamp_ms)} is before the snapshot's state (its last record's time, "
                             f"{format_time(taken)})")
        return self.end_offset

    def offset_of(self, point: Point) -> int:
        """The offset whose published state a POINT names: an offset itself, a time the last offset of the last
        batch whose timestamp is at or before it, ``end`` the last offset. ``start`` names the empty state before
        the log, which Kafka's loader never published: a PointError (a diff compares with it itself)."""
        if point.kind == "start":
            raise PointError("start is the empty state before the log, which Kafka's loader never published (give "
                             "an offset, a time or end)")
        if point.kind == "end" or point.value is None:
            return self.end_offset
        if point.kind == "time":
            return self.offset_at_time(point.value)
        end = self.end_offset
        if self.snapshot is not None and point.value != end:
            raise PointError(f"offset {point.value}: a single snapshot file holds one state, Kafka's loader's at "
                             f"offset {end} (its end offset - 1)")
        if point.value > end:
            raise PointError(f"offset {point.value} is past the end of the log (last offset {end})"
                             f"{_time_hint(point.value)}")
        return point.value

    # ---- states ----------------------------------------------------------------------------------
    def state_at_point(self, point: Point, *, use_snapshots: bool = True,
                       progress: ProgressCallback | None = None) -> ReplayResult:
        """The state Kafka's loader published last at or before a POINT (``offset_of``)."""
        return self.state_at(self.offset_of(point), use_snapshots=use_snapshots, progress=progress)

    def state_at(self, offset: int | None = None, *, use_snapshots: bool = True,
                 progress: ProgressCallback | None = None) -> ReplayResult:
        """The state Kafka's loader published last at or before ``offset`` (default: the end of the log).

        Inside a batch that is the state at the end of the batch before (or just before a
        BeginTransactionRecord inside the batch, at or before ``offset``); inside an open transaction, the
        state published before it began. The result says the offset shown and why it differs."""
        end = self.end_offset
        target = end if offset is None else offset
        if target > end:
            raise PointError(f"offset {target} is past the end of the log (last offset {end})")
        log_start = self.log.log_start_offset
        batch = self.batch_at(target) if target >= log_start else None
        # whole batches through the one before ``target``'s (a log may start inside a batch, after a snapshot)
        through = target if batch is None or batch.last_offset == target else max(batch.base_offset, log_start) - 1
        start = self._start_for(through, target, use_snapshots)
        with gc_paused():
            loader, replayed = self._loader_through(start, through, progress)
            if start.offset < target and through < target and batch is not None:  # (a snapshot may end in it)
                replayed += self._replay_inside(loader, batch, max(through, start.offset) + 1, target)
        image = loader.image
        if image.offset < 0 and start.kind == "empty":
            if end < log_start:
                raise PointError("the log holds no batches: Kafka's loader published no state")
            raise PointError(_nothing_published(target, batch, loader))
        shown = batch if batch is not None and batch.base_offset <= image.offset <= batch.last_offset else \
            self.batch_at(image.offset) if image.offset >= log_start else None
        timestamp = shown.timestamp if shown else self._snapshot_time(start, image.offset)
        return ReplayResult(image, image.offset, target, batch, timestamp, start, replayed,
                            loader.transaction_start if loader.in_transaction else None)

    def _snapshot_time(self, start: StartPoint, offset: int) -> int | None:
        """A snapshot file's state: the time its header names (its last record's)."""
        if self.snapshot is None or start.kind != "checkpoint" or offset != start.offset:
            return None
        return self.snapshot.last_contained_log_timestamp

    def batch_end_state(self, offset: int | None = None, *, use_snapshots: bool = True,
                        progress: ProgressCallback | None = None) -> ReplayResult:
        """The state published last at a batch end at or before ``offset``: where a snapshot may end, since
        Kafka reads the log after a snapshot in whole batches. ``requested``, ``batch`` and
        ``transaction_start`` stay those of ``offset``, so ``note()`` says why the state is an earlier one."""
        asked = self.state_at(offset, use_snapshots=use_snapshots, progress=progress)
        found = asked
        while not self.is_batch_end(found.offset):  # published just before a BeginTransactionRecord in a batch
            try:
                found = self.state_at(max(self.batch_at(found.offset).base_offset, self.log.log_start_offset) - 1,
                                      use_snapshots=use_snapshots, progress=progress)
            except PointError:
                raise PointError(f"offset {asked.requested}: Kafka's loader published no state at the end of a "
                                 "batch at or before it") from None
        return replace(found, requested=asked.requested, batch=asked.batch, transaction_start=asked.transaction_start)

    def state_at_time(self, timestamp_ms: int, *, use_snapshots: bool = True,
                      progress: ProgressCallback | None = None) -> ReplayResult:
        """The state at the end of the last batch whose timestamp is at or before ``timestamp_ms``."""
        return self.state_at(self.offset_at_time(timestamp_ms), use_snapshots=use_snapshots, progress=progress)

    def states(self, start: int = 0, end: int | None = None) -> Iterator[PublishedState]:
        """Every state published at the end of a batch whose last offset lies in [``start``, ``end``], in log
        order: data and control batches, none while a transaction is open."""
        end = self.end_offset if end is None else end
        first = max(start, self.log.log_start_offset)
        if first > end:
            return
        through = max(self.batch_at(first).base_offset, self.log.log_start_offset) - 1
        loader, _ = self._loader_through(self._start_for(through, through, True), through, None, images=True)
        for scanned in self.log.scan(through + 1):
            _, last, max_timestamp, _, _ = scanned
            if last > end:
                return
            image = load_scanned(loader, scanned, self.log.directory, through + 1)
            if image is not None and last >= start:
                yield PublishedState(last, max_timestamp, image)

    def loader_at_end(self) -> MetadataLoader:
        """A loader that has loaded every batch of the log, a transaction still open at its end included (its records
        wait in the loader's delta): the state a controller appending to the log now continues from."""
        end = self.end_offset
        with gc_paused():
            return self._loader_through(self._start_for(end, end, True), end, None)[0]

    def state_before_log(self) -> MetadataImage:
        """The state a replay of the whole log starts from: empty, or for a log whose start moved up after a
        snapshot (Kafka's retention), the snapshot or state image that holds the offset before its first."""
        first = self.log.log_start_offset
        return EMPTY if first == 0 else self._load(self._before_log())

    def loader_through(self, start: StartPoint | None, through: int) -> MetadataLoader:
        """A loader after the batch ending at ``through`` (or ``start``'s own state, when ``through`` is its offset),
        from ``start``: a snapshot or state image of ``start_points`` at a batch end, or None for the state before
        the log (``state_before_log``). The batches after it are replayed by the loader alone, from the offset
        after ``start``'s (a log's first batch from the log's start, where that lies inside it); a transaction
        open at ``through`` is still open, its records waiting in the loader's delta. Its state published last is
        ``image``."""
        with gc_paused():
            return self._loader_through(self._before_log() if start is None else start, through, None)[0]

    def _before_log(self) -> StartPoint:
        """The point a replay of the whole log starts from: empty, or the snapshot or state image holding the
        offset before the log's first."""
        first = self.log.log_start_offset
        return self._start_for(first - 1, first - 1, True)

    def _start_for(self, through: int, target: int, use_snapshots: bool) -> StartPoint:
        """The last snapshot or state image a replay to the end of the batch ending at ``through`` can start
        from. A state image must lie at a batch end: one inside a batch (older metalog wrote some) holds a
        state Kafka's loader never published."""
        log_start = self.log.log_start_offset
        if self.log.snapshot_file is not None and not use_snapshots:
            raise PointError(f"{self.log.snapshot_file} is a single snapshot file: there is nothing but the snapshot "
                             "to replay (no --no-snapshots)")
        points = self.start_points() if use_snapshots else [StartPoint("empty", -1)]
        for p in reversed(points):
            reachable = p.offset <= through and p.offset + 1 >= log_start or p.offset == target  # none to replay
            if reachable and (p.kind != "image" or self.is_batch_end(p.offset)):
                return p
        if target < log_start:
            raise PointError(f"offset {target} is before the log, which starts at offset {log_start}, and no "
                             "snapshot or state image holds it")
        raise PointError(f"offset {target} cannot be reached: the log starts at {log_start} and no snapshot or "
                         "state image lies between")

    def _loader_through(self, start: StartPoint, through: int, progress: ProgressCallback | None, *,
                        images: bool = False) -> tuple[MetadataLoader, int]:
        """A loader after the batch ending at ``through``, from ``start``; and the records it replayed. Unless
        ``images``, the loader keeps its published state as a working copy changed in place (``MetadataLoader``'s
        ``images=False``): a state published inside the replay (before each BeginTransactionRecord) then costs
        what its delta changed, not a new image, and the one image wanted is built when ``image`` is read."""
        loader = MetadataLoader(self._load(start), images=images)
        replayed, first = 0, start.offset + 1
        if first <= through:
            total = through - start.offset
            # the fused path: batches are read, checked and their values replayed without an object per batch;
            # the state at a batch end needs no earlier batch end, so only the last one is told to the loader
            for count, _ in self.log.scan_into(first, through, loader.replay_value):
                replayed += count
                if progress is not None:
                    progress(replayed, total)
            loader.end_batch(through)
        return loader, replayed

    def _replay_inside(self, loader: MetadataLoader, batch: BatchSpan, first: int, target: int) -> int:
        """The records of ``batch`` from ``first`` up to ``target``: they publish only where a
        BeginTransactionRecord follows one of them (Kafka's loadBatch), which may be the record at ``target`` + 1.
        A control batch passes no value, but is read all the same: KRaft's rules for its records."""
        count = sum(n for n, _ in self.log.scan_into(first, target, loader.replay_value))
        if not loader.in_transaction and self._begins_transaction(target + 1):
            loader.publish(target)
        return count

    def _begins_transaction(self, offset: int) -> bool:
        base, _, _, control, values = next(self.log.scan(offset))
        return not control and metadata_api_key(values[offset - base]) == _BEGIN_TRANSACTION

    def save_image(self, result: ReplayResult) -> Path:
        """Write ``result``'s state as a state image named by the offset it was published at, so later replays
        can start there. Only a state published at the end of a batch is written (a replay from an image
        starts with the next batch)."""
        self._refuse_images()
        if result.offset < 0:
            raise PointError("the empty state before the log needs no state image")
        if not self.is_batch_end(result.offset):
            raise PointError(f"the state shown was published at offset {result.offset}, inside batch "
                             f"{self.batch_at(result.offset)}: state images are written only at batch ends")
        return write_image(self.root, result.image)

    def write_images(self, every: int, progress: ProgressCallback | None = None) -> list[Path]:
        """One pass over the log, writing a state image at the first published batch end at or after every
        multiple of ``every`` offsets (where none exists yet)."""
        self._refuse_images()
        if every < 1:
            raise MetalogError("the image interval must be at least 1 offset")
        with gc_paused():
            return self._write_images(every, progress)

    def _refuse_images(self) -> None:
        if self.log.snapshot_file is not None:
            raise PointError(f"{self.log.snapshot_file} is a single snapshot file: state images are kept beside a "
                             "log directory")

    def _write_images(self, every: int, progress: ProgressCallback | None) -> list[Path]:
        have = {p.offset for p in self.start_points() if p.kind == "image"}
        first, end = self.log.log_start_offset, self.end_offset
        if end < first:
            return []
        loader = MetadataLoader(self.state_before_log())
        written, replayed, next_mark = [], 0, (first // every + 1) * every
        for scanned in self.log.scan(first):
            replayed += replay_scanned(loader, scanned, self.log.directory, first)
            _, last, _, _, _ = scanned
            # only the batch ends that may get an image are told to the loader: publishing costs an image
            if last >= next_mark and (image := loader.end_batch(last)) is not None:
                if last not in have:
                    written.append(write_image(self.root, image))
                    have.add(last)
                next_mark = (last // every + 1) * every
            if progress is not None:
                progress(replayed, end + 1 - first)
        return written

    # ---- reading ---------------------------------------------------------------------------------
    def _load(self, start: StartPoint) -> MetadataImage:
        if start.kind == "empty" or start.path is None:
            return EMPTY
        if start.kind == "image":
            return read_image(start.path, start.offset)
        records = (decode_metadata_record(r.value).message for r in SnapshotReader(start.path).records()
                   if r.value is not None)
        return MetadataLoader().load_snapshot(records, start.offset)


def load_scanned(loader: MetadataLoader, batch: ScannedBatch, where: Path, first: int = 0) -> MetadataImage | None:
    """Load one batch as ``MetadataLog.scan`` yields it (its records from ``first`` on: a log may start inside
    its first batch, after a snapshot); the published image, or None inside a transaction. A record that does
    not decode is named by its offset and ``where``."""
    replay_scanned(loader, batch, where, first)
    _, last, _, _, _ = batch
    return loader.end_batch(last)


def replay_scanned(loader: MetadataLoader, batch: ScannedBatch, where: Path, first: int = 0) -> int:
    """Replay one batch's records from ``first`` on without ending the batch (its end publishes: call
    ``end_batch`` where a published state is wanted); returns how many records."""
    base, _, _, control, values = batch
    if control:
        return 0
    if base < first:
        values, base = values[first - base:], first
    try:
        loader.replay_values(values, base)
    except DecodeError as e:
        raise LogError(f"offset {max(loader.offset + 1, base)}: {e}", file=where) from None
    return len(values)


def _time_hint(offset: int) -> str:
    """For an offset past the end that looks like a time: how to write that time."""
    if 10**9 <= offset < 10**10:
        return f"; {offset} looks like epoch seconds: that time is {offset * 1000}ms"
    return f"; for a time in epoch milliseconds write {offset}ms" if offset >= 10**10 else ""


def _nothing_published(target: int, batch: BatchSpan | None, loader: MetadataLoader) -> str:
    if loader.in_transaction:
        return (f"offset {target}: a transaction open since offset {loader.transaction_start} is not committed "
                "there, and Kafka's loader published no state before it")
    if batch is not None:
        return f"offset {target} is inside batch {batch}, before the first state Kafka's loader published"
    return f"offset {target} is before the log: Kafka's loader published no state there"
