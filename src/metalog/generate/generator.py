"""Realistic, valid KRaft metadata histories from a seed: records in, no I/O.

A small model of the cluster (brokers with epochs and log dirs, topics, partitions) decides
which records are valid next, so every history replays without error. The same seed and
settings give the same records. ``HistoryGenerator.records()`` yields ``(timestamp_ms, record,
version)``; writing them to a log directory is the log layer's job.

Scenarios (``HistorySettings.scenario``): ``native`` is a KRaft cluster from the start;
``zk-migration`` starts in ZooKeeper mode and migrates (PRE_MIGRATION, an aborted and then a
committed initial load, MIGRATION, ZK brokers restarting as KRaft brokers, POST_MIGRATION);
``jbod-transition`` starts below 3.7-IV2 with one log dir per broker, upgrades, re-registers
brokers with several dirs, assigns replicas to them and fails a disk; ``mixed`` does both.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from metalog.codec import message_class, struct_class
from metalog.codec.runtime import ApiMessage, KafkaStruct
from metalog.codec.uuid import MIGRATING, UNASSIGNED, Uuid
from metalog.state.enums import (
    MV_3_4_IV0_MIGRATION,
    MV_3_6_IV1_TRANSACTIONS,
    MV_3_7_IV2_DIRECTORY_ASSIGNMENT,
    NO_LEADER,
    metadata_version_name,
)

if TYPE_CHECKING:
    from metalog.state.image import MetadataImage

START_MS = 1_700_000_000_000
SCENARIOS = ("native", "zk-migration", "jbod-transition", "mixed")
# ZkMigrationStateRecord values as Kafka 3.5+ writes them.
NONE, MIGRATION, PRE_MIGRATION, POST_MIGRATION = 0, 1, 2, 3


def _cls(name: str) -> type[ApiMessage]:
    return message_class(name)


def _struct(name: str) -> type[KafkaStruct]:
    return struct_class("RegisterBrokerRecord", name)


@dataclass
class _Broker:
    id: int
    epoch: int
    dirs: list[Uuid]
    rack: str | None
    fenced: bool = True
    registered: bool = True
    zk: bool = False  # registered with IsMigratingZkBroker


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
    scenario: str = "native"  # one of SCENARIOS


class HistoryGenerator:
    """Generates ``records`` valid records (about; a multi-record step or a scenario's phase may overshoot)."""

    def __init__(self, seed: int, settings: HistorySettings | None = None) -> None:
        self.rng = random.Random(seed)
        self.s = settings or HistorySettings()
        if self.s.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.s.scenario!r}; choose one of {', '.join(SCENARIOS)}")
        self.now = START_MS
        self.mv = self.s.metadata_version
        self.zk_state = NONE
        self.brokers: dict[int, _Broker] = {}
        self.topics: dict[Uuid, _Topic] = {}
        self.topic_seq = 0
        self.out: list[tuple[int, ApiMessage, int]] = []  # (timestamp, record, version)
        self.events: list[str] = []  # scripted scenario events, in order, for tests and the curious
        self.event_records: list[int] = []  # how many records came before each event
        self._yielded = 0

    # ---- public ------------------------------------------------------------------------------
    def records(self) -> Iterator[tuple[int, ApiMessage, int]]:
        yield from self._bootstrap()
        produced = self._yielded = len(self.out)
        self.out.clear()
        script = self._script()
        while produced < self.s.records or script:
            if script and (produced >= script[0][0] * self.s.records or produced >= self.s.records):
                script.pop(0)[1]()
            else:
                self._step()
            produced += len(self.out)
            self._yielded = produced
            yield from self.out
            self.out.clear()

    def model(self) -> dict[str, Any]:
        """The generator's own view of the final state, in the shape of ``image_model``."""
        return {
            "metadata_version": self.mv, "zk_migration_state": self.zk_state,
            "brokers": {b.id: (b.epoch, b.fenced, b.zk, tuple(sorted(b.dirs))) for b in self.brokers.values()},
            "topics": {t.id: (t.name, {pid: (tuple(p.replicas), tuple(p.isr), p.leader, tuple(p.dirs))
                                       for pid, p in t.partitions.items()}) for t in self.topics.values()},
        }

    # ---- helpers -----------------------------------------------------------------------------
    def _emit(self, message: str, /, version: int = 0, **fields: Any) -> None:
        self.out.append((self.now, _cls(message)(**fields), version))

    def _uuid(self) -> Uuid:
        return Uuid(self.rng.getrandbits(128).to_bytes(16, "big"))

    @property
    def _dirs_on_wire(self) -> bool:
        return self.mv >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT

    def _bootstrap(self) -> Iterator[tuple[int, ApiMessage, int]]:
        scenario = self.s.scenario
        if scenario in ("zk-migration", "mixed"):
            self.mv, self.zk_state = MV_3_6_IV1_TRANSACTIONS, PRE_MIGRATION
        elif scenario == "jbod-transition":
            self.mv = MV_3_7_IV2_DIRECTORY_ASSIGNMENT - 1
        self._emit("FeatureLevelRecord", name="metadata.version", feature_level=self.mv)
        self._emit("ZkMigrationStateRecord", zk_migration_state=self.zk_state)
        if self.zk_state == PRE_MIGRATION:
            yield from self._zk_bootstrap()
            return
        for bid in range(1, self.s.brokers + 1):
            self._register(bid, fresh=True)
            self._emit("BrokerRegistrationChangeRecord", broker_id=bid, broker_epoch=self.brokers[bid].epoch,
                       fenced=-1)
            self.brokers[bid].fenced = False
        for _ in range(self.s.topics):
            self._create_topic()
        yield from self.out

    def _register(self, bid: int, fresh: bool = False, zk: bool | None = None,
                  dirs: list[Uuid] | None = None) -> None:
        old = self.brokers.get(bid)
        if dirs is None:
            if not self._dirs_on_wire:
                dirs = []  # before 3.7-IV2 a broker registers no log dirs
            else:
                dirs = old.dirs if old and not fresh else [self._uuid() for _ in range(self.s.dirs_per_broker)]
        epoch = (old.epoch if old else 0) + self.rng.randint(1, 50) + (100 if fresh else 0)
        rack = old.rack if old else f"rack-{bid % 3}"
        zk = (old.zk if old else False) if zk is None else zk
        self.brokers[bid] = _Broker(bid, epoch, dirs, rack, zk=zk)
        version = 3 if self._dirs_on_wire else 2 if self.mv >= MV_3_4_IV0_MIGRATION else 1
        extra: dict[str, Any] = {"log_dirs": list(dirs)} if version >= 3 else {}
        if zk:
            extra["is_migrating_zk_broker"] = True
        max_mv = max(self.s.metadata_version, MV_3_7_IV2_DIRECTORY_ASSIGNMENT)
        self._emit("RegisterBrokerRecord", version=version, broker_id=bid, broker_epoch=epoch,
                   incarnation_id=self._uuid(), rack=rack, fenced=True,
                   end_points=[_struct("BrokerEndpoint")(name="PLAINTEXT", host=f"broker{bid}", port=9092,
                                                         security_protocol=0)],
                   features=[_struct("BrokerFeature")(name="metadata.version", min_supported_version=1,
                                                      max_supported_version=max_mv)], **extra)

    def _live(self) -> list[int]:
        return sorted(b.id for b in self.brokers.values() if b.registered and not b.fenced)

    def _online(self, p: _Partition, i: int) -> bool:
        """A replica is online when its broker is live and its directory is online there (DirectoryId.isOnline)."""
        b = self.brokers[p.replicas[i]]
        d = p.dirs[i]
        return not b.fenced and (d in (UNASSIGNED, MIGRATING) or not b.dirs or d in b.dirs)

    def _partition_version(self) -> int:
        return 1 if self._dirs_on_wire else 0

    def _create_topic(self) -> None:
        live = self._live() or sorted(self.brokers)
        rf = min(self.s.replication_factor, len(live))
        self.topic_seq += 1
        topic = _Topic(f"topic-{self.topic_seq}", self._uuid())
        self.topics[topic.id] = topic
        self._emit("TopicRecord", name=topic.name, topic_id=topic.id)
        for pid in range(self.s.partitions):
            replicas = self.rng.sample(live, rf)
            dirs = [UNASSIGNED if self._dirs_on_wire else MIGRATING] * rf
            part = _Partition(replicas, dirs, list(replicas), replicas[0])
            topic.partitions[pid] = part
            extra = {"directories": list(dirs)} if self._dirs_on_wire else {}
            self._emit("PartitionRecord", version=self._partition_version(), partition_id=pid, topic_id=topic.id,
                       replicas=list(replicas), isr=list(replicas), leader=replicas[0], leader_epoch=0,
                       partition_epoch=0, **extra)
        if self.rng.random() < 0.5:
            self._emit("ConfigRecord", resource_type=2, resource_name=topic.name, name="retention.ms",
                       value=str(self.rng.choice([3_600_000, 86_400_000, 604_800_000])))

    def _change(self, topic: _Topic, pid: int, **fields: Any) -> None:
        self._emit("PartitionChangeRecord", version=self._partition_version(), partition_id=pid,
                   topic_id=topic.id, **fields)

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
        elif self.s.transactions and self.mv >= MV_3_6_IV1_TRANSACTIONS:
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
        """An ISR shrinks by one replica, or grows back to every online replica; sometimes the leader moves."""
        picked = self._pick_partition()
        if picked is None:
            return
        topic, pid, p = picked
        live = set(self._live())
        candidates = [r for i, r in enumerate(p.replicas) if self._online(p, i)]
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
        self._change(topic, pid, **fields)

    def _assign_directory(self) -> None:
        """The brokers report where the partition's replicas live (AssignReplicasToDirs); 3.7-IV2 and later."""
        if not self._dirs_on_wire:
            return
        picked = self._pick_partition()
        if picked is None:
            return
        topic, pid, p = picked
        dirs = [self.rng.choice(self.brokers[r].dirs) if self.brokers[r].dirs else p.dirs[i]
                for i, r in enumerate(p.replicas)]
        if dirs != p.dirs:
            p.dirs = dirs
            self._change(topic, pid, directories=dirs)

    def _broker_restart(self, bid: int | None = None, **registration: Any) -> None:
        """Fence, leave every ISR (leadership moves), register a new incarnation, unfence, catch up."""
        b = self.brokers[self.rng.choice(sorted(self.brokers)) if bid is None else bid]
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
                    self._change(topic, pid, **fields)
                    left.append((topic, pid, p))
        self.now += 500
        self._register(b.id, **registration)
        self._emit("BrokerRegistrationChangeRecord", broker_id=b.id, broker_epoch=self.brokers[b.id].epoch,
                   fenced=-1)
        self.brokers[b.id].fenced = False
        self.now += 500
        for topic, pid, p in left:  # the restarted broker catches up and rejoins the ISR
            if topic.id in self.topics and b.id not in p.isr and self._online(p, p.replicas.index(b.id)):
                p.isr = p.isr + [b.id]
                self._change(topic, pid, isr=list(p.isr))

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

    # ---- scenarios ---------------------------------------------------------------------------
    def _script(self) -> list[tuple[float, Callable[[], None]]]:
        """Scripted events, each due once this fraction of ``records`` is written; the rest is cluster life."""
        n = self.s.brokers
        zk = [(0.0, self._zk_load)] + [(0.1 + 0.2 * i / n, self._zk_broker_to_kraft) for i in range(n)] + [
            (0.32, self._zk_finalize), (0.36, self._upgrade_to(MV_3_7_IV2_DIRECTORY_ASSIGNMENT - 1))]
        jbod = [(0.4, self._upgrade_to(MV_3_7_IV2_DIRECTORY_ASSIGNMENT))] + [
            (0.45 + 0.25 * i / n, self._jbod_broker_restart) for i in range(n)] + [(0.8, self._disk_failure)]
        scripts: dict[str, list[tuple[float, Callable[[], None]]]] = {
            "native": [], "zk-migration": zk, "jbod-transition": jbod,
            "mixed": zk + jbod}
        return list(scripts[self.s.scenario])

    def _event(self, name: str) -> None:
        self.now += 500
        self.events.append(name)
        self.event_records.append(self._yielded + len(self.out))

    def _upgrade_to(self, level: int) -> Callable[[], None]:
        def upgrade() -> None:
            if level <= self.mv:
                return
            self._event(f"metadata.version {metadata_version_name(level)}")
            self.mv = level
            self._emit("FeatureLevelRecord", name="metadata.version", feature_level=level)
        return upgrade

    def _zk_bootstrap(self) -> Iterator[tuple[int, ApiMessage, int]]:
        """ZK brokers register with the KRaft controllers (IsMigratingZkBroker) and are unfenced; no topics yet."""
        for bid in range(1, self.s.brokers + 1):
            self._register(bid, fresh=True, zk=True)
            self._emit("BrokerRegistrationChangeRecord", broker_id=bid, broker_epoch=self.brokers[bid].epoch,
                       fenced=-1)
            self.brokers[bid].fenced = False
        yield from self.out

    def _zk_load(self) -> None:
        """The initial load of ZooKeeper's metadata in a transaction: the first attempt aborts, the next commits."""
        self._event("zk initial load aborted")
        self._emit("BeginTransactionRecord", name="Migrate metadata from ZooKeeper")
        saved = (dict(self.topics), self.topic_seq)
        for _ in range(max(self.s.topics // 2, 1)):
            self._create_topic()
        self.topics, self.topic_seq = saved
        self._emit("AbortTransactionRecord", reason="controller lost leadership during the migration")
        self._event("zk initial load committed")
        self._emit("BeginTransactionRecord", name="Migrate metadata from ZooKeeper")
        for _ in range(self.s.topics):
            self._create_topic()
        self._emit("EndTransactionRecord")
        self._event("zk migration MIGRATION")
        self.zk_state = MIGRATION
        self._emit("ZkMigrationStateRecord", zk_migration_state=MIGRATION)

    def _zk_broker_to_kraft(self) -> None:
        """The next ZK broker restarts as a KRaft broker: it re-registers without IsMigratingZkBroker."""
        zk = [b for b in sorted(self.brokers) if self.brokers[b].zk]
        if zk:
            self._event(f"broker {zk[0]} restarts in KRaft mode")
            self._broker_restart(zk[0], zk=False)

    def _zk_finalize(self) -> None:
        while any(b.zk for b in self.brokers.values()):
            self._zk_broker_to_kraft()
        self._event("zk migration POST_MIGRATION")
        self.zk_state = POST_MIGRATION
        self._emit("ZkMigrationStateRecord", zk_migration_state=POST_MIGRATION)
        self._upgrade_to(MV_3_6_IV1_TRANSACTIONS + 1)()

    def _jbod_broker_restart(self) -> None:
        """The next single-dir broker restarts with several log dirs, then reports where each replica lives."""
        single = [b for b in sorted(self.brokers) if len(self.brokers[b].dirs) < 2]
        if not single or not self._dirs_on_wire:
            return
        bid = single[0]
        self._event(f"broker {bid} restarts with {max(self.s.dirs_per_broker, 2)} log dirs")
        self._broker_restart(bid, dirs=[self._uuid() for _ in range(max(self.s.dirs_per_broker, 2))])
        self.now += 500
        for topic in self.topics.values():
            for pid, p in topic.partitions.items():
                if bid in p.replicas:
                    p.dirs = list(p.dirs)
                    p.dirs[p.replicas.index(bid)] = self.rng.choice(self.brokers[bid].dirs)
                    self._change(topic, pid, directories=list(p.dirs))

    def _disk_failure(self) -> None:
        """One log dir fails: the broker reports its remaining dirs; its replicas there leave the ISR and
        leadership moves to another ISR member (or to none)."""
        while any(len(b.dirs) < 2 for b in self.brokers.values()):
            self._jbod_broker_restart()
        b = self.brokers[self.rng.choice(sorted(self.brokers))]
        failed = self.rng.choice(b.dirs)
        self._event(f"broker {b.id} loses log dir {failed}")
        b.dirs = [d for d in b.dirs if d != failed]
        self._emit("BrokerRegistrationChangeRecord", version=2, broker_id=b.id, broker_epoch=b.epoch,
                   log_dirs=list(b.dirs))
        for topic in self.topics.values():
            for pid, p in topic.partitions.items():
                if b.id not in p.replicas or p.dirs[p.replicas.index(b.id)] != failed:
                    continue
                fields: dict[str, Any] = {}
                if b.id in p.isr and len(p.isr) > 1:
                    p.isr = [r for r in p.isr if r != b.id]
                    fields["isr"] = list(p.isr)
                if p.leader == b.id:
                    online = [r for r in p.isr if r != b.id and self._online(p, p.replicas.index(r))]
                    fields["leader"] = p.leader = online[0] if online else NO_LEADER
                if fields:
                    self._change(topic, pid, **fields)


def image_model(image: MetadataImage) -> dict[str, Any]:
    """A replayed MetadataImage in the shape of ``HistoryGenerator.model()``."""
    return {
        "metadata_version": image.features.metadata_version, "zk_migration_state": image.features.zk_migration_state,
        "brokers": {b.id: (b.epoch, b.fenced, b.is_migrating_zk_broker, tuple(sorted(b.directories)))
                    for b in image.brokers.values()},
        "topics": {t.id: (t.name, {pid: (p.replicas, p.isr, p.leader, p.directories)
                                   for pid, p in t.partitions.items()}) for t in image.topics.values()},
    }
