"""``metalog log verify``: read everything, change nothing, list every problem.

Checks: each batch's frame and CRC-32C, offsets contiguous across segments, epochs against
leader-epoch-checkpoint, every record decodes (metadata record or control record), every
``.index`` entry names the last offset of the batch at its position, every ``.timeindex`` entry
holds the largest timestamp up to its offset, and every snapshot reads with header and footer.

Warnings (not problems: the exit status stays 0) name what metalog reads differently from Kafka: a batch with
records after an AbortTransactionRecord (``records_after_abort``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from metalog.codec.definitions import MESSAGES
from metalog.codec.framing import metadata_api_key
from metalog.errors import MetalogError
from metalog.log.batch import RecordBatch
from metalog.log.dump import control_json, payload_json
from metalog.log.epoch import LeaderEpochCache
from metalog.log.metadata_log import MetadataLog
from metalog.log.recovery import ScanState, problem_with
from metalog.log.segment import LogSegment
from metalog.snapshots.reader import SnapshotReader


@dataclass
class Verification:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    bytes: int = 0
    snapshots: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_log(path: str | os.PathLike[str]) -> Verification:
    v = Verification()
    try:
        log = MetadataLog.open(path, writable=False)
    except MetalogError as e:
        v.problems.append(str(e))
        return v
    with log:
        for line in log.recovery.lines():
            (v.problems if line.startswith(("truncated", "lost")) else v.notes).append(line)
        state = ScanState(next_offset=None)
        epochs = LeaderEpochCache(None)
        for seg in log.segments:
            _verify_segment(seg, state, epochs, v)
        epochs.truncate_from_start(log.log_start_offset)  # retention moved the first epoch's start up
        if log.epochs.entries != epochs.entries:
            v.problems.append(f"{log.epochs.path}: entries {log.epochs.entries} but the batches say {epochs.entries}")
        for sid in log.snapshot_ids():
            _verify_snapshot(log.directory / sid.file_name, v)
    return v


def _verify_segment(seg: LogSegment, state: ScanState, epochs: LeaderEpochCache, v: Verification) -> None:
    if state.next_offset is None or state.next_offset < seg.base_offset:
        state.next_offset = seg.base_offset
    batch_at: dict[int, RecordBatch] = {}
    max_ts: list[tuple[int, int]] = []  # (last offset, max timestamp so far), per batch
    pos = 0
    try:
        for batch in seg.batches(0, validate=False):
            problem = problem_with(batch, state)
            if problem:
                v.problems.append(f"{seg.path}, byte {pos}: {problem}")
                return
            _verify_records(seg, batch, v)
            _warn(seg, batch, records_after_abort(batch), v)
            epochs.assign(batch.partition_leader_epoch, batch.base_offset)
            state.next_offset, state.epoch = batch.next_offset, batch.partition_leader_epoch
            batch_at[pos] = batch
            max_ts.append((batch.last_offset, max(batch.max_timestamp, max_ts[-1][1] if max_ts else -1)))
            v.batches += 1
            v.bytes += batch.size_in_bytes
            pos += batch.size_in_bytes
    except MetalogError as e:
        v.problems.append(str(e))
        return
    for i in range(len(seg.offset_index)):
        offset, position = seg.offset_index.entry(i)
        found = batch_at.get(position)
        if found is None or found.last_offset != offset:
            v.problems.append(f"{seg.offset_index.path}: entry {i} ({offset}, {position}) does not name the last "
                              "offset of a batch at that position")
    ends = dict(max_ts)
    for ts, rel in zip(seg.time_index.timestamps, seg.time_index.offsets, strict=True):
        offset = seg.base_offset + rel
        if ends.get(offset) != ts:
            v.problems.append(f"{seg.time_index.path}: entry ({ts}, {offset}) is not the largest timestamp "
                              "up to a batch's last offset")


def _verify_records(seg: LogSegment, batch: RecordBatch, v: Verification) -> None:
    decode = control_json if batch.is_control else payload_json
    for rec in batch.records():
        v.records += 1
        try:
            decode(rec)
        except (MetalogError, KeyError) as e:
            v.problems.append(f"{seg.path}, byte {batch.position}: record at offset {rec.offset} does not decode: {e}")


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


def _verify_snapshot(path: Path, v: Verification) -> None:
    try:
        summary = SnapshotReader(path).verify()
    except MetalogError as e:
        v.problems.append(str(e))
        return
    v.snapshots += 1
    v.notes.append(f"snapshot {path.name}: {summary.batches} batches, {summary.records} records, "
                   f"kraft.version {summary.kraft_version}")
