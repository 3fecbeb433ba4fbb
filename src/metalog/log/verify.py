"""``metalog log verify``: read everything, change nothing, list every problem.

Checks: each batch's frame and CRC-32C, offsets contiguous across segments, epochs against
leader-epoch-checkpoint, every record decodes (metadata record or control record), every
``.index`` entry names the last offset of the batch at its position, and every ``.timeindex`` entry
holds the largest timestamp up to its offset. The snapshots are checked by ``metalog.snapshots.verify``
(the ``log verify`` verb runs both).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from metalog.errors import MetalogError
from metalog.log.batch import RecordBatch
from metalog.log.dump import control_json, payload_json
from metalog.log.epoch import LeaderEpochCache
from metalog.log.metadata_log import MetadataLog
from metalog.log.recovery import ScanState, problem_with
from metalog.log.segment import LogSegment


@dataclass
class Verification:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
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
