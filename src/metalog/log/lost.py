"""Offsets the log no longer has, named by the files that kept a record of them.

The batches are the truth of what a log holds, but other files were written from them and say how far it went: the
active segment's ``.index`` and ``.timeindex`` (entries Kafka adds as batches are appended), leader-epoch-checkpoint
(where each leader epoch started), the snapshots (each holds the state through the offset before its end offset)
and log-start-offset-checkpoint. When one of them names an offset past the log's end, batches that were written
are gone: the end of a segment cut, or the active segment emptied, by something other than a write that was
interrupted (which leaves a torn batch, no index entry for it; when the torn batch's header is whole, what the files
name of it is taken as explained by the torn write, whatever the power loss that tore it wrote of them).

One record is not evidence of loss: leader-epoch-checkpoint is written before the first batch of an epoch (by Kafka
and metalog alike), so an epoch that starts exactly at the log's end is what an append interrupted before its
batch was written leaves. A snapshot past the end is what a follower that fetched it leaves when it stops before
Kafka restarts its log at it (KafkaMetadataLog.truncateToLatestSnapshot, on the next start); the offsets before the
snapshot's end are still not in this log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from metalog.log.epoch import LeaderEpochCache
from metalog.log.header import HEADER_SIZE, LAST_OFFSET_DELTA_OFFSET
from metalog.log.index import OffsetIndex, TimeIndex
from metalog.log.segment import LogSegment
from metalog.log.snapshot_files import SnapshotId


@dataclass(frozen=True)
class LostOffsets:
    """Offsets ``first``..``last`` are gone from the log (it ends at ``first - 1``); ``evidence``: who names them."""

    first: int
    last: int
    evidence: tuple[str, ...]

    def __str__(self) -> str:
        return (f"offsets {self.first}..{self.last}, which the log's own files name, are not in the log (it ends at "
                f"offset {self.first - 1}): {'; '.join(self.evidence)}")


def lost_offsets(end: int, last_segment: LogSegment | None, stored_epochs: LeaderEpochCache | None,
                 snapshots: list[SnapshotId], stored_log_start: int | None) -> LostOffsets | None:
    """What names offsets at or past ``end`` (the offset the next batch would get), as the files are on disk."""
    named: list[tuple[int, str]] = []
    if last_segment is not None:
        named += _index_evidence(last_segment, end)
    if stored_epochs is not None:
        named += [(start, f"{stored_epochs.path} has epoch {epoch} start at offset {start}")
                  for epoch, start in stored_epochs.entries if start > end]
    named += [(sid.end_offset - 1, f"snapshot {sid.file_name} holds the state through offset {sid.end_offset - 1}")
              for sid in snapshots if sid.end_offset > end]
    if stored_log_start is not None and stored_log_start > end:
        named.append((stored_log_start - 1, f"log-start-offset-checkpoint says the log starts at {stored_log_start}"))
    named = [(offset, why) for offset, why in named if offset >= end]
    if not named:
        return None
    return LostOffsets(end, max(offset for offset, _ in named), tuple(why for _, why in named))


def torn_batch_end(seg: LogSegment, position: int, next_offset: int) -> int:
    """The offset after the torn batch at ``position`` (the one expected at ``next_offset``) as its lastOffsetDelta
    announces it, when its header is there: what the files name of it is explained by the torn write. Else
    ``next_offset``."""
    head = os.pread(seg.fd, HEADER_SIZE, position)
    if len(head) < HEADER_SIZE:
        return next_offset
    delta = int.from_bytes(head[LAST_OFFSET_DELTA_OFFSET:LAST_OFFSET_DELTA_OFFSET + 4], "big", signed=True)
    return next_offset + delta + 1 if 0 <= delta < 1 << 30 else next_offset


def _index_evidence(seg: LogSegment, end: int) -> list[tuple[int, str]]:
    """The offsets at or past ``end`` the segment's index files on disk name, read afresh (the ones in memory may be
    rebuilt): each file's last entry alone, the whole file only when that entry names such an offset."""
    out = []
    offsets = OffsetIndex(seg.offset_index.path, seg.base_offset).last_named_from(end)
    if offsets is not None:
        offset, position = offsets
        out.append((offset, f"{seg.offset_index.path.name} names offset {offset} at byte {position} of "
                            f"{seg.path.name}, which holds {seg.size} bytes"))
    last = TimeIndex(seg.time_index.path, seg.base_offset).last_named_from(end)
    if last is not None:
        out.append((last, f"{seg.time_index.path.name} names offset {last}"))
    return out
