"""Following a log that a controller (or ``metalog log append``) is writing: each new whole batch, as it lands.

``LogFollower`` reads the segment files read-only, never takes the directory's lock and writes nothing. It polls:
whatever whole batches lie past its position are read (checked as every read checks them: frame, CRC-32C, and
that each follows the one before: ``metalog.log.chain``) and yielded; a partial batch at the end is a write in
progress, read when it is whole. When the segment it reads stops at a batch end and the segment named by the
next offset exists, the log has rolled and it goes on there; a segment deleted under it (retention) is read to
its end through the descriptor it holds. What it cannot follow is an error: a gap (the segments it needed were
deleted before it read them, or the next segment does not start where this one ends), damage that stays, or the
log going away (its directory deleted or emptied).
When the log gets shorter than what it read (Kafka truncates batches a new leader did not commit), it says so
through ``on_notice`` and goes on from the new end.

A file on disk does not say which batches Kafka's quorum has committed (the high watermark is not written
there): a batch is reported once it is whole on disk; the notice above is how one that was not committed and
went away shows.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from metalog.errors import CorruptBatchError, LogError, TruncatedBatchError
from metalog.log import files
from metalog.log.batch import RecordBatch
from metalog.log.chain import BatchChain
from metalog.log.metadata_log import MetadataLog
from metalog.log.reader import BatchWalk, read_batches
from metalog.log.segment import LOG_SUFFIX, segment_name

END = "end"
POLL_SECONDS = 0.2
DAMAGE_GRACE_SECONDS = 5.0  # a bad batch that is still bad after this is damage, not a write in progress


class LogFollower:
    """The batches of a live log from ``start`` (an offset; ``END``: the next one written) on, as they come."""

    def __init__(self, path: str | os.PathLike[str], start: int | str = END, *, poll_seconds: float = POLL_SECONDS,
                 on_notice: Callable[[str], object] | None = None) -> None:
        root = Path(path)
        self.root = root.parent if root.name == files.METADATA_PARTITION_DIR else root
        self.directory = self.root / files.METADATA_PARTITION_DIR
        self.poll_seconds = poll_seconds
        self.on_notice = on_notice or (lambda text: None)
        self._fd: int | None = None
        self._segment: Path | None = None
        self.position = 0
        self._reread_at = -1  # the position read once more because the log had rolled past a partial batch
        self.chain = BatchChain(0)
        self._locate(start)

    # ---- where to read -------------------------------------------------------------------------------------------
    def _locate(self, start: int | str) -> None:
        """The segment, byte position and chain of the batch holding ``start`` (or of the log's end)."""
        with MetadataLog.open(self.root) as log:
            self._locate_in(log, start)

    def _locate_in(self, log: MetadataLog, start: int | str) -> None:
        end = log.log_end_offset
        offset = end if start == END else int(start)
        if offset > end:
            raise LogError(f"offset {offset} is past the end of the log (the next offset is {end})",
                           file=self.directory)
        if offset < end:
            first = next(log.batches(offset, validate=False))
            self._open(Path(first.source or ""), first.position)
            epoch = log.epochs.epoch_for(first.base_offset)
            self.chain = BatchChain(first.base_offset, -1 if epoch is None else epoch)
            return
        if not log.segments:
            raise LogError("the log has no segment to follow yet", file=self.directory)
        last = log.segments[-1]
        self._open(last.path, last.size)
        self.chain = BatchChain(end, -1 if log.latest_epoch is None else log.latest_epoch)

    def _open(self, segment: Path, position: int) -> None:
        self._close()
        self._fd = os.open(segment, os.O_RDONLY)
        self._segment, self.position = segment, position
        self._reread_at = -1

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        self._close()

    def __enter__(self) -> LogFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def next_offset(self) -> int:
        return self.chain.next_offset

    # ---- reading -------------------------------------------------------------------------------------------------
    def batches(self, stop: Callable[[], bool] | None = None) -> Iterator[RecordBatch]:
        """Every whole batch from the start on, waiting for more until ``stop()`` says to stop (never, without
        it: until the caller stops iterating)."""
        bad_since: float | None = None
        while stop is None or not stop():
            progressed = False
            try:
                for batch in self._read_available():
                    progressed = True
                    bad_since = None
                    yield batch
            except TruncatedBatchError:
                pass  # a batch being written: read it when it is whole
            except CorruptBatchError:
                if bad_since is None:
                    bad_since = time.monotonic()
                elif time.monotonic() - bad_since > DAMAGE_GRACE_SECONDS:
                    raise
            if not progressed and not self._moved_on():
                time.sleep(self.poll_seconds)

    def _read_available(self) -> Iterator[RecordBatch]:
        assert self._fd is not None and self._segment is not None
        size = os.fstat(self._fd).st_size
        if size < self.position:
            self._truncated(size)
            return
        chain = BatchChain(self.chain.next_offset, self.chain.epoch)
        for batch in read_batches(self._fd, self.position, size, BatchWalk(str(self._segment), chain=chain)):
            self.position = batch.position + batch.size_in_bytes
            self.chain = BatchChain(chain.next_offset, chain.epoch)
            yield batch

    def _moved_on(self) -> bool:
        """Nothing new in this segment: go on to the next one if the log rolled (True), else wait (False)."""
        assert self._fd is not None and self._segment is not None
        bases = _segment_bases(self.directory)
        if not bases:  # the descriptor still reads a deleted file: only the directory says the log went away
            gone = "no longer exists" if not self.directory.is_dir() else "holds no segment any more"
            raise LogError(f"the log is gone: the directory {gone} (deleted or moved while it was followed); the "
                           f"last offset read is {self.chain.next_offset - 1}", file=self.directory)
        current = int(self._segment.stem)
        later = bases[bisect.bisect_right(bases, current):]
        size = os.fstat(self._fd).st_size
        if size > self.position:  # a batch being written, unless the log went on in a later segment
            if not later:
                return False
            # a writer finishes a batch before it rolls: read again what the size says now (the batch may have
            # been finished, and the log rolled, since it was read); still not whole there, it never will be
            if self._reread_at != self.position:
                self._reread_at = self.position
                return True
            raise CorruptBatchError(f"batch: {size - self.position} bytes that are not a whole batch end "
                                    f"the segment, and the log goes on in {segment_name(later[0])}"
                                    f"{LOG_SUFFIX}", file=self._segment, position=self.position)
        if not later:
            if not self._segment.exists() and bases and bases[-1] < current:
                self._relocate("the segment it was reading is gone")
                return True
            return False
        nxt = later[0]
        if nxt != self.chain.next_offset:
            if bases and self.chain.next_offset > self._log_end():
                self._relocate("the log is shorter than what was read")
                return True
            raise LogError(f"the next segment starts at offset {nxt}, but the batches read end at offset "
                           f"{self.chain.next_offset - 1}: offsets {self.chain.next_offset}..{nxt - 1} are "
                           f"missing (deleted before they were read, or the log is damaged)", file=self.directory)
        self._open(self.directory / (segment_name(nxt) + LOG_SUFFIX), 0)
        return True

    def _log_end(self) -> int:
        with MetadataLog.open(self.root) as log:
            return log.log_end_offset

    def _truncated(self, size: int) -> None:
        self._relocate(f"{self._segment} is now {size} bytes, shorter than the {self.position} read")

    def _relocate(self, why: str) -> None:
        """The log got shorter than what was read: go on from its new end, then say from which offset on. The end
        is the one this open saw, read once: a batch a writer appends after the truncation (a new leader's) is
        shown, however soon it comes (it once went unseen when it came between a second open and this one)."""
        read_to = self.chain.next_offset
        with MetadataLog.open(self.root) as log:
            end = log.log_end_offset
            if end >= read_to:
                raise LogError(f"{why}, yet the log still ends at offset {end - 1}: cannot follow it",
                               file=self.directory)
            self._locate_in(log, end)
        self.on_notice(f"the log was truncated: offsets {end} to {read_to - 1}, shown above, are gone from it (a "
                       f"batch is shown when it is whole on disk; these were not committed) ({why})")


def _segment_bases(directory: Path) -> list[int]:
    return sorted(int(p.name[:-len(LOG_SUFFIX)]) for p in directory.glob(f"*{LOG_SUFFIX}")
                  if p.name[:-len(LOG_SUFFIX)].isdigit())


def offset_at_or_after(path: str | os.PathLike[str], timestamp: int) -> int:
    """The first offset of the first batch whose timestamp is at or after ``timestamp`` (the log's end offset when
    there is none yet): where following from a time starts."""
    with MetadataLog.open(path) as log:
        batch = next(log.batches_from_timestamp(timestamp), None)
        return log.log_end_offset if batch is None else batch.base_offset
