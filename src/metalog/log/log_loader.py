"""Opening a log's segments (Kafka's LogLoader): which bytes are checked on open, and what becomes of damage.

Two depths of checking:

- **the tail** (every open): the active segment from its last offset-index entry on. The batch at the
  entry must end at the entry's offset; when it does not, or an index is missing or fails its sanity
  check, the whole segment is scanned from its first byte and its indexes rebuilt (an index is never
  trusted over the bytes). Sealed segments are taken as their names and indexes say, so that opening a
  big log stays quick: every read checks what it reads (``metalog.log.chain``), and damage there is
  found the moment a read reaches it. When the active segment is empty, the tail of the one before is
  checked instead (it holds the log's last batch).
- **everything** (``Check.ALL``: ``metalog log recover`` and ``log append``): every segment from its
  first byte, as Kafka's recovery does past its recovery point (metalog keeps no recovery point, so that
  is all of them). Offsets run on within and across segments, epochs never decrease and agree with
  leader-epoch-checkpoint, and every index entry names the batch at its position; indexes and a
  checkpoint that disagree with the batches are rebuilt from them.

Damage found on open: when nothing valid follows it in the last segment, it is what an interrupted
write leaves, a torn tail, and it is cut (read-only: left out of reads, the file unchanged) and reported
in ``recovery.truncated``. Anywhere else it is an error naming file, byte and what is wrong, unless
``Check.REPAIR``: then the log is cut there, the segments after are deleted, and ``recovery.lost`` says what
went. Nothing is written before the check has passed (or repair was asked for).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from metalog.errors import CorruptBatchError, LogError
from metalog.log.chain import BatchChain
from metalog.log.config import Check
from metalog.log.epoch import LeaderEpochCache
from metalog.log.lost import lost_offsets, torn_batch_end
from metalog.log.recovery import (
    WHOLE,
    IndexCheck,
    ScanEnd,
    ScanState,
    damage_error,
    is_torn_tail,
    scan_segment,
    whole_batches_after,
)
from metalog.log.segment import LogSegment

if TYPE_CHECKING:
    from metalog.log.metadata_log import MetadataLog


@dataclass
class Damage:
    """The first bytes of a segment that cannot be read on: from ``position`` on, because of ``reason``."""

    segment: LogSegment
    position: int
    reason: str
    next_offset: int  # the offset the first lost batch should have had
    boundary: bool = False  # a segment whose name does not continue the batches before it
    whole: bool = False  # a whole batch, its CRC valid, whose records KRaft cannot read: never a torn write


@dataclass
class LoadPlan:
    """What a check found, applied only once it is known that the open goes ahead."""

    rebuild: list[tuple[LogSegment, str]] = field(default_factory=list)  # (segment, why its indexes are rebuilt)
    grown: list[LogSegment] = field(default_factory=list)  # index entries were missing after the last one
    damage: Damage | None = None
    seen_epochs: LeaderEpochCache | None = None  # check_all: the epochs the batches carry


class LogLoader:
    """Loads ``log.segments`` (already opened, in order) and recovers them."""

    def __init__(self, log: MetadataLog, check: Check) -> None:
        self.log = log
        self.check_all = check.every_segment
        self.repair = check is Check.REPAIR
        self.planned = self.repair and not log.writable  # read-only: what a repair would do, nothing done
        log.recovery.planned = self.planned
        self.memory = "" if log.writable or self.planned else ", in memory only: read-only"

    def load(self, epochs_from_file: bool) -> None:
        log = self.log
        stored_epochs = LeaderEpochCache(log.epochs.path, log.epochs.entries) if epochs_from_file else None
        if not epochs_from_file and not self.check_all:
            self._rebuild_epochs()
        quorum = log.quorum_state()
        state = ScanState(cache=log.epochs, checked_cache=epochs_from_file,
                          max_epoch=quorum.get("leaderEpoch") if quorum else None)
        plan = self._check_all(state) if self.check_all else self._check_tail(state)
        damage = plan.damage
        torn = False
        if damage is not None:
            why_not_torn = "it is not in the last segment" if damage.segment is not log.segments[-1] else \
                "it is a gap between segments" if damage.boundary else WHOLE if damage.whole else \
                None if is_torn_tail(damage.segment, damage.position) else "valid batches follow"
            if why_not_torn is not None and not self.repair:
                raise damage_error(damage.segment, damage.position, damage.reason, why_not_torn)
            torn = why_not_torn is None
        if damage is None or torn:  # a cut at damage says itself what it removes
            self._name_lost(damage, stored_epochs)
        for seg, why in plan.rebuild:  # only now, when the open goes ahead, is anything written
            log.recovery.rebuilt.append(f"indexes of {seg.path.name} ({why}{self.memory})")
            seg.finish_rebuild()
        for seg in plan.grown:
            seg.write_indexes()
        if damage is not None:
            self._cut(damage, torn=torn)
        self._settle_epochs(state, plan, epochs_from_file)
        if log.writable:
            log.segments[-1].open_index_files()

    def _name_lost(self, damage: Damage | None, stored_epochs: LeaderEpochCache | None) -> None:
        """Offsets past the end the log will have that its own files name (``metalog.log.lost``), found before
        anything is rebuilt: with ``Check.ALL`` (before an append) an error, else reported."""
        log = self.log
        end = log.log_end_offset if damage is None else torn_batch_end(damage.segment, damage.position,
                                                                      damage.next_offset)
        last = log.segments[-1] if log.segments else None
        lost = lost_offsets(end, last, stored_epochs, log.snapshot_ids(), log.stored_log_start)
        if lost is None:
            return
        if self.check_all and not self.repair:
            raise LogError(f"{lost}; nothing is appended after lost offsets (their offsets would go to other "
                           "records): 'metalog log recover --repair' rebuilds the indexes and checkpoints from the "
                           "batches that are left, accepting the loss", file=log.directory)
        log.recovery.missing.append(str(lost))

    # ---- the two depths ----------------------------------------------------------------------------------
    def _check_tail(self, state: ScanState) -> LoadPlan:
        segments, plan = self.log.segments, LoadPlan()
        for i, seg in enumerate(segments[:-1]):
            seg.next_offset = segments[i + 1].base_offset
            problem = seg.load_indexes()
            if problem is not None:  # a sealed segment whose indexes cannot be used: scan it whole, rebuild them
                state.expect(seg.base_offset, -1)
                if self._scan_whole(seg, state, plan, problem):
                    return plan
        active = segments[-1]
        problem = active.load_indexes()
        if active.size == 0 and len(segments) > 1:  # the log's last batch is in the segment before
            before = segments[-2]
            if not any(seg is before for seg, _ in plan.rebuild) and self._scan_from_last_entry(before, state, plan):
                return plan
            if state.next_offset(-1) != active.base_offset:
                plan.damage = Damage(active, 0, _boundary(active, state), _next(state, active), boundary=True)
                return plan
        if problem is not None:
            state.expect(active.base_offset, -1)
            self._scan_whole(active, state, plan, problem)
        else:
            self._scan_from_last_entry(active, state, plan)
        return plan

    def _scan_from_last_entry(self, seg: LogSegment, state: ScanState, plan: LoadPlan) -> bool:
        """Scan ``seg`` (its indexes loaded and sane) from its last offset-index entry, whose batch must end at
        the entry's offset; from its start, rebuilding the indexes, when that batch is not the one the entry
        names. Entries missing after the last one are added. True when damage was found (in ``plan``)."""
        entries = len(seg.offset_index), len(seg.time_index)
        if entries[0]:
            named, start = seg.offset_index.entry(entries[0] - 1)
            state.any_base = True  # the entry vouches for the first batch's offsets
        else:
            named, start = None, 0
            state.expect(seg.base_offset)
        end = scan_segment(seg, start, state, write_index=False, first_last_offset=named)
        if end.problem is not None and end.position == start and start > 0 and not end.whole:
            # the index, or the batch it names, is wrong
            state.expect(seg.base_offset, -1)
            return self._scan_whole(seg, state, plan, f"its last entry ({named}, {start}) does not name a "
                                                      f"sound batch there: {end.problem}")
        seg.next_offset = _next(state, seg)
        if (len(seg.offset_index), len(seg.time_index)) != entries:
            plan.grown.append(seg)
        return self._damaged(seg, end, plan)

    def _scan_whole(self, seg: LogSegment, state: ScanState, plan: LoadPlan, problem: str) -> bool:
        """Scan ``seg`` from its first byte, its indexes rebuilt from the batches. True when damage was found."""
        seg.reset_indexes()
        plan.rebuild.append((seg, problem))
        end = scan_segment(seg, 0, state, write_index=False)
        seg.next_offset = _next(state, seg)
        return self._damaged(seg, end, plan)

    @staticmethod
    def _damaged(seg: LogSegment, end: ScanEnd, plan: LoadPlan) -> bool:
        """Whether the scan of ``seg`` stopped at damage (which ``plan`` then holds)."""
        if end.problem is not None:
            plan.damage = Damage(seg, end.position, end.problem, seg.next_offset, whole=end.whole)
        return end.problem is not None

    def _check_all(self, state: ScanState) -> LoadPlan:
        plan = LoadPlan(seen_epochs=LeaderEpochCache(None))
        state.seen = plan.seen_epochs
        for seg in self.log.segments:
            if state.next_offset(seg.base_offset) != seg.base_offset:
                plan.damage = Damage(seg, 0, _boundary(seg, state), _next(state, seg), boundary=True)
                return plan
            state.expect(seg.base_offset)
            problem = seg.load_indexes()
            loaded = (seg.offset_index, seg.time_index)
            check = IndexCheck(*loaded) if problem is None else None
            seg.reset_indexes()
            end = scan_segment(seg, 0, state, write_index=False, check=check)
            seg.next_offset = _next(state, seg)
            if check is not None:
                problem = check.finish() if end.problem is None else check.problem
            if problem is None:  # the indexes on disk agree with every batch read: they stay (a cut trims them)
                seg.offset_index, seg.time_index = loaded
            else:
                plan.rebuild.append((seg, problem))
            if self._damaged(seg, end, plan):
                return plan
        return plan

    # ---- damage and epochs --------------------------------------------------------------------------------
    def _cut(self, damage: Damage, *, torn: bool) -> None:
        log, seg, position = self.log, damage.segment, damage.position
        idx = log.segments.index(seg)
        cut = self._offsets_cut(damage, torn)
        span = f"offsets from {damage.next_offset} on" if cut is None else \
            f"offsets {cut[0]}..{cut[1]}: {cut[1] - cut[0] + 1} offsets"
        where = f"{seg.path} at byte {position}, {seg.size - position} bytes ({span}): {damage.reason}"
        if not log.writable and not self.planned:  # reads stop before the damage; the file is unchanged
            self._cut_in_memory(seg, position, damage.next_offset)
            log.recovery.truncated.append(f"(read-only, the file is unchanged) {where}")
            return
        log.recovery.cut = cut
        if position == 0 and idx > 0 and seg.base_offset != damage.next_offset:
            # the segment's very name is wrong where the log stands: it goes whole, the one before is active again
            log.recovery.lost.append(f"{seg.path} (whole segment, {seg.size} bytes, its name says offset "
                                     f"{seg.base_offset}; {span}): {damage.reason}")
            idx -= 1
            log.segments[idx].next_offset = damage.next_offset
        else:
            if log.writable:
                seg.truncate_to(position, damage.next_offset)
            else:
                self._cut_in_memory(seg, position, damage.next_offset)
            (log.recovery.truncated if torn else log.recovery.lost).append(where)
        for later in log.segments[idx + 1:]:
            if later is not seg:
                log.recovery.lost.append(f"{later.path} (whole segment, {later.size} bytes)")
            if log.writable:
                later.delete()
            else:
                later.close(final_time_entry=False)
        del log.segments[idx + 1:]

    def _offsets_cut(self, damage: Damage, torn: bool) -> tuple[int, int] | None:
        """The first and last offset a cut at ``damage`` removes, as the whole batches there say: from the offset the
        damaged batch should have had (at a gap between segments, the first whole batch's), to the last whole
        batch's last offset. None for a torn write (no whole batch follows) or where no whole batch is cut."""
        if torn:
            return None
        segments = self.log.segments
        found = whole_batches_after(segments[segments.index(damage.segment):], damage.position)
        if found is None:
            return None
        first = found[0] if damage.boundary else damage.next_offset
        return (first, found[1]) if found[1] >= first else None

    @staticmethod
    def _cut_in_memory(seg: LogSegment, position: int, next_offset: int) -> None:
        """Reads stop at ``position``: the file is unchanged."""
        seg.size, seg.next_offset = position, next_offset
        seg.offset_index.truncate_to_position(position)
        seg.time_index.truncate_to_offset(next_offset)

    def _settle_epochs(self, state: ScanState, plan: LoadPlan, epochs_from_file: bool) -> None:
        log = self.log
        changed = False
        if plan.seen_epochs is not None:  # every batch was read: they are the truth
            seen = plan.seen_epochs
            seen.truncate_from_end(log.log_end_offset)
            seen.truncate_from_start(log.log_start_offset)  # retention moved the first epoch's start up
            if seen.entries != log.epochs.entries:
                why = f"it said {log.epochs.entries}, the batches say {seen.entries}" if epochs_from_file \
                    else "it was missing"
                log.recovery.rebuilt.append(f"{log.epochs.path} ({why}{self.memory})")
                log.epochs = LeaderEpochCache(log.epochs.path, seen.entries)
                changed = True
        elif state.disagreement is not None:  # a stale checkpoint: the batches are the truth
            log.epochs = LeaderEpochCache(log.epochs.path)
            self._rebuild_epochs(f"it disagreed with the log: {state.disagreement}")
            changed = True
        changed |= log.epochs.truncate_from_end(log.log_end_offset)
        if log.writable and (changed or not epochs_from_file):
            log.epochs.save()

    def _rebuild_epochs(self, why: str = "it was missing") -> None:
        """leader-epoch-checkpoint from the batch headers, as far as they follow one another (a torn tail is
        dropped later; damage is found by the reads that reach it)."""
        log = self.log
        chain = BatchChain(log.segments[0].base_offset)
        try:
            for seg in log.segments:
                if chain.next_offset != seg.base_offset:
                    break
                for batch in seg.batches(0, validate=False, chain=chain):
                    log.epochs.assign(batch.partition_leader_epoch, batch.base_offset)
        except CorruptBatchError:
            pass
        log.recovery.rebuilt.append(f"{log.epochs.path} ({why}{self.memory})")


def _next(state: ScanState, seg: LogSegment) -> int:
    return state.next_offset(seg.base_offset)


def _boundary(seg: LogSegment, state: ScanState) -> str:
    return (f"the segment's name says it starts at offset {seg.base_offset}, but the batches before it end at "
            f"offset {_next(state, seg) - 1}")
