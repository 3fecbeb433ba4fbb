"""Metadata-log benchmark pieces: a log of realistic record values, metalog's readers, peers' batch readers.

Every reader checks every batch's CRC and touches every record's value; they return (records, a checksum
of the value sizes) so that readers can be checked to agree before they are compared.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.log import Durability, LogConfig, MetadataLog, Mode, iter_batches

BATCH = 1000
TS = 1700000000000


def values_pool(n: int = 1000) -> list[bytes]:
    """Distinct, realistic metadata record values to cycle through."""
    out = []
    for i in range(n):
        topic = Uuid.of(i + 1000, i * 7 + 1)
        kind = i % 5
        if kind == 0:
            msg, v = message_class("PartitionRecord")(
                partition_id=i, topic_id=topic, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1 + i % 3,
                leader_epoch=i % 10, partition_epoch=i % 7,
                directories=[Uuid.of(1, i), Uuid.of(2, i), Uuid.of(3, i)]), 1
        elif kind == 1:
            msg, v = message_class("PartitionChangeRecord")(partition_id=i, topic_id=topic, isr=[1, 3], leader=3), 0
        elif kind == 2:
            msg, v = message_class("TopicRecord")(name=f"topic-{i:06d}", topic_id=topic), 0
        elif kind == 3:
            msg, v = message_class("ConfigRecord")(resource_type=2, resource_name=f"topic-{i:06d}",
                                                   name="min.insync.replicas", value="2"), 0
        else:
            msg, v = message_class("RegisterBrokerRecord")(
                broker_id=i, incarnation_id=topic, broker_epoch=i * 3, rack=f"rack-{i % 3}",
                log_dirs=[Uuid.of(9, i)]), 3
        out.append(encode_metadata_record(msg, v))
    return out


def make_log(path: Path, records: int, durability: Durability) -> float:
    """Append ``records`` records in batches of 1000; returns the seconds it took."""
    pool = values_pool()
    start = time.perf_counter()
    with MetadataLog.open(path, Mode.CREATE, config=LogConfig(durability=durability)) as log:
        for first in range(0, records, BATCH):
            values = [pool[(first + i) % len(pool)] for i in range(min(BATCH, records - first))]
            log.append(values, epoch=1, timestamp=TS + first)
    return time.perf_counter() - start


def read_metalog(path: Path) -> tuple[int, int]:
    count = check = 0
    with MetadataLog.open(path) as log:
        for rec in log.records():
            count += 1
            check += len(rec.value or b"")
    return count, check


def scan_metalog(path: Path) -> tuple[int, int]:
    """Batches with their CRC checked, records left undecoded (the lazy read)."""
    count = 0
    with MetadataLog.open(path) as log:
        for batch in log.batches():
            count += batch.records_count
    return count, -1


def scan_in_memory(data: bytes) -> tuple[int, int]:
    """The batch scan over a log's bytes in memory, as the peers' scans read them (no file, no mapping)."""
    count = 0
    for batch in iter_batches(data):
        count += batch.records_count
    return count, -1


def peer_reader(memory_records: Callable[[bytes], Any]) -> Callable[[bytes], tuple[int, int]]:
    def read(data: bytes) -> tuple[int, int]:
        count = check = 0
        records = memory_records(data)
        while (batch := records.next_batch()) is not None:
            if not batch.validate_crc():
                raise AssertionError("CRC")
            for rec in batch:
                count += 1
                check += len(rec.value or b"")
        return count, check
    return read


def peer_scan(memory_records: Callable[[bytes], Any]) -> Callable[[bytes], tuple[int, int]]:
    def scan(data: bytes) -> tuple[int, int]:
        count = 0
        records = memory_records(data)
        while (batch := records.next_batch()) is not None:
            if not batch.validate_crc():
                raise AssertionError("CRC")
            count += batch.last_offset_delta + 1
        return count, -1
    return scan


def expected_check(records: int) -> int:
    """The value-size checksum of a ``make_log`` log of ``records`` records."""
    sizes = [len(v) for v in values_pool()]
    return sum(sizes) * (records // len(sizes)) + sum(sizes[: records % len(sizes)])
