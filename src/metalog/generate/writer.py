"""Writing a generated history as a real KRaft log directory, with Kafka snapshots along the way."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from metalog.codec import Uuid
from metalog.codec.messages import LeaderChangeMessage
from metalog.codec.messages.leader_change_message import Voter
from metalog.codec.runtime import ApiMessage
from metalog.errors import MetalogError
from metalog.generate.generator import START_MS, HistoryGenerator, HistorySettings
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
from metalog.state import MetadataLoader
from metalog.state.records import image_digest, image_records

LEADER_ID = 3000
EPOCH = 1


@dataclass
class GeneratedLog:
    path: Path
    records: int
    batches: int
    snapshots: list[Path]
    end_offset: int
    digest: str  # of the final state


def write_history(outdir: str | os.PathLike[str], seed: int, settings: HistorySettings, *,
                  snapshot_every: int = 50_000,
                  progress: Callable[[int, int], None] | None = None,
                  events: list[str] | None = None) -> GeneratedLog:
    """Generate and write; the state is replayed as it is written, so snapshots hold the real image.

    ``events``, when given, receives the scenario's scripted events (with the offset each starts at)."""
    out = Path(outdir)
    if (out / "__cluster_metadata-0").exists():
        raise MetalogError(f"{out} already holds a metadata log; choose an empty directory")
    _write_meta_properties(out, seed)
    with MetadataLog.open(out, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        writer = _HistoryWriter(log, snapshot_every)
        generator = HistoryGenerator(seed, settings)
        seen = 0
        for ts, record, version in generator.records():
            if events is not None and len(generator.events) > seen:  # offset 0 holds the LeaderChangeMessage
                events.extend(f"offset {n + 1:>9,}  {e}"
                              for n, e in zip(generator.event_records[seen:], generator.events[seen:], strict=True))
                seen = len(generator.events)
            writer.add(ts, record, version)
            if progress is not None and writer.records % 1000 == 0:
                progress(writer.records, settings.records)
        writer.flush()
        if progress is not None:
            progress(writer.records, settings.records)
        log.flush()
        end = log.log_end_offset - 1
    return GeneratedLog(out, writer.records, writer.batches, writer.snapshots, end, image_digest(writer.loader.image))


class _HistoryWriter:
    """The generated records into the log, one batch per controller write (a timestamp), replayed as written, with
    a snapshot every ``snapshot_every`` records at the first batch end outside a transaction."""

    def __init__(self, log: MetadataLog, snapshot_every: int) -> None:
        self.log = log
        self.loader = MetadataLoader()
        self.snapshots: list[Path] = []
        self.records = self.batches = 0
        self.snapshot_every = self.next_snapshot = snapshot_every
        self.pending: list[tuple[ApiMessage, int]] = []
        self.stamp = START_MS
        leader = log.append_control([(_leader_change(), 0)], epoch=EPOCH, timestamp=START_MS)
        self.loader.load_batch(leader.base_offset, [], last_offset=leader.last_offset, is_control=True)

    def add(self, ts: int, record: ApiMessage, version: int) -> None:
        if self.pending and ts != self.stamp:  # one batch per controller write
            self.flush()
            if self.records >= self.next_snapshot and not self.loader.in_transaction:
                self.snapshots.append(_snapshot(self.log, self.loader, self.stamp))
                self.next_snapshot += self.snapshot_every
        self.stamp = ts
        self.pending.append((record, version))
        self.records += 1

    def flush(self) -> None:
        """One controller write: one batch, or more where it holds an abort (the log ends a batch there)."""
        if not self.pending:
            return
        first = self.log.log_end_offset
        messages = [record for record, _ in self.pending]
        for b in self.log.append(self.pending, epoch=EPOCH, timestamp=self.stamp):
            self.loader.load_batch(b.base_offset, messages[b.base_offset - first:b.last_offset - first + 1])
            self.batches += 1
        self.pending.clear()


def _write_meta_properties(out: Path, seed: int) -> None:
    """meta.properties as ``kafka-storage format`` writes it, with ids (and the date line) from the seed."""
    rng = random.Random(f"meta-{seed}")
    cluster_id, directory_id = (Uuid(rng.getrandbits(128).to_bytes(16, "big")) for _ in range(2))
    date = datetime.fromtimestamp(START_MS / 1000, tz=UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    out.mkdir(parents=True, exist_ok=True)
    (out / "meta.properties").write_text(f"#\n#{date}\nnode.id={LEADER_ID}\ndirectory.id={directory_id}\n"
                                         f"version=1\ncluster.id={cluster_id}\n")


def _leader_change() -> LeaderChangeMessage:
    return LeaderChangeMessage(version=0, leader_id=LEADER_ID, voters=[Voter(voter_id=LEADER_ID)],
                               granting_voters=[Voter(voter_id=LEADER_ID)])


def _snapshot(log: MetadataLog, loader: MetadataLoader, timestamp: int) -> Path:
    image = loader.image
    with SnapshotWriter(log.directory, SnapshotId(log.log_end_offset, EPOCH),
                        SnapshotHeader(last_contained_log_timestamp=timestamp), time_ms=timestamp) as writer:
        writer.append(image_records(image))
        return writer.freeze()
