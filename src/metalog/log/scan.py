"""The fast read paths for replay and analysis: record values, CRC-checked, in one tight loop.

One loop, ``scan_into``, walks a memory map of a segment and, for every batch, checks the frame, the
CRC-32C and that it follows the batch before (offsets run on, epochs never decrease: see
``metalog.log.chain``). What it reads and where it hands it is one ``Scan``. It makes no object per batch:
it hands each data record's value straight to a sink (replay from an offset, where per-batch objects cost
more than the records) and, where asked, tells a batch-end hook of each batch after its values (the
analysis, which publishes a state and counts at every batch end); or it collects a ``ScannedBatch`` (base
offset, last offset, max timestamp, is control, values) per batch, which ``scan_values`` yields, giving back
the mapped pages it has read as it goes (``release_read``).
Data batches exactly as KRaft writes them are handled inline; anything else (control batches, compression, headers,
a damaged batch) goes through RecordBatch, which decodes the general case, applies KRaft's rules for records
(``metalog.log.kraft_records``) and raises the precise error.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import crc32c

from metalog.codec import core
from metalog.errors import DecodeError, LogError, MetalogError, TruncatedBatchError
from metalog.log.batch import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    LOG_APPEND_TIME_FLAG,
    RecordBatch,
    check_frame,
    kraft_values,
)
from metalog.log.chain import BatchChain, Link, follow
from metalog.log.header import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    check_layout,
)

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
# (base offset, last offset, max timestamp, is control, size in bytes): a batch's end, after its values
BatchEnd = Callable[[int, int, int, bool, int], object]
# What one call of scan_into reached: (byte position, records handed to the sink, max timestamp of the last data
# batch reached or None, done: every offset up to ``last`` was passed)
Reached = tuple[int, int, int | None, bool]
EVERY_OFFSET = (-1, (1 << 63) - 1)  # [first, last] of a scan of every offset


@dataclass(slots=True, eq=False)
class Scan:
    """What ``scan_into`` reads and where it hands what it reads: ``data[:end]`` (whole batches, a segment's valid
    extent; ``source`` names it in errors), each batch following ``chain``, which moves past it.

    - ``sink(value, offset)`` is handed each data record with an offset in [``first``, ``last``], in order (a
      sink that carries ``c_value_sink`` is handed it by the compiled loop in C: ``metalog.log.compiled.scan``);
    - then ``batch_end(base offset, last offset, max timestamp, is control, size in bytes)`` is told of each batch
      (data or control) ending at ``first`` or later, once its records are handed on (a hook that carries
      ``c_batch_end`` is told in C): where a reader publishes a state per batch, as Kafka's loader does;
    - or, with ``collect``, every batch (control batches too) is appended to it as a ScannedBatch instead, whatever
      ``first`` and ``last`` (``scan_values``); ``sink`` and ``batch_end`` are then not used.
    """

    data: mmap.mmap | bytes
    end: int
    source: str
    chain: BatchChain
    first: int = EVERY_OFFSET[0]
    last: int = EVERY_OFFSET[1]
    sink: RecordSink | None = None
    batch_end: BatchEnd | None = None
    collect: list[ScannedBatch] | None = None


def scan_values(data: mmap.mmap | bytes, start: int, end: int, source: str, chain: BatchChain) -> Iterator[
        ScannedBatch]:
    """Every batch in ``data[start:end]``, which must hold whole batches (a segment's valid extent), each
    following the one before from ``chain`` on; ``chain`` is past the last batch when the iterator ends.
    ``scan_into``'s loop, collecting the batches of about a MiB at a time."""
    pos, released = start, start - start % _PAGE
    scan = Scan(data, end, source, chain)
    while pos < end:
        batches: list[ScannedBatch] = []
        scan.collect = batches
        try:
            pos = scan_into(scan, pos)[0]
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


def scan_into(scan: Scan, pos: int, chunk: int = _CHUNK_BYTES) -> Reached:
    """``pure_scan_into``, on its compiled twin where that runs (``metalog.log.compiled.scan``: it reads the
    batches in KRaft's form itself and hands every other batch to ``pure_scan_into``, one at a time)."""
    compiled_scan_into = SCAN_INTO.compiled
    if compiled_scan_into is not None:
        reached: Reached = compiled_scan_into(scan, pos, chunk, pure_scan_into)
        return reached
    return pure_scan_into(scan, pos, chunk)


def pure_scan_into(scan: Scan, pos: int, chunk: int = _CHUNK_BYTES) -> Reached:
    """What ``scan`` asks (see ``Scan``) of the batches that start in ``scan.data[pos:pos + chunk]``: each must
    follow ``scan.chain``, which moves past it. The records of control batches go to no sink.

    Returns ``(position reached, records passed, max timestamp of the last data batch reached or None,
    done)``; done means every offset up to ``last`` was passed (the batch after is not read). A
    DecodeError from the sink becomes a LogError naming the record's offset and the segment.
    """
    data, end, source, chain, first, last = scan.data, scan.end, scan.source, scan.chain, scan.first, scan.last
    sink, batch_end = scan.sink, scan.batch_end
    head, crc_of = _HEAD_AND_RECORD.unpack_from, crc32c.crc32c
    # the loop's constants as locals (a global costs more than a local, per batch)
    magic_v2, min_length, unusual, control_flag = MAGIC, MIN_BATCH_LENGTH, COMPRESSION_MASK | LOG_APPEND_TIME_FLAG, \
        CONTROL_FLAG
    head_size, single_head, single_overhead, value_at = _HEAD_AND_RECORD_SIZE, _KRAFT_SINGLE_HEAD, _SINGLE_OVERHEAD, \
        HEADER_SIZE + 6
    overhead, crc_from = LOG_OVERHEAD, ATTRIBUTES_OFFSET
    count, timestamp, offset = 0, None, -1
    append = None if scan.collect is None else scan.collect.append
    until = min(end, pos + chunk)
    next_offset, epoch_floor = chain.next_offset, chain.epoch
    try:
        while pos < until and next_offset <= last:
            values: list[bytes | None] | None = None
            if end - pos >= head_size:
                base, length, epoch, magic, crc, attrs, last_delta, max_ts, n, rlen, rhead, vlen = head(data, pos)
                stop = pos + overhead + length
                if magic == magic_v2 and length >= min_length and stop <= end and not attrs & unusual and \
                        crc_of(data[pos + crc_from:stop]) == crc:
                    if base != next_offset or epoch != epoch_floor or n != last_delta + 1:
                        chain.next_offset, chain.epoch = next_offset, epoch_floor
                        follow(chain, Link(base, last_delta, n, epoch), source, pos)
                        epoch_floor = epoch
                    next_offset = base + n
                    control = attrs & control_flag
                    # One small record in KRaft's form: its value fills the batch but for 7 bytes (one-byte
                    # zigzag varints for the record's and the value's length, 4 fixed bytes, no headers).
                    if not control and n == 1 and rhead == single_head and vlen == (length - single_overhead) << 1 \
                            and vlen and rlen == vlen + 12 < 0x80 and not data[stop - 1] and base >= first:
                        timestamp = max_ts
                        if append is None:
                            offset = base
                            sink(data[pos + value_at:stop - 1], base)  # type: ignore[misc]
                            count += 1
                            if batch_end is not None:
                                batch_end(base, base, max_ts, False, stop - pos)
                        else:
                            append((base, base, max_ts, False, [data[pos + value_at:stop - 1]]))
                        pos = stop
                        continue
                    values = _batch_values(data, pos, stop, n, control, source)
            if values is None:  # not in KRaft's form, or damaged: the general reader decodes it or says what is wrong
                chain.next_offset, chain.epoch = next_offset, epoch_floor
                (base, _, max_ts, control, values), stop = _general_batch(data, pos, end, source, chain)
                next_offset, epoch_floor = chain.next_offset, chain.epoch
            timestamp = timestamp if control else max_ts
            count += _hand_over(scan, values, base, max_ts, control != 0, stop - pos)
            pos = stop
    except DecodeError as e:
        raise LogError(f"offset {offset}: {e}", file=source) from None
    finally:
        chain.next_offset, chain.epoch = next_offset, epoch_floor
    return pos, count, timestamp, next_offset > last


def _batch_values(data: mmap.mmap | bytes, pos: int, stop: int, n: int, control: int, source: str) -> list[
        bytes | None]:
    """The record values of the sound, uncompressed batch at ``data[pos:stop]`` holding ``n`` records: read inline
    when they are in KRaft's form, else by the general decoder (which applies KRaft's rules to a control batch's
    records too, even when they are skipped)."""
    if not control:
        values = kraft_values(data, pos + HEADER_SIZE, stop, n)
        if values is not None:
            return values
    return _values_of(data, pos, source)  # headers, keys, long values, control records (the CRC was checked)


def _hand_over(scan: Scan, values: list[bytes | None], base: int, max_ts: int, control: bool, size: int) -> int:
    """The batch at ``base`` (``size`` bytes) to whoever scans: appended whole to ``collect`` when collecting, else
    its records in [first, last] to ``sink`` (a control batch's to no one), then its end to ``batch_end`` if it ends
    at ``first`` or later; how many records ``sink`` was handed."""
    if scan.collect is not None:
        scan.collect.append((base, base + len(values) - 1, max_ts, control, values))
        return 0
    passed = 0 if control else _to_sink(values, base, scan)
    if scan.batch_end is not None and base + len(values) > scan.first:
        scan.batch_end(base, base + len(values) - 1, max_ts, control, size)
    return passed


def _to_sink(values: list[bytes | None], base: int, scan: Scan) -> int:
    """The records of a data batch at ``base`` in [first, last] to ``sink``; how many. A DecodeError from the sink
    becomes a LogError naming the record's offset and the segment."""
    first, last, sink, offset = scan.first, scan.last, scan.sink, base
    try:
        if first <= base and base + len(values) <= last + 1:
            for offset, value in enumerate(values, base):
                sink(value, offset)  # type: ignore[misc]
            return len(values)
        passed = 0
        for offset, value in enumerate(values, base):  # the batch holding ``first`` or ``last``
            if first <= offset <= last:
                sink(value, offset)  # type: ignore[misc]
                passed += 1
        return passed
    except DecodeError as e:
        raise LogError(f"offset {offset}: {e}", file=scan.source) from None


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
    follow(chain, Link.of(batch), source, pos)
    values = [r.value for r in batch.records()]
    return (batch.base_offset, batch.last_offset, batch.max_timestamp, batch.is_control, values), pos + size


# The read loop's compiled twin (``metalog.log.compiled.scan.scan_into``; ``.compiled`` None: the pure loop runs).
SCAN_INTO = core.register_twin("log", "metalog.log.compiled.scan", "scan_into", pure_scan_into, check=check_layout)
