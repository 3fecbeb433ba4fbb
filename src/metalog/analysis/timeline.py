"""One timeline row per batch: where a cluster stands in its ZooKeeper migration and its JBOD transition.

A row is computed from the MetadataImage Kafka's loader published after a batch (data or control; inside an
open transaction, the one published before it). The broker, topic and partition counts are Kafka's controller
metrics, counted as ControllerMetadataMetricsPublisher and ControllerMetricsChanges count them
(metadata/src/main/java/org/apache/kafka/controller/metrics/), so a row reads like the operator's dashboard.
Replay builds images that share every unchanged object with the previous image, so ``RowCounter`` recounts
only what changed: the broker counts when the brokers map is a new object, one topic's partition counts when
its TopicImage is a new object (every topic when the brokers changed, since offline replicas depend on them).
``full_row`` counts from scratch, straight from the definitions: the counter must always equal it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from metalog.analysis.topic_changes import PartitionCache, TopicIds
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.state.enums import ZK_MIGRATION_STATES, metadata_version_name
from metalog.state.image import (
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    offline_replicas,
)

# Column name -> what it holds; the order is the files' column order. docs/analysis.md and --help print this.
COLUMNS: dict[str, str] = {
    "cluster": "the log directory's name (one analysis may cover a fleet of clusters)",
    "last_offset": "the last offset of the batch (data or control); the row is the state Kafka's loader published "
                   "after it (inside an open transaction: the one published before the transaction)",
    "timestamp": "the batch's max timestamp, epoch milliseconds",
    "metadata_version": "the metadata.version feature, e.g. 3.7-IV2 (empty before it is set)",
    "zk_migration_state": "NONE, PRE_MIGRATION, MIGRATION, POST_MIGRATION (ZkMigrationStateRecord)",
    "phase": "native, pre-migration, hybrid (MIGRATION with ZK brokers left), dual-write (MIGRATION, every "
             "broker on KRaft), post-migration",
    "dir_transition": "KIP-858: not-started (no broker registered log dirs), in-progress, complete (every "
                      "broker registered its dirs and no replica is MIGRATING or UNASSIGNED)",
    "brokers_fenced": "FencedBrokerCount: registered brokers that are fenced",
    "brokers_unfenced": "ActiveBrokerCount: registered brokers that are not fenced, in controlled shutdown or not",
    "brokers_controlled_shutdown": "ControlledShutdownBrokerCount: registered brokers in controlled shutdown, "
                                   "fenced or not",
    "brokers_zk": "MigratingZkBrokerCount: registered brokers that are ZooKeeper brokers being migrated",
    "topics": "GlobalTopicCount: topics",
    "partitions": "GlobalPartitionCount: partitions",
    "offline_partitions": "OfflinePartitionsCount: partitions without a leader (leader -1)",
    "preferred_replica_imbalance": "PreferredReplicaImbalanceCount: partitions whose leader is not their first "
                                   "replica (one without a leader counts, unless it has no replicas)",
    "replicas_migrating": "replicas whose directory is MIGRATING (placed before directories were tracked)",
    "replicas_unassigned": "replicas whose directory is UNASSIGNED (the broker has not chosen one yet)",
    "replicas_lost": "replicas whose directory is LOST",
    "replicas_assigned": "replicas in a real directory",
    "offline_replicas": "replicas whose broker is missing or fenced, or whose directory is not online",
    "open_transaction": "1 when a metadata transaction is open after the batch (its records not yet visible)",
}
INT_COLUMNS = frozenset(COLUMNS) - {"cluster", "metadata_version", "zk_migration_state", "phase", "dir_transition"}

PHASES = ("native", "pre-migration", "hybrid", "dual-write", "post-migration")
DIR_TRANSITIONS = ("not-started", "in-progress", "complete")


def phase(zk_state: str, brokers_zk: int) -> str:
    if zk_state == "PRE_MIGRATION":
        return "pre-migration"
    if zk_state == "MIGRATION":
        return "hybrid" if brokers_zk else "dual-write"
    if zk_state == "POST_MIGRATION":
        return "post-migration"
    return "native"


def dir_transition(brokers: dict[int, BrokerRegistration], migrating: int, unassigned: int) -> str:
    with_dirs = sum(1 for b in brokers.values() if b.directories)
    if not with_dirs:
        return "not-started"
    if with_dirs == len(brokers) and not migrating and not unassigned:
        return "complete"
    return "in-progress"


def _broker_counts(brokers: dict[int, BrokerRegistration]) -> tuple[int, int, int, int]:
    """(fenced, active, in controlled shutdown, migrating ZooKeeper) brokers: ControllerMetricsChanges counts
    fenced and active (= not fenced) apart, controlled shutdown across both."""
    fenced = shutdown = zk = 0
    for b in brokers.values():
        fenced += b.fenced
        shutdown += b.in_controlled_shutdown
        zk += b.is_migrating_zk_broker
    return fenced, len(brokers) - fenced, shutdown, zk


class PartitionCounts(NamedTuple):
    """What one partition adds to a row's partition columns (a row's totals are their sums, in this order)."""

    partitions: int  # 1
    offline_partitions: int  # PartitionRegistration.hasLeader is false (leader is NO_LEADER, -1)
    imbalanced: int  # hasPreferredLeader is false (leader != replicas[0], or != -1 when there are no replicas)
    migrating: int  # replicas whose directory is MIGRATING
    unassigned: int
    lost: int
    assigned: int
    offline_replicas: int


_PARTITION_COUNTS = len(PartitionCounts._fields)
_new_tuple = tuple.__new__


def _partition_counts(part: PartitionRegistration, brokers: dict[int, BrokerRegistration]) -> PartitionCounts:
    """One partition's PartitionCounts."""
    migrating = unassigned = lost = assigned = 0
    for directory in part.directories:
        if directory == MIGRATING:
            migrating += 1
        elif directory == UNASSIGNED:
            unassigned += 1
        elif directory == LOST:
            lost += 1
        else:
            assigned += 1
    leader, replicas = part.leader, part.replicas
    preferred = replicas[0] if replicas else NO_LEADER
    return _new_tuple(PartitionCounts, (1, leader == NO_LEADER, leader != preferred, migrating, unassigned, lost,
                                        assigned, len(offline_replicas(part, brokers))))


