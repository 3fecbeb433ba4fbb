"""``.index`` and ``.timeindex`` files dumped as Kafka's DumpLogSegments dumps them, checked against their segment.

Kafka: ``tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java`` (dumpIndex, dumpTimeIndex). An offset
index entry names the last offset of the batch at a file position: the entry is a mismatch when the batch there
ends at another offset. A time index entry names a timestamp and the last offset of the batch that holds it: the
batch that ends at or after the offset (found through the offset index) must end at that offset (else the
offset is "not found in the log"), its records' largest timestamp must be the entry's (else a "timestamp
mismatch"), and timestamps must grow (else "out of order"). Both files are sparse and Kafka preallocates them:
an entry whose offset is the segment's base offset, after the first, is the zero-filled rest of the file, and
the dump stops there, as Kafka's does. Nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from metalog.errors import CorruptBatchError, IndexProblem, LogError
from metalog.log.batch import RecordBatch
from metalog.log.index import OFFSET_ENTRY, TIME_ENTRY, OffsetIndex, TimeIndex
from metalog.log.reader import BatchWalk, read_batches
from metalog.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX

NOT_FOUND = -1  # Kafka's "found log offset" when no batch ends at or after an indexed offset


@dataclass
class IndexDump:
    """What a dump of one index file found; ``entries`` are printed as the file is read."""

    path: Path
    base_offset: int
    empty: bool = False
    sanity: str | None = None  # with sanity_only: None when the file passed, else what is wrong
    # offset index: index offset -> the last offset of the batch at its position (Kafka keeps one per offset)
    mismatches: dict[int, int] = field(default_factory=dict)
    # time index: (index timestamp, log timestamp), (index timestamp, previous index timestamp),
    # (indexed offset, found log offset)
    timestamp_mismatches: list[tuple[int, int]] = field(default_factory=list)
    out_of_order: list[tuple[int, int]] = field(default_factory=list)
    not_found: list[tuple[int, int]] = field(default_factory=list)

    @property
    def sound(self) -> bool:
        return self.sanity is None and not (self.mismatches or self.timestamp_mismatches or self.out_of_order
                                            or self.not_found)

    def problem_lines(self) -> list[str]:
        """Kafka's lines for what this file's dump found, printed after every file (on stderr)."""
        where = str(self.path.resolve())
        lines: list[str] = []
        if self.mismatches:
            lines.append(f"Mismatches in :{where}")
            lines += [f"  Index offset: {i}, log offset: {o}" for i, o in sorted(self.mismatches.items(),
                                                                                  reverse=True)]
        if self.timestamp_mismatches:
            lines.append(f"Found timestamp mismatch in :{where}")
            lines += [f"  Index timestamp: {i}, log timestamp: {t}" for i, t in self.timestamp_mismatches]
        if self.out_of_order:
            lines.append(f"Found out of order timestamp in :{where}")
            lines += [f"  Index timestamp: {i}, Previously indexed timestamp: {t}" for i, t in self.out_of_order]
        if self.not_found:
            lines.append("The following indexed offsets are not found in the log.")
            lines += [f"Indexed offset: {i}, found log offset: {o}" for i, o in self.not_found]
        return lines


def base_offset_of(path: Path) -> int:
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise LogError("the name of an index file is its segment's base offset (20 digits)", file=path)
    return int(stem)


def segment_of(path: Path) -> Path:
    """The ``.log`` an index belongs to: the same base offset, beside it."""
    log = path.with_name(path.name.split(".")[0] + LOG_SUFFIX)
    if not log.exists():
        raise LogError(f"no segment {log.name} beside it to check it against", file=path)
    return log


def offset_entries(path: Path, base: int) -> Iterator[tuple[int, int]]:
    """(absolute offset, position) of every entry up to the zero-filled rest of a preallocated file."""
    raw = path.read_bytes()
    for i, (relative, position) in enumerate(OFFSET_ENTRY.iter_unpack(raw[:len(raw) - len(raw) % 8])):
        if relative == 0 and i > 0:
            return
        yield base + relative, position


def time_entries(path: Path, base: int) -> Iterator[tuple[int, int]]:
    """(timestamp, absolute offset) of every entry up to the zero-filled rest of a preallocated file."""
    raw = path.read_bytes()
    for i, (timestamp, relative) in enumerate(TIME_ENTRY.iter_unpack(raw[:len(raw) - len(raw) % 12])):
        if relative == 0 and i > 0:
            return
        yield timestamp, base + relative


class OffsetIndexDump:
    """Kafka's dumpIndex: iterate ``entries()`` (each (offset, position)); then ``result`` holds the mismatches."""

    def __init__(self, path: Path, *, sanity_only: bool = False) -> None:
        self.result = IndexDump(path, base_offset_of(path))
        self.segment = segment_of(path)
        self.sanity_only = sanity_only

    def entries(self) -> Iterator[tuple[int, int]]:
        r = self.result
        if os.path.getsize(r.path) < OFFSET_ENTRY.size:
            r.empty = True
            return
        if self.sanity_only:
            r.sanity = _sanity(OffsetIndex(r.path, r.base_offset), os.path.getsize(self.segment))
            return
        fd = os.open(self.segment, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            for offset, position in offset_entries(r.path, r.base_offset):
                found = _batch_at(fd, position, size, self.segment)
                last = NOT_FOUND if found is None else found.last_offset
                if last != offset:
                    r.mismatches[offset] = last
                yield offset, position
        finally:
            os.close(fd)


class TimeIndexDump:
    """Kafka's dumpTimeIndex: iterate ``entries()`` (each (timestamp, offset)); then ``result`` says what was
    wrong."""

    def __init__(self, path: Path, *, sanity_only: bool = False) -> None:
        self.result = IndexDump(path, base_offset_of(path))
        self.segment = segment_of(path)
        self.sanity_only = sanity_only

    def entries(self) -> Iterator[tuple[int, int]]:
        r = self.result
        if self.sanity_only:
            r.sanity = _sanity(TimeIndex(r.path, r.base_offset), None)
            return
        offsets = OffsetIndex(r.path.with_name(r.path.name.split(".")[0] + INDEX_SUFFIX), r.base_offset)
        try:
            offsets.load(os.path.getsize(self.segment))
        except (OSError, IndexProblem):  # no usable offset index: every lookup starts at the segment's start
            offsets = OffsetIndex(offsets.path, r.base_offset)
        fd = os.open(self.segment, os.O_RDONLY)
        try:
            size, previous = os.fstat(fd).st_size, -1
            for timestamp, offset in time_entries(r.path, r.base_offset):
                i = offsets.floor(offset)
                batch = _first_ending_at_or_after(fd, offsets.entry(i)[1] if i >= 0 else 0, size, offset,
                                                  self.segment)
                if batch is None:
                    r.not_found.append((offset, NOT_FOUND))
                elif batch.last_offset != offset:
                    r.not_found.append((offset, batch.last_offset))
                else:
                    largest = max((rec.timestamp for rec in batch.records()), default=-1)
                    if largest != timestamp:
                        r.timestamp_mismatches.append((timestamp, largest))
                    if previous >= timestamp:
                        r.out_of_order.append((timestamp, previous))
                yield timestamp, offset
                previous = timestamp
        finally:
            os.close(fd)


def _sanity(index: OffsetIndex | TimeIndex, log_size: int | None) -> str | None:
    """The checks metalog makes on opening a log (Kafka's sanityCheck and more): None when the file passes."""
    try:
        if isinstance(index, OffsetIndex):
            index.load(log_size or 0)
        else:
            index.load()
    except IndexProblem as e:
        return str(e)
    return None


def _batch_at(fd: int, position: int, size: int, segment: Path) -> RecordBatch | None:
    try:
        return next(read_batches(fd, position, size, BatchWalk(str(segment), validate=False)), None)
    except CorruptBatchError:
        return None


def _first_ending_at_or_after(fd: int, position: int, size: int, offset: int, segment: Path) -> RecordBatch | None:
    try:
        for batch in read_batches(fd, position, size, BatchWalk(str(segment), validate=False)):
            if batch.last_offset >= offset:
                return batch
    except CorruptBatchError:
        return None
    return None


INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
