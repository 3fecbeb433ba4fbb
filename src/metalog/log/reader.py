"""Streaming batches out of a file: bounded chunks, batches as views into them.

Memory stays constant whatever the file size: a chunk is dropped once no batch refers to it. A chunk is read
with a positioned read (a copy), or, for a segment opened read-only (``mapped``), mapped from the page cache
(no copy: a batch scan of a cached file is then mostly its CRC).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from typing import Any

from metalog.codec import core
from metalog.errors import CorruptBatchError, TruncatedBatchError
from metalog.log.batch import HEADER_SIZE, RecordBatch, check_frame
from metalog.log.chain import BatchChain, follow

CHUNK_BYTES = 1 << 20
MAPPED_CHUNK_BYTES = 8 << 20  # a mapping costs its pages touched, not its size: fewer, larger chunks
_FRAME_PREFIX = 17  # baseOffset, batchLength, partitionLeaderEpoch, magic: enough to size a batch
_compiled = core.twin("metalog.log.compiled.reader")
# The batch loop's compiled twin (``metalog.log.compiled.reader.next_batches``), or None: the pure loop runs. It
# makes the plainly right batches of a chunk and leaves the first other one to the pure loop below.
compiled_next_batches = None if _compiled is None else _compiled.next_batches
_BATCHES_AT_ONCE = 1024  # the compiled twin makes a chunk's batches this many at a time


def read_batches(fd: int, start: int, end: int, *, source: str, validate: bool = True,
                 chunk_bytes: int = CHUNK_BYTES, chain: BatchChain | None = None,
                 mapped: bool = False) -> Iterator[RecordBatch]:
    """Batches in the file between byte positions ``start`` and ``end``.

    A batch that does not fit before ``end`` raises TruncatedBatchError; a bad frame or CRC raises
    CorruptBatchError; both name ``source`` and the byte position. With a ``chain``, each batch must
    follow the one before (``metalog.log.chain``), and ``chain`` moves past every batch yielded.
    ``mapped``: map the chunks rather than copy them (for files no one truncates while they are read).
    """
    pos = start
    buf: Any = b""
    buf_pos = start
    while pos < end:
        off = pos - buf_pos
        if len(buf) - off < HEADER_SIZE:
            buf, buf_pos = _chunk(fd, pos, min(chunk_bytes, end - pos), mapped)
            off = pos - buf_pos
            if len(buf) - off < _FRAME_PREFIX:
                raise TruncatedBatchError(f"batch: {len(buf) - off} bytes at the end, too few for a batch header",
                                          file=source, position=pos)
        if compiled_next_batches is not None:
            batches, off = compiled_next_batches(buf, off, buf_pos, end, source, validate, chain is not None,
                                                 -1 if chain is None else chain.next_offset,
                                                 -1 if chain is None else chain.epoch, RecordBatch, _BATCHES_AT_ONCE)
            if batches:
                for batch in batches:
                    if chain is not None:
                        chain.next_offset = batch.base_offset + batch.records_count
                    yield batch
                pos = buf_pos + off
                continue
        size = check_frame(buf, off, source=source, position=pos)
        if size > end - pos:
            raise TruncatedBatchError(f"batch: {size} bytes announced, only {end - pos} remain (truncated)",
                                      file=source, position=pos)
        if len(buf) - off < size:
            buf, buf_pos = _chunk(fd, pos, max(chunk_bytes, size), mapped)
            off = pos - buf_pos
            if len(buf) - off < size:
                raise TruncatedBatchError(f"batch: {size} bytes announced, file ends after {len(buf) - off}",
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


def _chunk(fd: int, pos: int, size: int, mapped: bool) -> tuple[Any, int]:
    """(``size`` bytes of the file from ``pos`` or fewer at its end, the file position of the chunk's first byte).
    A mapped chunk starts at the page boundary at or before ``pos`` and never reaches past the file's end (a page
    past it is a SIGBUS, not an error), so a file cut since it was opened reads as one here too."""
    if mapped:
        first = pos - pos % mmap.ALLOCATIONGRANULARITY
        length = min(pos + max(size, MAPPED_CHUNK_BYTES), os.fstat(fd).st_size) - first
        if length > pos - first:
            return mmap.mmap(fd, length, offset=first, access=mmap.ACCESS_READ), first
    return os.pread(fd, size, pos), pos


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
            if valid_batch_at(fd, candidate, end) is not None:
                return candidate
        pos += CHUNK_BYTES
    return None


def _magic_positions(window: bytes) -> Iterator[int]:
    i = window.find(2, 16)
    while i >= 0:
        yield i
        i = window.find(2, i + 1)


def valid_batch_at(fd: int, pos: int, end: int) -> RecordBatch | None:
    """The batch at ``pos`` when it is whole before ``end`` and its frame and CRC-32C are valid, else None."""
    head = os.pread(fd, HEADER_SIZE, pos)
    if len(head) < HEADER_SIZE:
        return None
    try:
        size = check_frame(head, 0)
    except CorruptBatchError:
        return None
    if size > end - pos:
        return None
    data = os.pread(fd, size, pos)
    if len(data) < size:
        return None
    batch = RecordBatch(data, 0, position=pos)
    try:
        batch.ensure_valid()
    except CorruptBatchError:
        return None
    return batch
