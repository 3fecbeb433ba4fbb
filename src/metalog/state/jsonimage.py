"""The JSON form of an image that ``metalog replay --format json`` prints.

Its shape is the ``finalImage`` Kafka's own replay produced in the reference vectors:
metadataVersion, metadataVersionLevel, zkMigrationState, finalizedFeatures, brokers (by id),
topics (by name, partitions by id, with offlineReplicas) and configs ("TYPE/name").
"""

from __future__ import annotations

from typing import Any

from metalog.state.enums import (
    CONFIG_RESOURCE_TYPES,
    LEADER_RECOVERY_STATES,
    ZK_MIGRATION_STATES,
    metadata_version_name,
)
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration


def image_to_json(image: MetadataImage) -> dict[str, Any]:
    f = image.features
    return {
        "metadataVersion": metadata_version_name(f.metadata_version),
        "metadataVersionLevel": f.metadata_version,
        "zkMigrationState": ZK_MIGRATION_STATES.get(f.zk_migration_state, str(f.zk_migration_state)),
        "finalizedFeatures": dict(sorted(f.finalized.items())),
        "brokers": {str(b): broker_to_json(image.brokers[b]) for b in sorted(image.brokers)},
        "topics": {
            name: {"id": str(t.id),
                   "partitions": {str(p): partition_to_json(image, t.partitions[p]) for p in sorted(t.partitions)}}
            for name, t in sorted(image.topics_by_name.items())
        },
        "configs": {f"{CONFIG_RESOURCE_TYPES.get(rt, rt)}/{name}": dict(sorted(cfg.items()))
                    for (rt, name), cfg in sorted(image.configs.items())},
    }


def broker_to_json(b: BrokerRegistration) -> dict[str, Any]:
    return {
        "epoch": b.epoch, "incarnationId": str(b.incarnation_id), "rack": b.rack, "fenced": b.fenced,
        "inControlledShutdown": b.in_controlled_shutdown, "isMigratingZkBroker": b.is_migrating_zk_broker,
        "directoriesSorted": [str(d) for d in b.directories],
    }


def partition_to_json(image: MetadataImage, p: PartitionRegistration) -> dict[str, Any]:
    return {
        "replicas": list(p.replicas), "directories": [str(d) for d in p.directories], "isr": list(p.isr),
        "removingReplicas": list(p.removing_replicas), "addingReplicas": list(p.adding_replicas),
        "elr": list(p.elr), "lastKnownElr": list(p.last_known_elr), "leader": p.leader,
        "leaderRecoveryState": LEADER_RECOVERY_STATES[p.leader_recovery_state],
        "leaderEpoch": p.leader_epoch, "partitionEpoch": p.partition_epoch,
        "offlineReplicas": image.offline_replicas(p),
    }
