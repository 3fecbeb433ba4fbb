"""Streaming batches out of a file: positioned reads of bounded chunks, batches as views into them.

Memory stays constant whatever the file size: a chunk is dropped once no batch refers to it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from metalog.errors import CorruptBatchError, TruncatedBatchError
from metalog.log.batch import HEADER_SIZE, RecordBatch, check_frame
from metalog.log.chain import BatchChain, follow

CHUNK_BYTES = 1 << 20
_FRAME_PREFIX = 17  # baseOffset, batchLength, partitionLeaderEpoch, magic: enough to size a batch


def read_batches(fd: int, start: int, end: int, *, source: str, validate: bool = True,
                 chunk_bytes: int = CHUNK_BYTES, chain: BatchChain | None = None) -> Iterator[RecordBatch]:
    """Batches in the file between byte positions ``start`` and ``end``.

    A batch that does not fit before ``end`` raises TruncatedBatchError; a bad frame or CRC raises
    CorruptBatchError; both name ``source`` and the byte position. With a ``chain``, each batch must
    follow the one before (``metalog.log.chain``), and ``chain`` moves past every batch yielded.
    """
    pos = start
    buf, buf_pos = b"", start
    while pos < end:
        off = pos - buf_pos
        if len(buf) - off < HEADER_SIZE:
            buf, buf_pos, off = os.pread(fd, min(chunk_bytes, end - pos), pos), pos, 0
            if len(buf) < _FRAME_PREFIX:
                raise TruncatedBatchError(f"batch: {len(buf)} bytes at the end, too few for a batch header",
                                          file=source, position=pos)
        size = check_frame(buf, off, source=source, position=pos)
        if size > end - pos:
            raise TruncatedBatchError(f"batch: {size} bytes announced, only {end - pos} remain (truncated)",
                                      file=source, position=pos)
        if len(buf) - off < size:
            buf, buf_pos, off = os.pread(fd, max(chunk_bytes, size), pos), pos, 0
            if len(buf) < size:
                raise TruncatedBatchError(f"batch: {size} bytes announced, file ends after {len(buf)}",
                                          file=source, position=pos)
        batch = RecordBatch(buf, off, position=pos, source=source)
        if validate:
            batch.ensure_valid()
        if chain is not None:
            if batch.base_offset != chain.next_offset or batch.partition_leader_epoch != chain.epoch or \
                    batch.records_count != batch.last_offset_delta + 1:
                if not validate:
                    batch.ensure_valid()  # a damaged batch says so first
                follow(source, pos, batch.base_offset, batch.last_offset_delta, batch.records_count,
                       batch.partition_leader_epoch, chain)
            else:
                chain.next_offset = batch.base_offset + batch.records_count
        yield batch
        pos += size


def read_file_batches(path: str | os.PathLike[str], *, validate: bool = True) -> Iterator[RecordBatch]:
    """Every batch of a whole file (a segment or a snapshot)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        yield from read_batches(fd, 0, os.fstat(fd).st_size, source=str(path), validate=validate)
    finally:
        os.close(fd)


def find_valid_batch(fd: int, start: int, end: int) -> int | None:
    """The position of the first CRC-valid batch after ``start``, if any: tells damage in the middle of a
    file (valid data follows) from a torn tail (nothing valid follows)."""
    pos = start + 1
    while pos + HEADER_SIZE <= end:
        window = os.pread(fd, min(CHUNK_BYTES, end - pos) + HEADER_SIZE, pos)
        for i in _magic_positions(window):
            candidate = pos + i - 16
            if candidate <= start:
                continue
            if _valid_at(fd, candidate, end):
                return candidate
        pos += CHUNK_BYTES
    return None


def _magic_positions(window: bytes) -> Iterator[int]:
    i = window.find(2, 16)
    while i >= 0:
        yield i
        i = window.find(2, i + 1)


def _valid_at(fd: int, pos: int, end: int) -> bool:
    head = os.pread(fd, HEADER_SIZE, pos)
    if len(head) < HEADER_SIZE:
        return False
    try:
        size = check_frame(head, 0)
    except CorruptBatchError:
        return False
    if size > end - pos:
        return False
    try:
        RecordBatch(os.pread(fd, size, pos), 0).ensure_valid()
    except CorruptBatchError:
        return False
    return True
