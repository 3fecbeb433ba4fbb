"""The one table of metadata record rules: what each record type does to the state, and where.

Per record type (by message name) one ``RecordRule``:

- ``domain``: the part of Kafka's MetadataImage it changes (Kafka's ``MetadataDelta.replay`` dispatches once on
  the record type to one delta per domain: metadata/src/main/java/org/apache/kafka/image/MetadataDelta.java);
  the transaction markers are the loader's (MetadataBatchLoader), and NoOpRecord changes nothing;
- ``apply``: the rule, ``apply(delta, record)``, which changes a ``MetadataDelta`` or raises ReplayError and
  changes nothing (None for the transaction markers: ``MetadataLoader`` handles them);
- ``entity`` and ``key``: the entity it changes, as the image's map (``brokers``, ``topics``, ...; the three
  single values ``zk_migration_state``, ``next_producer_id`` and the finalized ``features`` by name) and the
  record's key in it;
- ``full``: the record writes the whole entity, whatever was there before (a RegisterBrokerRecord); otherwise
  it changes the entity there (a FenceBrokerRecord), and its effect depends on it.

Sequential replay (``MetadataDelta``, ``MetadataLoader``) applies the rules; the parallel replay's overlays
(``metalog.state.overlay``) key and compose by ``entity``, ``key`` and ``full``, and apply the same rules. A
metadata record type of the codec's definitions without an entry fails ``tests/state/test_rule_table.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import Enum
from operator import attrgetter
from typing import TYPE_CHECKING, Any

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
)
from metalog.state.image import BrokerRegistration, PartitionRegistration

if TYPE_CHECKING:
    from metalog.codec.messages import (
        AccessControlEntryRecord,
        BrokerRegistrationChangeRecord,
        ClientQuotaRecord,
        ConfigRecord,
        DelegationTokenRecord,
        FeatureLevelRecord,
        FenceBrokerRecord,
        NoOpRecord,
        PartitionChangeRecord,
        PartitionRecord,
        ProducerIdsRecord,
        RegisterBrokerRecord,
        RegisterControllerRecord,
        RemoveAccessControlEntryRecord,
        RemoveDelegationTokenRecord,
        RemoveTopicRecord,
        RemoveUserScramCredentialRecord,
        TopicRecord,
        UnfenceBrokerRecord,
        UnregisterBrokerRecord,
        UserScramCredentialRecord,
        ZkMigrationStateRecord,
    )
    from metalog.codec.runtime import ApiMessage
    from metalog.state.delta import MetadataDelta

# A rule of the table, ``apply(delta, record)``. Each rule names its own record class (``partition_record(d:
# MetadataDelta, r: PartitionRecord)``), so mypy checks its body against the record's fields; the table holds
# rules of many record types and picks one by the record's name at run time, so a row takes Any record, and
# tests/state/test_rule_table.py checks each row's rule and key are declared for the row's record class.
Rule = Callable[["MetadataDelta", Any], None]
Key = Callable[[Any], Hashable]
_DELETED = None  # a delta value that removes the entry
_new_tuple = tuple.__new__


class Domain(Enum):
    """Kafka's image domains (one delta each in Kafka's MetadataDelta), and the loader's transaction markers."""

    FEATURES = "features"
    CLUSTER = "cluster"
    TOPICS = "topics"
    CONFIGS = "configs"
    CLIENT_QUOTAS = "client quotas"
    PRODUCER_IDS = "producer ids"
    ACLS = "acls"
    SCRAM = "scram"
    DELEGATION_TOKENS = "delegation tokens"
    TRANSACTIONS = "transactions"  # MetadataBatchLoader's: Begin, End and AbortTransactionRecord
    NONE = "none"  # NoOpRecord: only the offset moves


@dataclass(frozen=True, slots=True)
class RecordRule:
    """One record type's row of the table (see the module's docstring)."""

    record: str  # the message name, e.g. PartitionChangeRecord
    domain: Domain
    apply: Rule | None
    entity: str | None = None
    key: Key | None = None
    full: bool = False


