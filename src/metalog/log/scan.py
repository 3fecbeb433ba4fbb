"""The fast read paths for replay and analysis: record values, CRC-checked, in one tight loop.

One loop, ``scan_into``, walks a memory map of a segment and, for every batch, checks the frame, the
CRC-32C and that it follows the batch before (offsets run on, epochs never decrease: see
``metalog.log.chain``). It makes no object per batch: it hands each data record's value straight to a
sink (replay from an offset, where per-batch objects cost more than the records); or it collects a
``ScannedBatch`` (base offset, last offset, max timestamp, is control, values) per batch, which
``scan_values`` yields, giving back the mapped pages it has read as it goes (``release_read``).
Data batches exactly as KRaft writes them are handled inline; anything else (control batches, compression, headers,
a damaged batch) goes through RecordBatch, which decodes the general case, applies KRaft's rules for records
(``metalog.log.kraft_records``) and raises the precise error.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator

import crc32c

from metalog.codec import core
from metalog.errors import DecodeError, LogError, MetalogError, TruncatedBatchError
from metalog.log.batch import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    HEADER_SIZE,
    LOG_APPEND_TIME_FLAG,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    RecordBatch,
    check_frame,
    kraft_values,
)
from metalog.log.chain import BatchChain, follow

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, (baseTimestamp),
# maxTimestamp, (producer fields), recordsCount, then a single record's length, its attributes/deltas/key length,
# and its value length
_HEAD_AND_RECORD = struct.Struct(">qiibIhi8xq14xiBIB")
_HEAD_AND_RECORD_SIZE = _HEAD_AND_RECORD.size
_KRAFT_SINGLE_HEAD = 1  # attributes 0, timestamp delta 0, offset delta 0, key length -1 (zigzag 1)
_SINGLE_OVERHEAD = HEADER_SIZE - LOG_OVERHEAD + 7  # batchLength minus the value length of a single small record
_CHUNK_BYTES = 1 << 20  # scan_into returns about this often, so callers can report progress

# One batch as ``scan_values`` (``MetadataLog.scan``) yields it: (base offset, last offset, max timestamp, is
# control, the records' values in offset order). A plain tuple, unpacked by name where it is read: a NamedTuple
# made per batch costs about 12% of a scan of single-record batches (tuple.__new__ against a tuple display).
ScannedBatch = tuple[int, int, int, bool, list[bytes | None]]
RecordSink = Callable[[bytes | None, int], object]  # (record value, offset)
_EVERY_OFFSET = (-1, 1 << 63)  # [first, last] of a scan that collects whole batches
_compiled = core.twin("metalog.log.compiled.scan")
# The read loop's compiled twin (``metalog.log.compiled.scan.scan_into``), or None: the pure loop runs.
compiled_scan_into = None if _compiled is None else _compiled.scan_into


def scan_values(data: mmap.mmap | bytes, start: int, end: int, source: str, chain: BatchChain) -> Iterator[
        ScannedBatch]:
    """Every batch in ``data[start:end]``, which must hold whole batches (a segment's valid extent), each
    following the one before from ``chain`` on; ``chain`` is past the last batch when the iterator ends.
    ``scan_into``'s loop, collecting the batches of about a MiB at a time."""
    first, last = _EVERY_OFFSET
    pos, released = start, start - start % _PAGE
    while pos < end:
        batches: list[ScannedBatch] = []
        try:
            pos = scan_into(data, pos, end, source, first, last, None, chain, collect=batches)[0]
        except MetalogError:  # the batches before the damage first, as a reader of one batch at a time sees them
            yield from batches
            raise
        yield from batches
        released = release_read(data, released, pos)


_PAGE = mmap.PAGESIZE


def release_read(data: mmap.mmap | bytes, start: int, end: int) -> int:
    """Let the kernel drop the pages of a mapped segment a scan has read, ``data[start:end]`` (``start`` at a page;
    ``madvise(MADV_DONTNEED)``: a read-only file mapping reads a page from the file again if it is touched
    again), so that a scan's resident memory is about a chunk's, not the segment's (the analysis of a 4M-record
    log held its 300 MB). Returns where the next release starts: ``end`` rounded down to a page."""
    until = max(start, end - end % _PAGE)
    if until > start and isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        data.madvise(mmap.MADV_DONTNEED, start, until - start)
    return until


def scan_into(data: mmap.mmap | bytes, pos: int, end: int, source: str, first: int, last: int,
              sink: RecordSink | None, chain: BatchChain, chunk: int = _CHUNK_BYTES,
              collect: list[ScannedBatch] | None = None) -> tuple[int, int, int | None, bool]:
    """``pure_scan_into``, on its compiled twin where that runs (``metalog.log.compiled.scan``: it reads the
    batches in KRaft's form itself and hands every other batch to ``pure_scan_into``, one at a time)."""
    if compiled_scan_into is not None:
        scanned: tuple[int, int, int | None, bool] = compiled_scan_into(
            data, pos, end, source, first, last, sink, chain, chunk, collect, pure_scan_into)
        return scanned
    return pure_scan_into(data, pos, end, source, first, last, sink, chain, chunk, collect)


def pure_scan_into(data: mmap.mmap | bytes, pos: int, end: int, source: str, first: int, last: int,
                   sink: RecordSink | None, chain: BatchChain, chunk: int = _CHUNK_BYTES,
                   collect: list[ScannedBatch] | None = None) -> tuple[int, int, int | None, bool]:
    """``sink(value, offset)`` for every record of the data batches in ``data[pos:end]`` (whole batches)
    whose offset lies in [first, last], in order, for the batches that start in the next ``chunk`` bytes.
    Each batch must follow ``chain``, which moves past it. With ``collect``, every batch (control batches too)
    is appended to it as a ScannedBatch instead, whatever ``first`` and ``last``: ``scan_values``.

    Returns ``(position reached, records passed, max timestamp of the last data batch reached or None,
    done)``; done means every offset up to ``last`` was passed (the batch after is not read). A
    DecodeError from the sink becomes a LogError naming the record's offset and the segment.
    """
    head, crc_of = _HEAD_AND_RECORD.unpack_from, crc32c.crc32c
    # the loop's constants as locals (a global costs more than a local, per batch)
    magic_v2, min_length, unusual, control_flag = MAGIC, MIN_BATCH_LENGTH, COMPRESSION_MASK | LOG_APPEND_TIME_FLAG, \
        CONTROL_FLAG
    head_size, single_head, single_overhead, value_at = _HEAD_AND_RECORD_SIZE, _KRAFT_SINGLE_HEAD, _SINGLE_OVERHEAD, \
        HEADER_SIZE + 6
    count, timestamp, offset = 0, None, -1
    append = None if collect is None else collect.append
    until = min(end, pos + chunk)
    next_offset, epoch_floor = chain.next_offset, chain.epoch
    try:
        while pos < until:
            if next_offset > last:
                return pos, count, timestamp, True
            values: list[bytes | None] | None = None
            if end - pos >= head_size:
                base, length, epoch, magic, crc, attrs, last_delta, max_ts, n, rlen, rhead, vlen = head(data, pos)
                stop = pos + 12 + length
                if magic == magic_v2 and length >= min_length and stop <= end and not attrs & unusual and \
                        crc_of(data[pos + 21:stop]) == crc:  # 12 = LOG_OVERHEAD, 21 = ATTRIBUTES_OFFSET
                    if base != next_offset or epoch != epoch_floor or n != last_delta + 1:
                        chain.next_offset, chain.epoch = next_offset, epoch_floor
                        follow(source, pos, base, last_delta, n, epoch, chain)
                        epoch_floor = epoch
                    next_offset = base + n
                    control = attrs & control_flag
                    if control:  # the general decoder applies KRaft's rules to its records, even when skipped
                        values = _values_of(data, pos, source)
                        if append is None:
                            pos = stop
                            continue
                    # One small record in KRaft's form: its value fills the batch but for 7 bytes (one-byte
                    # zigzag varints for the record's and the value's length, 4 fixed bytes, no headers).
                    elif n == 1 and rhead == single_head and vlen == (length - single_overhead) << 1 and vlen and \
                            rlen == vlen + 12 < 0x80 and not data[stop - 1] and base >= first:
                        timestamp = max_ts
                        if append is None:
                            offset = base
                            sink(data[pos + value_at:stop - 1], base)  # type: ignore[misc]
                            count += 1
                        else:
                            append((base, base, max_ts, False, [data[pos + value_at:stop - 1]]))
                        pos = stop
                        continue
                    else:
                        timestamp = max_ts
                        values = kraft_values(data, pos + HEADER_SIZE, stop, n)
                        if values is None:  # headers, keys, long values: the general decoder (the CRC was checked)
                            values = _values_of(data, pos, source)
            if values is None:  # not in KRaft's form, or damaged: the general reader decodes it or says what is wrong
                chain.next_offset, chain.epoch = next_offset, epoch_floor
                (base, _, max_ts, control, values), stop = _general_batch(data, pos, end, source, chain)
                next_offset, epoch_floor = chain.next_offset, chain.epoch
                if control and append is None:
                    pos = stop
                    continue
                timestamp = max_ts
            if append is not None:
                append((base, base + len(values) - 1, max_ts, control != 0, values))
            elif first <= base and base + len(values) <= last + 1:
                for offset, value in enumerate(values, base):
                    sink(value, offset)  # type: ignore[misc]
                count += len(values)
            else:  # the batch holding ``first`` or ``last``
                for offset, value in enumerate(values, base):
                    if first <= offset <= last:
                        sink(value, offset)  # type: ignore[misc]
                        count += 1
            pos = stop
    except DecodeError as e:
        raise LogError(f"offset {offset}: {e}", file=source) from None
    finally:
        chain.next_offset, chain.epoch = next_offset, epoch_floor
    return pos, count, timestamp, next_offset > last


def _values_of(data: mmap.mmap | bytes, pos: int, source: str) -> list[bytes | None]:
    """The record values of the valid, uncompressed batch at ``pos`` through the general decoder."""
    return [r.value for r in RecordBatch(data, pos, position=pos, source=source).records()]


def _general_batch(data: mmap.mmap | bytes, pos: int, end: int, source: str, chain: BatchChain) -> tuple[
        ScannedBatch, int]:
    """The batch at ``pos`` through RecordBatch, checked against ``chain`` (which moves past it), and where the
    next one starts."""
    if end - pos < HEADER_SIZE or (size := check_frame(data, pos, source=source)) > end - pos:
        raise TruncatedBatchError("batch: runs past the end of the segment's valid data", file=source, position=pos)
    batch = RecordBatch(data, pos, position=pos, source=source)
    batch.ensure_valid()
    follow(source, pos, batch.base_offset, batch.last_offset_delta, batch.records_count, batch.partition_leader_epoch,
           chain)
    values = [r.value for r in batch.records()]
    return (batch.base_offset, batch.last_offset, batch.max_timestamp, batch.is_control, values), pos + size
