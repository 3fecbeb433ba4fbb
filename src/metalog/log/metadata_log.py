"""MetadataLog: Kafka's ``__cluster_metadata-0`` directory, opened for reading or for one writer.

Layout (``<dir>`` is the log directory, as in Kafka's ``metadata.log.dir``)::

    <dir>/meta.properties, <dir>/.lock, <dir>/log-start-offset-checkpoint
    <dir>/__cluster_metadata-0/<20-digit base offset>.log | .index | .timeindex
    <dir>/__cluster_metadata-0/partition.metadata, leader-epoch-checkpoint, quorum-state
    <dir>/__cluster_metadata-0/<20-digit end offset>-<10-digit epoch>.checkpoint

A single ``.checkpoint`` file opens too (read-only), as ``kafka-metadata-shell --snapshot`` opens one: a log that
holds that snapshot and no batch, starting at the snapshot's end offset (``MetadataLog.snapshot_file``). Nothing
else in its directory is read: no other snapshot, no segment, no meta.properties or quorum-state.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import itertools
import mmap
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalog.codec import Uuid
from metalog.codec.definitions import MESSAGES
from metalog.codec.framing import encode_metadata_record, metadata_api_key
from metalog.errors import CorruptBatchError, LogError, LogLockedError
from metalog.log import files
from metalog.log.batch import KRAFT_MAX_BATCH_BYTES, Record, RecordBatch
from metalog.log.builder import build_control_batch, build_data_batch
from metalog.log.chain import BatchChain, Link, boundary_error, follow_problem
from metalog.log.compression import Compression
from metalog.log.config import DEFAULT_CONFIG, Check, Durability, LogConfig, Mode
from metalog.log.control import encode_control
from metalog.log.epoch import FILE_NAME as EPOCH_FILE
from metalog.log.epoch import LeaderEpochCache
from metalog.log.log_loader import LogLoader
from metalog.log.recovery import RecoveryReport, announce
from metalog.log.scan import BatchEnd, RecordSink, Scan, ScannedBatch, release_read, scan_into, scan_values
from metalog.log.segment import LOG_SUFFIX, Located, LogSegment
from metalog.log.snapshot_files import SUFFIX as SNAPSHOT_SUFFIX
from metalog.log.snapshot_files import SnapshotId, clean_snapshot_dir, list_snapshots, parse_name

LOCK_FILE = ".lock"
_LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap", ".tmp")
ABORT_TRANSACTION_KEY = MESSAGES["AbortTransactionRecord"].api_key


@dataclass(frozen=True)
class AppendedBatch:
    base_offset: int
    last_offset: int
    epoch: int
    committed: bool


class MetadataLog:
    """The metadata log of one directory. Use ``MetadataLog.open(...)``; close it (or use ``with``)."""

    def __init__(self, root: Path, *, writable: bool, config: LogConfig) -> None:
        self.root = root
        self.directory = root / files.METADATA_PARTITION_DIR
        self.writable = writable
        self.config = config
        self.segments: list[LogSegment] = []
        self.recovery = RecoveryReport()
        self.epochs = LeaderEpochCache(self.directory / EPOCH_FILE)
        self.log_start_offset = 0
        self.stored_log_start: int | None = None  # what log-start-offset-checkpoint says, if there is one
        self.committed_offset = 0
        self.snapshot_file: Path | None = None  # opened as a single .checkpoint file: that file
        self._single_snapshot: SnapshotId | None = None
        self._lock_fd: int | None = None

    # ---- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], mode: Mode = Mode.READ, *, check: Check = Check.TAIL,
             config: LogConfig = DEFAULT_CONFIG) -> MetadataLog:
        """Open the log under ``path`` (the log dir or its ``__cluster_metadata-0``). ``Mode.READ`` (the default)
        creates, changes, locks and removes nothing in the directory; ``Mode.WRITE`` opens it for the one writer
        (the lock, then the leftovers of an interrupted write cleaned); ``Mode.CREATE`` (a writer) makes it where
        there is none.

        Opening checks the tail of the log (``Check.TAIL``); a torn write there is left out of reads (writable: cut,
        as Kafka's recovery does), and ``recovery`` says so. ``Check.ALL`` checks every segment from its first
        byte, so that damage anywhere is an error before anything is appended; ``Check.REPAIR`` (which checks all)
        cuts the log at the first damage instead (``recovery.lost`` says what went; read-only, what a repair would
        cut is left out of reads and said the same way). See ``metalog.log.log_loader``. ``config`` is the
        writer's: segment size, index interval, durability, and the ids a log ``Mode.CREATE`` makes is stamped
        with (``metalog.log.config``).

        ``path`` may also be a single ``.checkpoint`` file (read-only): see ``snapshot_file``."""
        if Path(path).suffix == SNAPSHOT_SUFFIX and not Path(path).is_dir():
            return cls._of_snapshot_file(Path(path), writable=mode.writable)
        log = cls(_root_of(Path(path)), writable=mode.writable, config=config)
        try:
            log._open(mode, check)
        except BaseException:
            log._release()
            raise
        announce(log.recovery)
        return log

    @classmethod
    def _of_snapshot_file(cls, path: Path, *, writable: bool) -> MetadataLog:
        """The log a single snapshot file is: that snapshot, no batch, starting at its end offset (Kafka's log
        after its segments below a snapshot were deleted). Its end offset and epoch are in its name, as Kafka
        names it; its content is read (and checked) by whoever loads it (``metalog.snapshots``)."""
        if writable:
            raise LogError("a single snapshot file, not a log: this needs a log directory (holding "
                           f"{files.METADATA_PARTITION_DIR}) to write to", file=path)
        if not path.is_file():
            raise LogError("no such snapshot file" if not path.exists() else "not a file", file=path)
        parsed = parse_name(path.name)
        if parsed is None or parsed[1]:
            raise LogError("not a snapshot name: a .checkpoint file's end offset and epoch are in its name "
                           "(<20-digit end offset>-<10-digit epoch>.checkpoint, as Kafka names it)", file=path)
        log = cls(path, writable=False, config=LogConfig(durability=Durability.NONE))
        log.directory, log.snapshot_file, log._single_snapshot = path.parent, path, parsed[0]
        log.log_start_offset = log.committed_offset = parsed[0].end_offset
        return log

    def _open(self, mode: Mode, check: Check) -> None:
        create = mode is Mode.CREATE
        if not create and not self.directory.is_dir():
            hint = " (use Mode.CREATE to make one)" if self.writable else ": not a KRaft metadata log directory"
            raise LogError(f"no {files.METADATA_PARTITION_DIR} directory here{hint}", file=self.root)
        if self.writable:
            if create:
                self.root.mkdir(parents=True, exist_ok=True)
            self._lock()  # before anything is created or cleaned: two creators make one log, or one of them fails
            if not self.directory.is_dir():
                self._create()
            self._clean_leftovers()
            if not (self.directory / files.PARTITION_METADATA).exists():  # Kafka writes it for every partition
                files.atomic_write(self.directory / files.PARTITION_METADATA, files.partition_metadata_text())
        self._load_epochs()
        self._load_segments(check)
        self.committed_offset = self.log_end_offset

    def _create(self) -> None:
        """A new log directory, made under the lock."""
        self.directory.mkdir()
        if not (self.root / files.META_PROPERTIES).exists():
            files.write_meta_properties(self.root, cluster_id=self.config.cluster_id or str(Uuid.random()),
                                        node_id=self.config.node_id, directory_id=Uuid.random())
        files.atomic_write(self.directory / files.PARTITION_METADATA, files.partition_metadata_text())
        files.atomic_write(self.directory / files.QUORUM_STATE, files.quorum_state_json(leader_id=-1, leader_epoch=0))
        files.fsync_dir(self.root)

    def _lock(self) -> None:
        fd = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogLockedError("another writer holds the lock on this log directory; one writer at a time "
                                 "(readers can open it read-only)", file=self.root / LOCK_FILE) from None
        self._lock_fd = fd

    def _clean_leftovers(self) -> None:
        for path in sorted(self.directory.iterdir()):
            if path.name.endswith(_LEFTOVER_SUFFIXES):
                path.unlink()
                self.recovery.cleaned.append(str(path))
        self.recovery.cleaned += [str(p) for p in clean_snapshot_dir(self.directory)]

    def _load_epochs(self) -> None:
        path = self.directory / EPOCH_FILE
        self._epochs_from_file = path.exists()
        if self._epochs_from_file:
            self.epochs = LeaderEpochCache.load(path)

    def _load_segments(self, check: Check) -> None:
        bases = sorted(int(p.name[:-len(LOG_SUFFIX)]) for p in self.directory.glob(f"*{LOG_SUFFIX}")
                       if p.name[:-len(LOG_SUFFIX)].isdigit())
        self.log_start_offset = self._stored_log_start(bases)
        if not bases:
            if not self.writable:
                return
            bases = [self.log_start_offset]
        self.segments = [LogSegment(self.directory, b, writable=self.writable,
                                    index_interval_bytes=self.config.index_interval_bytes) for b in bases]
        LogLoader(self, check).load(self._epochs_from_file)

    def _stored_log_start(self, bases: list[int]) -> int:
        path = self.root / files.LOG_START_OFFSET_CHECKPOINT
        stored = 0
        if path.exists():
            stored = files.read_offset_checkpoint(path).get((files.METADATA_TOPIC, 0), 0)
            self.stored_log_start = stored
        if not bases:
            latest = self.latest_snapshot_id()
            return max(stored, latest.end_offset if latest else 0)
        return max(stored, bases[0])

    # ---- facts -----------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        """The offset the next record gets."""
        return self.segments[-1].next_offset if self.segments else self.log_start_offset

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs.latest_epoch

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def meta_properties(self) -> dict[str, str]:
        path = self.root / files.META_PROPERTIES
        return files.read_properties(path) if self.snapshot_file is None and path.exists() else {}

    def quorum_state(self) -> dict[str, Any] | None:
        path = self.directory / files.QUORUM_STATE
        return files.read_quorum_state(path) if self.snapshot_file is None and path.exists() else None

    # ---- appending -------------------------------------------------------------------------
    def append(self, records: Iterable[bytes | tuple[Any, int]], *, epoch: int | None = None,
               timestamp: int | None = None, batch_size: int | None = None,
               max_batch_bytes: int = KRAFT_MAX_BATCH_BYTES,
               compression: Compression | str = Compression.NONE) -> list[AppendedBatch]:
        """Append metadata records (framed values, or (message, version) pairs) as KRaft data batches.

        Offsets are assigned from the log end; a batch holds at most ``batch_size`` records and
        ``max_batch_bytes`` of values, and ends at an AbortTransactionRecord (the records after an abort
        start a new batch: Kafka's loader would keep the aborted records if more followed in the batch).
        Returns the batches written; ``committed`` says whether each was fsynced under the durability
        policy before this returned.
        """
        epoch = self._epoch_for_append(epoch)
        out: list[AppendedBatch] = []
        pending: list[bytes] = []
        size = 0
        for rec in records:
            value = rec if isinstance(rec, bytes | bytearray) else encode_metadata_record(*rec)
            if pending and (size + len(value) > max_batch_bytes or len(pending) == batch_size or
                            metadata_api_key(pending[-1]) == ABORT_TRANSACTION_KEY):
                out.append(self._append_values(pending, epoch, timestamp, compression))
                pending, size = [], 0
            pending.append(bytes(value))
            size += len(value) + 8
        if pending:
            out.append(self._append_values(pending, epoch, timestamp, compression))
        return self._finish_append(out)

    def append_control(self, messages: Sequence[tuple[Any, int]], *, epoch: int | None = None,
                       timestamp: int | None = None) -> AppendedBatch:
        """Append one control batch (LeaderChangeMessage, KRaftVersionRecord, VotersRecord...)."""
        epoch = self._epoch_for_append(epoch)
        data = build_control_batch(self.log_end_offset, [encode_control(m, v) for m, v in messages],
                                   epoch=epoch, timestamp=_now(timestamp))
        return self._finish_append([self._append_batch(data)])[0]

    def append_batch(self, data: bytes) -> AppendedBatch:
        """Append a whole batch someone else built; its base offset is set to the log end offset. A batch every
        read would refuse (its CRC, a count that does not span its offsets, records KRaft cannot read) is refused."""
        batch = RecordBatch(data, 0, source="appended batch")
        batch.ensure_valid()
        if batch.size_in_bytes != len(data):
            raise CorruptBatchError(f"{len(data) - batch.size_in_bytes} bytes follow the batch", position=0)
        problem = follow_problem(Link(0, batch.last_offset_delta, batch.records_count, 0), BatchChain(0))  # the count
        if problem is not None:
            raise CorruptBatchError(f"batch: {problem}", file="appended batch", position=0)
        batch.records()  # KRaft's rules for its records (metalog.log.kraft_records)
        self._epoch_for_append(batch.partition_leader_epoch)
        data = self.log_end_offset.to_bytes(8, "big", signed=True) + bytes(data[8:])  # baseOffset is outside the CRC
        return self._finish_append([self._append_batch(data)])[0]

    def _epoch_for_append(self, epoch: int | None) -> int:
        self._check_writable()
        latest = self.epochs.latest_epoch
        if epoch is None:
            return latest if latest is not None else 1
        if latest is not None and epoch < latest:
            raise LogError(f"epoch {epoch} is older than the log's latest epoch {latest}", file=self.directory)
        return epoch

    def _append_values(self, values: list[bytes], epoch: int, timestamp: int | None,
                       compression: Compression | str) -> AppendedBatch:
        data = build_data_batch(self.log_end_offset, values, epoch=epoch, timestamp=_now(timestamp),
                                compression=compression)
        return self._append_batch(data)

    def _append_batch(self, data: bytes) -> AppendedBatch:
        batch = RecordBatch(data, 0)
        seg = self._segment_for_append(len(data), batch.last_offset)
        if self.epochs.assign(batch.partition_leader_epoch, batch.base_offset):
            self.epochs.save()  # before the data: recovery checks batches against it
            self._note_epoch(batch.partition_leader_epoch)
        seg.append(data, [batch])
        committed = self.config.durability is Durability.BATCH
        if committed:
            seg.flush()
            self.committed_offset = batch.next_offset
        return AppendedBatch(batch.base_offset, batch.last_offset, batch.partition_leader_epoch, committed)

    def _finish_append(self, out: list[AppendedBatch]) -> list[AppendedBatch]:
        if out and self.config.durability is Durability.APPEND:
            self.flush()
            out = [AppendedBatch(b.base_offset, b.last_offset, b.epoch, True) for b in out]
        return out

    def _note_epoch(self, epoch: int) -> None:
        """Keep quorum-state's leader epoch up with the log (this process acts as the epoch's leader)."""
        state = self.quorum_state()
        if state is not None and state.get("leaderEpoch", -1) >= epoch:
            return
        node = self.meta_properties().get("node.id")
        version = state.get("data_version", 1) if state else 1
        files.atomic_write(self.directory / files.QUORUM_STATE,
                           files.quorum_state_json(leader_id=int(node) if node else -1, leader_epoch=epoch,
                                                   data_version=version))

    def _segment_for_append(self, size: int, last_offset: int) -> LogSegment:
        active = self.segments[-1]
        too_big = active.size > 0 and active.size + size > self.config.segment_bytes
        if too_big or last_offset - active.base_offset > 0x7FFFFFFF:
            active.flush()
            active.seal()
            seg = LogSegment(self.directory, self.log_end_offset, writable=True,
                             index_interval_bytes=self.config.index_interval_bytes)
            seg.next_offset = self.log_end_offset
            seg.write_indexes()
            files.fsync_dir(self.directory)  # the new file must survive a crash before its first batch does
            self.segments.append(seg)
            active = seg
        return active

    def flush(self) -> None:
        """fsync the active segment: everything appended so far is committed."""
        self._check_writable()
        self.segments[-1].flush()
        self.committed_offset = self.log_end_offset

    # ---- reading ---------------------------------------------------------------------------
    # Every read checks what it reads: frame and CRC-32C, that each batch follows the one before (offsets run on
    # within and across segments, epochs never decrease: metalog.log.chain), and the index entries it uses.
    def batches(self, start_offset: int | None = None, *, validate: bool = True) -> Iterator[RecordBatch]:
        """Batches from the one holding ``start_offset`` (default: the log start) to the end."""
        for seg, pos, chain in self._reads(start_offset):
            yield from seg.batches(pos, validate=validate, chain=chain)

    def scan(self, start_offset: int | None = None) -> Iterator[ScannedBatch]:
        """``(base offset, last offset, max timestamp, is control, record values)`` per batch, CRC-checked:
        the fast path for replay (see ``metalog.log.scan``). The first batch may start before ``start_offset``."""
        for seg, pos, chain in self._reads(start_offset):
            if seg.size > pos:
                with mapped(seg) as data:
                    yield from scan_values(data, pos, seg.size, seg.source, chain)

    def scan_into(self, first: int, last: int, sink: RecordSink,
                  batch_end: BatchEnd | None = None) -> Iterator[tuple[int, int | None]]:
        """``sink(value, offset)`` for every data record with an offset in [first, last], in log order,
        CRC-checked: replay's fused fast path, no object per batch (see ``metalog.log.scan``). With ``batch_end``,
        ``batch_end(base offset, last offset, max timestamp, is control, size in bytes)`` after each batch (data or
        control) ending at ``first`` or later, up to the one holding ``last``. Yields ``(records passed, max
        timestamp of the last data batch reached or None)`` about every MiB."""
        for seg, pos, chain in self._reads(first):
            if chain.next_offset > last:
                return
            if seg.size > pos:
                with mapped(seg) as data:
                    scan = Scan(data, seg.size, seg.source, chain, first, last, sink, batch_end)
                    released = pos - pos % mmap.PAGESIZE
                    while pos < seg.size:
                        pos, count, timestamp, done = scan_into(scan, pos)
                        released = release_read(data, released, pos)  # a chunk's pages resident, not the segment's
                        yield count, timestamp
                        if done:
                            return

    def _reads(self, start_offset: int | None) -> Iterator[tuple[LogSegment, int, BatchChain]]:
        """(segment, byte position to read from, the chain its batches must follow) for the batch holding
        ``start_offset`` and every later one; the reader moves the chain through each segment before the next."""
        start = self.log_start_offset if start_offset is None else start_offset
        if start < self.log_start_offset:
            raise LogError(f"offset {start} is before the log start offset {self.log_start_offset}",
                           file=self.directory)
        if start >= self.log_end_offset:
            return
        i = max(bisect.bisect_right([s.base_offset for s in self.segments], start) - 1, 0)
        yield from self._reads_on(i, self.segments[i].locate(start))

    def _reads_on(self, i: int, located: Located) -> Iterator[tuple[LogSegment, int, BatchChain]]:
        """From ``located`` in segment ``i`` to the end of the log. The first batch may carry no older epoch
        than leader-epoch-checkpoint gives its offset; each later segment must start where the one before ends."""
        epoch = self.epochs.epoch_for(located.base_offset)
        chain = BatchChain(located.base_offset, -1 if epoch is None else epoch)
        yield self.segments[i], located.position, chain
        for seg in self.segments[i + 1:]:
            if chain.next_offset != seg.base_offset:
                raise boundary_error(seg.source, seg.base_offset, chain)
            yield seg, 0, chain

    def records(self, start_offset: int | None = None) -> Iterator[Record]:
        """Records from ``start_offset`` on (CRC checked batch by batch, decoded as they are reached)."""
        start = self.log_start_offset if start_offset is None else start_offset
        batches = self.batches(start)
        first = next(batches, None)
        if first is None:
            return iter(())
        head = [r for r in first.records() if r.offset >= start]
        # chain, not a generator: no Python frame per record
        return itertools.chain(head, itertools.chain.from_iterable(map(RecordBatch.records, batches)))

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """The first offset whose record timestamp is at or after ``timestamp`` (time index lookup)."""
        for batch in self.batches_from_timestamp(timestamp):
            for rec in batch.records():
                if rec.timestamp >= timestamp:
                    return rec.offset
        return None

    def batches_from_timestamp(self, timestamp: int) -> Iterator[RecordBatch]:
        for i, seg in enumerate(self.segments):
            if seg.max_timestamp < timestamp and i < len(self.segments) - 1:
                continue
            located = seg.locate_timestamp(timestamp)
            if located.position >= seg.size:
                continue
            for later, pos, chain in self._reads_on(i, located):
                yield from later.batches(pos, chain=chain)
            return

    # ---- truncation and retention ----------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Remove every batch that holds ``offset`` or later; returns the new log end offset."""
        self._check_writable()
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        seg = self.segments[-1]
        located = seg.locate(offset)
        if located.position < seg.size:
            seg.truncate_to(located.position, located.base_offset)
            seg.flush()
        if self.epochs.truncate_from_end(self.log_end_offset):
            self.epochs.save()
        self.committed_offset = min(self.committed_offset, self.log_end_offset)
        return self.log_end_offset

    def delete_segments_before(self, offset: int) -> list[Path]:
        """Delete segments wholly below ``offset`` (never the active one); the log start moves up."""
        self._check_writable()
        deleted = []
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            seg = self.segments.pop(0)
            deleted.append(seg.path)
            seg.delete()
        new_start = max(self.log_start_offset, min(offset, self.log_end_offset))
        if new_start != self.log_start_offset:
            self.log_start_offset = new_start
            self._write_log_start()
            if self.epochs.truncate_from_start(new_start):
                self.epochs.save()
        return deleted

    def retain(self) -> list[Path]:
        """Delete the segments wholly covered by the latest snapshot (Kafka's deleteBeforeSnapshot)."""
        latest = self.latest_snapshot_id()
        return [] if latest is None else self.delete_segments_before(min(latest.end_offset, self.log_end_offset))

    def _write_log_start(self) -> None:
        path = self.root / files.LOG_START_OFFSET_CHECKPOINT
        entries = files.read_offset_checkpoint(path) if path.exists() else {}
        entries[(files.METADATA_TOPIC, 0)] = self.log_start_offset
        files.write_offset_checkpoint(path, entries)

    # ---- snapshots -------------------------------------------------------------------------
    def snapshot_ids(self) -> list[SnapshotId]:
        if self._single_snapshot is not None:
            return [self._single_snapshot]
        return list_snapshots(self.directory)

    def latest_snapshot_id(self) -> SnapshotId | None:
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    # ---- closing ---------------------------------------------------------------------------
    def close(self) -> None:
        try:
            if self.writable and self.segments:
                self.segments[-1].flush()
                self.committed_offset = self.log_end_offset
            for seg in self.segments:
                seg.close()
            self.segments = []
        finally:
            self._release()

    def _release(self) -> None:
        for seg in self.segments:
            with contextlib.suppress(OSError):
                seg.close(final_time_entry=False)
        self.segments = []
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_writable(self) -> None:
        if not self.writable or self._lock_fd is None:
            raise LogError("the log is open read-only", file=self.directory)


@contextmanager
def mapped(seg: LogSegment) -> Iterator[mmap.mmap]:
    """The segment's bytes, mapped read-only for one read. An error raised while reading may keep a view of the map
    alive in its traceback; then the map is closed when that view goes, and the error, not a BufferError, is what
    the caller sees."""
    data = mmap.mmap(seg.fd, seg.size, access=mmap.ACCESS_READ)
    try:
        yield data
    finally:
        with contextlib.suppress(BufferError):  # a view still held: the map closes when the view goes
            data.close()


def _root_of(path: Path) -> Path:
    return path.parent if path.name == files.METADATA_PARTITION_DIR else path


def _now(timestamp: int | None) -> int:
    return int(time.time() * 1000) if timestamp is None else timestamp
