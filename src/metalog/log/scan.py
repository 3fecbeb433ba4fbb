"""The fast read path for replay and analysis: each batch's record values, CRC-checked, in one tight loop.

``scan_values`` walks a memory map of a segment and, for every batch, checks the frame and the
CRC-32C and yields ``(base_offset, last_offset, max_timestamp, is_control, values)``. Batches exactly
as KRaft writes them are handled inline; anything else (compression, headers, a damaged batch) goes
through RecordBatch, which decodes the general case and raises the precise error.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator

import crc32c

from metalog.errors import TruncatedBatchError
from metalog.log.batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    HEADER_SIZE,
    LOG_APPEND_TIME_FLAG,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    RecordBatch,
    _decode_kraft_records,
    check_frame,
)

# baseOffset, batchLength, (partitionLeaderEpoch), magic, crc, attributes, lastOffsetDelta,
# (baseTimestamp), maxTimestamp, (producer fields), recordsCount
_HEAD = struct.Struct(">qi4xbIhi8xq14xi")

ScannedBatch = tuple[int, int, int, bool, list[bytes | None]]


def scan_values(data: mmap.mmap | bytes, start: int, end: int, source: str) -> Iterator[ScannedBatch]:
    """Every batch in ``data[start:end]``, which must hold whole batches (a segment's valid extent)."""
    head, crc_of = _HEAD.unpack_from, crc32c.crc32c
    pos = start
    while pos < end:
        if end - pos < HEADER_SIZE:
            yield _general(data, pos, end, source)  # raises the precise error
            return
        base, length, magic, crc, attrs, last_delta, max_ts, count = head(data, pos)
        stop = pos + LOG_OVERHEAD + length
        if magic != MAGIC or length < MIN_BATCH_LENGTH or stop > end or \
                crc_of(data[pos + ATTRIBUTES_OFFSET:stop]) != crc or attrs & (COMPRESSION_MASK | LOG_APPEND_TIME_FLAG):
            yield _general(data, pos, end, source)
        elif count == 1 and last_delta == 0 and (value := _single_value(data, pos + HEADER_SIZE, stop)) is not None:
            yield base, base, max_ts, bool(attrs & CONTROL_FLAG), [value]
        else:
            records = _decode_kraft_records(data, pos + HEADER_SIZE, stop, count, base, 0)
            if records is None or last_delta != count - 1:
                yield _general(data, pos, end, source)
            else:
                yield base, base + last_delta, max_ts, bool(attrs & CONTROL_FLAG), [r[3] for r in records]
        pos = stop


_KRAFT_RECORD_HEAD = b"\x00\x00\x00\x01"  # attributes 0, timestamp delta 0, offset delta 0, null key


def _single_value(data: mmap.mmap | bytes, p: int, stop: int) -> bytes | None:
    """The value of a batch's only record when it is small and exactly in KRaft's form (most batches are)."""
    b = data[p]  # the record length, a one-byte zigzag varint below 64
    if b >= 0x80 or b & 1 or p + 1 + (b >> 1) != stop or data[p + 1:p + 5] != _KRAFT_RECORD_HEAD:
        return None
    n = data[p + 5]  # the value length
    if n >= 0x80 or n & 1 or p + 6 + (n >> 1) != stop - 1 or data[stop - 1]:  # no headers
        return None
    return data[p + 6:stop - 1]


def _general(data: mmap.mmap | bytes, pos: int, end: int, source: str) -> ScannedBatch:
    if end - pos < HEADER_SIZE or check_frame(data, pos, source=source) > end - pos:
        raise TruncatedBatchError("batch: runs past the end of the segment's valid data", file=source, position=pos)
    batch = RecordBatch(data, pos, position=pos, source=source)
    batch.ensure_valid()
    values = [r.value for r in batch.records()]
    return batch.base_offset, batch.last_offset, batch.max_timestamp, batch.is_control, values
