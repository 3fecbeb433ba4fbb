"""RecordBatch v2 (magic 2) on bytes: Kafka's DefaultRecordBatch and DefaultRecord, no I/O.

The header's layout is ``metalog.log.header``. A ``RecordBatch`` parses the 61-byte header eagerly and leaves the
records alone until asked: ``ensure_valid()`` checks the CRC, ``records()`` decodes (and decompresses) them.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple

import crc32c

from metalog.codec import core
from metalog.errors import CorruptBatchError, LogError, RecordError, VarintError
from metalog.log.compression import Compression, decompress
from metalog.log.header import (
    ATTRIBUTES_OFFSET,
    HEADER,
    HEADER_SIZE,
    HEADER_SIZE_UP_TO_MAGIC,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
)
from metalog.log.kraft_records import kraft_problem
from metalog.log.varint import read_varint, read_varlong

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

COMPRESSION_MASK = 0x07
LOG_APPEND_TIME_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

MIN_RECORD_SIZE = 7  # length, attributes, timestampDelta, offsetDelta, keyLength, valueLength, headers

# KRaft's largest batch: KafkaRaftClient.MAX_BATCH_SIZE_BYTES, the size its BatchAccumulator builds batches up to
# (uncompressed: KafkaRaftClient.onBecomeLeader gives it Compression.NONE), header included. Records that
# decompress to more than fit in such a batch are no batch KRaft wrote.
KRAFT_MAX_BATCH_BYTES = 8 * 1024 * 1024
KRAFT_MAX_RECORDS_BYTES = KRAFT_MAX_BATCH_BYTES - HEADER_SIZE


class Record(NamedTuple):
    """One record of a batch. ``key``/``value`` are None when null; ``headers`` are (key, value) pairs."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


class RecordArea(NamedTuple):
    """The records of one batch, as its record decoders read them: ``records_count`` records at
    ``data[begin:limit]`` (the batch's own bytes, or its decompressed records), each record's offset and timestamp
    counted from the batch header's ``base_offset`` and ``base_timestamp``; ``log_append_time``: every record's
    timestamp instead (a LogAppendTime batch's maxTimestamp), or None."""

    data: Any
    begin: int
    limit: int
    records_count: int
    base_offset: int
    base_timestamp: int
    log_append_time: int | None


_new_tuple = tuple.__new__  # a Record or a RecordArea from a tuple of its fields, without NamedTuple's __new__
_CODEC_IDS = frozenset(Compression)
_UNCOMMON = COMPRESSION_MASK | LOG_APPEND_TIME_FLAG | CONTROL_FLAG  # batches records() reads the general way
_SLICES_TO_BYTES = (bytes, mmap.mmap)


