"""The checks of recovery (see ``metalog.log.log_loader`` for when they run): each batch is sound and
follows the one before, the indexes agree with the batches, and whether damage is a torn tail.

A batch is accepted when its frame and CRC-32C are valid, it follows the previous batch
(``metalog.log.chain``: offsets run on, recordsCount spans them, epochs never decrease: baseOffset
and partitionLeaderEpoch lie outside the CRC), and it agrees with leader-epoch-checkpoint. One
disagreement is no damage: a checkpoint that lags the log (Kafka writes it without waiting), seen
as a batch with a newer epoch than the checkpoint's latest, no newer than the leader epoch
quorum-state holds (written durably before any batch of an epoch): there the batches win and the
checkpoint is rebuilt from them, as Kafka's recovery does. At the first batch that fails: if no
valid batch follows anywhere in the file, it is a torn write; otherwise the log is damaged in the
middle, an error naming the file and byte position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import NamedTuple

from metalog.errors import CorruptBatchError
from metalog.log.batch import RecordBatch
from metalog.log.chain import BatchChain, Link, follow_problem
from metalog.log.epoch import LeaderEpochCache
from metalog.log.index import OffsetIndex, TimeIndex
from metalog.log.reader import find_valid_batch, valid_batch_at
from metalog.log.segment import LogSegment


@dataclass
class RecoveryReport:
    """What opening a log changed or found."""

    truncated: list[str] = field(default_factory=list)  # cut torn tails: file, position, bytes, why
    lost: list[str] = field(default_factory=list)  # what repair mode removed
    missing: list[str] = field(default_factory=list)  # offsets the log's own files name past its end (log.lost)
    rebuilt: list[str] = field(default_factory=list)  # indexes and checkpoints rebuilt, and why
    cleaned: list[str] = field(default_factory=list)  # leftover files removed
    cut: tuple[int, int] | None = None  # the offsets a repair cut, as far as the whole batches it cut say
    planned: bool = False  # a repair of a log opened read-only: what it would do, nothing done

    def __bool__(self) -> bool:
        return bool(self.truncated or self.lost or self.missing or self.rebuilt or self.cleaned)

    def lines(self) -> list[str]:
        rebuilt = "would rebuild" if self.planned else "rebuilt"
        return self.damage_lines() + [f"{rebuilt} {t}" for t in self.rebuilt] + \
            [f"removed {t}" for t in self.cleaned]

    def damage_lines(self) -> list[str]:
        """What was found lost, what was cut (or, read-only, left out of reads) and what a repair lost: what every
        reader must hear."""
        truncated, lost = ("would cut", "would lose") if self.planned else ("truncated", "lost")
        return [f"lost {t}" for t in self.missing] + [f"{truncated} {t}" for t in self.truncated] + \
            [f"{lost} {t}" for t in self.lost]


_watchers: ContextVar[tuple[Callable[[RecoveryReport], object], ...]] = ContextVar("metalog_recovery_watchers",
                                                                                   default=())


@contextmanager
def watch_recovery(callback: Callable[[RecoveryReport], object]) -> Iterator[None]:
    """``callback(report)`` for every log opened in this context whose opening found something: the library
    never prints, and whoever shows a person its results (the CLI) hears of it here."""
    token = _watchers.set((*_watchers.get(), callback))
    try:
        yield
    finally:
        _watchers.reset(token)


@contextmanager
def unannounced() -> Iterator[None]:
    """Opens in this context tell no watcher: for a read-only open whose findings another open tells again."""
    token = _watchers.set(())
    try:
        yield
    finally:
        _watchers.reset(token)


def announce(report: RecoveryReport) -> None:
    if report:
        for callback in _watchers.get():
            callback(report)


@dataclass
class ScanState:
    """Recovery's scan: what the next batch must be (``chain``, the one type for it; ``any_base`` while its base
    offset is not known: the log's first batch, or the batch an offset-index entry vouches for), and what the scan
    compares the batches with."""

    chain: BatchChain = field(default_factory=lambda: BatchChain(-1))
    any_base: bool = True
    cache: LeaderEpochCache | None = None  # compared with the batches when it came from the file
    checked_cache: bool = False
    disagreement: str | None = None  # where a lagging checkpoint first fell behind the batches
    max_epoch: int | None = None  # quorum-state's leader epoch: no batch can be newer
    seen: LeaderEpochCache | None = None  # the epochs of the batches scanned, when every batch is

    def expect(self, offset: int, epoch: int | None = None) -> None:
        """The next batch starts at ``offset`` (and carries ``epoch`` or a newer one, where given)."""
        self.chain.next_offset, self.any_base = offset, False
        if epoch is not None:
            self.chain.epoch = epoch

    def next_offset(self, default: int) -> int:
        """Where the next batch starts: ``default`` while any base offset will do."""
        return default if self.any_base else self.chain.next_offset

    def passed(self, batch: RecordBatch) -> None:
        """``batch`` was accepted: the next one follows it."""
        self.expect(batch.next_offset, batch.partition_leader_epoch)


def problem_with(batch: RecordBatch, state: ScanState, first_last_offset: int | None = None) -> str | None:
    """Why ``batch`` cannot follow what was scanned so far, or None. With ``first_last_offset`` (an offset
    index entry's), the batch must end there, and its base offset is taken from it."""
    try:
        batch.ensure_valid()
    except CorruptBatchError as e:
        return e.reason
    next_offset = state.next_offset(batch.base_offset)
    if first_last_offset is not None:
        if batch.last_offset != first_last_offset:
            return f"batch ends at offset {batch.last_offset}, the offset index says {first_last_offset}"
        next_offset = batch.base_offset
    epoch = state.chain.epoch
    if batch.base_offset == next_offset and batch.records_count == batch.last_offset_delta + 1 and \
            batch.partition_leader_epoch >= epoch:  # it follows (the chain's checks, inlined as the read loops do)
        return None
    found = follow_problem(Link.of(batch), BatchChain(next_offset, epoch))
    return None if found is None else f"batch: {found}"


def _epoch_disagreement(batch: RecordBatch, state: ScanState) -> str | None:
    """Damage, or None; notes a lagging checkpoint in ``state.disagreement``."""
    if state.cache is None:
        return None
    epoch, offset = batch.partition_leader_epoch, batch.base_offset
    expected = state.cache.epoch_for(offset)
    if expected is None or expected == epoch:
        return None
    entries = state.cache.entries
    lagging = epoch > entries[-1][0] and offset >= entries[-1][1] and \
        (state.max_epoch is None or epoch <= state.max_epoch)
    if not lagging:
        return (f"partitionLeaderEpoch {epoch} disagrees with leader-epoch-checkpoint (epoch {expected} at offset "
                f"{offset})")
    state.disagreement = f"it ends at epoch {entries[-1][0]}, the batch at offset {offset} has epoch {epoch}"
    return None


def records_problem(batch: RecordBatch) -> str | None:
    """Why the records of a sound batch cannot be read as KRaft reads them (a codec, a payload that does not
    decompress or decode, records that break ``metalog.log.kraft_records``), or None: what every read of them
    finds, found by recovery too."""
    try:
        batch.records()
    except CorruptBatchError as e:
        return e.reason
    return None


class ScanEnd(NamedTuple):
    """Where a scan of a segment stopped: the end of its valid data, and why it stopped there (None: the end of the
    segment). ``whole``: the batch there is whole with a valid CRC-32C, its records are what is wrong: damage,
    never what an interrupted write leaves."""

    position: int
    problem: str | None = None
    whole: bool = False


def scan_segment(seg: LogSegment, start: int, state: ScanState, *, write_index: bool,
                 first_last_offset: int | None = None, check: IndexCheck | None = None) -> ScanEnd:
    """Validate batches from ``start`` (frame, CRC-32C, chain, and the records as every read decodes them); index
    them (``check``: compare the indexes loaded from disk as the scan goes)."""
    pos = start
    batches = seg.batches(start, validate=False)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return ScanEnd(pos)
        except CorruptBatchError as e:
            return ScanEnd(pos, e.reason)
        problem = problem_with(batch, state, first_last_offset if pos == start else None)
        if not problem and state.checked_cache and state.disagreement is None:
            problem = _epoch_disagreement(batch, state)
        if problem:
            return ScanEnd(pos, problem)
        problem = records_problem(batch)
        if problem:
            return ScanEnd(pos, problem, whole=True)
        if check is not None:
            check.batch(pos, batch.last_offset, batch.max_timestamp)
        seg.observe(batch, pos, write=write_index)
        if state.cache is not None and not state.checked_cache:
            state.cache.assign(batch.partition_leader_epoch, batch.base_offset)
        if state.seen is not None:
            state.seen.assign(batch.partition_leader_epoch, batch.base_offset)
        state.passed(batch)
        pos += batch.size_in_bytes


class IndexCheck:
    """Whether a segment's indexes, as loaded from disk, agree with its batches: every ``.index`` entry names
    the last offset of the batch at its position, every ``.timeindex`` entry the largest timestamp up to the
    last offset of a batch. Fed the batches in order (``batch``), so it holds no more than two cursors."""

    def __init__(self, offsets: OffsetIndex, times: TimeIndex) -> None:
        self.offsets, self.times = offsets, times
        self.i = self.k = 0
        self.max_timestamp = -1
        self.problem: str | None = None
        self._skip_below = (self._position(0), self._offset(0))  # (position, offset): no entry before both

    def _position(self, i: int) -> int:
        return self.offsets.positions[i] if i < len(self.offsets) else 1 << 62

    def _offset(self, k: int) -> int:
        return self.times.base_offset + self.times.offsets[k] if k < len(self.times) else 1 << 62

    def batch(self, position: int, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
        if position < self._skip_below[0] and last_offset < self._skip_below[1] or self.problem is not None:
            return  # most batches: no entry names them
        self._check(position, last_offset)
        self._skip_below = (self._position(self.i), self._offset(self.k))

    def _check(self, position: int, last_offset: int) -> None:
        index, i = self.offsets, self.i
        if i < len(index) and index.positions[i] <= position:
            named, at = index.entry(i)
            if at != position or named != last_offset:
                self.problem = _not_a_batch(index, i)
                return
            self.i = i + 1
        times, k = self.times, self.k
        base = times.base_offset
        while k < len(times) and base + times.offsets[k] <= last_offset:
            if base + times.offsets[k] != last_offset or times.timestamps[k] != self.max_timestamp:
                self.problem = _not_a_max(times, k)
                return
            k += 1
        self.k = k

    def finish(self) -> str | None:
        """After the segment's last batch: the problem, if any, including entries past its end."""
        if self.problem is None and self.i < len(self.offsets):
            self.problem = _not_a_batch(self.offsets, self.i)
        if self.problem is None and self.k < len(self.times):
            self.problem = _not_a_max(self.times, self.k)
        return self.problem


def _not_a_batch(index: OffsetIndex, i: int) -> str:
    named, at = index.entry(i)
    return f"{index.path}: entry {i} ({named}, {at}) does not name the last offset of a batch at that position"


def _not_a_max(times: TimeIndex, k: int) -> str:
    return (f"{times.path}: entry ({times.timestamps[k]}, {times.base_offset + times.offsets[k]}) is not the largest "
            "timestamp up to a batch's last offset")


def whole_batches_after(segments: list[LogSegment], position: int) -> tuple[int, int] | None:
    """(the base offset of the first, the last offset of the last) of the whole, CRC-valid batches from byte
    ``position`` of the first segment to the end of the last: how far the log went past damage a repair cuts (None
    when no such batch is left)."""
    first = last = None
    for i, seg in enumerate(segments):
        pos: int | None = position if i == 0 else 0
        while pos is not None and pos < seg.size:
            batch = valid_batch_at(seg.fd, pos, seg.size)
            if batch is None:
                pos = find_valid_batch(seg.fd, pos, seg.size)
                continue
            first = batch.base_offset if first is None else first
            last = batch.last_offset
            pos += batch.size_in_bytes
    return None if first is None or last is None else (first, last)


def is_torn_tail(seg: LogSegment, position: int) -> bool:
    """True when nothing valid follows ``position``: the damage is what an interrupted write leaves."""
    return find_valid_batch(seg.fd, position, seg.size) is None


WHOLE = "the batch is whole (its CRC-32C holds)"  # why damage to a batch's records is no torn write


def damage_error(seg: LogSegment, position: int, problem: str, why_not_torn: str = "valid batches follow") -> \
        CorruptBatchError:
    what = "damage, not a torn write" if why_not_torn == WHOLE else "damage in the middle of the log"
    return CorruptBatchError(f"{problem}; {why_not_torn}, so this is {what} (never skipped; 'metalog log recover "
                             "--repair' truncates here, losing the rest)", file=seg.path, position=position)
