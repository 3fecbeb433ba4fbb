"""Recovery on open: check the tail of the last segment, cut a torn batch, rebuild indexes.

A batch is accepted when its frame and CRC-32C are valid, its base offset follows the previous
batch (the fields outside the CRC: baseOffset and batchLength), and its partitionLeaderEpoch is not
lower than the previous batch's, and it agrees with leader-epoch-checkpoint (the other field outside
the CRC). One disagreement is no damage: a checkpoint that lags the log (Kafka writes it without
waiting), seen as a batch with a newer epoch than the checkpoint's latest, no newer than the
leader epoch quorum-state holds (written durably before any batch of an epoch): there the batches
win and the checkpoint is rebuilt from them, as Kafka's recovery does. At the first
batch that fails: if no valid batch follows anywhere in the file, it is a torn write and the
file is cut there; otherwise the log is damaged in the middle, which is an error naming the
file and byte position (``repair`` cuts there instead and reports what is lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from metalog.errors import CorruptBatchError
from metalog.log.batch import RecordBatch
from metalog.log.epoch import LeaderEpochCache
from metalog.log.reader import find_valid_batch
from metalog.log.segment import LogSegment


@dataclass
class RecoveryReport:
    """What opening a log changed or found."""

    truncated: list[str] = field(default_factory=list)  # cut torn tails: file, position, bytes, why
    lost: list[str] = field(default_factory=list)  # what repair mode removed
    rebuilt: list[str] = field(default_factory=list)  # indexes and checkpoints rebuilt, and why
    cleaned: list[str] = field(default_factory=list)  # leftover files removed

    def __bool__(self) -> bool:
        return bool(self.truncated or self.lost or self.rebuilt or self.cleaned)

    def lines(self) -> list[str]:
        return ([f"truncated {t}" for t in self.truncated] + [f"lost {t}" for t in self.lost]
                + [f"rebuilt {t}" for t in self.rebuilt] + [f"removed {t}" for t in self.cleaned])


@dataclass
class ScanState:
    """What must hold for the next batch: its base offset and the lowest epoch it may carry."""

    next_offset: int | None
    epoch: int = -1
    cache: LeaderEpochCache | None = None  # compared with the batches when it came from the file
    checked_cache: bool = False
    disagreement: str | None = None  # where a lagging checkpoint first fell behind the batches
    max_epoch: int | None = None  # quorum-state's leader epoch: no batch can be newer


def problem_with(batch: RecordBatch, state: ScanState, first_last_offset: int | None = None) -> str | None:
    """Why ``batch`` cannot follow what was scanned so far, or None."""
    try:
        batch.ensure_valid()
    except CorruptBatchError as e:
        return e.reason
    if first_last_offset is not None:
        if batch.last_offset != first_last_offset:
            return f"batch ends at offset {batch.last_offset}, the offset index says {first_last_offset}"
    elif state.next_offset is not None and batch.base_offset != state.next_offset:
        return f"baseOffset {batch.base_offset} does not follow the previous batch (expected {state.next_offset})"
    if batch.records_count != batch.last_offset_delta + 1:
        return f"recordsCount {batch.records_count} does not match lastOffsetDelta {batch.last_offset_delta}"
    epoch = batch.partition_leader_epoch
    if epoch < state.epoch:
        return f"partitionLeaderEpoch {epoch} is lower than the previous batch's {state.epoch}"
    return None


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


def scan_segment(seg: LogSegment, start: int, state: ScanState, *, write_index: bool,
                 first_last_offset: int | None = None) -> tuple[int, str | None]:
    """Validate batches from ``start``; index them. Returns (end of the valid data, problem or None)."""
    pos = start
    batches = seg.batches(start, validate=False)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return pos, None
        except CorruptBatchError as e:
            return pos, e.reason
        problem = problem_with(batch, state, first_last_offset if pos == start else None)
        if not problem and state.checked_cache and state.disagreement is None:
            problem = _epoch_disagreement(batch, state)
        if problem:
            return pos, problem
        seg.observe(batch, pos, write=write_index)
        if state.cache is not None and not state.checked_cache:
            state.cache.assign(batch.partition_leader_epoch, batch.base_offset)
        state.next_offset, state.epoch = batch.next_offset, batch.partition_leader_epoch
        pos += batch.size_in_bytes


def is_torn_tail(seg: LogSegment, position: int) -> bool:
    """True when nothing valid follows ``position``: the damage is what an interrupted write leaves."""
    return find_valid_batch(seg.fd, position, seg.size) is None


def damage_error(seg: LogSegment, position: int, problem: str) -> CorruptBatchError:
    return CorruptBatchError(f"{problem}; valid batches follow, so this is damage in the middle of the log "
                             "(never skipped; 'metalog log recover --repair' truncates here, losing the rest)",
                             file=seg.path, position=position)
