"""One timeline row per batch: where a cluster stands in its ZooKeeper migration and its JBOD transition.

A row is computed from the published MetadataImage after a batch. Replay builds images that share
every unchanged object with the previous image, so ``RowCounter`` recounts only what changed: the
broker counts when the brokers map is a new object, one topic's replica counts when its TopicImage
is a new object (every topic when the brokers changed, since offline replicas depend on them).
"""

from __future__ import annotations

from typing import Any

from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED
from metalog.state.image import (
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    offline_replicas,
)
from metalog.state.versions import ZK_MIGRATION_STATES, metadata_version_name

# Column name -> what it holds; the order is the files' column order. The README and --help print this.
COLUMNS: dict[str, str] = {
    "cluster": "the log directory's name (one analysis may cover a fleet of clusters)",
    "last_offset": "the last offset of the batch; the row is the state a reader saw after it",
    "timestamp": "the batch's max timestamp, epoch milliseconds",
    "metadata_version": "the metadata.version feature, e.g. 3.7-IV2 (empty before it is set)",
    "zk_migration_state": "NONE, PRE_MIGRATION, MIGRATION, POST_MIGRATION (ZkMigrationStateRecord)",
    "phase": "native, pre-migration, hybrid (MIGRATION with ZK brokers left), dual-write (MIGRATION, every "
             "broker on KRaft), post-migration",
    "dir_transition": "KIP-858: not-started (no broker registered log dirs), in-progress, complete (every "
                      "broker registered its dirs and no replica is MIGRATING or UNASSIGNED)",
    "brokers_fenced": "registered brokers that are fenced",
    "brokers_unfenced": "registered brokers that are unfenced and not in controlled shutdown",
    "brokers_controlled_shutdown": "unfenced brokers in controlled shutdown",
    "brokers_zk": "registered brokers that are ZooKeeper brokers being migrated",
    "topics": "topics",
    "partitions": "partitions",
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
    fenced = unfenced = shutdown = zk = 0
    for b in brokers.values():
        if b.fenced:
            fenced += 1
        elif b.in_controlled_shutdown:
            shutdown += 1
        else:
            unfenced += 1
        zk += b.is_migrating_zk_broker
    return fenced, unfenced, shutdown, zk


def _partition_counts(part: PartitionRegistration, brokers: dict[int, BrokerRegistration]) -> tuple[int, ...]:
    """(1, migrating, unassigned, lost, assigned, offline) of one partition: a topic's counts are their sums."""
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
    return 1, migrating, unassigned, lost, assigned, len(offline_replicas(part, brokers))


class RowCounter:
    """Timeline rows for successive images of one cluster, counting incrementally."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._brokers: dict[int, BrokerRegistration] | None = None
        self._broker_counts = (0, 0, 0, 0)
        self._topics: dict[Any, TopicImage] | None = None
        self._per_topic: dict[Any, tuple[TopicImage, dict[int, tuple[Any, tuple[int, ...]]]]] = {}
        self._totals = [0] * 6

    def row(self, image: MetadataImage, last_offset: int, timestamp: int, open_transaction: bool) -> dict[str, Any]:
        brokers_changed = image.brokers is not self._brokers
        if brokers_changed:
            self._broker_counts = _broker_counts(image.brokers)
        if brokers_changed or image.topics is not self._topics:
            self._recount_topics(image, brokers_changed)
        self._brokers, self._topics = image.brokers, image.topics
        fenced, unfenced, shutdown, zk = self._broker_counts
        partitions, migrating, unassigned, lost, assigned, offline = self._totals
        zk_state = ZK_MIGRATION_STATES.get(image.features.zk_migration_state, "NONE")
        return {
            "cluster": self.cluster, "last_offset": last_offset, "timestamp": timestamp,
            "metadata_version": metadata_version_name(image.features.metadata_version) or "",
            "zk_migration_state": zk_state, "phase": phase(zk_state, zk),
            "dir_transition": dir_transition(image.brokers, migrating, unassigned),
            "brokers_fenced": fenced, "brokers_unfenced": unfenced, "brokers_controlled_shutdown": shutdown,
            "brokers_zk": zk, "topics": len(image.topics), "partitions": partitions,
            "replicas_migrating": migrating, "replicas_unassigned": unassigned, "replicas_lost": lost,
            "replicas_assigned": assigned, "offline_replicas": offline, "open_transaction": int(open_transaction),
        }

    def _recount_topics(self, image: MetadataImage, everything: bool) -> None:
        """Counts of changed partitions only: a batch changes a few partitions of a few topics (the images
        share unchanged TopicImage and PartitionRegistration objects); a broker change recounts all."""
        totals, cache, topics, brokers = self._totals, self._per_topic, image.topics, image.brokers
        if everything:
            cache.clear()
            totals[:] = [0] * 6
        changed = [(tid, t) for tid, t in topics.items() if cache.get(tid, _NONE)[0] is not t]
        removed = len(cache) + sum(tid not in cache for tid, _ in changed) != len(topics)
        for tid in [t for t in cache if t not in topics] if removed else ():
            for _, counts in cache.pop(tid)[1].values():
                _sub(totals, counts)
        for tid, topic in changed:
            parts = cache[tid][1] if tid in cache else {}
            for pid in [p for p in parts if p not in topic.partitions]:
                _sub(totals, parts.pop(pid)[1])
            for pid, part in topic.partitions.items():
                entry = parts.get(pid)
                if entry is not None:
                    if entry[0] is part:
                        continue
                    _sub(totals, entry[1])
                counts = _partition_counts(part, brokers)
                parts[pid] = (part, counts)
                for i, c in enumerate(counts):
                    totals[i] += c
            cache[tid] = (topic, parts)


_NONE = (None, None)


def _sub(totals: list[int], counts: tuple[int, ...]) -> None:
    for i, c in enumerate(counts):
        totals[i] -= c


def full_row(cluster: str, image: MetadataImage, last_offset: int, timestamp: int,
             open_transaction: bool) -> dict[str, Any]:
    """A row counted from scratch: the definition the incremental counter must equal."""
    return RowCounter(cluster).row(image, last_offset, timestamp, open_transaction)
