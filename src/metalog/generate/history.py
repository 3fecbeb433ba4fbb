"""Realistic, valid KRaft metadata histories from a seed: records in, no I/O.

A small model of the cluster (brokers with epochs and log dirs, topics, partitions) decides
which records are valid next, so every history replays without error. The same seed and
settings give the same records. ``HistoryGenerator.records()`` yields ``(timestamp_ms, record,
version)``; writing them to a log directory is the log layer's job.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from metalog.codec import message_class
from metalog.codec.uuid import MIGRATING, UNASSIGNED, Uuid

START_MS = 1_700_000_000_000


def _cls(name: str) -> Any:
    return message_class(name)


def _struct(message: str, struct: str) -> Any:
    import sys

    return getattr(sys.modules[_cls(message).__module__], struct)


@dataclass
class _Broker:
    id: int
    epoch: int
    dirs: list[Uuid]
    rack: str | None
    fenced: bool = True
    registered: bool = True


@dataclass
class _Partition:
    replicas: list[int]
    dirs: list[Uuid]
    isr: list[int]
    leader: int


@dataclass
class _Topic:
    name: str
    id: Uuid
    partitions: dict[int, _Partition] = field(default_factory=dict)


@dataclass
class HistorySettings:
    brokers: int = 5
    topics: int = 10
    partitions: int = 6
    records: int = 10_000
    replication_factor: int = 3
    dirs_per_broker: int = 2
    metadata_version: int = 17  # 3.7-IV2: directories on the wire
    transactions: bool = True


class HistoryGenerator:
    """Generates ``records`` valid records (about; a multi-record step may overshoot a little)."""

    def __init__(self, seed: int, settings: HistorySettings | None = None) -> None:
        self.rng = random.Random(seed)
        self.s = settings or HistorySettings()
        self.now = START_MS
        self.brokers: dict[int, _Broker] = {}
        self.topics: dict[Uuid, _Topic] = {}
        self.topic_seq = 0
        self.out: list[tuple[int, Any, int]] = []

    # ---- public ------------------------------------------------------------------------------
    def records(self) -> Iterator[tuple[int, Any, int]]:
        yield from self._bootstrap()
        produced = len(self.out)
        self.out.clear()
        while produced < self.s.records:
            self._step()
            produced += len(self.out)
            yield from self.out
            self.out.clear()

    # ---- helpers -----------------------------------------------------------------------------
    def _emit(self, message: str, /, version: int = 0, **fields: Any) -> None:
        self.out.append((self.now, _cls(message)(**fields), version))

    def _uuid(self) -> Uuid:
        return Uuid(self.rng.getrandbits(128).to_bytes(16, "big"))

    def _bootstrap(self) -> Iterator[tuple[int, Any, int]]:
        self._emit("FeatureLevelRecord", name="metadata.version", feature_level=self.s.metadata_version)
        self._emit("ZkMigrationStateRecord", zk_migration_state=0)
        for bid in range(1, self.s.brokers + 1):
            self._register(bid, fresh=True)
            self._emit("BrokerRegistrationChangeRecord", broker_id=bid, broker_epoch=self.brokers[bid].epoch,
                       fenced=-1)
            self.brokers[bid].fenced = False
        for _ in range(self.s.topics):
            self._create_topic()
        yield from self.out

    def _register(self, bid: int, fresh: bool = False) -> None:
        old = self.brokers.get(bid)
        dirs = old.dirs if old and not fresh else [self._uuid() for _ in range(self.s.dirs_per_broker)]
        epoch = (old.epoch if old else 0) + self.rng.randint(1, 50) + (100 if fresh else 0)
        rack = old.rack if old else f"rack-{bid % 3}"
        self.brokers[bid] = _Broker(bid, epoch, dirs, rack)
        endpoint = _struct("RegisterBrokerRecord", "BrokerEndpoint")
        feature = _struct("RegisterBrokerRecord", "BrokerFeature")
        self._emit("RegisterBrokerRecord", version=3, broker_id=bid, broker_epoch=epoch,
                   incarnation_id=self._uuid(), rack=rack, fenced=True, log_dirs=list(dirs),
                   end_points=[endpoint(name="PLAINTEXT", host=f"broker{bid}", port=9092, security_protocol=0)],
                   features=[feature(name="metadata.version", min_supported_version=1,
                                     max_supported_version=self.s.metadata_version)])

    def _live(self) -> list[int]:
        return sorted(b.id for b in self.brokers.values() if b.registered and not b.fenced)

    def _create_topic(self) -> None:
        live = self._live() or sorted(self.brokers)
        rf = min(self.s.replication_factor, len(live))
        self.topic_seq += 1
        topic = _Topic(f"topic-{self.topic_seq}", self._uuid())
        self.topics[topic.id] = topic
        self._emit("TopicRecord", name=topic.name, topic_id=topic.id)
        for pid in range(self.s.partitions):
            replicas = self.rng.sample(live, rf)
            dirs = [UNASSIGNED] * rf
            part = _Partition(replicas, dirs, list(replicas), replicas[0])
            topic.partitions[pid] = part
            self._emit("PartitionRecord", version=1, partition_id=pid, topic_id=topic.id, replicas=list(replicas),
                       isr=list(replicas), leader=replicas[0], leader_epoch=0, partition_epoch=0,
                       directories=list(dirs))
        if self.rng.random() < 0.5:
            self._emit("ConfigRecord", resource_type=2, resource_name=topic.name, name="retention.ms",
                       value=str(self.rng.choice([3_600_000, 86_400_000, 604_800_000])))

    # ---- one step of cluster life ------------------------------------------------------------
    def _step(self) -> None:
        self.now += 500
        roll = self.rng.random()
        if roll < 0.55:
            self._emit("NoOpRecord")
        elif roll < 0.88:
            self._partition_churn()
        elif roll < 0.94:
            self._assign_directory()
        elif roll < 0.9405:  # a rolling restart touches every partition the broker hosts: rare in a real log
            self._broker_restart()
        elif roll < 0.948:
            self._topic_change()
        elif roll < 0.998:
            self._emit("ConfigRecord", resource_type=4, resource_name=str(self.rng.choice(sorted(self.brokers))),
                       name="log.cleaner.threads", value=str(self.rng.randint(1, 8)))
        elif self.s.transactions:
            self._transaction()
        else:
            self._emit("NoOpRecord")

    def _pick_partition(self) -> tuple[_Topic, int, _Partition] | None:
        if not self.topics:
            return None
        topic = self.rng.choice(list(self.topics.values()))
        pid = self.rng.choice(sorted(topic.partitions))
        return topic, pid, topic.partitions[pid]

    def _partition_churn(self) -> None:
        """An ISR shrinks by one replica, or grows back to every live replica; sometimes the leader moves."""
        picked = self._pick_partition()
        if picked is None:
            return
        topic, pid, p = picked
        live = set(self._live())
        candidates = [r for r in p.replicas if r in live]
        if not candidates:
            return
        if len(p.isr) < len(candidates) and self.rng.random() < 0.6:
            isr = list(candidates)
        elif len(p.isr) > 1:
            victim = self.rng.choice(p.isr)
            isr = [r for r in p.isr if r != victim]
        else:
            isr = [r for r in p.isr if r in live] or [candidates[0]]
        fields: dict[str, Any] = {"isr": isr}
        if p.leader not in isr or self.rng.random() < 0.2:
            fields["leader"] = p.leader = self.rng.choice(isr)
        p.isr = isr
        self._emit("PartitionChangeRecord", version=1, partition_id=pid, topic_id=topic.id, **fields)

    def _assign_directory(self) -> None:
        picked = self._pick_partition()
        if picked is None:
            return
        topic, pid, p = picked
        dirs = [self.rng.choice(self.brokers[r].dirs) if self.brokers[r].dirs else MIGRATING for r in p.replicas]
        if dirs != p.dirs:
            p.dirs = dirs
            self._emit("PartitionChangeRecord", version=1, partition_id=pid, topic_id=topic.id, directories=dirs)

    def _broker_restart(self) -> None:
        """Fence, leave every ISR (leadership moves), register a new incarnation, unfence, catch up."""
        b = self.brokers[self.rng.choice(sorted(self.brokers))]
        self._emit("BrokerRegistrationChangeRecord", broker_id=b.id, broker_epoch=b.epoch, fenced=1)
        b.fenced = True
        left = []
        for topic in self.topics.values():
            for pid, p in topic.partitions.items():
                if b.id in p.isr and len(p.isr) > 1:
                    p.isr = [r for r in p.isr if r != b.id]
                    fields: dict[str, Any] = {"isr": list(p.isr)}
                    if p.leader == b.id:
                        fields["leader"] = p.leader = p.isr[0]
                    self._emit("PartitionChangeRecord", version=1, partition_id=pid, topic_id=topic.id, **fields)
                    left.append((topic, pid, p))
        self.now += 500
        self._register(b.id)
        self._emit("BrokerRegistrationChangeRecord", broker_id=b.id, broker_epoch=self.brokers[b.id].epoch,
                   fenced=-1)
        self.brokers[b.id].fenced = False
        self.now += 500
        for topic, pid, p in left:  # the restarted broker catches up and rejoins the ISR
            if topic.id in self.topics and b.id not in p.isr:
                p.isr = p.isr + [b.id]
                self._emit("PartitionChangeRecord", version=1, partition_id=pid, topic_id=topic.id, isr=list(p.isr))

    def _topic_change(self) -> None:
        if self.topics and (self.rng.random() < 0.5 or len(self.topics) >= self.s.topics * 2):
            topic = self.topics.pop(self.rng.choice(sorted(self.topics)))
            self._emit("RemoveTopicRecord", topic_id=topic.id)
        else:
            self._create_topic()

    def _transaction(self) -> None:
        self._emit("BeginTransactionRecord", name="bulk-load")
        saved = (dict(self.topics), self.topic_seq)
        self._create_topic()
        if self.rng.random() < 0.3:
            self.topics, self.topic_seq = saved
            self._emit("AbortTransactionRecord", reason="controller failover")
        else:
            self._emit("EndTransactionRecord")