class RowCounter:
    """Timeline rows for successive images of one cluster, counting incrementally."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._brokers: dict[int, BrokerRegistration] | None = None
        self._broker_counts = (0, 0, 0, 0)
        self._topics: dict[Uuid, TopicImage] | None = None
        self._cache: PartitionCache[PartitionCounts] = PartitionCache()
        self._totals = [0] * _PARTITION_COUNTS  # the sums of every partition's PartitionCounts, field by field

    def row(self, image: MetadataImage, last_offset: int, timestamp: int, open_transaction: bool,
            changes: TopicIds | None = None) -> dict[str, Any]:
        """The row of ``image``; ``changes``: the topics that may differ from the image of the row before
        (``topic_changes``), or None to compare every topic."""
        brokers_changed = image.brokers is not self._brokers
        if brokers_changed:
            self._broker_counts = _broker_counts(image.brokers)
        if brokers_changed or image.topics is not self._topics:
            self._recount_topics(image, brokers_changed, changes)
        self._brokers, self._topics = image.brokers, image.topics
        fenced, active, shutdown, zk = self._broker_counts
        partitions, offline_partitions, imbalanced, migrating, unassigned, lost, assigned, offline = self._totals
        # (the PartitionCounts fields, in order)
        zk_state = ZK_MIGRATION_STATES.get(image.features.zk_migration_state, "NONE")
        return {
            "cluster": self.cluster, "last_offset": last_offset, "timestamp": timestamp,
            "metadata_version": metadata_version_name(image.features.metadata_version) or "",
            "zk_migration_state": zk_state, "phase": phase(zk_state, zk),
            "dir_transition": dir_transition(image.brokers, migrating, unassigned),
            "brokers_fenced": fenced, "brokers_unfenced": active, "brokers_controlled_shutdown": shutdown,
            "brokers_zk": zk, "topics": len(image.topics), "partitions": partitions,
            "offline_partitions": offline_partitions, "preferred_replica_imbalance": imbalanced,
            "replicas_migrating": migrating, "replicas_unassigned": unassigned, "replicas_lost": lost,
            "replicas_assigned": assigned, "offline_replicas": offline, "open_transaction": int(open_transaction),
        }

    def _recount_topics(self, image: MetadataImage, everything: bool, changes: TopicIds | None) -> None:
        """Counts of changed partitions only: a batch changes a few partitions of a few topics (the images
        share unchanged TopicImage and PartitionRegistration objects); a broker change recounts all."""
        totals, topics, brokers = self._totals, image.topics, image.brokers
        if everything:
            self._cache.clear()
            totals[:] = [0] * _PARTITION_COUNTS
        gone, moved = self._cache.update(topics, changes)
        for counts in gone:
            _sub(totals, counts)
        for parts, pid, part, entry in moved:
            if entry is not None:
                _sub(totals, entry[1])
            counts = _partition_counts(part, brokers)
            parts[pid] = (part, counts)
            for i, c in enumerate(counts):
                totals[i] += c


NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER


def _sub(totals: list[int], counts: PartitionCounts) -> None:
    for i, c in enumerate(counts):
        totals[i] -= c


def full_row(cluster: str, image: MetadataImage, last_offset: int, timestamp: int,
             open_transaction: bool) -> dict[str, Any]:
    """A row counted from scratch, each column straight from its definition (ControllerMetadataMetricsPublisher's
    publishSnapshot counts the metrics this way): what the incremental ``RowCounter`` must equal."""
    brokers = list(image.brokers.values())
    parts = [p for topic in image.topics.values() for p in topic.partitions.values()]
    directories = [d for p in parts for d in p.directories]
    migrating = sum(d == MIGRATING for d in directories)
    unassigned = sum(d == UNASSIGNED for d in directories)
    zk = sum(b.is_migrating_zk_broker for b in brokers)
    zk_state = ZK_MIGRATION_STATES.get(image.features.zk_migration_state, "NONE")
    return {
        "cluster": cluster, "last_offset": last_offset, "timestamp": timestamp,
        "metadata_version": metadata_version_name(image.features.metadata_version) or "",
        "zk_migration_state": zk_state, "phase": phase(zk_state, zk),
        "dir_transition": dir_transition(image.brokers, migrating, unassigned),
        "brokers_fenced": sum(b.fenced for b in brokers),
        "brokers_unfenced": sum(not b.fenced for b in brokers),
        "brokers_controlled_shutdown": sum(b.in_controlled_shutdown for b in brokers),
        "brokers_zk": zk, "topics": len(image.topics), "partitions": len(parts),
        "offline_partitions": sum(p.leader == NO_LEADER for p in parts),
        "preferred_replica_imbalance": sum(p.leader != (p.replicas[0] if p.replicas else NO_LEADER) for p in parts),
        "replicas_migrating": migrating, "replicas_unassigned": unassigned,
        "replicas_lost": sum(d == LOST for d in directories),
        "replicas_assigned": sum(d not in (MIGRATING, UNASSIGNED, LOST) for d in directories),
        "offline_replicas": sum(len(image.offline_replicas(p)) for p in parts),
        "open_transaction": int(open_transaction),
    }
