"""Writing a Kafka snapshot (RecordsSnapshotWriter): header batch, data batches, footer batch.

Offsets in the file start at 0 and run on through all batches; every batch carries the snapshot's
epoch as its partitionLeaderEpoch and the write time as its timestamps. The header batch holds
SnapshotHeaderRecord, then at kraft.version 1 a KRaftVersionRecord and (when voters are given) a
VotersRecord. The file is written as ``.checkpoint.part``, fsynced and renamed atomically.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from metalog.codec import messages  # its classes load on first use (the CLI imports this module to start)
from metalog.codec.framing import encode_metadata_record
from metalog.errors import SnapshotError
from metalog.log.batch import KRAFT_MAX_BATCH_BYTES
from metalog.log.builder import build_control_batch, build_data_batch
from metalog.log.control import encode_control
from metalog.log.files import fsync_dir
from metalog.log.snapshot_files import PART_SUFFIX, SnapshotId

if TYPE_CHECKING:
    from metalog.codec.messages import VotersRecord
    from metalog.codec.runtime import ApiMessage

_RECORD_OVERHEAD = 8  # a data record's framing beyond its value, at most, for batch sizing


class SnapshotHeader(NamedTuple):
    """What a snapshot's first batch says (the control records Kafka's RecordsSnapshotWriter writes before the data):
    its SnapshotHeaderRecord's ``last_contained_log_timestamp``; at ``kraft_version`` 1 a KRaftVersionRecord, then
    the ``voters`` VotersRecord when there is one. ``SnapshotReader.verify()`` reads them back
    (``SnapshotSummary.header``, ``.kraft_version``, ``.voters``)."""

    last_contained_log_timestamp: int
    kraft_version: int = 0
    voters: VotersRecord | None = None

    def records(self) -> list[tuple[ApiMessage, int]]:
        """The header batch's control messages, in Kafka's order, each with its version. Voters at kraft.version 0
        are refused, as Kafka's RecordsSnapshotWriter.Builder refuses them: that snapshot has no VotersRecord."""
        if self.kraft_version == 0 and self.voters is not None:
            raise SnapshotError("a snapshot at kraft.version 0 has no VotersRecord: voters need kraft.version 1")
        out: list[tuple[ApiMessage, int]] = [(messages.SnapshotHeaderRecord(
            version=0, last_contained_log_timestamp=self.last_contained_log_timestamp), 0)]
        if self.kraft_version > 0:
            out.append((messages.KRaftVersionRecord(version=0, k_raft_version=self.kraft_version), 0))
            if self.voters is not None:
                out.append((self.voters, 0))
        return out


class SnapshotWriter:
    """Write one snapshot; ``freeze()`` completes it. Leaving a ``with`` block without freezing aborts it."""

    def __init__(self, directory: str | os.PathLike[str], snapshot_id: SnapshotId, header: SnapshotHeader, *,
                 time_ms: int | None = None, max_batch_bytes: int = KRAFT_MAX_BATCH_BYTES,
                 file_name: str | None = None) -> None:
        """``time_ms``: every batch's timestamp (now by default); ``max_batch_bytes``: the data batches' size limit
        (KRaft's, by default); the batches are uncompressed, as KRaft writes its snapshots. ``file_name``: a file of
        another name in the same format (``bootstrap.checkpoint``), written through ``<file_name>.tmp``; by default
        ``snapshot_id``'s ``.checkpoint``, written through ``.checkpoint.part``."""
        self.directory = Path(directory)
        self.snapshot_id = snapshot_id
        self.path = self.directory / (file_name or snapshot_id.file_name)
        self.part_path = self.directory / (snapshot_id.file_name[:-len(".checkpoint")] + PART_SUFFIX
                                           if file_name is None else file_name + ".tmp")
        self.time_ms = int(time.time() * 1000) if time_ms is None else time_ms
        self.max_batch_bytes = max_batch_bytes
        self.next_offset = 0
        self.frozen = False
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        header_records = header.records()
        if self.path.exists():
            raise SnapshotError("snapshot already exists", file=self.path)
        self._fd: int | None = os.open(self.part_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._write_control(header_records)

    def append(self, records: Iterable[bytes | tuple[ApiMessage, int]]) -> None:
        """Add metadata records (framed values or (message, version) pairs); batches fill up to the limit."""
        for rec in records:
            value = bytes(rec) if isinstance(rec, bytes | bytearray) else encode_metadata_record(*rec)
            if self._pending and self._pending_bytes + len(value) + _RECORD_OVERHEAD > self.max_batch_bytes:
                self._flush_data()
            self._pending.append(value)
            self._pending_bytes += len(value) + _RECORD_OVERHEAD

    def freeze(self) -> Path:
        """Write the footer, fsync, rename into place; returns the ``.checkpoint`` path."""
        self._flush_data()
        self._write_control([(messages.SnapshotFooterRecord(version=0), 0)])
        assert self._fd is not None
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None
        os.replace(self.part_path, self.path)
        fsync_dir(self.directory)
        self.frozen = True
        return self.path

    def abort(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if not self.frozen:
            self.part_path.unlink(missing_ok=True)

    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.frozen:
            self.abort()

    def _flush_data(self) -> None:
        if self._pending:
            self._write(build_data_batch(self.next_offset, self._pending, epoch=self.snapshot_id.epoch,
                                         timestamp=self.time_ms), len(self._pending))
            self._pending, self._pending_bytes = [], 0

    def _write_control(self, messages: list[tuple[ApiMessage, int]]) -> None:
        data = build_control_batch(self.next_offset, [encode_control(m, v) for m, v in messages],
                                   epoch=self.snapshot_id.epoch, timestamp=self.time_ms)
        self._write(data, len(messages))

    def _write(self, data: bytes, count: int) -> None:
        if self._fd is None:
            raise SnapshotError("snapshot writer is closed", file=self.part_path)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        self.next_offset += count
