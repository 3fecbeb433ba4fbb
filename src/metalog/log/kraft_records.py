"""What KRaft's reader accepts in a batch's records: the form of every record of the metadata log and its snapshots.

Kafka reads the metadata log and snapshots through raft's ``RecordsIterator`` (``readBatch``, ``readRecord``,
``decodeDataRecord``, ``decodeControlRecord``), which refuses, with an exception that stops the broker or
controller reading it:

- any record whose timestamp delta is not 0, or that has headers (``readRecord``: KRaft's BatchBuilder writes
  neither);
- in a data batch, a record with a key or without a value, or with an empty one (``decodeDataRecord``);
- in a control batch, a record without a key or a value, or with an empty one (``decodeControlRecord``), whose
  key does not name a control type KRaft reads, or whose value does not decode as that type's message
  (``ControlRecord.of``: LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord, KRaftVersionRecord,
  VotersRecord; ABORT, COMMIT and unknown types are refused).

RecordsIterator takes a record's offset to be the batch's base offset plus the record's index, whatever its offset
delta says; KRaft's BatchBuilder writes that delta, and the metadata log is never compacted, so metalog refuses a
record whose delta says otherwise (its readers would not agree on its offset).

So a data batch with the control attribute bit set (its records have no key) and a control batch whose records
are metadata records are both damage, whichever reader meets them. ``RecordBatch.records()`` applies these rules
to every batch it decodes (``decode_records()`` is the generic decoder, for batches of any Kafka topic).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from metalog.errors import MetalogError
from metalog.log.control import MESSAGES, decode_control

if TYPE_CHECKING:
    from metalog.log.batch import Record

# the control types ControlRecord.of reads (Kafka's ControlRecordType 2..6)
KRAFT_CONTROL_TYPES = frozenset(MESSAGES)


def kraft_problem(records: Sequence[Record], *, control: bool, base_offset: int, base_timestamp: int | None) -> \
        str | None:
    """Why KRaft's reader refuses these records of one batch (naming the first record it refuses), or None.
    ``base_timestamp``: the batch's, against which each record's timestamp delta is 0; None for a batch whose
    record timestamps are its log-append time (the deltas are not known from the records)."""
    for i, record in enumerate(records):
        if record.offset != base_offset + i:
            return (f"record {i} says offset {record.offset}, not {base_offset + i} (KRaft reads a batch's records at "
                    "its base offset plus their index, as its BatchBuilder writes them: the log is never compacted)")
        problem = _record_problem(record, control, base_timestamp)
        if problem is not None:
            return f"record at offset {record.offset} {problem}"
    return None


def _record_problem(record: Record, control: bool, base_timestamp: int | None) -> str | None:
    if base_timestamp is not None and record.timestamp != base_timestamp:
        return f"has timestamp delta {record.timestamp - base_timestamp} (KRaft writes 0)"
    if record.headers:
        return f"has {len(record.headers)} header(s) (KRaft writes none)"
    if not control:
        if record.key is not None:
            return "has a key: KRaft's data records have none (a control record in a data batch?)"
        return "has no value" if not record.value else None
    if not record.key or not record.value:
        return f"is not a control record: its {'key' if not record.key else 'value'} is missing or empty " \
               "(a data record in a control batch?)"
    try:
        decoded = decode_control(record.key, record.value)
    except (MetalogError, KeyError) as e:
        return f"is not a control record KRaft reads: {e}"
    if decoded.type not in KRAFT_CONTROL_TYPES:
        return f"is a control record of type {decoded.type.name}, which KRaft does not read"
    return None