# ---- entity keys --------------------------------------------------------------------------------------------
def quota_entity(r: ClientQuotaRecord) -> tuple[tuple[str, str | None], ...]:
    """A ClientQuotaRecord's entity as a key: (type, name) pairs by type. Kafka's ClientQuotaImage.dataToEntity
    builds a map by type, so a type named twice keeps its last name."""
    return tuple(sorted({e.entity_type: e.entity_name for e in r.entity}.items()))


def config_resource(r: ConfigRecord) -> tuple[int, str]:
    """A ConfigRecord's resource: (resource type, resource name)."""
    return r.resource_type, r.resource_name


def topic_configs(topic_name: str) -> tuple[int, str]:
    """The config resource a RemoveTopicRecord clears with its topic (Kafka's ConfigurationsDelta.replay of a
    RemoveTopicRecord deletes the TOPIC resource of the topic's name)."""
    return TOPIC_RESOURCE, topic_name


def _scram_key(r: UserScramCredentialRecord | RemoveUserScramCredentialRecord) -> tuple[str, int]:
    return r.name, r.mechanism


def _single(r: ApiMessage) -> None:
    """The key of a single value (the ZooKeeper migration state, the next producer id)."""
    return None


# ---- features -----------------------------------------------------------------------------------------------
def feature_level(d: MetadataDelta, r: FeatureLevelRecord) -> None:
    if r.name == METADATA_VERSION_FEATURE:
        if r.feature_level < 1:
            raise ReplayError(f"metadata.version cannot be set to level {r.feature_level}")
        d.metadata_version = r.feature_level
    else:
        d.features[r.name] = r.feature_level if r.feature_level != 0 else _DELETED


def zk_migration_state(d: MetadataDelta, r: ZkMigrationStateRecord) -> None:
    if r.zk_migration_state not in ZK_MIGRATION_STATES:
        raise ReplayError(f"unknown ZkMigrationState value {r.zk_migration_state}")
    d.zk_migration_state = r.zk_migration_state


# ---- cluster ------------------------------------------------------------------------------------------------
def register_broker(d: MetadataDelta, r: RegisterBrokerRecord) -> None:
    # BrokerRegistration.fromRecord keeps listeners and features in maps by name: a repeated name keeps the last.
    listeners = {e.name: (e.name, e.host, e.port, e.security_protocol) for e in r.end_points}
    features = {f.name: (f.name, f.min_supported_version, f.max_supported_version) for f in r.features}
    d.brokers[r.broker_id] = BrokerRegistration(
        id=r.broker_id, epoch=r.broker_epoch, incarnation_id=r.incarnation_id, listeners=tuple(listeners.values()),
        features=tuple(features.values()), rack=r.rack, fenced=r.fenced,
        in_controlled_shutdown=r.in_controlled_shutdown, is_migrating_zk_broker=r.is_migrating_zk_broker,
        directories=tuple(r.log_dirs))


def unregister_broker(d: MetadataDelta, r: UnregisterBrokerRecord) -> None:
    d.broker_or_fail(r.broker_id, r.broker_epoch, "unregister")
    d.brokers[r.broker_id] = _DELETED


def fence_broker(d: MetadataDelta, r: FenceBrokerRecord) -> None:
    d.brokers[r.id] = d.broker_or_fail(r.id, r.epoch, "fence").clone_with(fenced=True)


def unfence_broker(d: MetadataDelta, r: UnfenceBrokerRecord) -> None:
    d.brokers[r.id] = d.broker_or_fail(r.id, r.epoch, "unfence").clone_with(fenced=False)


def broker_registration_change(d: MetadataDelta, r: BrokerRegistrationChangeRecord) -> None:
    broker = d.broker_or_fail(r.broker_id, r.broker_epoch, "change")
    if r.fenced not in (FENCE, NO_FENCING_CHANGE, UNFENCE):
        raise ReplayError(f"unknown value for the Fenced field: {r.fenced}")
    if r.in_controlled_shutdown not in (NO_SHUTDOWN_CHANGE, IN_CONTROLLED_SHUTDOWN):
        raise ReplayError(f"unknown value for the InControlledShutdown field: {r.in_controlled_shutdown}")
    fenced = {FENCE: True, UNFENCE: False}.get(r.fenced)
    shutdown = True if r.in_controlled_shutdown == IN_CONTROLLED_SHUTDOWN else None
    dirs = tuple(r.log_dirs) if r.log_dirs else None  # null or empty: unchanged
    d.brokers[r.broker_id] = broker.clone_with(fenced, shutdown, dirs)


