"""Replay benchmark pieces: a generated history written as a KRaft log, one batch per controller write."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from metalog.bench.timing import best_cpu
from metalog.generate import HistoryGenerator, HistorySettings
from metalog.log import Durability, LogConfig, MetadataLog, Mode


def build_log(path: Path, records: int, seed: int) -> Counter[str]:
    """Write a generated history as a KRaft log: one batch per controller write (same timestamp)."""
    kinds: Counter[str] = Counter()
    gen = HistoryGenerator(seed, HistorySettings(brokers=12, topics=60, partitions=16, records=records))
    with MetadataLog.open(path, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        batch: list[tuple[object, int]] = []
        stamp = None
        for ts, record, version in gen.records():
            kinds[type(record).__name__] += 1
            if batch and ts != stamp:
                log.append(batch, timestamp=stamp)
                batch = []
            stamp = ts
            batch.append((record, version))
        if batch:
            log.append(batch, timestamp=stamp)
    return kinds


timed = best_cpu  # Best of ``repeat`` in CPU time of this process: the 2-core machine is shared, wall time swings 2x.
