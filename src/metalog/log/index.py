"""Kafka's segment indexes, held in memory and appended to their files.

``.index``: 8-byte entries (int32 offset relative to the segment's base offset, int32 file
position of the batch whose *last* offset that is). ``.timeindex``: 12-byte entries (int64
timestamp, int32 relative offset). Both big-endian, both sparse: Kafka adds an entry when more
than ``index.interval.bytes`` (4096) were appended since the last one. Unlike Kafka we do not
preallocate the files (Kafka trims them to the same bytes when a segment is closed).

Kafka takes an index's entries to be its file's whole entries, the last one wherever it points, and its sanity check
refuses only a size that is no whole number of entries or a last entry below the base offset (a time index also a
last timestamp below the first). metalog also refuses entries out of order, as a zero-filled preallocated tail left
by a crash is (the indexes are then rebuilt from the batches): checked in C over the whole file when a segment's
indexes are loaded; the evidence of lost offsets (``metalog.log.lost``) reads the last entry alone, and the whole
file only when that entry names an offset at or past the log's end.
"""

from __future__ import annotations

import bisect
import operator
import os
import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path
from typing import NamedTuple, NoReturn

from metalog.errors import IndexProblem

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
INDEX_INTERVAL_BYTES = 4096
_TIME_CHUNK = 4096  # time index entries unpacked at once: a preallocated (zero-filled) tail stops the load early
_TIME_ENTRIES = struct.Struct(">" + "qi" * _TIME_CHUNK)


def _rising(values: Sequence[int], compare: Callable[[int, int], bool] = operator.lt) -> bool:
    """Whether each value is above (``operator.le``: not below) the one before, compared in C, not in a loop."""
    return all(map(compare, values, islice(values, 1, None)))


def read_last_entry(path: Path, entry: struct.Struct) -> tuple[int, ...] | None:
    """The last entry of the index file at ``path``, read alone (Kafka's rule: the last whole entry, wherever it
    lies); None when there is no file, no entry, or its size is not a multiple of the entry's."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0 or size % entry.size:
                return None
            raw = os.pread(f.fileno(), entry.size, size - entry.size)
    except OSError:
        return None
    return entry.unpack(raw) if len(raw) == entry.size else None


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
        if _rising(offsets) and _rising(positions) and not (offsets and (offsets[0] < 0 or positions[0] < 0)):
            return offsets, positions
        self._name_disorder(offsets, positions)

    @staticmethod
    def _name_disorder(offsets: array[int], positions: array[int]) -> NoReturn:
        """Raise IndexProblem for the first entry out of order (the entries are known to be)."""
        for i in range(1, len(offsets)):
            if offsets[i] <= offsets[i - 1] or positions[i] <= positions[i - 1]:
                raise IndexProblem(f"entry {i} ({offsets[i]}, {positions[i]}) does not follow "
                                   f"({offsets[i - 1]}, {positions[i - 1]})")
        if offsets and (offsets[0] < 0 or positions[0] < 0):
            raise IndexProblem("entries point outside the log")
        raise AssertionError("unreachable: the entries were found out of order")  # pragma: no cover

    def last_named(self) -> tuple[int, int] | None:
        """(offset, position) of the file's last entry, wherever it points, when its entries are in order: what
        the index says was written once (None: no file, no entry, or entries in no order, which say nothing)."""
        try:
            offsets, positions = self._read()
        except (OSError, IndexProblem):
            return None
        return (self.base_offset + offsets[-1], positions[-1]) if offsets else None

    def last_named_from(self, end: int) -> tuple[int, int] | None:
        """``last_named()`` when it names an offset at or past ``end``, else None: the last entry read alone, the
        entries read and their order checked only when it names such an offset (their order then decides)."""
        last = read_last_entry(self.path, OFFSET_ENTRY)
        if last is None or self.base_offset + last[0] < end:
            return None
        named = self.last_named()
        return named if named is not None and named[0] >= end else None

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

    def last_named_from(self, end: int) -> int | None:
        """``last_named()`` when it names an offset at or past ``end``, else None (see
        ``OffsetIndex.last_named_from``)."""
        last = read_last_entry(self.path, TIME_ENTRY)
        if last is None or self.base_offset + last[1] < end:
            return None
        named = self.last_named()
        return named if named is not None and named >= end else None

    def load(self) -> None:
        """Read the file and check it: timestamps rising, offsets not falling, none negative; or IndexProblem.
        Unpacked and checked a chunk of entries at a time, in C."""
        raw = self.path.read_bytes()
        if len(raw) % TIME_ENTRY.size:
            raise IndexProblem(f"size {len(raw)} is not a multiple of {TIME_ENTRY.size}")
        timestamps: list[int] = []
        offsets: list[int] = []
        chunk = _TIME_ENTRIES.size
        for start in range(0, len(raw), chunk):
            part = raw[start:start + chunk]
            flat = _TIME_ENTRIES.unpack(part) if len(part) == chunk else \
                struct.unpack(">" + "qi" * (len(part) // TIME_ENTRY.size), part)
            ts, rel = flat[0::2], flat[1::2]
            if not (_rising(ts) and _rising(rel, operator.le) and rel[0] >= 0
                    and (not timestamps or (ts[0] > timestamps[-1] and rel[0] >= offsets[-1]))):
                _name_time_disorder(timestamps[-1:] + list(ts), offsets[-1:] + list(rel))
            timestamps += ts
            offsets += rel
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


def _name_time_disorder(timestamps: list[int], offsets: list[int]) -> NoReturn:
    """Raise IndexProblem for the first time index entry out of order or negative (some entry is)."""
    for i, (ts, rel) in enumerate(zip(timestamps, offsets, strict=True)):
        if i and (ts <= timestamps[i - 1] or rel < offsets[i - 1]):
            raise IndexProblem(f"entry ({ts}, {rel}) does not follow ({timestamps[i - 1]}, {offsets[i - 1]})")
        if rel < 0:
            raise IndexProblem(f"negative relative offset {rel}")
    raise AssertionError("unreachable: an entry was found out of order")  # pragma: no cover