class RecordBatch:
    """A v2 batch at ``data[start:start + size_in_bytes]``; ``position`` and ``source`` say where it was read."""

    __slots__ = (
        "data", "start", "position", "source", "base_offset", "batch_length", "partition_leader_epoch", "magic",
        "crc", "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
        "producer_epoch", "base_sequence", "records_count",
    )
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    def __init__(self, data: Any, start: int = 0, *, position: int | None = None, source: str | None = None) -> None:
        """Parse the header at ``data[start:]``; the whole batch must be there (see ``check_frame``)."""
        self.data = data
        self.start = start
        self.position = start if position is None else position
        self.source = source
        if len(data) - start < HEADER_SIZE:
            raise self._error(f"batch header needs {HEADER_SIZE} bytes, {len(data) - start} remain")
        (self.base_offset, self.batch_length, self.partition_leader_epoch, self.magic, self.crc, self.attributes,
         self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id, self.producer_epoch,
         self.base_sequence, self.records_count) = HEADER.unpack_from(data, start)
        if self.magic != MAGIC:
            raise self._error(f"unsupported magic {self.magic} (only record batch v2 is supported)")
        if self.batch_length < MIN_BATCH_LENGTH:
            raise self._error(f"batchLength {self.batch_length} is smaller than a batch header")
        if LOG_OVERHEAD + self.batch_length > len(data) - start:
            raise self._error(f"batchLength {self.batch_length} runs past the end of the data")

    # ---- header facts ---------------------------------------------------------------------
    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> Compression:
        try:
            return Compression(self.attributes & COMPRESSION_MASK)
        except ValueError:
            raise self._records_error(f"unknown compression codec id {self.attributes & COMPRESSION_MASK} in the "
                                      "batch attributes") from None

    @property
    def compression_name(self) -> str:
        """Kafka's name of the codec (``compresscodec: gzip``); an id no codec has is named as such."""
        codec = self.attributes & COMPRESSION_MASK
        return Compression(codec).kafka_name if codec in _CODEC_IDS else f"unknown codec id {codec}"

    @property
    def timestamp_type(self) -> str:
        """Kafka's TimestampType name, as kafka-dump-log prints it."""
        return "LogAppendTime" if self.attributes & LOG_APPEND_TIME_FLAG else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    @property
    def last_sequence(self) -> int:
        """Kafka's ``lastSequence``: baseSequence + lastOffsetDelta, wrapping at int32, or -1."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    def raw(self) -> memoryview:
        """The batch's bytes, without a copy."""
        return memoryview(self.data)[self.start:self.start + self.size_in_bytes]

    # ---- validation -----------------------------------------------------------------------
    def compute_crc(self) -> int:
        view = memoryview(self.data)[self.start + ATTRIBUTES_OFFSET:self.start + self.size_in_bytes]
        crc: int = crc32c.crc32c(view)
        return crc

    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def ensure_valid(self) -> None:
        """Check the CRC-32C and the record count (Kafka's ``ensureValid``)."""
        actual = self.compute_crc()
        if actual != self.crc:
            raise self._error(f"CRC-32C mismatch: stored {self.crc}, computed {actual}")
        if self.records_count < 0:
            raise self._error(f"negative record count {self.records_count}")
        if self.last_offset_delta < 0:
            raise self._error(f"negative lastOffsetDelta {self.last_offset_delta}")

    # ---- records ----------------------------------------------------------------------------
    def records(self) -> list[Record]:
        """Decode every record, refusing what KRaft's reader refuses (``metalog.log.kraft_records``: a control batch
        holds control records KRaft reads, a data batch records with a value and no key, none with headers or a
        timestamp delta, each at the batch's base offset plus its index), with a CorruptBatchError naming the
        record's offset. The CRC is not checked here; call
        ``ensure_valid`` first."""
        control = self.attributes & CONTROL_FLAG
        compiled_decode_records = DECODE_RECORDS.compiled
        # the common case first, without a call more: an uncompressed data batch read by the compiled decoder
        if not self.attributes & _UNCOMMON and compiled_decode_records is not None and \
                type(self.data) in _SLICES_TO_BYTES:
            begin = self.start + HEADER_SIZE
            limit = begin + self.batch_length - MIN_BATCH_LENGTH
            count = self.records_count
            if 0 <= count <= (limit - begin) // MIN_RECORD_SIZE:
                fast: list[Record] | None = compiled_decode_records(_new_tuple(RecordArea, (
                    self.data, begin, limit, count, self.base_offset, self.base_timestamp, None)), Record, True)
                if fast is not None:
                    return fast
        out, kraft_form = self._decode(not control)
        if not kraft_form:
            log_append_time = self.attributes & LOG_APPEND_TIME_FLAG
            problem = kraft_problem(out, control=bool(control), base_offset=self.base_offset,
                                    base_timestamp=None if log_append_time else self.base_timestamp)
            if problem is not None:
                raise self._records_error(problem)
        return out

    def decode_records(self) -> list[Record]:
        """Decode every record in any form Kafka's DefaultRecordBatch holds (keys, headers, any control type): the
        records of a batch of any topic, with no rule of KRaft's."""
        return self._decode(False)[0]

    def _decode(self, kraft_data: bool) -> tuple[list[Record], bool]:
        """(the records, whether they are known to be in the form of KRaft's data records). ``kraft_data``: a data
        batch of the metadata log, which the fast decoders read and vouch for when every record is in that form."""
        body_start = self.start + HEADER_SIZE
        end = self.start + self.size_in_bytes
        if self.attributes & COMPRESSION_MASK:
            # a copy of the compressed bytes, not a view: an error raised while decompressing keeps its frames (and
            # their locals) alive, and a view of a memory-mapped segment would keep the map from being closed
            compressed = bytes(self.data[body_start:end])
            try:
                data = decompress(self.attributes & COMPRESSION_MASK, compressed, limit=KRAFT_MAX_RECORDS_BYTES)
            except LogError as e:  # damage, or a codec whose optional package is missing
                raise self._records_error(e.reason, kind=type(e)) from None
            begin, limit = 0, len(data)
        elif type(self.data) in _SLICES_TO_BYTES:
            data, begin, limit = self.data, body_start, end
        else:  # a memoryview or bytearray: copy this batch once so that keys and values come out as bytes
            data, begin, limit = bytes(self.raw()), HEADER_SIZE, self.size_in_bytes
        count = self.records_count
        if count < 0 or count > (limit - begin) // MIN_RECORD_SIZE:
            raise self._records_error(f"record count {count} cannot fit in {limit - begin} bytes of records")
        log_append_time = self.max_timestamp if self.attributes & LOG_APPEND_TIME_FLAG else None
        compiled_decode_records = DECODE_RECORDS.compiled
        if compiled_decode_records is not None:
            out = compiled_decode_records(self._area(data, begin, limit, log_append_time), Record, kraft_data)
            if out is not None:
                return out, kraft_data
        try:
            if log_append_time is None:  # (no RecordArea made for it: the pure core's replay reads batches here)
                fast = _decode_kraft_records(data, begin, limit, count, self.base_offset, self.base_timestamp)
                if fast is not None:  # KRaft's data form: what a data batch must hold, never a control batch
                    return fast, kraft_data
            return _decode_records(self._area(data, begin, limit, log_append_time)), False
        except RecordError as e:
            where = e.pos - begin
            raise self._records_error(f"record {e.index} (offset {self.base_offset + e.index}): {e.reason} (at byte "
                                      f"{where} of the {'decompressed ' if data is not self.data else ''}records)") \
                from None

    def _area(self, data: Any, begin: int, limit: int, log_append_time: int | None) -> RecordArea:
        """This batch's records at ``data[begin:limit]`` (its own bytes or its decompressed records)."""
        return _new_tuple(RecordArea, (data, begin, limit, self.records_count, self.base_offset, self.base_timestamp,
                                       log_append_time))

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __repr__(self) -> str:
        return (f"RecordBatch(baseOffset={self.base_offset}, lastOffset={self.last_offset}, "
                f"count={self.records_count}, epoch={self.partition_leader_epoch}, "
                f"control={self.is_control}, size={self.size_in_bytes})")

    def _error(self, reason: str) -> CorruptBatchError:
        """Damage in this batch, named at its start (``metalog.errors``: the byte ``log verify`` names, and Kafka's
        recovery and DumpLogSegments); the reason names the field."""
        return CorruptBatchError(f"batch: {reason}", file=self.source, position=self.position)

    def _records_error(self, reason: str, kind: type[LogError] = CorruptBatchError) -> LogError:
        """The records of this sound batch cannot be read: the error names its offsets."""
        return kind(f"batch {self.base_offset}..{self.last_offset}: {reason}", file=self.source,
                    position=self.position)


