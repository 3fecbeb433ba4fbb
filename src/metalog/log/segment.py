"""One segment: ``<base offset>.log`` with its ``.index`` and ``.timeindex`` (Kafka's LogSegment).

Index entries follow Kafka's rule: before a batch is written at position P, an entry (batch's last
offset, P) goes into the offset index when more than ``index_interval_bytes`` lie between P and
the last indexed position, and the time index gets (max timestamp so far, its offset) when that
timestamp is new. Closing the segment adds the final time-index entry, as Kafka does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from metalog.errors import CorruptBatchError, IndexProblem, LogError
from metalog.log.batch import RecordBatch
from metalog.log.chain import BatchChain
from metalog.log.index import INDEX_INTERVAL_BYTES, OffsetIndex, TimeIndex
from metalog.log.reader import BatchWalk, read_batches

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"


_LOOKUP_CHUNK = 64 * 1024  # an index lookup reads about index_interval_bytes past the entry


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class Located(NamedTuple):
    """Where a read starts in a segment: the batch at ``position`` starts at ``base_offset``. Past the
    segment's last batch, ``position`` is its size and ``base_offset`` the offset the next segment starts at."""

    position: int
    base_offset: int


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, *, writable: bool,
                 index_interval_bytes: int = INDEX_INTERVAL_BYTES) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.writable = writable
        self.index_interval_bytes = index_interval_bytes
        stem = directory / segment_name(base_offset)
        self.path = stem.with_suffix(LOG_SUFFIX)
        self.offset_index = OffsetIndex(stem.with_suffix(INDEX_SUFFIX), base_offset)
        self.time_index = TimeIndex(stem.with_suffix(TIME_INDEX_SUFFIX), base_offset)
        flags = os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY
        self.fd = os.open(self.path, flags, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.next_offset = base_offset  # known after load_or_rebuild / a scan
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self._index_fd: int | None = None
        self._time_fd: int | None = None

    def __repr__(self) -> str:
        return f"LogSegment({self.path.name}, size={self.size}, next_offset={self.next_offset})"

    @property
    def source(self) -> str:
        return str(self.path)

    # ---- reading ---------------------------------------------------------------------------
    def batches(self, start_position: int = 0, *, validate: bool = True, end_position: int | None = None,
                chain: BatchChain | None = None) -> Iterator[RecordBatch]:
        end = self.size if end_position is None else end_position
        return read_batches(self.fd, start_position, end, BatchWalk(self.source, validate, chain),
                            mapped=not self.writable)

    def locate(self, offset: int) -> Located:
        """The batch holding ``offset``, or the first one after it, found through the offset index and checked."""
        chain = BatchChain(self.base_offset)
        for batch in self._walk(offset, chain):
            if batch.last_offset >= offset:
                return Located(batch.position, batch.base_offset)
        return Located(self.size, chain.next_offset)

    def locate_timestamp(self, timestamp: int) -> Located:
        """The first batch whose maxTimestamp is at or after ``timestamp`` (Kafka's time-index lookup, then a
        scan), or the segment's end. The time index entry used must hold a batch's maxTimestamp at its offset."""
        chain = BatchChain(self.base_offset)
        entry = self.time_index.entry_before(timestamp)
        for batch in self._walk(self.base_offset if entry is None else entry.offset, chain):
            if entry is not None and batch.last_offset >= entry.offset:
                if batch.last_offset != entry.offset or batch.max_timestamp != entry.timestamp:
                    raise CorruptBatchError(
                        f"time index {self.time_index.path.name} has the entry ({entry.timestamp}, {entry.offset}), "
                        f"but the batch here ends at offset {batch.last_offset} with maxTimestamp "
                        f"{batch.max_timestamp} ('metalog log recover' rebuilds the indexes)", file=self.path,
                        position=batch.position)
                entry = None
            if batch.max_timestamp >= timestamp:
                return Located(batch.position, batch.base_offset)
        return Located(self.size, chain.next_offset)

    def _walk(self, offset: int, chain: BatchChain) -> Iterator[RecordBatch]:
        """The batches from the offset index's entry at or below ``offset`` (from the segment's first batch
        when there is none), each checked: the batch at the entry's position must be whole and end at the
        entry's offset (an entry that lands anywhere else is an error, never a silent skip), and the batches
        from there run on (``metalog.log.chain``). ``chain`` is moved past every batch yielded."""
        i = self.offset_index.floor(offset)
        if i < 0:
            chain.next_offset = self.base_offset
            yield from read_batches(self.fd, 0, self.size, BatchWalk(self.source, False, chain),
                                    chunk_bytes=_LOOKUP_CHUNK)
            return
        named, position = self.offset_index.entry(i)
        where = f"offset index {self.offset_index.path.name} entry {i} (offset {named}, position {position})"
        try:
            first = next(read_batches(self.fd, position, self.size, BatchWalk(self.source, validate=False),
                                      chunk_bytes=_LOOKUP_CHUNK), None)
        except CorruptBatchError as e:
            raise CorruptBatchError(f"{where} names a batch here, but {e.reason}", file=self.path,
                                    position=position) from None
        if first is None or first.last_offset != named:
            if first is not None:
                first.ensure_valid()  # a damaged batch says so first
            found = "the segment ends" if first is None else f"the batch here ends at offset {first.last_offset}"
            raise CorruptBatchError(f"{where}: {found} ('metalog log recover' rebuilds the indexes)",
                                    file=self.path, position=position)
        chain.next_offset, chain.epoch = first.next_offset, first.partition_leader_epoch
        yield first
        yield from read_batches(self.fd, position + first.size_in_bytes, self.size,
                                BatchWalk(self.source, False, chain), chunk_bytes=_LOOKUP_CHUNK)

    # ---- indexes ---------------------------------------------------------------------------
    def load_indexes(self) -> str | None:
        """Load both indexes; a missing or failing one is reported (the caller rebuilds)."""
        for index, label in ((self.offset_index, "offset index"), (self.time_index, "time index")):
            if not index.path.exists():
                return f"{label} {index.path.name} is missing"
            try:
                index.load(self.size) if isinstance(index, OffsetIndex) else index.load()
            except IndexProblem as e:
                return f"{label} {index.path.name}: {e}"
        last = self.time_index.last_entry
        if last is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last
        return None

    def reset_indexes(self) -> None:
        self.offset_index = OffsetIndex(self.offset_index.path, self.base_offset)
        self.time_index = TimeIndex(self.time_index.path, self.base_offset)
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset

    def observe(self, batch: RecordBatch, position: int, *, write: bool) -> None:
        """Account for a batch at ``position``: index entries (Kafka's rule) and the max timestamp."""
        if batch.max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = batch.max_timestamp, batch.last_offset
        if position - self.offset_index.last_position > self.index_interval_bytes:
            self.offset_index.append(batch.last_offset, position, self._index_fd if write else None)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp,
                                         self._time_fd if write else None)
        self.next_offset = batch.next_offset

    def write_indexes(self) -> None:
        """Write both index files whole from memory (after a rebuild) and open them for appends."""
        if not self.writable:
            return
        self._close_index_fds()
        for path, data in ((self.offset_index.path, self.offset_index.to_bytes()),
                           (self.time_index.path, self.time_index.to_bytes())):
            path.write_bytes(data)
        self.open_index_files()

    def open_index_files(self) -> None:
        if self.writable and self._index_fd is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
            self._index_fd = os.open(self.offset_index.path, flags, 0o644)
            self._time_fd = os.open(self.time_index.path, flags, 0o644)

    def _close_index_fds(self) -> None:
        for fd in (self._index_fd, self._time_fd):
            if fd is not None:
                os.close(fd)
        self._index_fd = self._time_fd = None

    # ---- writing ---------------------------------------------------------------------------
    def append(self, data: bytes, batches: list[RecordBatch]) -> int:
        """Write whole batches at the end; index them. Returns the position written at."""
        position = self.size
        written = 0
        try:
            while written < len(data):
                written += os.pwrite(self.fd, memoryview(data)[written:], position + written)
        except OSError:
            os.ftruncate(self.fd, position)  # never leave half a batch behind a failed write
            raise
        pos = position
        for batch in batches:
            self.observe(batch, pos, write=True)
            pos += batch.size_in_bytes
        self.size = position + len(data)
        return position

    def flush(self) -> None:
        os.fsync(self.fd)

    def truncate_to(self, position: int, next_offset: int) -> int:
        """Cut the log at ``position``; drop index entries beyond it. Returns the bytes removed."""
        removed = self.size - position
        if self.writable:
            os.ftruncate(self.fd, position)
            os.fsync(self.fd)
        self.size = position
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(next_offset)
        self.next_offset = next_offset
        self._recompute_max_timestamp()
        self.write_indexes()
        return removed

    def _recompute_max_timestamp(self) -> None:
        """After a cut: the time index's last entry, then the batches after the last offset-index entry
        (Kafka's readLargestTimestamp)."""
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry or (-1, self.base_offset)
        for batch in self.batches(self.offset_index.last_position, validate=False):
            if batch.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = batch.max_timestamp, batch.last_offset

    def finish_rebuild(self) -> None:
        """After a full scan: the final time-index entry (as Kafka's recover does), then both files."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp, None)
        self.write_indexes()

    def seal(self) -> None:
        """The segment stops being the active one (Kafka's onBecomeInactiveSegment)."""
        if self.writable and self.max_timestamp >= 0:
            self.open_index_files()
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp, self._time_fd)
        self._close_index_fds()

    def close(self, *, final_time_entry: bool = True) -> None:
        """Kafka's close: the largest timestamp goes into the time index (if new); files are trimmed."""
        if self.writable and final_time_entry and self.max_timestamp >= 0:
            self.open_index_files()
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp, self._time_fd)
        self._close_index_fds()
        os.close(self.fd)

    def delete(self) -> None:
        if not self.writable:
            raise LogError("cannot delete a segment of a log opened read-only", file=self.path)
        self._close_index_fds()
        os.close(self.fd)
        for path in (self.path, self.offset_index.path, self.time_index.path):
            path.unlink(missing_ok=True)
