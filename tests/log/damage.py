"""A small generated log with its indexes, several segments and several leader epochs, and ways to damage it.

Used by the damage tests: every batch's position is known, so each header field outside the CRC
(baseOffset, batchLength, partitionLeaderEpoch, magic) and a byte inside it can be damaged in turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metalog.codec import message_class
from metalog.generate.generator import HistoryGenerator, HistorySettings
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.header import CRC_OFFSET, HEADER_SIZE

PARTITION_DIR = "__cluster_metadata-0"
LEADER = 3000

# field -> the byte of a batch to damage: the high byte of each field outside the CRC, and one byte inside it
DAMAGES = {
    "baseOffset": 0,  # int64 at 0
    "batchLength": 8,  # int32 at 8
    "partitionLeaderEpoch": 12,  # int32 at 12
    "magic": 16,
    "crc-covered": HEADER_SIZE - 4,  # recordsCount's high byte; the CRC covers everything after itself
}
assert DAMAGES["crc-covered"] >= CRC_OFFSET + 4


@dataclass(frozen=True)
class BatchAt:
    """Where a batch of the built log lies."""

    segment: Path
    position: int
    base_offset: int
    last_offset: int
    is_control: bool


def leader_change(epoch: int) -> tuple[object, int]:
    cls = message_class("LeaderChangeMessage")
    voter = __import__(cls.__module__, fromlist=["Voter"]).Voter
    return cls(version=0, leader_id=LEADER, voters=[voter(voter_id=LEADER)],
               granting_voters=[voter(voter_id=LEADER)]), 0


def build_log(path: Path, *, records: int = 700, seed: int = 7, segment_bytes: int = 16_000,
              index_interval_bytes: int = 1024, batches_per_epoch: int = 90) -> list[BatchAt]:
    """A generated history written as KRaft would: one batch per controller write, a LeaderChangeMessage
    opening each leader epoch; segments of ``segment_bytes``, an index entry every ``index_interval_bytes``."""
    generator = HistoryGenerator(seed, HistorySettings(records=records, brokers=4, topics=6, partitions=3,
                                                       transactions=True))
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes,
                       durability=Durability.NONE, node_id=LEADER)
    with MetadataLog.open(path, Mode.CREATE, config=config) as log:
        epoch, written, pending, stamp = 1, 0, [], None
        log.append_control([leader_change(epoch)], epoch=epoch, timestamp=1_700_000_000_000)
        for ts, record, version in generator.records():
            if pending and ts != stamp:
                log.append(pending, epoch=epoch, timestamp=stamp)
                pending, written = [], written + 1
                if written % batches_per_epoch == 0:
                    epoch += 1
                    log.append_control([leader_change(epoch)], epoch=epoch, timestamp=stamp)
            stamp = ts
            pending.append((record, version))
        if pending:
            log.append(pending, epoch=epoch, timestamp=stamp)
    return batches_of(path)


def batches_of(path: Path) -> list[BatchAt]:
    with MetadataLog.open(path) as log:
        return [BatchAt(Path(b.source), b.position, b.base_offset, b.last_offset, b.is_control)
                for b in log.batches()]


def damage(at: BatchAt, byte: int) -> None:
    """Flip every bit of one byte of the batch."""
    with open(at.segment, "r+b") as f:
        f.seek(at.position + byte)
        old = f.read(1)[0]
        f.seek(at.position + byte)
        f.write(bytes([old ^ 0xFF]))
