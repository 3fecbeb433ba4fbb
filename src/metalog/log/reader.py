"""Streaming batches out of a file: bounded chunks, batches as views into them.

Memory stays constant whatever the file size: a chunk is dropped once no batch refers to it. A chunk is read
with a positioned read (a copy), or, for a segment opened read-only (``mapped``), mapped from the page cache
(no copy: a batch scan of a cached file is then mostly its CRC).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from metalog.codec import core
from metalog.errors import CorruptBatchError, TruncatedBatchError
from metalog.log.batch import RecordBatch, check_frame
from metalog.log.chain import BatchChain, Link, follow_problem
from metalog.log.header import HEADER_SIZE, HEADER_SIZE_UP_TO_MAGIC, MAGIC, MAGIC_OFFSET, check_layout

CHUNK_BYTES = 1 << 20
MAPPED_CHUNK_BYTES = 8 << 20  # a mapping costs its pages touched, not its size: fewer, larger chunks
BATCHES_AT_ONCE = 1024  # the compiled twin makes a buffer's batches this many at a time
# the pure twin, fewer: a thousand batches alive at once set the cycle collector going (a quarter slower on a log of
# single-record batches, measured; 32 at a time is within 2-8% of one loop yielding each batch as it is made)
PURE_BATCHES_AT_ONCE = 32


@dataclass(frozen=True, slots=True)
class BatchWalk:
    """How a walk over batches reads them, besides the bytes: what ``next_batches`` (and its compiled twin) is told.

    ``source`` names the file in errors; ``validate`` checks each batch's CRC-32C, recordsCount and lastOffsetDelta;
    with a ``chain``, each batch must follow it (``metalog.log.chain``), and the walk moves it past every batch it
    yields; ``batch_class`` is made of each batch; ``most``: how many batches one call makes at most."""

    source: str | None
    validate: bool = True
    chain: BatchChain | None = None
    batch_class: type[RecordBatch] = RecordBatch
    most: int = BATCHES_AT_ONCE


def next_batches(data: Any, off: int, data_pos: int, end: int, walk: BatchWalk) -> tuple[list[RecordBatch], int]:
    """The batches at ``data[off:]`` (``data`` holds a file's bytes from its byte ``data_pos``), up to file position
    ``end``, and where the batch after them starts in ``data``: the plainly right ones the compiled twin makes, or
    the one the pure step reads (raising its own error). None (``([], off)``) when the batch at ``off`` is not wholly
    in ``data``: the caller reads more. The chain is not moved (see ``yield_batches``)."""
    compiled = NEXT_BATCHES.compiled
    if compiled is not None:
        batches: list[RecordBatch]
        batches, after = compiled(data, off, data_pos, end, walk)
        if batches:
            return batches, after
    return pure_next_batches(data, off, data_pos, end, walk)


def pure_next_batches(data: Any, off: int, data_pos: int, end: int, walk: BatchWalk) -> tuple[
        list[RecordBatch], int]:
    """``next_batches``' pure twin: the batches at ``data[off:]``, each checked (frame, CRC-32C and counts when
    ``walk.validate``, and that it follows the one before from ``walk.chain`` on), up to the first that is not wholly
    in ``data`` or not right: that one raises its error when it is the first, else waits for the next call (so a
    reader sees every batch before damage first)."""
    out: list[RecordBatch] = []
    append = out.append
    source, validate, cls, chain = walk.source, walk.validate, walk.batch_class, walk.chain
    most = min(walk.most, PURE_BATCHES_AT_ONCE)
    next_offset, epoch = (-1, -1) if chain is None else (chain.next_offset, chain.epoch)
    room = min(end - data_pos, len(data))  # what this call reads: up to ``end``, and what ``data`` holds
    try:
        for _ in range(most):
            if off >= room:
                break
            pos = data_pos + off
            size = check_frame(data, off, source=source, position=pos)
            if size > room - off:
                _refuse_truncated(size, end - pos, source, pos)  # past ``end``; else the caller reads more
                break
            batch = cls(data, off, position=pos, source=source)
            if validate:
                batch.ensure_valid()
            if chain is not None:
                if batch.base_offset != next_offset or batch.partition_leader_epoch != epoch or \
                        batch.records_count != batch.last_offset_delta + 1:
                    _refuse_unfollowed(batch, BatchChain(next_offset, epoch), validate)  # or a newer epoch
                next_offset, epoch = batch.base_offset + batch.records_count, batch.partition_leader_epoch
            append(batch)
            off += size
    except CorruptBatchError:
        if not out:
            raise
    return out, off


def _refuse_truncated(size: int, remain: int, source: str | None, pos: int) -> None:
    """A batch that runs past the end of what is to be read is a torn tail: TruncatedBatchError."""
    if size > remain:
        raise TruncatedBatchError(f"batch: {size} bytes announced, only {remain} remain (truncated)", file=source,
                                  position=pos)


def _refuse_unfollowed(batch: RecordBatch, chain: BatchChain, validated: bool) -> None:
    """A batch that does not follow ``chain`` (the batches before it: ``metalog.log.chain``) raises its error; one
    with a newer epoch passes."""
    problem = follow_problem(Link.of(batch), chain)
    if problem is not None:
        if not validated:
            batch.ensure_valid()  # a damaged batch says so first
        raise CorruptBatchError(f"batch: {problem}", file=batch.source, position=batch.position)


def yield_batches(batches: list[RecordBatch], chain: BatchChain | None) -> Iterator[RecordBatch]:
    """Each batch, ``chain`` moved past it first (so a reader that stops early leaves it past what it read)."""
    if chain is None:
        yield from batches
        return
    for batch in batches:
        chain.next_offset, chain.epoch = batch.base_offset + batch.records_count, batch.partition_leader_epoch
        yield batch


def iter_batches(data: Any, start: int = 0, *, source: str | None = None, validate: bool = True) -> Iterator[
        RecordBatch]:
    """Every batch in ``data`` from ``start``; a partial batch at the end is an error."""
    walk = BatchWalk(source, validate)
    pos, end = start, len(data)
    while pos < end:
        batches, pos = next_batches(data, pos, 0, end, walk)
        yield from batches


def read_batches(fd: int, start: int, end: int, walk: BatchWalk, *, chunk_bytes: int = CHUNK_BYTES,
                 mapped: bool = False) -> Iterator[RecordBatch]:
    """Batches in the file between byte positions ``start`` and ``end``, read as ``walk`` says (its ``source``
    names the file: it must name one).

    A batch that does not fit before ``end`` raises TruncatedBatchError; a bad frame or CRC raises
    CorruptBatchError; both name the file and the byte position. With the walk's ``chain``, each batch must
    follow the one before (``metalog.log.chain``), and the chain moves past every batch yielded.
    ``mapped``: map the chunks rather than copy them (for files no one truncates while they are read).
    """
    source, chain = str(walk.source), walk.chain
    pos, buf, buf_pos = start, b"", start
    while pos < end:
        if len(buf) - (pos - buf_pos) < HEADER_SIZE:
            buf, buf_pos = _chunk(fd, pos, min(chunk_bytes, end - pos), mapped)
            _header_fits(buf, pos - buf_pos, pos, source)
        batches, after = next_batches(buf, pos - buf_pos, buf_pos, end, walk)
        if not batches:  # the batch at ``pos`` runs past this chunk: a chunk that holds it whole
            buf, buf_pos = _whole_batch(fd, pos, buf[pos - buf_pos:pos - buf_pos + HEADER_SIZE], chunk_bytes, mapped,
                                        source)
            continue
        yield from yield_batches(batches, chain)
        pos = buf_pos + after


def _header_fits(buf: Any, off: int, pos: int, source: str) -> None:
    """Refuse a file that ends too soon after ``pos`` to size a batch there."""
    if len(buf) - off < HEADER_SIZE_UP_TO_MAGIC:
        raise TruncatedBatchError(f"batch: {len(buf) - off} bytes at the end, too few for a batch header",
                                  file=source, position=pos)


def _whole_batch(fd: int, pos: int, head: Any, chunk_bytes: int, mapped: bool, source: str) -> tuple[Any, int]:
    """A chunk from ``pos`` that holds the whole batch there (``head``: its first bytes, already read)."""
    size = check_frame(head, 0, source=source, position=pos)
    buf, buf_pos = _chunk(fd, pos, max(chunk_bytes, size), mapped)
    if len(buf) - (pos - buf_pos) < size:
        raise TruncatedBatchError(f"batch: {size} bytes announced, file ends after {len(buf) - (pos - buf_pos)}",
                                  file=source, position=pos)
    return buf, buf_pos


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
        yield from read_batches(fd, 0, os.fstat(fd).st_size, BatchWalk(str(path), validate))
    finally:
        os.close(fd)


def find_valid_batch(fd: int, start: int, end: int) -> int | None:
    """The position of the first CRC-valid batch after ``start``, if any: tells damage in the middle of a
    file (valid data follows) from a torn tail (nothing valid follows)."""
    pos = start + 1
    while pos + HEADER_SIZE <= end:
        window = os.pread(fd, min(CHUNK_BYTES, end - pos) + HEADER_SIZE, pos)
        for i in _magic_positions(window):
            candidate = pos + i - MAGIC_OFFSET
            if candidate <= start:
                continue
            if valid_batch_at(fd, candidate, end) is not None:
                return candidate
        pos += CHUNK_BYTES
    return None


def _magic_positions(window: bytes) -> Iterator[int]:
    i = window.find(MAGIC, MAGIC_OFFSET)
    while i >= 0:
        yield i
        i = window.find(MAGIC, i + 1)


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


# The batch loop's compiled twin (``metalog.log.compiled.reader.next_batches``; ``.compiled`` None: the pure step
# runs). It makes the plainly right batches of a buffer and leaves the first other one to ``pure_next_batches``.
NEXT_BATCHES = core.register_twin("log", "metalog.log.compiled.reader", "next_batches", pure_next_batches,
                                  check=check_layout)
