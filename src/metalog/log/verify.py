"""``metalog log verify``: read everything, change nothing, list every problem.

Checks: each batch's frame and CRC-32C, that it follows the one before (offsets run on within and
across segments, epochs never decrease: ``metalog.log.chain``), epochs against
leader-epoch-checkpoint, every record decodes (metadata record or control record), every
``.index`` entry names the last offset of the batch at its position, and every ``.timeindex`` entry
holds the largest timestamp up to its offset (``recovery.IndexCheck``, which recovery uses too).
The snapshots are checked by ``metalog.snapshots.verify`` (the ``log verify`` verb runs both).

Warnings (not problems: the exit status stays 0) name what metalog reads differently from Kafka: a batch with
records after an AbortTransactionRecord (``records_after_abort``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from metalog.codec.definitions import MESSAGES
from metalog.codec.framing import metadata_api_key
from metalog.errors import CorruptBatchError, MetalogError
from metalog.log.batch import RecordBatch
from metalog.log.chain import boundary_error
from metalog.log.dump import control_json, payload_json
from metalog.log.epoch import LeaderEpochCache
from metalog.log.metadata_log import MetadataLog
from metalog.log.recovery import IndexCheck, ScanState, problem_with
from metalog.log.segment import LogSegment


@dataclass
class Verification:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    batches: int = 0
    records: int = 0  # every record: data and control
    control_records: int = 0
    bytes: int = 0
    snapshots: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_log(path: str | os.PathLike[str]) -> Verification:
    v = Verification()
    try:
        log = MetadataLog.open(path)
    except MetalogError as e:
        v.problems.append(str(e))
        return v
    with log:
        for line in log.recovery.lines():
            (v.problems if line.startswith(("truncated", "lost")) else v.notes).append(line)
        state = ScanState()
        epochs = LeaderEpochCache(None)
        whole = True  # the segment before was read to its end
        for seg in log.segments:
            if whole and state.next_offset(seg.base_offset) != seg.base_offset:
                v.problems.append(str(boundary_error(seg.source, seg.base_offset, state.chain)))
            state.expect(seg.base_offset)
            whole = _verify_segment(seg, state, epochs, v)
        epochs.truncate_from_start(log.log_start_offset)  # retention moved the first epoch's start up
        if log.epochs.entries != epochs.entries:
            v.problems.append(f"{log.epochs.path}: entries {log.epochs.entries} but the batches say {epochs.entries}")
    return v


def _verify_segment(seg: LogSegment, state: ScanState, epochs: LeaderEpochCache, v: Verification) -> bool:
    """Every batch of ``seg`` and its indexes; False when a problem stopped the read before the segment's end."""
    check = IndexCheck(seg.offset_index, seg.time_index)
    pos = 0
    try:
        for batch in seg.batches(0, validate=False):
            problem = problem_with(batch, state)
            if problem:
                v.problems.append(f"{seg.path}, byte {pos}: {problem}")
                return False
            if _verify_records(seg, batch, v):
                _warn(seg, batch, records_after_abort(batch), v)
            epochs.assign(batch.partition_leader_epoch, batch.base_offset)
            state.passed(batch)
            check.batch(pos, batch.last_offset, batch.max_timestamp)
            v.batches += 1
            v.bytes += batch.size_in_bytes
            pos += batch.size_in_bytes
    except MetalogError as e:
        v.problems.append(str(e))
        return False
    problem = check.finish()
    if problem is not None:
        v.problems.append(problem)
    return True


def _verify_records(seg: LogSegment, batch: RecordBatch, v: Verification) -> bool:
    """Every record decodes, as every read decodes it, and its payload too; False when the batch's records cannot be
    read at all (the batch is still whole, so the reading goes on after it)."""
    try:
        records = batch.records()
    except CorruptBatchError as e:
        v.problems.append(str(e))
        return False
    decode = control_json if batch.is_control else payload_json
    for rec in records:
        v.records += 1
        v.control_records += batch.is_control
        try:
            decode(rec)
        except (MetalogError, KeyError) as e:
            v.problems.append(f"{seg.path}, byte {batch.position}: record at offset {rec.offset} does not decode: {e}")
    return True


_ABORT_TRANSACTION = MESSAGES["AbortTransactionRecord"].api_key


def records_after_abort(batch: RecordBatch) -> str | None:
    """What differs when records follow an AbortTransactionRecord in one data batch (only record types are read):
    Kafka's MetadataBatchLoader keeps the aborted transaction's records in its delta until the batch's flush
    when more records follow the abort (ABORTED -> NO_TRANSACTION), so it publishes them; metalog drops them, as
    the abort intends. Kafka's controller never writes such a batch, nor does metalog."""
    if batch.is_control or batch.records_count < 2:
        return None
    records = list(batch.records())
    for i, record in enumerate(records[:-1]):
        if metadata_api_key(record.value) == _ABORT_TRANSACTION:
            return (f"batch {batch.base_offset}..{batch.last_offset} has {len(records) - 1 - i} record(s) after the "
                    f"AbortTransactionRecord at offset {record.offset}: metalog drops the aborted transaction's "
                    "records and applies these; Kafka's loader would keep the aborted records too")
    return None


def _warn(seg: LogSegment, batch: RecordBatch, warning: str | None, v: Verification) -> None:
    if warning is not None:
        v.warnings.append(f"{seg.path}, byte {batch.position}: {warning}")