def check_frame(data: Any, start: int, *, source: str | None = None, position: int | None = None) -> int:
    """The size of the batch starting at ``data[start:]`` from its first bytes (``HEADER_SIZE_UP_TO_MAGIC``), checked
    for sanity.

    Raises CorruptBatchError when the length or magic is impossible; returns the size even when
    the data holds fewer bytes (the caller decides whether that is a torn tail).
    """
    pos = start if position is None else position
    if len(data) - start < HEADER_SIZE_UP_TO_MAGIC:
        raise CorruptBatchError(f"batch: only {len(data) - start} bytes, a batch header needs {HEADER_SIZE}",
                                file=source, position=pos)
    at = start + LENGTH_OFFSET
    length = int.from_bytes(data[at:at + 4], "big", signed=True)
    if length < MIN_BATCH_LENGTH:
        raise CorruptBatchError(f"batch: batchLength {length} is smaller than a batch header", file=source,
                                position=pos)
    if data[start + MAGIC_OFFSET] != MAGIC:
        raise CorruptBatchError(f"batch: unsupported magic {data[start + MAGIC_OFFSET]} (only v2 is supported)",
                                file=source, position=pos)
    return LOG_OVERHEAD + length


def _decode_records(area: RecordArea) -> list[Record]:
    """The records of ``area``, each by ``_decode_record``."""
    out: list[Record] = []
    append = out.append
    pos, limit, count = area.begin, area.limit, area.records_count
    for i in range(count):
        record, pos = _decode_record(area, pos, i)
        append(record)
    if pos != limit:
        raise RecordError(count, pos, f"{limit - pos} bytes follow the last of {count} records")
    return out


