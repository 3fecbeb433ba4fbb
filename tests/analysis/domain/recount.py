"""Every count of the analysis counted from scratch, straight from its definition, over a whole published image
(ControllerMetadataMetricsPublisher.publishSnapshot counts Kafka's metrics so): what the step's counts, kept from
deltas, must equal after every batch. Tests only: the analysis itself never walks an image per batch."""

from __future__ import annotations

from typing import Any

from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED
from metalog.state.enums import ZK_MIGRATION_STATES, metadata_version_name
from metalog.state.image import MetadataImage

NO_LEADER = -1


def phase(zk_state: str, brokers_zk: int) -> str:
    if zk_state == "PRE_MIGRATION":
        return "pre-migration"
    if zk_state == "MIGRATION":
        return "hybrid" if brokers_zk else "dual-write"
    if zk_state == "POST_MIGRATION":
        return "post-migration"
    return "native"


def timeline(image: MetadataImage) -> dict[str, Any]:
    """A timeline row's counted columns (all but last_offset, timestamp and open_transaction)."""
    brokers = list(image.brokers.values())
    parts = [p for topic in image.topics.values() for p in topic.partitions.values()]
    directories = [d for p in parts for d in p.directories]
    migrating = sum(d == MIGRATING for d in directories)
    unassigned = sum(d == UNASSIGNED for d in directories)
    zk = sum(b.is_migrating_zk_broker for b in brokers)
    zk_state = ZK_MIGRATION_STATES.get(image.features.zk_migration_state, "NONE")
    with_dirs = sum(1 for b in brokers if b.directories)
    transition = "not-started" if not with_dirs else \
        "complete" if with_dirs == len(brokers) and not migrating and not unassigned else "in-progress"
    return {
        "metadata_version": metadata_version_name(image.features.metadata_version) or "",
        "zk_migration_state": zk_state, "phase": phase(zk_state, zk), "dir_transition": transition,
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
    }


BROKER_ZERO = ("unregistered", 0, 0, 0, 0, 0, 0, 0, 0, 0)
DIRECTORY_ZERO = (0, 0, 0, 0, 0)


def _kind(directory: Any) -> int:
    return 0 if directory == MIGRATING else 1 if directory == UNASSIGNED else 2 if directory == LOST else 3


def brokers_and_directories(image: MetadataImage) -> tuple[dict[int, tuple[Any, ...]],
                                                             dict[tuple[int, str], tuple[int, ...]]]:
    """Every broker's broker_timeline values and every real directory's directory_timeline values in ``image``,
    counted replica by replica with ``MetadataImage.offline_replicas`` (the zero values left out)."""
    per_broker: dict[int, list[int]] = {b: [0] * 6 for b in image.brokers}
    per_dir: dict[tuple[int, Any], list[int]] = {(b, d): [0] * 4 for b, reg in image.brokers.items()
                                                 for d in reg.directories}
    for topic in image.topics.values():
        for part in topic.partitions.values():
            offline = image.offline_replicas(part)
            for replica, directory in zip(part.replicas, part.directories, strict=True):
                counts = per_broker.setdefault(replica, [0] * 6)
                counts[_kind(directory)] += 1
                counts[4] += replica in offline
                counts[5] += replica == part.leader
                if _kind(directory) == 3:
                    d = per_dir.setdefault((replica, directory), [0] * 4)
                    d[0] += 1
                    d[1] += replica == part.leader
                    d[2] += replica in offline
                    d[3] += part.leader == NO_LEADER
    brokers = {}
    for b, counts in per_broker.items():
        reg = image.brokers.get(b)
        head = ("unregistered", 0, 0, 0) if reg is None else \
            ("fenced" if reg.fenced else "unfenced", int(reg.in_controlled_shutdown), int(reg.is_migrating_zk_broker),
             len(reg.directories))
        brokers[b] = (*head, *counts)
    dirs = {(b, str(d)): (int(b in image.brokers and image.brokers[b].has_online_dir(d)), *c)
            for (b, d), c in per_dir.items()}
    return ({b: v for b, v in brokers.items() if v != BROKER_ZERO},
            {k: v for k, v in dirs.items() if v != DIRECTORY_ZERO})
