"""What a command builds: records checked one by one against the state they meet.

``Changes`` replays every record into a MetadataDelta as it is emitted, so later records of the
same command see earlier ones (a directory change, then the ISR change that follows it), and a
record that could not apply fails the command before anything is appended.

``partition_change`` is a small PartitionChangeBuilder: Kafka's "online" election (keep a leader
that is still in the ISR and acceptable, else the first acceptable ISR member in replica order,
else no leader), an ISR that never becomes empty (ELR is not modelled), the leader-epoch bump on
ISR shrink before metadata.version 3.6-IV0, and Directories only from 3.7-IV2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from metalog.codec.messages import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    UnfenceBrokerRecord,
)
from metalog.codec.runtime import ApiMessage
from metalog.codec.uuid import MIGRATING, UNASSIGNED, Uuid
from metalog.state.delta import MetadataDelta
from metalog.state.enums import (
    FENCE,
    METADATA_VERSIONS,
    MV_3_7_IV2_DIRECTORY_ASSIGNMENT,
    MV_4_0_IV1_ELR,
    NO_LEADER,
    NO_LEADER_CHANGE,
    UNFENCE,
)
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration

LATEST = max(METADATA_VERSIONS)
MV_3_3_IV2_BROKER_REGISTRATION_CHANGE = 6
MV_3_6_IV0_NO_EPOCH_BUMP_ON_SHRINK = 12


def level_of(image: MetadataImage) -> int:
    """The metadata.version level that decides record versions (latest when none is set, as records.py)."""
    mv = image.features.metadata_version
    return LATEST if mv is None else mv


def partition_record_version(level: int) -> int:
    return 2 if level >= MV_4_0_IV1_ELR else 1 if level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT else 0


class Changes:
    """Records of one command, each replayed on emit; lookups see the command's own earlier records."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.level = level_of(image)
        self.delta = MetadataDelta(image)
        self.records: list[tuple[ApiMessage, int]] = []

    def emit(self, record: ApiMessage, version: int) -> None:
        if record.NAME not in ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"):
            self.delta.replay(record)  # raises ReplayError: the command is refused whole
        self.records.append((record, version))

    # ---- lookups through the command's own changes --------------------------------------------
    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.delta.broker(broker_id)

    def partition(self, topic_id: Uuid, pid: int) -> PartitionRegistration | None:
        delta = self.delta.topics.get(topic_id)
        if delta is not None:
            return delta.partition(pid)
        if topic_id in self.delta.deleted_topics:
            return None
        topic = self.image.topics.get(topic_id)
        return None if topic is None else topic.partitions.get(pid)

    def is_active(self, broker_id: int) -> bool:
        """Kafka's ClusterControlManager.isActive: registered, unfenced, not in controlled shutdown."""
        b = self.broker(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def default_dir(self, broker_id: int) -> Uuid:
        """ClusterControlManager.defaultDir: the only dir, MIGRATING with none, UNASSIGNED otherwise."""
        b = self.broker(broker_id)
        if b is None:
            return UNASSIGNED
        if not b.directories:
            return MIGRATING
        return b.directories[0] if len(b.directories) == 1 else UNASSIGNED

    # ---- broker records -----------------------------------------------------------------------
    def fence_change(self, broker: BrokerRegistration, fence: bool) -> None:
        if self.level >= MV_3_3_IV2_BROKER_REGISTRATION_CHANGE:
            rec = BrokerRegistrationChangeRecord(
                broker_id=broker.id, broker_epoch=broker.epoch, fenced=FENCE if fence else UNFENCE)
            self.emit(rec, 0)
        else:
            cls = FenceBrokerRecord if fence else UnfenceBrokerRecord
            self.emit(cls(id=broker.id, epoch=broker.epoch), 0)

    # ---- partitions ---------------------------------------------------------------------------
    def change_partition(self, topic_id: Uuid, pid: int, *, target_isr: Iterable[int] | None = None,
                         directories: dict[int, Uuid] | None = None,
                         acceptable: Callable[[int], bool] | None = None) -> bool:
        """Emit the PartitionChangeRecord that moves the partition to its targets; False when none is needed."""
        part = self.partition(topic_id, pid)
        assert part is not None, "callers check the partition exists"
        target = PartitionTarget(target_isr, directories, acceptable or self.leader_acceptor(part))
        record = partition_change(topic_id, pid, part, self.level, target)
        if record is None:
            return False
        self.emit(record, partition_record_version(self.level))
        return True

    def leader_acceptor(self, part: PartitionRegistration, excluded: int | None = None) -> Callable[[int], bool]:
        """Kafka's LeaderAcceptor: an active broker whose directory for this partition is online."""
        def accept(r: int) -> bool:
            if r == excluded or not self.is_active(r):
                return False
            broker = self.broker(r)
            return broker is not None and broker.has_online_dir(part.directory(r))
        return accept

    def remove_from_isr(self, broker_id: int, partitions: Iterable[tuple[Uuid, int]]) -> None:
        """generateLeaderAndIsrUpdates: take ``broker_id`` out of ISR and leadership of each partition."""
        for topic_id, pid in partitions:
            part = self.partition(topic_id, pid)
            if part is None:
                continue
            self.change_partition(topic_id, pid, target_isr=[r for r in part.isr if r != broker_id],
                                  acceptable=self.leader_acceptor(part, excluded=broker_id))

    def elect_leaderless(self) -> None:
        """Partitions without a leader get one if an ISR member can now lead (after an unfence)."""
        for topic_id, pid in self.partitions_where(lambda p: p.leader == NO_LEADER):
            self.change_partition(topic_id, pid)

    def partitions_where(self, pred: Callable[[PartitionRegistration], bool]) -> list[tuple[Uuid, int]]:
        """Matching partitions in a fixed order (topic name, partition id) so results are deterministic."""
        out = []
        view = self.delta.apply() if self.records else self.image
        for name in sorted(view.topics_by_name):
            topic = view.topics_by_name[name]
            out += [(topic.id, pid) for pid in sorted(topic.partitions) if pred(topic.partitions[pid])]
        return out


@dataclass(frozen=True)
class PartitionTarget:
    """Where a partition change goes (what Kafka's PartitionChangeBuilder is set to): ``isr`` the new ISR (None:
    as it is), ``directories`` a replica's new directory by broker id (None: as they are), ``acceptable`` whether a
    replica may lead (Kafka's isAcceptableLeader)."""

    isr: Iterable[int] | None
    directories: dict[int, Uuid] | None
    acceptable: Callable[[int], bool]


def partition_change(topic_id: Uuid, pid: int, part: PartitionRegistration, level: int,
                     target: PartitionTarget) -> PartitionChangeRecord | None:
    """The PartitionChangeRecord taking ``part`` (partition ``pid`` of ``topic_id``) to ``target`` at metadata
    version ``level``, or None when nothing would change."""
    isr = list(part.isr) if target.isr is None else list(target.isr)
    acceptable, directories = target.acceptable, target.directories
    changed = False
    rec = PartitionChangeRecord(topic_id=topic_id, partition_id=pid, leader=NO_LEADER_CHANGE)

    def valid(r: int) -> bool:
        return r in isr and acceptable(r)

    leader = part.leader if valid(part.leader) else next((r for r in part.replicas if valid(r)), NO_LEADER)
    if leader != part.leader:
        rec.leader, changed = leader, True
    if isr and isr != list(part.isr):  # without ELR an ISR never becomes empty
        rec.isr, changed = isr, True
        shrunk = not set(part.isr) <= set(isr)
        if shrunk and rec.leader == NO_LEADER_CHANGE and level < MV_3_6_IV0_NO_EPOCH_BUMP_ON_SHRINK:
            rec.leader = part.leader
    if directories and level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT:
        dirs = [directories.get(r, d) for r, d in zip(part.replicas, part.directories, strict=True)]
        if dirs != list(part.directories):
            rec.directories, changed = dirs, True
    return rec if changed else None
