"""Writing RecordBatch v2: Kafka's DefaultRecordBatch.writeHeader and DefaultRecord.writeTo on bytes.

``build_batch`` writes any batch (every header field is one of its ``BatchFields``); ``build_data_batch`` and
``build_control_batch`` follow KRaft's conventions (BatchBuilder): CreateTime, baseTimestamp =
maxTimestamp = the append time, timestamp deltas 0, producer fields -1, null keys for data records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import crc32c

from metalog.errors import LogError
from metalog.log.batch import (
    CONTROL_FLAG,
    DELETE_HORIZON_FLAG,
    LOG_APPEND_TIME_FLAG,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TRANSACTIONAL_FLAG,
    Record,
    RecordBatch,
)
from metalog.log.compression import Compression, compress
from metalog.log.header import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC
from metalog.log.varint import varint_size, write_varint


def write_record(out: bytearray, record: Record, base_offset: int, base_timestamp: int) -> None:
    """``record`` as DefaultRecord.writeTo writes it in a batch from ``base_offset`` and ``base_timestamp``: its
    length, attributes, timestamp and offset deltas, key, value and headers."""
    body = bytearray()
    body.append(record.attributes & 0xFF)
    write_varint(body, record.timestamp - base_timestamp)
    write_varint(body, record.offset - base_offset)
    _write_nullable(body, record.key)
    _write_nullable(body, record.value)
    write_varint(body, len(record.headers))
    for hkey, hvalue in record.headers:
        raw = hkey.encode()
        write_varint(body, len(raw))
        body += raw
        _write_nullable(body, hvalue)
    write_varint(out, len(body))
    out += body


def _write_nullable(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag -1
    else:
        write_varint(out, len(data))
        out += data


@dataclass(frozen=True, slots=True)
class BatchFields:
    """What ``build_batch`` writes in a batch's header besides its base offset and record count. Left None, the
    timestamps and lastOffsetDelta come from the records, as Kafka's MemoryRecordsBuilder derives them:
    ``base_timestamp`` the first record's timestamp, ``max_timestamp`` the largest (the log-append time when one is
    given), ``last_offset_delta`` the last record's offset delta."""

    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    compression: Compression | str = Compression.NONE
    log_append_time: int | None = None
    is_transactional: bool = False
    is_control: bool = False
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    base_timestamp: int | None = None
    max_timestamp: int | None = None
    last_offset_delta: int | None = None
    delete_horizon: bool = False

    @classmethod
    def of(cls, batch: RecordBatch) -> BatchFields:
        """The fields of a decoded batch, as they are (``rebuild`` writes them back)."""
        return cls(partition_leader_epoch=batch.partition_leader_epoch, compression=batch.compression,
                   log_append_time=batch.max_timestamp if batch.attributes & LOG_APPEND_TIME_FLAG else None,
                   is_transactional=batch.is_transactional, is_control=batch.is_control, producer_id=batch.producer_id,
                   producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
                   base_timestamp=batch.base_timestamp, max_timestamp=batch.max_timestamp,
                   last_offset_delta=batch.last_offset_delta, delete_horizon=batch.has_delete_horizon)

    def attributes(self, codec: Compression) -> int:
        """The attributes field: the codec and the flags."""
        return codec.value | (LOG_APPEND_TIME_FLAG if self.log_append_time is not None else 0) | \
            (TRANSACTIONAL_FLAG if self.is_transactional else 0) | (CONTROL_FLAG if self.is_control else 0) | \
            (DELETE_HORIZON_FLAG if self.delete_horizon else 0)


class Frame(NamedTuple):
    """The header fields ``_frame`` writes around records (batchLength, magic and the CRC it works out)."""

    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


def build_batch(base_offset: int, records: Sequence[Record], fields: BatchFields = BatchFields()) -> bytes:
    """A whole batch of ``records`` from ``base_offset``, its header ``fields`` (defaults: a plain uncompressed data
    batch). Offset and timestamp deltas come from each record's offset and timestamp."""
    base_timestamp = fields.base_timestamp
    if base_timestamp is None:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    max_timestamp = fields.max_timestamp
    if max_timestamp is None:
        max_timestamp = fields.log_append_time if fields.log_append_time is not None else \
            max((r.timestamp for r in records), default=NO_TIMESTAMP)
    body = bytearray()
    for record in records:
        write_record(body, record, base_offset, base_timestamp)
    last_offset_delta = fields.last_offset_delta
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset - base_offset if records else 0
    codec = Compression.parse(fields.compression)
    return _frame(base_offset, Frame(fields.partition_leader_epoch, fields.attributes(codec), last_offset_delta,
                                     base_timestamp, max_timestamp, fields.producer_id, fields.producer_epoch,
                                     fields.base_sequence, len(records)), compress(codec, body))


def build_data_batch(base_offset: int, values: Sequence[bytes], *, epoch: int, timestamp: int,
                     compression: Compression | str = Compression.NONE) -> bytes:
    """A KRaft data batch: one record per value, null keys, no headers (what BatchBuilder writes)."""
    if not values:
        raise LogError("a batch needs at least one record")
    if not all(values):
        raise LogError("a KRaft data record needs a value that is not empty (KRaft's reader refuses an empty one)")
    body = bytearray()
    for i, value in enumerate(values):
        n = len(value)
        # attributes 0, timestampDelta 0, offsetDelta i, key null, value, no headers
        write_varint(body, 4 + varint_size(i) + varint_size(n) + n)
        body += b"\x00\x00"
        write_varint(body, i)
        body.append(1)
        write_varint(body, n)
        body += value
        body.append(0)
    codec = Compression.parse(compression)
    return _frame(base_offset, Frame(epoch, codec.value, len(values) - 1, timestamp, timestamp, NO_PRODUCER_ID,
                                     NO_PRODUCER_EPOCH, NO_SEQUENCE, len(values)), compress(codec, body))


def build_control_batch(base_offset: int, records: Sequence[tuple[bytes, bytes]], *, epoch: int,
                        timestamp: int) -> bytes:
    """A control batch of (key, value) records, as KafkaRaftClient writes them (uncompressed)."""
    recs = [Record(base_offset + i, timestamp, key, value) for i, (key, value) in enumerate(records)]
    return build_batch(base_offset, recs, BatchFields(partition_leader_epoch=epoch, is_control=True))


def _frame(base_offset: int, frame: Frame, records: bytes) -> bytes:
    """The batch of ``records`` (their bytes as stored: compressed or not) with ``frame``'s header fields."""
    out = bytearray(HEADER_SIZE)
    out += records
    HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, frame.partition_leader_epoch, MAGIC, 0,
                     frame.attributes, frame.last_offset_delta, frame.base_timestamp, frame.max_timestamp,
                     frame.producer_id, frame.producer_epoch, frame.base_sequence, frame.records_count)
    crc = crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    out[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
    return bytes(out)


def rebuild(batch: RecordBatch) -> bytes:
    """Re-encode a decoded batch from its header fields and records (byte-identical for Kafka's batches)."""
    return build_batch(batch.base_offset, batch.decode_records(), BatchFields.of(batch))
