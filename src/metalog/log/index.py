"""Kafka's segment indexes, held in memory and appended to their files.

``.index``: 8-byte entries (int32 offset relative to the segment's base offset, int32 file
position of the batch whose *last* offset that is). ``.timeindex``: 12-byte entries (int64
timestamp, int32 relative offset). Both big-endian, both sparse: Kafka adds an entry when more
than ``index.interval.bytes`` (4096) were appended since the last one. Unlike Kafka we do not
preallocate the files (Kafka trims them to the same bytes when a segment is closed).
"""

from __future__ import annotations

import bisect
import os
import struct
import sys
from array import array
from pathlib import Path
from typing import NamedTuple

from metalog.errors import IndexProblem

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
INDEX_INTERVAL_BYTES = 4096


class TimeEntry(NamedTuple):
    """A time index entry: the largest timestamp so far, and the (absolute) offset of the batch that holds it."""

    timestamp: int
    offset: int


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.offsets = array("i")  # relative
        self.positions = array("i")

    def load(self, log_size: int) -> None:
        """Read the file and check it (Kafka's sanityCheck plus monotonic entries); raise IndexProblem."""
        offsets, positions = self._read()
        if offsets and positions[-1] >= log_size:
            raise IndexProblem(f"entries point outside the log of {log_size} bytes")
        self.offsets, self.positions = offsets, positions

    def _read(self) -> tuple[array[int], array[int]]:
        """The file's entries, each after the one before, none negative; or IndexProblem."""
        raw = self.path.read_bytes()
        if len(raw) % OFFSET_ENTRY.size:
            raise IndexProblem(f"size {len(raw)} is not a multiple of {OFFSET_ENTRY.size}")
        pairs = array("i", raw)
        if sys.byteorder == "little":
            pairs.byteswap()
        offsets, positions = pairs[0::2], pairs[1::2]
        for i in range(1, len(offsets)):
            if offsets[i] <= offsets[i - 1] or positions[i] <= positions[i - 1]:
                raise IndexProblem(f"entry {i} ({offsets[i]}, {positions[i]}) does not follow "
                                   f"({offsets[i - 1]}, {positions[i - 1]})")
        if offsets and (offsets[0] < 0 or positions[0] < 0):
            raise IndexProblem("entries point outside the log")
        return offsets, positions

    def last_named(self) -> tuple[int, int] | None:
        """(offset, position) of the file's last entry, wherever it points, when its entries are in order: what
        the index says was written once (None: no file, no entry, or entries in no order, which say nothing)."""
        try:
            offsets, positions = self._read()
        except (OSError, IndexProblem):
            return None
        return (self.base_offset + offsets[-1], positions[-1]) if offsets else None

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def last_position(self) -> int:
        return self.positions[-1] if self.positions else 0

    def entry(self, i: int) -> tuple[int, int]:
        return self.base_offset + self.offsets[i], self.positions[i]

    def floor(self, offset: int) -> int:
        """The number of the largest entry at or below ``offset`` (Kafka's lookup), or -1 when there is none."""
        return bisect.bisect_right(self.offsets, offset - self.base_offset) - 1

    def append(self, offset: int, position: int, fd: int | None) -> None:
        self.offsets.append(offset - self.base_offset)
        self.positions.append(position)
        if fd is not None:
            os.write(fd, OFFSET_ENTRY.pack(offset - self.base_offset, position))

    def truncate_to_position(self, position: int) -> None:
        """Drop entries for batches at or after ``position``."""
        n = bisect.bisect_left(self.positions, position)
        del self.offsets[n:], self.positions[n:]

    def to_bytes(self) -> bytes:
        return b"".join(OFFSET_ENTRY.pack(o, p) for o, p in zip(self.offsets, self.positions, strict=True))


class TimeIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.timestamps: list[int] = []
        self.offsets: list[int] = []  # relative

    def last_named(self) -> int | None:
        """The offset of the file's last entry when its entries are in order (see ``OffsetIndex.last_named``)."""
        try:
            self.load()
        except (OSError, IndexProblem):
            return None
        return self.base_offset + self.offsets[-1] if self.offsets else None

    def load(self) -> None:
        raw = self.path.read_bytes()
        if len(raw) % TIME_ENTRY.size:
            raise IndexProblem(f"size {len(raw)} is not a multiple of {TIME_ENTRY.size}")
        timestamps: list[int] = []
        offsets: list[int] = []
        for ts, rel in TIME_ENTRY.iter_unpack(raw):
            if timestamps and (ts <= timestamps[-1] or rel < offsets[-1]):
                raise IndexProblem(f"entry ({ts}, {rel}) does not follow ({timestamps[-1]}, {offsets[-1]})")
            if rel < 0:
                raise IndexProblem(f"negative relative offset {rel}")
            timestamps.append(ts)
            offsets.append(rel)
        self.timestamps, self.offsets = timestamps, offsets

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return (self.timestamps[-1], self.base_offset + self.offsets[-1]) if self.offsets else None

    def entry_before(self, timestamp: int) -> TimeEntry | None:
        """The last entry whose timestamp is below ``timestamp``: where Kafka starts scanning for the first
        batch with maxTimestamp >= ``timestamp``. None: from the segment's start."""
        i = bisect.bisect_left(self.timestamps, timestamp)
        return TimeEntry(self.timestamps[i - 1], self.base_offset + self.offsets[i - 1]) if i else None

    def maybe_append(self, timestamp: int, offset: int, fd: int | None) -> None:
        """Add (timestamp, offset) when the timestamp is newer than the last entry (TimeIndex.maybeAppend)."""
        if self.timestamps and timestamp <= self.timestamps[-1]:
            return
        self.timestamps.append(timestamp)
        self.offsets.append(offset - self.base_offset)
        if fd is not None:
            os.write(fd, TIME_ENTRY.pack(timestamp, offset - self.base_offset))

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets at or after ``offset``."""
        n = bisect.bisect_left(self.offsets, offset - self.base_offset)
        del self.timestamps[n:], self.offsets[n:]

    def to_bytes(self) -> bytes:
        return b"".join(TIME_ENTRY.pack(t, o) for t, o in zip(self.timestamps, self.offsets, strict=True))
