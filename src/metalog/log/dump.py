"""What ``metalog log dump`` reads and prints: every batch of a file, checked as every reader checks
them (``FileDump``), in kafka-dump-log's text form (``--deep-iteration --print-data-log
--cluster-metadata-decoder``) or as one JSON object per batch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from metalog.codec.definitions import MESSAGES
from metalog.codec.framing import decode_metadata_record
from metalog.codec.schema import snake
from metalog.errors import CorruptBatchError, MetalogError
from metalog.log.batch import NO_SEQUENCE, Record, RecordBatch, check_frame
from metalog.log.chain import BatchChain, Link, boundary_error, follow
from metalog.log.control import DUMP_LABELS, decode_control
from metalog.log.header import HEADER_SIZE
from metalog.log.reader import BatchWalk, find_valid_batch, read_batches
from metalog.log.segment import LOG_SUFFIX
from metalog.log.snapshot_files import parse_name
from metalog.secrets import KEPT, REDACTED, SECRET_FIELDS, Secrets


@dataclass(frozen=True)
class FileDamage:
    """Where a dumped file stops making sense. ``torn``: nothing valid follows, as an interrupted write leaves."""

    error: CorruptBatchError
    position: int
    invalid_bytes: int  # from ``position`` to the end of the file
    torn: bool


class FileDump:
    """The batches of one file (a segment or a snapshot), each checked as every reader checks them: frame,
    CRC-32C, and that it follows the batch before (from the segment's base offset, its name; from 0 in a
    snapshot). Iterating stops at the first damage, which ``damage`` then describes; a batch whose header
    could be read is yielded first, so that it can be shown."""

    def __init__(self, path: Path, previous: FileDump | None = None, max_bytes: int | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes  # kafka-dump-log's --max-bytes: read whole batches within the first max_bytes
        self.snapshot = parse_name(path.name)
        self.base_offset = int(path.stem) if path.suffix == LOG_SUFFIX and path.stem.isdigit() else None
        start = 0 if self.snapshot else self.base_offset
        self.chain = None if start is None else BatchChain(start)
        self.damage: FileDamage | None = None
        # segments dumped one after another: this one must start where the one before ended
        self.boundary: CorruptBatchError | None = None
        if previous is not None and previous.base_offset is not None and self.base_offset is not None and \
                previous.damage is None and previous.chain is not None and \
                previous.chain.next_offset != self.base_offset:
            self.boundary = boundary_error(str(path), self.base_offset, previous.chain)

    def __iter__(self) -> Iterator[RecordBatch]:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            size, pos = os.fstat(fd).st_size, 0
            end = size if self.max_bytes is None else min(size, self.max_bytes)
            try:
                for batch in read_batches(fd, 0, end, BatchWalk(str(self.path), validate=False)):
                    pos = batch.position
                    if self.chain is None:
                        self.chain = BatchChain(batch.base_offset)
                    try:
                        batch.ensure_valid()
                        follow(self.chain, Link.of(batch), batch.source, pos)
                    except CorruptBatchError as e:
                        self._damaged(fd, size, pos, e)
                        yield batch
                        return
                    yield batch
                    pos += batch.size_in_bytes
            except CorruptBatchError as e:
                if not (end < size and _whole_past(fd, pos, end, size)):  # else whole, past --max-bytes: no damage
                    self._damaged(fd, size, pos, e)
        finally:
            os.close(fd)

    def _damaged(self, fd: int, size: int, position: int, error: CorruptBatchError) -> None:
        torn = find_valid_batch(fd, position, size) is None
        self.damage = FileDamage(error, position, size - position, torn)

def _whole_past(fd: int, position: int, limit: int, size: int) -> bool:
    """Whether the batch at ``position`` ends past ``limit`` and is whole in the file (its frame sound)."""
    try:
        length = check_frame(os.pread(fd, HEADER_SIZE, position), 0)
    except CorruptBatchError:
        return False
    return limit < position + length <= size


_COMPACT: dict[str, Any] = {"separators": (",", ":")}


@cache
def kafka_type_name(message_name: str) -> str:
    """Kafka's MetadataRecordType name: ``PartitionRecord`` -> ``PARTITION_RECORD``."""
    return snake(message_name).upper()


def payload_json(record: Record, secrets: Secrets = KEPT) -> dict[str, Any]:
    """``{type, version, data}`` of a metadata record value (``data`` in Kafka's JSON form, its secrets as
    ``secrets`` shows them)."""
    decoded = decode_metadata_record(record.value or b"")
    name = decoded.message.NAME
    return {"type": kafka_type_name(name), "version": decoded.version,
            "data": secrets.record(name, decoded.message.to_json(decoded.version))}


_SECRET_KINDS = frozenset(MESSAGES[name].api_key for name in ("ConfigRecord", *SECRET_FIELDS))  # (one-byte apiKeys)


