"""How the batches of a log follow one another: the rules that catch damage the CRC cannot see.

A batch's CRC-32C covers attributes to the end; baseOffset, batchLength, partitionLeaderEpoch and
magic lie outside it. batchLength and magic are checked by the frame (``check_frame``); the other
two only by how a batch follows the one before it (Kafka's log layer: LogSegment.recover,
LogValidator on append, LeaderEpochFileCache):

- offsets run on without gap or overlap: a batch starts at the offset after the previous batch's
  last offset, and a segment's first batch at the segment's base offset (its file name);
- partitionLeaderEpoch never decreases (the epoch cache only ever assigns a newer epoch);
- recordsCount is lastOffsetDelta + 1: the metadata log is never compacted, so a batch holds every
  offset it spans.

Every reader carries a ``BatchChain`` and checks each batch against it. The read loops inline the
integer compares (``base != chain.next_offset or epoch != chain.epoch or count != delta + 1``) and
call ``follow`` with the batch's ``Link`` only when one differs; ``follow`` says what is wrong, or accepts a
newer epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from metalog.errors import CorruptBatchError

if TYPE_CHECKING:
    from metalog.log.batch import RecordBatch


@dataclass(slots=True)
class BatchChain:
    """What the next batch must be: it starts at ``next_offset`` and carries ``epoch`` or a newer one. The one type
    for it: every read loop carries one, and recovery's scan one inside its ``ScanState``."""

    next_offset: int
    epoch: int = -1


class Link(NamedTuple):
    """The fields of a batch's header that say how it follows the batch before: what the chain checks. Made only
    where a check is not inlined (a batch that differs from what the chain expects, the general path)."""

    base_offset: int
    last_offset_delta: int
    records_count: int
    partition_leader_epoch: int

    @classmethod
    def of(cls, batch: RecordBatch) -> Link:
        return cls(batch.base_offset, batch.last_offset_delta, batch.records_count, batch.partition_leader_epoch)


def follow_problem(link: Link, chain: BatchChain) -> str | None:
    """What is wrong when the batch of ``link`` cannot follow ``chain``, else None."""
    base_offset, last_offset_delta, records_count, epoch = link
    if base_offset != chain.next_offset:
        return f"baseOffset {base_offset} does not follow the previous batch (expected {chain.next_offset})"
    if records_count != last_offset_delta + 1:
        return (f"recordsCount {records_count} does not match lastOffsetDelta {last_offset_delta} (a batch holds "
                "every offset it spans)")
    if epoch < chain.epoch:
        return f"partitionLeaderEpoch {epoch} is lower than the previous batch's {chain.epoch}"
    return None


def follow(chain: BatchChain, link: Link, source: str | None, position: int) -> None:
    """Advance ``chain`` past the batch of ``link`` at byte ``position`` of ``source``, or raise CorruptBatchError
    naming the file and the batch's byte (``metalog.errors``: a batch's damage is named at its start)."""
    problem = follow_problem(link, chain)
    if problem is not None:
        raise CorruptBatchError(f"batch: {problem}", file=source, position=position)
    chain.next_offset = link.base_offset + link.last_offset_delta + 1
    chain.epoch = link.partition_leader_epoch


def boundary_error(source: str, base_offset: int, chain: BatchChain) -> CorruptBatchError:
    """A segment whose name does not continue the batches before it (a gap or an overlap between segments)."""
    return CorruptBatchError(f"the segment's name says it starts at offset {base_offset}, but the batches before it "
                             f"end at offset {chain.next_offset - 1}", file=source, position=0)
