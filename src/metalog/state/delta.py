"""MetadataDelta: the changes records make to an image, and the one place each record's rule lives.

``replay(record, offset)`` applies one metadata record; ``apply()`` builds the new image,
sharing everything unchanged with the old one. A record that cannot apply raises ReplayError
naming the offset and the record, and leaves the delta as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from metalog.codec.uuid import MIGRATING, Uuid
from metalog.errors import ReplayError
from metalog.state.enums import (
    FENCE,
    IN_CONTROLLED_SHUTDOWN,
    LEADER_RECOVERY_NO_CHANGE,
    LEADER_RECOVERY_STATES,
    METADATA_VERSION_FEATURE,
    NO_FENCING_CHANGE,
    NO_LEADER_CHANGE,
    NO_SHUTDOWN_CHANGE,
    SECURITY_PROTOCOLS,
    TOPIC_RESOURCE,
    UNFENCE,
    ZK_MIGRATION_STATES,
    record_type_name,
)
from metalog.state.image import (
    BrokerRegistration,
    FeaturesImage,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)

_DELETED = None  # an overlay value that removes the entry
_new_tuple = tuple.__new__


class _TopicDelta:
    """A topic that is new or has changed partitions."""

    __slots__ = ("name", "id", "base", "base_partitions", "partitions")

    def __init__(self, name: str, topic_id: Uuid, base: TopicImage | None) -> None:
        self.name = name
        self.id = topic_id
        self.base = base  # the image's topic, whose partitions this delta overlays; None for a new topic
        self.base_partitions: dict[int, PartitionRegistration] = {} if base is None else base.partitions
        self.partitions: dict[int, PartitionRegistration] = {}  # the changed ones

    def partition(self, pid: int) -> PartitionRegistration | None:
        return self.partitions.get(pid) or self.base_partitions.get(pid)

    def image(self) -> TopicImage:
        if self.base is None:
            return TopicImage(self.name, self.id, dict(self.partitions))
        if not self.partitions:
            return self.base
        return TopicImage(self.name, self.id, {**self.base.partitions, **self.partitions})


class MetadataDelta:
    """Changes over ``image``; cheap to replay into, ``apply()`` to get the resulting image."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.offset = image.offset
        self.metadata_version: int | None = image.features.metadata_version
        self.features: dict[str, int | None] = {}
        self.zk_migration_state = image.features.zk_migration_state
        self.brokers: dict[int, BrokerRegistration | None] = {}
        self.controllers: dict[int, Any] = {}
        self.topics: dict[Uuid, _TopicDelta] = {}
        self.deleted_topics: set[Uuid] = set()
        self.configs: dict[tuple[int, str], dict[str, str | None]] = {}
        self.cleared_configs: set[tuple[int, str]] = set()
        self.client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float | None]] = {}
        self.next_producer_id = image.next_producer_id
        self.acls: dict[Uuid, Any] = {}
        self.scram: dict[tuple[str, int], Any] = {}
        self.delegation_tokens: dict[str, Any] = {}

    # ---- the entry point ---------------------------------------------------------------------------
    def replay(self, record: Any, offset: int | None = None) -> None:
        rule = _RULES.get(record.NAME)
        if rule is None:
            raise ReplayError(f"{record.NAME} is not a metadata record this state applies", offset=offset,
                              record=record.NAME)
        try:
            rule(self, record)
        except ReplayError as e:
            raise located(e, offset, record) from None
        if offset is not None:
            self.offset = offset

    # ---- lookups through the overlay ---------------------------------------------------------------
    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.brokers:
            return self.brokers[broker_id]
        return self.image.brokers.get(broker_id)

    def _broker_or_fail(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        broker = self.broker(broker_id)
        if broker is None:
            raise ReplayError(f"tried to {action} broker {broker_id}, but that broker was not registered")
        if broker.epoch != epoch:
            raise ReplayError(f"tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match "
                              f"the current broker epoch, {broker.epoch}")
        return broker

    def _topic(self, topic_id: Uuid) -> _TopicDelta:
        delta = self.topics.get(topic_id)
        if delta is None:
            base = None if topic_id in self.deleted_topics else self.image.topics.get(topic_id)
            if base is None:
                raise ReplayError(f"unknown topic id {topic_id}")
            delta = self.topics[topic_id] = _TopicDelta(base.name, topic_id, base)
        return delta

    # ---- features ----------------------------------------------------------------------------------
    def _feature_level(self, r: Any) -> None:
        if r.name == METADATA_VERSION_FEATURE:
            if r.feature_level < 1:
                raise ReplayError(f"metadata.version cannot be set to level {r.feature_level}")
            self.metadata_version = r.feature_level
        else:
            self.features[r.name] = r.feature_level if r.feature_level != 0 else _DELETED

    def _zk_migration_state(self, r: Any) -> None:
        if r.zk_migration_state not in ZK_MIGRATION_STATES:
            raise ReplayError(f"unknown ZkMigrationState value {r.zk_migration_state}")
        self.zk_migration_state = r.zk_migration_state

    # ---- cluster -----------------------------------------------------------------------------------
    def _register_broker(self, r: Any) -> None:
        # BrokerRegistration.fromRecord keeps listeners and features in maps by name: a repeated name keeps the last.
        listeners = {e.name: (e.name, e.host, e.port, e.security_protocol) for e in r.end_points}
        features = {f.name: (f.name, f.min_supported_version, f.max_supported_version) for f in r.features}
        self.brokers[r.broker_id] = BrokerRegistration(
            r.broker_id, r.broker_epoch, r.incarnation_id, tuple(listeners.values()), tuple(features.values()),
            r.rack, r.fenced, r.in_controlled_shutdown, r.is_migrating_zk_broker, tuple(r.log_dirs))

    def _unregister_broker(self, r: Any) -> None:
        self._broker_or_fail(r.broker_id, r.broker_epoch, "unregister")
        self.brokers[r.broker_id] = _DELETED

    def _fence_broker(self, r: Any) -> None:
        self.brokers[r.id] = self._broker_or_fail(r.id, r.epoch, "fence").clone_with(fenced=True)

    def _unfence_broker(self, r: Any) -> None:
        self.brokers[r.id] = self._broker_or_fail(r.id, r.epoch, "unfence").clone_with(fenced=False)

    def _broker_registration_change(self, r: Any) -> None:
        broker = self._broker_or_fail(r.broker_id, r.broker_epoch, "change")
        if r.fenced not in (FENCE, NO_FENCING_CHANGE, UNFENCE):
            raise ReplayError(f"unknown value for the Fenced field: {r.fenced}")
        if r.in_controlled_shutdown not in (NO_SHUTDOWN_CHANGE, IN_CONTROLLED_SHUTDOWN):
            raise ReplayError(f"unknown value for the InControlledShutdown field: {r.in_controlled_shutdown}")
        fenced = {FENCE: True, UNFENCE: False}.get(r.fenced)
        shutdown = True if r.in_controlled_shutdown == IN_CONTROLLED_SHUTDOWN else None
        dirs = tuple(r.log_dirs) if r.log_dirs else None  # null or empty: unchanged
        self.brokers[r.broker_id] = broker.clone_with(fenced, shutdown, dirs)

    def _register_controller(self, r: Any) -> None:
        # ControllerRegistration.Builder(record) refuses an endpoint whose security protocol it does not know.
        for e in r.end_points:
            if e.security_protocol not in SECURITY_PROTOCOLS:
                raise ReplayError(f"unknown security protocol {e.security_protocol} for endpoint {e.name!r}")
        self.controllers[r.controller_id] = r

    # ---- topics and partitions ---------------------------------------------------------------------
    def _topic_record(self, r: Any) -> None:
        self.deleted_topics.discard(r.topic_id)
        self.topics[r.topic_id] = _TopicDelta(r.name, r.topic_id, None)

    def _partition_record(self, r: Any) -> None:
        topic = self._topic(r.topic_id)
        directories = _directories(r.directories, len(r.replicas))
        topic.partitions[r.partition_id] = PartitionRegistration(
            tuple(r.replicas), directories, tuple(r.isr), tuple(r.removing_replicas), tuple(r.adding_replicas),
            tuple(r.eligible_leader_replicas or ()), tuple(r.last_known_elr or ()), r.leader,
            _recovery_state(r.leader_recovery_state), r.leader_epoch, r.partition_epoch)

    def _partition_change(self, r: Any) -> None:
        topic = self.topics.get(r.topic_id) or self._topic(r.topic_id)
        pid = r.partition_id
        old = topic.partitions.get(pid) or topic.base_partitions.get(pid)
        if old is None:
            raise ReplayError(f"unknown partition {topic.name}-{pid} (topic id {r.topic_id})")
        replicas, directories, isr, removing, adding, elr, last_known_elr, leader, recovery, leader_epoch, \
            partition_epoch = old
        if r.replicas is not None or r.directories is not None:
            replicas = replicas if r.replicas is None else tuple(r.replicas)
            directories = _merged_directories(directories, r, replicas)
        if r.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = r.leader, leader_epoch + 1
        if r.leader_recovery_state != LEADER_RECOVERY_NO_CHANGE:
            recovery = _recovery_state(r.leader_recovery_state)
        topic.partitions[pid] = _new_tuple(PartitionRegistration, (
            replicas, directories,
            isr if r.isr is None else tuple(r.isr),
            removing if r.removing_replicas is None else tuple(r.removing_replicas),
            adding if r.adding_replicas is None else tuple(r.adding_replicas),
            elr if r.eligible_leader_replicas is None else tuple(r.eligible_leader_replicas),
            last_known_elr if r.last_known_elr is None else tuple(r.last_known_elr),
            leader, recovery, leader_epoch, partition_epoch + 1))

    def _remove_topic(self, r: Any) -> None:
        name = self._topic(r.topic_id).name
        del self.topics[r.topic_id]
        self.deleted_topics.add(r.topic_id)
        self._clear_config((TOPIC_RESOURCE, name))

    # ---- configs and the rest ----------------------------------------------------------------------
    def _config(self, r: Any) -> None:
        # A resource type Kafka does not know is applied all the same (ConfigResource.Type.forId gives UNKNOWN).
        # metalog keeps the type's own id rather than UNKNOWN, so two unknown types never merge.
        self.configs.setdefault((r.resource_type, r.resource_name), {})[r.name] = r.value  # null deletes the key

    def _clear_config(self, resource: tuple[int, str]) -> None:
        self.configs.pop(resource, None)
        self.cleared_configs.add(resource)

    def _client_quota(self, r: Any) -> None:
        self.client_quotas.setdefault(quota_entity(r), {})[r.key] = None if r.remove else r.value

    def _producer_ids(self, r: Any) -> None:
        # Deliberately stricter than Kafka's image (ProducerIdsDelta takes any value): Kafka's controller refuses a
        # next producer id that is not greater than the current one (ProducerIdControlManager.replay), so no Kafka
        # controller wrote such a record; metalog reports it rather than publish a state that went back.
        if self.next_producer_id is not None and r.next_producer_id <= self.next_producer_id:
            raise ReplayError(f"next producer id {r.next_producer_id} is not greater than the current "
                              f"{self.next_producer_id}")
        self.next_producer_id = r.next_producer_id

    def _acl(self, r: Any) -> None:
        self.acls[r.id] = r

    def _remove_acl(self, r: Any) -> None:
        if (self.acls[r.id] if r.id in self.acls else self.image.acls.get(r.id)) is None:
            raise ReplayError(f"no ACL with id {r.id} to remove")
        self.acls[r.id] = _DELETED

    def _scram(self, r: Any) -> None:
        self.scram[(r.name, r.mechanism)] = r

    def _remove_scram(self, r: Any) -> None:
        key = (r.name, r.mechanism)
        if (self.scram[key] if key in self.scram else self.image.scram.get(key)) is None:
            raise ReplayError(f"no SCRAM credential for user {r.name!r} mechanism {r.mechanism} to remove")
        self.scram[key] = _DELETED

    def _token(self, r: Any) -> None:
        self.delegation_tokens[r.token_id] = r

    def _remove_token(self, r: Any) -> None:
        # A token that is not there is no error: Kafka's image (DelegationTokenDelta) and its controller
        # (DelegationTokenControlManager.replay) both take the removal as it comes.
        self.delegation_tokens[r.token_id] = _DELETED

    def _no_op(self, r: Any) -> None:
        pass

    # ---- the new image -----------------------------------------------------------------------------
    def apply(self) -> MetadataImage:
        img = self.image
        features = img.features
        if (self.metadata_version, self.zk_migration_state) != (features.metadata_version,
                                                                features.zk_migration_state) or self.features:
            features = FeaturesImage(self.metadata_version, _overlay(features.finalized, self.features),
                                     self.zk_migration_state)
        topics, by_name = img.topics, img.topics_by_name
        if self.topics or self.deleted_topics:
            topics = dict(img.topics)
            by_name = dict(img.topics_by_name)
            for tid in self.deleted_topics:
                gone = topics.pop(tid, None)
                if gone is not None and by_name.get(gone.name) is gone:
                    del by_name[gone.name]
            for tid, delta in self.topics.items():
                old = topics.get(tid)
                if old is not None and by_name.get(old.name) is old:
                    del by_name[old.name]
                topics[tid] = by_name[delta.name] = delta.image()
        return MetadataImage(
            offset=self.offset, features=features, brokers=_overlay(img.brokers, self.brokers),
            controllers=_overlay(img.controllers, self.controllers), topics=topics, topics_by_name=by_name,
            configs=self._apply_configs(), client_quotas=self._apply_quotas(),
            next_producer_id=self.next_producer_id, acls=_overlay(img.acls, self.acls),
            scram=_overlay(img.scram, self.scram),
            delegation_tokens=_overlay(img.delegation_tokens, self.delegation_tokens))

    def _apply_configs(self) -> dict[tuple[int, str], dict[str, str]]:
        if not self.configs and not self.cleared_configs:
            return self.image.configs
        configs = dict(self.image.configs)
        for resource in self.cleared_configs:
            configs.pop(resource, None)
        for resource, changes in self.configs.items():
            merged = _overlay(configs.get(resource, {}), changes)
            if merged:
                configs[resource] = merged
            else:
                configs.pop(resource, None)
        return configs

    def _apply_quotas(self) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        if not self.client_quotas:
            return self.image.client_quotas
        quotas = dict(self.image.client_quotas)
        for entity, changes in self.client_quotas.items():
            merged = _overlay(quotas.get(entity, {}), changes)
            if merged:
                quotas[entity] = merged
            else:
                quotas.pop(entity, None)
        return quotas


def located(error: ReplayError, offset: int | None, record: Any) -> ReplayError:
    """A rule's error with the offset and the record type named (a rule knows neither)."""
    if error.offset is None:
        return ReplayError(error.reason, offset=offset, record=record_type_name(record.NAME))
    return error


def rule_for(name: str) -> Callable[[MetadataDelta, Any], None] | None:
    """The rule that applies a record of message ``name`` to a delta (None: not a record a delta applies)."""
    return _RULES.get(name)


def quota_entity(r: Any) -> tuple[tuple[str, str | None], ...]:
    """A ClientQuotaRecord's entity as a key: (type, name) pairs by type. Kafka's ClientQuotaImage.dataToEntity
    builds a map by type, so a type named twice keeps its last name."""
    return tuple(sorted({e.entity_type: e.entity_name for e in r.entity}.items()))


def _overlay(base: dict[Any, Any], changes: dict[Any, Any]) -> dict[Any, Any]:
    """``base`` with ``changes`` on top; a None change removes the key. Shares ``base`` when nothing changed."""
    if not changes:
        return base
    merged = dict(base)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _merged_directories(current: tuple[Uuid, ...], r: Any, replicas: tuple[int, ...]) -> tuple[Uuid, ...]:
    """The directories after a PartitionChangeRecord that carries Replicas or Directories, for ``replicas``.

    Kafka's PartitionRegistration.merge (since KAFKA-16583, 3.7.1 and 3.8): a record without Directories (null,
    as every record written below metadata.version 3.7-IV2 is) keeps the current directories by position; the
    record's Directories replace them otherwise; and directories that are all MIGRATING (or an empty list)
    become MIGRATING for every replica, however many there now are. Anything else whose length does not match
    the replicas is refused, as Kafka's checkDirectories and constructor refuse it.
    """
    if r.directories is None:
        directories = current
    else:
        if r.replicas is not None and r.directories and len(r.directories) != len(r.replicas):
            raise ReplayError(f"{len(r.directories)} directories for {len(r.replicas)} replicas")
        directories = tuple(r.directories)
    if directories.count(MIGRATING) == len(directories):  # all MIGRATING (or none)
        return (MIGRATING,) * len(replicas)
    if len(directories) != len(replicas):
        if r.directories is None:
            raise ReplayError(f"Replicas changes to {len(replicas)} replicas without Directories, and the "
                              f"{len(directories)} current directories are not all MIGRATING")
        raise ReplayError(f"{len(directories)} directories for {len(replicas)} replicas")
    return directories


def _directories(directories: list[Uuid] | None, n_replicas: int) -> tuple[Uuid, ...]:
    """PartitionRecord.Directories: null, empty or all MIGRATING mean MIGRATING for every replica."""
    if not directories:
        return (MIGRATING,) * n_replicas
    if len(directories) != n_replicas:
        raise ReplayError(f"{len(directories)} directories for {n_replicas} replicas")
    return tuple(directories)


def _recovery_state(value: int) -> int:
    if value not in LEADER_RECOVERY_STATES:
        raise ReplayError(f"unknown LeaderRecoveryState value {value}")
    return value


# One rule per metadata record type (by message name). Transactions are the loader's business.
_RULES: dict[str, Callable[[MetadataDelta, Any], None]] = {
    "FeatureLevelRecord": MetadataDelta._feature_level,
    "ZkMigrationStateRecord": MetadataDelta._zk_migration_state,
    "RegisterBrokerRecord": MetadataDelta._register_broker,
    "UnregisterBrokerRecord": MetadataDelta._unregister_broker,
    "FenceBrokerRecord": MetadataDelta._fence_broker,
    "UnfenceBrokerRecord": MetadataDelta._unfence_broker,
    "BrokerRegistrationChangeRecord": MetadataDelta._broker_registration_change,
    "RegisterControllerRecord": MetadataDelta._register_controller,
    "TopicRecord": MetadataDelta._topic_record,
    "PartitionRecord": MetadataDelta._partition_record,
    "PartitionChangeRecord": MetadataDelta._partition_change,
    "RemoveTopicRecord": MetadataDelta._remove_topic,
    "ConfigRecord": MetadataDelta._config,
    "ClientQuotaRecord": MetadataDelta._client_quota,
    "ProducerIdsRecord": MetadataDelta._producer_ids,
    "AccessControlEntryRecord": MetadataDelta._acl,
    "RemoveAccessControlEntryRecord": MetadataDelta._remove_acl,
    "UserScramCredentialRecord": MetadataDelta._scram,
    "RemoveUserScramCredentialRecord": MetadataDelta._remove_scram,
    "DelegationTokenRecord": MetadataDelta._token,
    "RemoveDelegationTokenRecord": MetadataDelta._remove_token,
    "NoOpRecord": MetadataDelta._no_op,
}