def _decode_record(area: RecordArea, pos: int, i: int) -> tuple[Record, int]:
    """Record ``i`` of ``area``, at ``area.data[pos:]``, and where the next one starts; a RecordError names the byte
    where it stops making sense."""
    data, limit = area.data, area.limit
    try:
        size, pos = _varint(data, pos)
        end = pos + size
        if size < MIN_RECORD_SIZE - 1 or end > limit:
            raise RecordError(i, pos, f"record length {size} does not fit the batch")
        attributes = data[pos]
        b = data[pos + 1]
        if b < 0x80:  # the one-byte varint inline: the common case
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            ts_delta, pos = read_varlong(data, pos + 1)
        offset_delta, pos = _varint(data, pos)
        key, pos = _nullable_bytes(data, pos, end, i, "key")
        value, pos = _nullable_bytes(data, pos, end, i, "value")
        if data[pos] == 0:
            headers: tuple[tuple[str, bytes | None], ...] = ()
            pos += 1
        else:
            headers, pos = _decode_headers(data, pos, end, i)
    except (IndexError, VarintError) as e:
        raise RecordError(i, min(pos, limit), f"truncated or malformed ({e})") from None
    if pos != end:
        raise RecordError(i, pos, f"record length says {size} bytes but its fields take {size + pos - end}")
    log_append_time = area.log_append_time
    return _new_tuple(Record, (area.base_offset + offset_delta,
                               area.base_timestamp + ts_delta if log_append_time is None else log_append_time,
                               key, value, headers, attributes)), pos