def _value_hex(batch: RecordBatch, record: Record, secrets: Secrets) -> str | None:
    """A record's value in hex, or ``[redacted]`` when it holds a secret that ``secrets`` keeps (a value that
    does not decode is shown: no secret can be told apart in it)."""
    if record.value is None:
        return None
    if not secrets.shown and not batch.is_control and len(record.value) > 1 and record.value[1] in _SECRET_KINDS:
        try:
            decoded = decode_metadata_record(record.value)
        except (MetalogError, KeyError):
            pass
        else:
            if secrets.hides(decoded.message.NAME, decoded.message.to_json(decoded.version)):
                return REDACTED
    return bytes(record.value).hex()


def control_json(record: Record) -> dict[str, Any]:
    c = decode_control(record.key, record.value)
    return {"type": c.type.name, "version": c.version, "data": c.data_json()}


def record_json(batch: RecordBatch, record: Record, secrets: Secrets = KEPT) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offset": record.offset, "timestamp": record.timestamp,
        "key": None if record.key is None else bytes(record.key).hex(),
        "value": _value_hex(batch, record, secrets),
    }
    if record.headers:
        out["headers"] = [{"key": k, "value": None if v is None else v.hex()} for k, v in record.headers]
    label = "control" if batch.is_control else "payload"
    try:
        out[label] = control_json(record) if batch.is_control else payload_json(record, secrets)
    except (MetalogError, KeyError) as e:
        out["error"] = f"cannot decode the {label}: {e}"
    return out


def batch_json(batch: RecordBatch, *, records: bool = True, secrets: Secrets = KEPT) -> dict[str, Any]:
    out: dict[str, Any] = {
        "baseOffset": batch.base_offset, "lastOffset": batch.last_offset, "count": batch.records_count,
        "partitionLeaderEpoch": batch.partition_leader_epoch, "magic": batch.magic, "crc": batch.crc,
        "compression": batch.compression_name, "timestampType": batch.timestamp_type,
        "isTransactional": batch.is_transactional, "isControl": batch.is_control,
        "producerId": batch.producer_id, "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence, "maxTimestamp": batch.max_timestamp,
        "sizeInBytes": batch.size_in_bytes, "position": batch.position, "isValid": batch.is_valid(),
    }
    if records:
        out["records"] = [record_json(batch, r, secrets) for r in batch.records()]
    return out


def batch_text(batch: RecordBatch) -> str:
    """kafka-dump-log's batch line."""
    horizon = f"OptionalLong[{batch.base_timestamp}]" if batch.has_delete_horizon else "OptionalLong.empty"
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.records_count} "
            f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} "
            f"producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} isTransactional: {_b(batch.is_transactional)} "
            f"isControl: {_b(batch.is_control)} deleteHorizonMs: {horizon} position: {batch.position} "
            f"{batch.timestamp_type}: {batch.max_timestamp} size: {batch.size_in_bytes} magic: {batch.magic} "
            f"compresscodec: {batch.compression_name} crc: {batch.crc} isvalid: {_b(batch.is_valid())}")


def record_text(batch: RecordBatch, record: Record, *, skip_metadata: bool = False,
                secrets: Secrets = KEPT) -> str:
    """kafka-dump-log's record line, with the decoded payload or control message (its secrets as ``secrets``
    shows them). ``skip_metadata`` (--skip-record-metadata): ``| payload: ...`` alone, and a control record an
    empty line, as kafka-dump-log prints them."""
    if skip_metadata:
        if batch.is_control:
            return ""
        try:
            return f"| payload: {json.dumps(payload_json(record, secrets), **_COMPACT)}"
        except (MetalogError, KeyError) as e:
            return f"| Error at {record.offset}, skipping. {e}"
    seq = NO_SEQUENCE if batch.base_sequence == NO_SEQUENCE else batch.base_sequence + record.offset - batch.base_offset
    line = (f"| offset: {record.offset} {batch.timestamp_type}: {record.timestamp} "
            f"keySize: {_size(record.key)} valueSize: {_size(record.value)} sequence: {seq} "
            f"headerKeys: [{','.join(k for k, _ in record.headers)}]")
    try:
        if batch.is_control:
            c = decode_control(record.key, record.value)
            label = DUMP_LABELS.get(c.type)
            if label is None:
                return f"{line} endTxnMarker: {c.type.name} coordinatorEpoch: {c.message['coordinatorEpoch']}"
            return f"{line} {label}: {json.dumps(c.data_json(), **_COMPACT)}"
        return f"{line} payload: {json.dumps(payload_json(record, secrets), **_COMPACT)}"
    except (MetalogError, KeyError) as e:
        return f"{line} Error at {record.offset}, skipping. {e}"


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _b(flag: bool) -> str:
    return "true" if flag else "false"