def register_controller(d: MetadataDelta, r: RegisterControllerRecord) -> None:
    # ControllerRegistration.Builder(record) refuses an endpoint whose security protocol it does not know.
    for e in r.end_points:
        if e.security_protocol not in SECURITY_PROTOCOLS:
            raise ReplayError(f"unknown security protocol {e.security_protocol} for endpoint {e.name!r}")
    d.controllers[r.controller_id] = r


# ---- topics and partitions ----------------------------------------------------------------------------------
def topic_record(d: MetadataDelta, r: TopicRecord) -> None:
    d.start_topic(r.name, r.topic_id)


def partition_record(d: MetadataDelta, r: PartitionRecord) -> None:
    topic = d.topic_delta(r.topic_id)
    replicas, directories = tuple(r.replicas), _directories(r.directories, len(r.replicas))
    elr, last_known_elr = tuple(r.eligible_leader_replicas or ()), tuple(r.last_known_elr or ())
    recovery = _recovery_state(r.leader_recovery_state)
    # the fields in PartitionRegistration's order (its own constructor costs three times this per record)
    topic.partitions[r.partition_id] = _new_tuple(PartitionRegistration, (
        replicas, directories, tuple(r.isr), tuple(r.removing_replicas), tuple(r.adding_replicas), elr,
        last_known_elr, r.leader, recovery, r.leader_epoch, r.partition_epoch))


def partition_change(d: MetadataDelta, r: PartitionChangeRecord) -> None:
    topic = d.topics.get(r.topic_id) or d.topic_delta(r.topic_id)
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
    # the fields in PartitionRegistration's order, built inline: a call more per PartitionChangeRecord, replay's
    # most common record, cost about 5% of replay
    topic.partitions[pid] = _new_tuple(PartitionRegistration, (
        replicas, directories,
        isr if r.isr is None else tuple(r.isr),
        removing if r.removing_replicas is None else tuple(r.removing_replicas),
        adding if r.adding_replicas is None else tuple(r.adding_replicas),
        elr if r.eligible_leader_replicas is None else tuple(r.eligible_leader_replicas),
        last_known_elr if r.last_known_elr is None else tuple(r.last_known_elr),
        leader, recovery, leader_epoch, partition_epoch + 1))


PARTITION_CHANGE_LISTS = (("isr", "isr"), ("removing_replicas", "removing_replicas"),
                          ("adding_replicas", "adding_replicas"), ("eligible_leader_replicas", "elr"),
                          ("last_known_elr", "last_known_elr"))
"""PartitionChangeRecord's lists that replace, when not null, the PartitionRegistration field named beside each
(``partition_change``, which writes them inline; its compiled twin reads them here:
``metalog.state.value_replay``)."""


PARTITION_RECORD_LISTS = (("replicas", "replicas", False), ("isr", "isr", False),
                          ("removing_replicas", "removing_replicas", False),
                          ("adding_replicas", "adding_replicas", False), ("eligible_leader_replicas", "elr", True),
                          ("last_known_elr", "last_known_elr", True))
"""PartitionRecord's lists, each copied as a tuple into the PartitionRegistration field named beside it, a null one
as empty where the third item says so (``partition_record``, which writes them inline; its compiled twin reads
them here: ``metalog.state.value_replay``). Its Directories go through ``_directories``, its LeaderRecoveryState
through ``_recovery_state``, and its Leader, LeaderEpoch and PartitionEpoch are copied into the fields of their
names."""


def remove_topic(d: MetadataDelta, r: RemoveTopicRecord) -> None:
    name = d.remove_topic(r.topic_id)
    d.clear_config(topic_configs(name))


