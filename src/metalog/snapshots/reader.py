"""Reading a Kafka snapshot: every batch CRC-checked, offsets contiguous from 0, the first batch a
control batch that starts with SnapshotHeaderRecord, the last a control batch with SnapshotFooterRecord.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from metalog.errors import CodecError, CorruptBatchError, SnapshotError
from metalog.log.batch import Record, RecordBatch
from metalog.log.control import ControlRecord, ControlType, decode_control
from metalog.log.reader import read_file_batches
from metalog.log.snapshot_files import SnapshotId, parse_name

if TYPE_CHECKING:
    from metalog.codec.messages import SnapshotFooterRecord, SnapshotHeaderRecord, VotersRecord


@dataclass
class SnapshotSummary:
    """What a full read of a snapshot found."""

    snapshot_id: SnapshotId | None
    header: SnapshotHeaderRecord | None = None
    kraft_version: int = 0
    voters: VotersRecord | None = None
    footer: SnapshotFooterRecord | None = None
    batches: int = 0
    records: int = 0  # data records
    control_records: int = 0  # the header, footer, kraft.version and voters
    size_in_bytes: int = 0
    epochs: set[int] = field(default_factory=set)

    @property
    def last_contained_log_timestamp(self) -> int:
        """The header's (``verify()`` refuses a snapshot whose first record is not a SnapshotHeaderRecord)."""
        if self.header is None:
            raise SnapshotError("no SnapshotHeaderRecord was read")
        return self.header.last_contained_log_timestamp


class SnapshotReader:
    """Iterate a snapshot's data records (``records()``) or batches; ``verify()`` reads it all."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        parsed = parse_name(self.path.name)
        self.snapshot_id = parsed[0] if parsed else None

    def batches(self) -> Iterator[tuple[RecordBatch, list[ControlRecord] | None]]:
        """(batch, its control records or None for a data batch), with the snapshot rules checked."""
        expected = 0
        last: RecordBatch | None = None
        last_controls: list[ControlRecord] | None = None
        for batch in read_file_batches(self.path):
            if batch.base_offset != expected:
                raise SnapshotError(f"batch baseOffset {batch.base_offset}, expected {expected} (snapshot offsets "
                                    "run on from 0)", file=self.path, position=batch.position)
            controls = self._controls(batch) if batch.is_control else None
            if last is None and (controls is None or not controls or controls[0].type != ControlType.SNAPSHOT_HEADER):
                raise SnapshotError("the first batch must be a control batch starting with SnapshotHeaderRecord",
                                    file=self.path, position=batch.position)
            expected = batch.next_offset
            last, last_controls = batch, controls
            yield batch, controls
        if last is None:
            raise SnapshotError("empty snapshot file: no SnapshotHeaderRecord", file=self.path, position=0)
        if last_controls is None or not any(c.type == ControlType.SNAPSHOT_FOOTER for c in last_controls):
            raise SnapshotError("the last batch has no SnapshotFooterRecord (incomplete snapshot)", file=self.path,
                                position=last.position)

    def records(self) -> Iterator[Record]:
        """The data records (the state), after the header is checked; the footer is checked at the end."""
        for batch, controls in self.batches():
            if controls is None:
                yield from batch.records()

    def verify(self) -> SnapshotSummary:
        summary = SnapshotSummary(self.snapshot_id, size_in_bytes=self.path.stat().st_size)
        for batch, controls in self.batches():
            summary.batches += 1
            summary.epochs.add(batch.partition_leader_epoch)
            if controls is None:
                summary.records += len(batch.records())
                continue
            summary.control_records += len(controls)
            for c in controls:
                if c.type == ControlType.SNAPSHOT_HEADER:
                    summary.header = c.message
                elif c.type == ControlType.KRAFT_VERSION:
                    summary.kraft_version = c.message.k_raft_version
                elif c.type == ControlType.KRAFT_VOTERS:
                    summary.voters = c.message
                elif c.type == ControlType.SNAPSHOT_FOOTER:
                    summary.footer = c.message
        return summary

    def _controls(self, batch: RecordBatch) -> list[ControlRecord]:
        out = []
        for rec in batch.records():
            try:
                out.append(decode_control(rec.key, rec.value))
            except CodecError as e:
                raise CorruptBatchError(f"control record at offset {rec.offset}: {e}", file=self.path,
                                        position=batch.position) from None
        return out
