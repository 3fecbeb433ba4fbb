"""An image written out as metadata records (what a snapshot holds), in one canonical order.

The order: metadata.version first, then the other finalized features, the ZK migration state,
brokers, controllers, each topic followed by its partitions, configs, client quotas, producer
ids, ACLs, SCRAM credentials, delegation tokens; within each, by key. The metadata.version
decides each record's version as Kafka's ImageWriterOptions does. The digest of an image is the
SHA-256 of these records framed as in the log, so equal images have equal digests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from metalog.codec.framing import encode_metadata_record
from metalog.codec.messages import (
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    ZkMigrationStateRecord,
)
from metalog.codec.messages.client_quota_record import EntityData
from metalog.codec.messages.register_broker_record import BrokerEndpoint, BrokerFeature
from metalog.codec.runtime import ApiMessage
from metalog.codec.uuid import MIGRATING, Uuid
from metalog.state.enums import (
    METADATA_VERSION_FEATURE,
    METADATA_VERSIONS,
    MV_3_3_IV3_IN_CONTROLLED_SHUTDOWN,
    MV_3_4_IV0_MIGRATION,
    MV_3_7_IV0_CONTROLLER_REGISTRATION,
    MV_3_7_IV2_DIRECTORY_ASSIGNMENT,
    MV_4_0_IV1_ELR,
)
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration, uuid_order

_LATEST = max(METADATA_VERSIONS)


def image_records(image: MetadataImage) -> Iterator[tuple[ApiMessage, int]]:
    """``(record, version)`` pairs that rebuild ``image`` when replayed into an empty one.

    Without a metadata.version (nothing set it yet) the latest record versions are used, so
    nothing is lost.
    """
    mv = image.features.metadata_version
    level = _LATEST if mv is None else mv
    yield from _feature_records(image, level)
    for broker_id in sorted(image.brokers):
        yield broker_record(image.brokers[broker_id], level)
    if level >= MV_3_7_IV0_CONTROLLER_REGISTRATION:
        for controller_id in sorted(image.controllers):
            yield image.controllers[controller_id], 0
    for name, topic in sorted(image.topics_by_name.items()):
        yield TopicRecord(name=name, topic_id=topic.id), 0
        for pid in sorted(topic.partitions):
            yield partition_record(topic.id, pid, topic.partitions[pid], level)
    for (rtype, rname), values in sorted(image.configs.items()):
        for key, value in sorted(values.items()):
            yield ConfigRecord(resource_type=rtype, resource_name=rname, name=key, value=value), 0
    yield from _quota_records(image)
    yield from _security_records(image)


def _feature_records(image: MetadataImage, level: int) -> Iterator[tuple[ApiMessage, int]]:
    """metadata.version (when set), the other finalized features and the ZK migration state (from 3.4-IV0)."""
    mv = image.features.metadata_version
    if mv is not None:
        yield FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=mv), 0
    for name, feature_level in sorted(image.features.finalized.items()):
        yield FeatureLevelRecord(name=name, feature_level=feature_level), 0
    if level >= MV_3_4_IV0_MIGRATION:
        yield ZkMigrationStateRecord(zk_migration_state=image.features.zk_migration_state), 0


def _security_records(image: MetadataImage) -> Iterator[tuple[ApiMessage, int]]:
    """The producer ids, ACLs, SCRAM credentials and delegation tokens, in the canonical order."""
    if image.next_producer_id is not None:
        yield ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id), 0
    for acl_id in sorted(image.acls, key=uuid_order):
        yield image.acls[acl_id], 0
    for user_mechanism in sorted(image.scram):
        yield image.scram[user_mechanism], 0
    for token_id in sorted(image.delegation_tokens):
        yield image.delegation_tokens[token_id], 0


def broker_record(b: BrokerRegistration, level: int) -> tuple[RegisterBrokerRecord, int]:
    record = RegisterBrokerRecord(
        broker_id=b.id, incarnation_id=b.incarnation_id, broker_epoch=b.epoch, rack=b.rack, fenced=b.fenced,
        end_points=[BrokerEndpoint(name=n, host=h, port=p, security_protocol=s) for n, h, p, s in b.listeners],
        features=[BrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                  for n, lo, hi in b.features],
        in_controlled_shutdown=b.in_controlled_shutdown and level >= MV_3_3_IV3_IN_CONTROLLED_SHUTDOWN,
        is_migrating_zk_broker=b.is_migrating_zk_broker and level >= MV_3_4_IV0_MIGRATION,
        log_dirs=list(b.directories) if level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT else [])
    if level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT:
        version = 3
    elif level >= MV_3_4_IV0_MIGRATION:
        version = 2
    else:
        version = 1 if level >= MV_3_3_IV3_IN_CONTROLLED_SHUTDOWN else 0
    return record, version


def partition_record(topic_id: Uuid, pid: int, p: PartitionRegistration, level: int) -> tuple[PartitionRecord, int]:
    elr = level >= MV_4_0_IV1_ELR
    dirs = level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT
    record = PartitionRecord(
        partition_id=pid, topic_id=topic_id, replicas=list(p.replicas), isr=list(p.isr),
        removing_replicas=list(p.removing_replicas), adding_replicas=list(p.adding_replicas), leader=p.leader,
        leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        directories=list(p.directories) if dirs else [],
        eligible_leader_replicas=list(p.elr) if elr and p.elr else None,
        last_known_elr=list(p.last_known_elr) if elr and p.last_known_elr else None)
    return record, 2 if elr else 1 if dirs else 0


def lost_in_image(image: MetadataImage) -> list[str]:
    """What writing ``image`` at its own metadata.version cannot carry (Kafka's ImageWriterOptions.handleLoss)."""
    level = image.features.metadata_version or _LATEST
    lost = []
    if level < MV_3_7_IV2_DIRECTORY_ASSIGNMENT and any(
            d != MIGRATING for t in image.topics.values() for p in t.partitions.values() for d in p.directories):
        lost.append("the directory assignment state of one or more replicas")
    return lost


def _quota_records(image: MetadataImage) -> Iterator[tuple[ClientQuotaRecord, int]]:
    for entity in sorted(image.client_quotas, key=lambda e: [(t, n or "") for t, n in e]):
        for key, value in sorted(image.client_quotas[entity].items()):
            yield ClientQuotaRecord(entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity], key=key,
                                    value=value), 0


def image_digest(image: MetadataImage) -> str:
    """SHA-256 of the canonical records; equal for equal states however they were reached."""
    h = hashlib.sha256()
    for record, version in image_records(image):
        h.update(encode_metadata_record(record, version))
    return h.hexdigest()