# ---- configs and the rest -----------------------------------------------------------------------------------
def config(d: MetadataDelta, r: ConfigRecord) -> None:
    # A resource type Kafka does not know is applied all the same (ConfigResource.Type.forId gives UNKNOWN).
    # metalog keeps the type's own id rather than UNKNOWN, so two unknown types never merge.
    d.configs.setdefault(config_resource(r), {})[r.name] = r.value  # null deletes the key


def client_quota(d: MetadataDelta, r: ClientQuotaRecord) -> None:
    d.client_quotas.setdefault(quota_entity(r), {})[r.key] = None if r.remove else r.value


def producer_ids(d: MetadataDelta, r: ProducerIdsRecord) -> None:
    # Deliberately stricter than Kafka's image (ProducerIdsDelta takes any value): Kafka's controller refuses a
    # next producer id that is not greater than the current one (ProducerIdControlManager.replay), so no Kafka
    # controller wrote such a record; metalog reports it rather than publish a state that went back.
    if d.next_producer_id is not None and r.next_producer_id <= d.next_producer_id:
        raise ReplayError(f"next producer id {r.next_producer_id} is not greater than the current "
                          f"{d.next_producer_id}")
    d.next_producer_id = r.next_producer_id


def acl(d: MetadataDelta, r: AccessControlEntryRecord) -> None:
    d.acls[r.id] = r


def remove_acl(d: MetadataDelta, r: RemoveAccessControlEntryRecord) -> None:
    if (d.acls[r.id] if r.id in d.acls else d.image.acls.get(r.id)) is None:
        raise ReplayError(f"no ACL with id {r.id} to remove")
    d.acls[r.id] = _DELETED


def scram(d: MetadataDelta, r: UserScramCredentialRecord) -> None:
    d.scram[_scram_key(r)] = r


def remove_scram(d: MetadataDelta, r: RemoveUserScramCredentialRecord) -> None:
    key = _scram_key(r)
    if (d.scram[key] if key in d.scram else d.image.scram.get(key)) is None:
        raise ReplayError(f"no SCRAM credential for user {r.name!r} mechanism {r.mechanism} to remove")
    d.scram[key] = _DELETED


def token(d: MetadataDelta, r: DelegationTokenRecord) -> None:
    d.delegation_tokens[r.token_id] = r


def remove_token(d: MetadataDelta, r: RemoveDelegationTokenRecord) -> None:
    # A token that is not there is no error: Kafka's image (DelegationTokenDelta) and its controller
    # (DelegationTokenControlManager.replay) both take the removal as it comes.
    d.delegation_tokens[r.token_id] = _DELETED


def no_op(d: MetadataDelta, r: NoOpRecord) -> None:
    pass


# ---- partitions ----------------------------------------------------------------------------------------------
def _merged_directories(current: tuple[Uuid, ...], r: PartitionChangeRecord,
                        replicas: tuple[int, ...]) -> tuple[Uuid, ...]:
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


