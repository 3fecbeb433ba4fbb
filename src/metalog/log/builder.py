"""Writing RecordBatch v2: Kafka's DefaultRecordBatch.writeHeader and DefaultRecord.writeTo on bytes.

``build_batch`` writes any batch (every header field is a parameter); ``build_data_batch`` and
``build_control_batch`` follow KRaft's conventions (BatchBuilder): CreateTime, baseTimestamp =
maxTimestamp = the append time, timestamp deltas 0, producer fields -1, null keys for data records.
"""

from __future__ import annotations

from collections.abc import Sequence

import crc32c

from metalog.errors import LogError
from metalog.log.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG,
    DELETE_HORIZON_FLAG,
    HEADER,
    HEADER_SIZE,
    LOG_APPEND_TIME_FLAG,
    LOG_OVERHEAD,
    MAGIC,
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
from metalog.log.varint import varint_size, write_varint

_CRC = ATTRIBUTES_OFFSET


def write_record(out: bytearray, offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                 headers: Sequence[tuple[str, bytes | None]] = (), attributes: int = 0) -> None:
    body = bytearray()
    body.append(attributes & 0xFF)
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_nullable(body, key)
    _write_nullable(body, value)
    write_varint(body, len(headers))
    for hkey, hvalue in headers:
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


def build_batch(
    base_offset: int,
    records: Sequence[Record],
    *,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression: Compression | str = Compression.NONE,
    log_append_time: int | None = None,
    is_transactional: bool = False,
    is_control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    delete_horizon: bool = False,
) -> bytes:
    """A whole batch. Offset and timestamp deltas come from each record's offset and timestamp.

    ``base_timestamp`` defaults to the first record's timestamp and ``max_timestamp`` to the
    largest (the log-append time when one is given), as Kafka's MemoryRecordsBuilder does.
    """
    if base_timestamp is None:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if max_timestamp is None:
        if log_append_time is not None:
            max_timestamp = log_append_time
        else:
            max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    body = bytearray()
    for r in records:
        write_record(body, r.offset - base_offset, r.timestamp - base_timestamp, r.key, r.value, r.headers,
                     r.attributes)
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset - base_offset if records else 0
    codec = Compression.parse(compression)
    attributes = codec.value
    attributes |= LOG_APPEND_TIME_FLAG if log_append_time is not None else 0
    attributes |= TRANSACTIONAL_FLAG if is_transactional else 0
    attributes |= CONTROL_FLAG if is_control else 0
    attributes |= DELETE_HORIZON_FLAG if delete_horizon else 0
    return _frame(base_offset, partition_leader_epoch, attributes, last_offset_delta, base_timestamp,
                  max_timestamp, producer_id, producer_epoch, base_sequence, len(records), compress(codec, body))


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
    return _frame(base_offset, epoch, codec.value, len(values) - 1, timestamp, timestamp, NO_PRODUCER_ID,
                  NO_PRODUCER_EPOCH, NO_SEQUENCE, len(values), compress(codec, body))


def build_control_batch(base_offset: int, records: Sequence[tuple[bytes, bytes]], *, epoch: int,
                        timestamp: int) -> bytes:
    """A control batch of (key, value) records, as KafkaRaftClient writes them (uncompressed)."""
    recs = [Record(base_offset + i, timestamp, key, value) for i, (key, value) in enumerate(records)]
    return build_batch(base_offset, recs, partition_leader_epoch=epoch, is_control=True)


def _frame(base_offset: int, epoch: int, attributes: int, last_offset_delta: int, base_timestamp: int,
           max_timestamp: int, producer_id: int, producer_epoch: int, base_sequence: int, count: int,
           records: bytes) -> bytes:
    out = bytearray(HEADER_SIZE)
    out += records
    HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, epoch, MAGIC, 0, attributes, last_offset_delta,
                     base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, count)
    crc = crc32c.crc32c(memoryview(out)[_CRC:])
    out[17:21] = crc.to_bytes(4, "big")
    return bytes(out)


def rebuild(batch: RecordBatch) -> bytes:
    """Re-encode a decoded batch from its header fields and records (byte-identical for Kafka's batches)."""
    return build_batch(
        batch.base_offset, batch.decode_records(), partition_leader_epoch=batch.partition_leader_epoch,
        compression=batch.compression,
        log_append_time=batch.max_timestamp if batch.timestamp_type == "LogAppendTime" else None,
        is_transactional=batch.is_transactional, is_control=batch.is_control, producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        base_timestamp=batch.base_timestamp, max_timestamp=batch.max_timestamp,
        last_offset_delta=batch.last_offset_delta, delete_horizon=batch.has_delete_horizon,
    )