def _varint(data: Any, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``data[pos]`` and where it ends; the one-byte case inline, the common one."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    return read_varint(data, pos)


def _nullable_bytes(data: Any, pos: int, end: int, i: int, what: str) -> tuple[bytes | None, int]:
    """A varint length and that many bytes at ``data[pos:end]`` (-1: None, KRaft's null key) and where they end."""
    if data[pos] == 1:  # zigzag -1
        return None, pos + 1
    n, pos = _varint(data, pos)
    if n < -1 or n > end - pos:
        raise RecordError(i, pos, f"{what} length {n} does not fit the record")
    if n < 0:
        return None, pos
    return data[pos:pos + n], pos + n


def _kraft_record_heads(n: int) -> list[bytes]:
    """attributes 0, timestampDelta 0, offsetDelta i (zigzag varint), key length -1: record i's first bytes."""
    heads = []
    for i in range(n):
        z, delta = i << 1, bytearray()
        while z >= 0x80:
            delta.append((z & 0x7F) | 0x80)
            z >>= 7
        delta.append(z)
        heads.append(b"\x00\x00" + bytes(delta) + b"\x01")
    return heads


_KRAFT_FAST_MAX = 8192  # offset deltas of at most two varint bytes
_KRAFT_HEADS = _kraft_record_heads(_KRAFT_FAST_MAX)


def _decode_kraft_records(data: Any, pos: int, limit: int, count: int, base_offset: int,
                          base_timestamp: int) -> list[Record] | None:
    """The fast path for records exactly as KRaft's BatchBuilder writes them (see ``kraft_values``)."""
    values = kraft_values(data, pos, limit, count)
    if values is None:
        return None
    new, rec_cls = _new_tuple, Record
    return [new(rec_cls, (base_offset + i, base_timestamp, None, v, (), 0)) for i, v in enumerate(values)]


def kraft_values(data: Any, pos: int, limit: int, count: int) -> list[bytes | None] | None:
    """The values of ``count`` records at ``data[pos:limit]`` exactly as KRaft's BatchBuilder writes them:
    attributes 0, timestamp delta 0, offset delta = the record's index, null key, a value that is not empty, no
    headers, lengths under 8 KiB. Returns None as soon as a record is not in that form, and the general decoder
    takes over."""
    if count > _KRAFT_FAST_MAX:
        return None
    return _kraft_values(data, pos, limit, _KRAFT_HEADS[:count])


def _kraft_values(data: Any, pos: int, limit: int, heads: list[bytes]) -> list[bytes | None] | None:
    """``kraft_values`` of as many records as ``heads``, the first bytes each must start with after its length."""
    values: list[bytes | None] = []  # never None here; typed as every reader's record values are
    append = values.append
    try:
        for head in heads:
            b = data[pos]
            if b & 1:  # a negative length
                return None
            if b < 0x80:
                end = pos + 1 + (b >> 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c >= 0x80:
                    return None
                end = pos + 2 + (((b & 0x7F) | (c << 7)) >> 1)
                pos += 2
            p = pos + len(head)
            if data[pos:p] != head:
                return None
            b = data[p]
            if b < 0x80:
                n = b >> 1
                p += 1
            else:
                c = data[p + 1]
                if c >= 0x80:
                    return None
                n = ((b & 0x7F) | (c << 7)) >> 1
                p += 2
            # the value length must fill the record up to its header count, which must be 0; a record that
            # runs past ``limit`` leaves ``pos`` past it, which the last line rejects; an empty value is not
            # KRaft's (RecordsIterator.decodeDataRecord refuses it)
            if b & 1 or not n or p + n + 1 != end or data[end - 1]:
                return None
            append(data[p:end - 1])
            pos = end
    except IndexError:
        return None
    return values if pos == limit else None


def _decode_headers(data: Any, pos: int, end: int, index: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = read_varint(data, pos)
    if count < 0 or count > (end - pos) // 2:
        raise RecordError(index, pos, f"header count {count} does not fit the record")
    headers = []
    for _ in range(count):
        n, pos = read_varint(data, pos)
        if n < 0 or n > end - pos:
            raise RecordError(index, pos, f"header key length {n} does not fit the record")
        try:
            key = bytes(data[pos:pos + n]).decode()
        except UnicodeDecodeError:
            raise RecordError(index, pos, "header key is not UTF-8") from None
        pos += n
        n, pos = read_varint(data, pos)
        if n < -1 or n > end - pos:
            raise RecordError(index, pos, f"header value length {n} does not fit the record")
        value = None if n < 0 else bytes(data[pos:pos + n])
        pos += max(n, 0)
        headers.append((key, value))
    return tuple(headers), pos


def check_record_area(module: ModuleType) -> str | None:
    """Why the compiled record decoder ``module`` is not to run: it reads a RecordArea's fields in another order than
    RecordArea's (``AREA_FIELDS``: a stale build); None when they agree."""
    theirs = getattr(module, "AREA_FIELDS", None)
    if theirs != RecordArea._fields:
        return f"{module.__name__} was built for another RecordArea ({', '.join(theirs or ('no AREA_FIELDS',))})"
    return None


# The record decoder's compiled twin (``metalog.log.compiled.records.decode_records(area, record_cls, kraft_data)``;
# ``.compiled`` None: the pure one runs). It reads what it can and returns None for the rest (damage included), which
# the pure decoder then reads or refuses.
DECODE_RECORDS = core.register_twin("log", "metalog.log.compiled.records", "decode_records", _decode_records,
                                    check=check_record_area)