# ---- the table ----------------------------------------------------------------------------------------------
_D = Domain
FULL = True  # the record writes the whole entity
RULES: dict[str, RecordRule] = {rule.record: rule for rule in (
    RecordRule("FeatureLevelRecord", _D.FEATURES, feature_level, "features", attrgetter("name"), FULL),
    RecordRule("ZkMigrationStateRecord", _D.FEATURES, zk_migration_state, "zk_migration_state", _single, FULL),
    RecordRule("RegisterBrokerRecord", _D.CLUSTER, register_broker, "brokers", attrgetter("broker_id"), FULL),
    RecordRule("UnregisterBrokerRecord", _D.CLUSTER, unregister_broker, "brokers", attrgetter("broker_id")),
    RecordRule("FenceBrokerRecord", _D.CLUSTER, fence_broker, "brokers", attrgetter("id")),
    RecordRule("UnfenceBrokerRecord", _D.CLUSTER, unfence_broker, "brokers", attrgetter("id")),
    RecordRule("BrokerRegistrationChangeRecord", _D.CLUSTER, broker_registration_change, "brokers",
               attrgetter("broker_id")),
    RecordRule("RegisterControllerRecord", _D.CLUSTER, register_controller, "controllers",
               attrgetter("controller_id"), FULL),
    RecordRule("TopicRecord", _D.TOPICS, topic_record, "topics", attrgetter("topic_id"), FULL),
    RecordRule("PartitionRecord", _D.TOPICS, partition_record, "topics", attrgetter("topic_id")),
    RecordRule("PartitionChangeRecord", _D.TOPICS, partition_change, "topics", attrgetter("topic_id")),
    # also clears the topic's configs (``topic_configs``), as Kafka's MetadataDelta.replay(RemoveTopicRecord) does
    RecordRule("RemoveTopicRecord", _D.TOPICS, remove_topic, "topics", attrgetter("topic_id")),
    RecordRule("ConfigRecord", _D.CONFIGS, config, "configs", config_resource),
    RecordRule("ClientQuotaRecord", _D.CLIENT_QUOTAS, client_quota, "client_quotas", quota_entity),
    # not full: metalog refuses a next producer id that does not grow (``producer_ids``), which reads the old one
    RecordRule("ProducerIdsRecord", _D.PRODUCER_IDS, producer_ids, "next_producer_id", _single),
    RecordRule("AccessControlEntryRecord", _D.ACLS, acl, "acls", attrgetter("id"), FULL),
    RecordRule("RemoveAccessControlEntryRecord", _D.ACLS, remove_acl, "acls", attrgetter("id")),
    RecordRule("UserScramCredentialRecord", _D.SCRAM, scram, "scram", _scram_key, FULL),
    RecordRule("RemoveUserScramCredentialRecord", _D.SCRAM, remove_scram, "scram", _scram_key),
    RecordRule("DelegationTokenRecord", _D.DELEGATION_TOKENS, token, "delegation_tokens", attrgetter("token_id"),
               FULL),
    RecordRule("RemoveDelegationTokenRecord", _D.DELEGATION_TOKENS, remove_token, "delegation_tokens",
               attrgetter("token_id")),
    RecordRule("NoOpRecord", _D.NONE, no_op),
    RecordRule("BeginTransactionRecord", _D.TRANSACTIONS, None),
    RecordRule("EndTransactionRecord", _D.TRANSACTIONS, None),
    RecordRule("AbortTransactionRecord", _D.TRANSACTIONS, None),
)}
"""Every metadata record type's rule, by message name."""

APPLY: dict[str, Rule] = {name: rule.apply for name, rule in RULES.items() if rule.apply is not None}
"""The rules that change a MetadataDelta, by message name (MetadataDelta.replay's one dispatch)."""

TRANSACTION_MARKERS = frozenset(name for name, rule in RULES.items() if rule.domain is Domain.TRANSACTIONS)


def entity_key(record: ApiMessage) -> tuple[tuple[str, Hashable], bool]:
    """``((entity, key), full)`` of a record that changes an entity (see the table)."""
    rule = RULES[record.NAME]
    assert rule.entity is not None and rule.key is not None, f"{record.NAME} changes no entity"
    return (rule.entity, rule.key(record)), rule.full


Reader = Callable[[bytes, int], tuple[Any, int]]
Dispatch = dict[int, tuple[Reader, "Rule | None"]]


def dispatch() -> Dispatch:
    """apiKey << 8 | version -> (the generated reader, the rule; None for a transaction marker): the fused replay's
    one lookup per record value (bytes 1 and 2 of the value; the body starts at 3). Built once, from the codec's
    one table of readers (``metalog.codec.framing.metadata_readers``) and this table."""
    if not _DISPATCH:
        from metalog.codec.definitions import METADATA_BY_API_KEY
        from metalog.codec.framing import metadata_readers

        for key, reader in metadata_readers().items():
            rule = RULES.get(METADATA_BY_API_KEY[key >> 8].name)
            if rule is not None:
                _DISPATCH[key] = (reader, rule.apply)
    return _DISPATCH


_DISPATCH: Dispatch = {}  # filled on first use: importing every record class takes time
