"""Controller commands: checked against a MetadataImage, answered with Kafka's response, and the
records they imply, all or nothing.

``execute(image, command, ctx)`` is pure: no I/O, no clock, no randomness (a new topic's id and a
registration's epoch come in with the command and its context). A refused command returns no
records, the error code and a message saying why. RegisterBroker, Heartbeat and
AssignReplicasToDirs take and answer Kafka's own request/response messages; the others take the
small command classes below and answer an ``ApiResult`` (metalog has no generated CreateTopics,
DeleteTopics, AlterPartition or UpdateFeatures messages).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from metalog.codec.messages import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
    BeginTransactionRecord,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationChangeRecord,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    EndTransactionRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    ZkMigrationStateRecord,
)
from metalog.codec.messages.assign_replicas_to_dirs_response import DirectoryData, PartitionData, TopicData
from metalog.codec.runtime import ApiMessage
from metalog.codec.uuid import Uuid
from metalog.controller import errors as E
from metalog.controller.changes import Changes, partition_record_version
from metalog.controller.placement import BrokerMetadata, assign_replicas_to_brokers
from metalog.errors import PlacementError, Rejected, ReplayError
from metalog.state.enums import (
    METADATA_VERSION_FEATURE,
    METADATA_VERSIONS,
    MV_3_4_IV0_MIGRATION,
    MV_3_6_IV1_TRANSACTIONS,
    MV_3_7_IV2_DIRECTORY_ASSIGNMENT,
    NO_LEADER_CHANGE,
    ZK_MIGRATION_STATES,
    ZK_MIGRATION_VALUES,
)
from metalog.state.image import BrokerRegistration, MetadataImage, TopicImage
from metalog.state.records import broker_record

MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass(frozen=True)
class CommandContext:
    """What the controller knows besides the image: where the next record lands and its cluster id."""

    next_offset: int = 0
    cluster_id: str | None = None


@dataclass
class ApiResult:
    """The answer to a command that has no generated response message here."""

    error_code: int = E.NONE
    error_message: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    response: ApiMessage | ApiResult  # Kafka's response message, or an ApiResult for the small commands
    records: list[tuple[ApiMessage, int]]
    error_code: int = E.NONE
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_code == E.NONE


# ---- the commands without a generated request ----------------------------------------------------
@dataclass(frozen=True)
class CreateTopic:
    name: str
    topic_id: Uuid
    partitions: int
    replication_factor: int
    start_index: int = 0  # KIP-36 placement start (Kafka picks it at random; commands stay pure)


@dataclass(frozen=True)
class DeleteTopic:
    name: str


@dataclass(frozen=True)
class AlterPartition:
    """The leader's AlterPartition for one partition: a new ISR (and optionally a new leader from it)."""

    broker_id: int
    broker_epoch: int
    topic_id: Uuid
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    new_leader: int = NO_LEADER_CHANGE


@dataclass(frozen=True)
class UnregisterBroker:
    broker_id: int


@dataclass(frozen=True)
class SetFeatureLevel:
    name: str
    level: int


@dataclass(frozen=True)
class ZkMigrationTransition:
    """Move the ZK migration state; MIGRATION carries the records migrated from ZooKeeper."""

    target: int
    migrated: tuple[tuple[ApiMessage, int], ...] = ()  # (record, version)


# ---- dispatch ----------------------------------------------------------------------------------
def execute(image: MetadataImage, command: Command, ctx: CommandContext = CommandContext()) -> Result:
    handler, on_error = _HANDLERS[type(command).__name__]
    changes = Changes(image)
    try:
        response = handler(changes, command, ctx)
    except Rejected as e:
        return Result(on_error(e.code, e.message), [], e.code, e.message)
    except ReplayError as e:  # a record this command built does not apply: refuse it whole
        msg = f"internal error: {e}"
        return Result(on_error(E.UNKNOWN_SERVER_ERROR, msg), [], E.UNKNOWN_SERVER_ERROR, msg)
    code = getattr(response, "error_code", E.NONE)
    return Result(response, changes.records, code, getattr(response, "error_message", None))


def _api_error(code: int, message: str) -> ApiResult:
    return ApiResult(code, message)


def _check_epoch(changes: Changes, broker_id: int, epoch: int) -> None:
    """ClusterControlManager.checkBrokerEpoch."""
    b = changes.broker(broker_id)
    if b is None:
        raise Rejected(E.STALE_BROKER_EPOCH, f"No broker registration found for broker {broker_id}")
    if b.epoch != epoch:
        raise Rejected(E.STALE_BROKER_EPOCH, f"Expected broker epoch {b.epoch}, but got broker epoch {epoch}")


# ---- RegisterBroker ------------------------------------------------------------------------------
def _register_broker(changes: Changes, req: BrokerRegistrationRequest, ctx: CommandContext
                     ) -> BrokerRegistrationResponse:
    if ctx.cluster_id is not None and req.cluster_id != ctx.cluster_id:
        raise Rejected(E.INCONSISTENT_CLUSTER_ID, f"Expected cluster ID {ctx.cluster_id}, but got cluster ID "
                                                  f"{req.cluster_id}")
    existing = changes.broker(req.broker_id)
    if existing is not None and not existing.fenced and existing.incarnation_id != req.incarnation_id:
        raise Rejected(E.DUPLICATE_BROKER_REGISTRATION, "Another broker is registered with that broker id.")
    mv = changes.image.features.metadata_version
    if mv is not None:
        supported = {f.name: (f.min_supported_version, f.max_supported_version) for f in req.features}
        lo, hi = supported.get(METADATA_VERSION_FEATURE, (1, 1))
        if not lo <= mv <= hi:
            raise Rejected(E.UNSUPPORTED_VERSION, f"Unable to register because the broker does not support "
                                                  f"finalized version {mv} of metadata.version. The broker wants a "
                                                  f"version between {lo} and {hi}, inclusive.")
    dirs = list(req.log_dirs)
    if changes.level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT:
        _check_directories(changes, req.broker_id, dirs)
    reg = BrokerRegistration(
        id=req.broker_id, epoch=ctx.next_offset, incarnation_id=req.incarnation_id,
        listeners=tuple((li.name, li.host, li.port, li.security_protocol) for li in req.listeners),
        features=tuple((f.name, f.min_supported_version, f.max_supported_version) for f in req.features),
        rack=req.rack, fenced=True, in_controlled_shutdown=False, is_migrating_zk_broker=req.is_migrating_zk_broker,
        directories=tuple(dirs))
    changes.emit(*broker_record(reg, changes.level))
    return BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=ctx.next_offset)


def _check_directories(changes: Changes, broker_id: int, dirs: list[Uuid]) -> None:
    if not dirs:
        raise Rejected(E.INVALID_REGISTRATION, "No directories specified in request")
    if any(Uuid(d).is_reserved for d in dirs):
        raise Rejected(E.INVALID_REGISTRATION, "Reserved directory ID in request")
    if len(set(dirs)) != len(dirs):
        raise Rejected(E.INVALID_REGISTRATION, "Duplicate directory ID in request")
    owners = {d: b.id for b in changes.image.brokers.values() if b.id != broker_id for d in b.directories}
    for d in dirs:
        if d in owners:
            raise Rejected(E.INVALID_REGISTRATION, f"Broker {owners[d]} is already registered with directory {d}")


def _registration_error(code: int, message: str) -> BrokerRegistrationResponse:
    return BrokerRegistrationResponse(error_code=code, broker_epoch=-1)


# ---- Heartbeat ------------------------------------------------------------------------------------
def _heartbeat(changes: Changes, req: BrokerHeartbeatRequest, ctx: CommandContext) -> BrokerHeartbeatResponse:
    _check_epoch(changes, req.broker_id, req.broker_epoch)
    broker = changes.broker(req.broker_id)
    assert broker is not None
    caught_up = req.current_metadata_offset >= broker.epoch  # the epoch is the registration's offset
    fenced, shut_down = broker.fenced, False
    isr_parts = changes.partitions_where(lambda p: req.broker_id in p.isr)
    if broker.fenced:
        if req.want_shut_down:
            shut_down = True
        elif not req.want_fence and caught_up:
            changes.fence_change(broker, fence=False)
            changes.elect_leaderless()
            fenced = False
    elif req.want_fence or req.want_shut_down:
        # Fencing (or a shutdown, simplified: no controlled-shutdown state) moves leadership and ISR away.
        changes.remove_from_isr(req.broker_id, isr_parts)
        changes.fence_change(broker, fence=True)
        fenced, shut_down = True, bool(req.want_shut_down)
    if changes.level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT and req.offline_log_dirs:
        _directories_offline(changes, req.broker_id, list(req.offline_log_dirs))
    return BrokerHeartbeatResponse(error_code=E.NONE, is_caught_up=caught_up, is_fenced=fenced,
                                                    should_shut_down=shut_down)


def _directories_offline(changes: Changes, broker_id: int, offline: list[Uuid]) -> None:
    """ReplicationControlManager.handleDirectoriesOffline: only directories that were still online count."""
    broker = changes.broker(broker_id)
    assert broker is not None
    newly = [d for d in broker.directories if d in offline]
    if not newly:
        return
    for topic_id, pid in changes.partitions_where(
            lambda p: broker_id in p.replicas and p.directory(broker_id) in newly):
        part = changes.partition(topic_id, pid)
        assert part is not None
        changes.change_partition(topic_id, pid, target_isr=[r for r in part.isr if r != broker_id],
                                 acceptable=changes.leader_acceptor(part, excluded=broker_id))
    remaining = [d for d in broker.directories if d not in offline]
    changes.emit(BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=broker.epoch, log_dirs=remaining), 2)


def _heartbeat_error(code: int, message: str) -> BrokerHeartbeatResponse:
    return BrokerHeartbeatResponse(error_code=code, is_caught_up=False, is_fenced=True,
                                                    should_shut_down=False)


# ---- AssignReplicasToDirs ---------------------------------------------------------------------------
def _assign_replicas_to_dirs(changes: Changes, req: AssignReplicasToDirsRequest, ctx: CommandContext
                             ) -> AssignReplicasToDirsResponse:
    if changes.level < MV_3_7_IV2_DIRECTORY_ASSIGNMENT:
        raise Rejected(E.UNSUPPORTED_VERSION, "Directory assignment is not supported yet.")
    _check_epoch(changes, req.broker_id, req.broker_epoch)
    broker = changes.broker(req.broker_id)
    assert broker is not None
    response = AssignReplicasToDirsResponse(error_code=E.NONE, directories=[])
    offline_targets: list[tuple[Uuid, int]] = []
    for d in req.directories:
        online = broker.has_online_dir(d.id)
        res_dir = DirectoryData(id=d.id, topics=[])
        for t in d.topics:
            topic = changes.image.topics.get(t.topic_id)
            res_topic = TopicData(topic_id=t.topic_id, partitions=[])
            for p in t.partitions:
                code = _assign_one(changes, req.broker_id, topic, t.topic_id, p.partition_index, d.id)
                if code == E.NONE and not online:
                    offline_targets.append((t.topic_id, p.partition_index))
                res_topic.partitions.append(PartitionData(partition_index=p.partition_index, error_code=code))
            res_dir.topics.append(res_topic)
        response.directories.append(res_dir)
    changes.remove_from_isr(req.broker_id, offline_targets)
    return response


def _assign_one(changes: Changes, broker_id: int, topic: TopicImage | None, topic_id: Uuid, pid: int,
                directory: Uuid) -> int:
    if topic is None:
        return E.UNKNOWN_TOPIC_ID
    part = changes.partition(topic_id, pid)
    if part is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION
    if broker_id not in part.replicas:
        return E.NOT_LEADER_OR_FOLLOWER
    changes.change_partition(topic_id, pid, directories={broker_id: directory})
    return E.NONE


def _assign_error(code: int, message: str) -> AssignReplicasToDirsResponse:
    return AssignReplicasToDirsResponse(error_code=code, directories=[])


# ---- topics ------------------------------------------------------------------------------------------
def _create_topic(changes: Changes, cmd: CreateTopic, ctx: CommandContext) -> ApiResult:
    _validate_topic_name(cmd.name)
    if cmd.name in changes.image.topics_by_name:
        raise Rejected(E.TOPIC_ALREADY_EXISTS, f"Topic '{cmd.name}' already exists.")
    if cmd.topic_id in changes.image.topics or Uuid(cmd.topic_id).is_reserved:
        raise Rejected(E.INVALID_REQUEST, f"topic id {cmd.topic_id} is reserved or already in use")
    usable = [BrokerMetadata(b.id, b.rack) for b in sorted(changes.image.brokers.values(), key=lambda b: b.id)
              if not b.fenced and not b.in_controlled_shutdown]
    try:
        assignment = assign_replicas_to_brokers(usable, cmd.partitions, cmd.replication_factor, cmd.start_index, 0)
    except PlacementError as e:
        raise Rejected(e.code, e.reason) from None
    changes.emit(TopicRecord(name=cmd.name, topic_id=cmd.topic_id), 0)
    dirs = changes.level >= MV_3_7_IV2_DIRECTORY_ASSIGNMENT
    for pid, replicas in assignment.items():
        changes.emit(PartitionRecord(
            partition_id=pid, topic_id=cmd.topic_id, replicas=replicas, isr=list(replicas), removing_replicas=[],
            adding_replicas=[], leader=replicas[0], leader_recovery_state=0, leader_epoch=0, partition_epoch=0,
            directories=[changes.default_dir(r) for r in replicas] if dirs else []),
            partition_record_version(changes.level))
    return ApiResult(data={"topic_id": str(cmd.topic_id), "assignment": assignment})


def _validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate."""
    if not name:
        raise Rejected(E.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise Rejected(E.INVALID_TOPIC_EXCEPTION, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME:
        raise Rejected(E.INVALID_TOPIC_EXCEPTION, f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} "
                                                  "characters")
    if not _LEGAL_TOPIC.fullmatch(name):
        raise Rejected(E.INVALID_TOPIC_EXCEPTION, f"Topic name \"{name}\" is illegal, it contains a character other "
                                                  "than ASCII alphanumerics, '.', '_' and '-'")


def _delete_topic(changes: Changes, cmd: DeleteTopic, ctx: CommandContext) -> ApiResult:
    topic = changes.image.topics_by_name.get(cmd.name)
    if topic is None:
        raise Rejected(E.UNKNOWN_TOPIC_OR_PARTITION, f"This server does not host topic '{cmd.name}'.")
    changes.emit(RemoveTopicRecord(topic_id=topic.id), 0)
    return ApiResult(data={"topic_id": str(topic.id)})


def _alter_partition(changes: Changes, cmd: AlterPartition, ctx: CommandContext) -> ApiResult:
    _check_epoch(changes, cmd.broker_id, cmd.broker_epoch)
    if cmd.topic_id not in changes.image.topics:
        raise Rejected(E.UNKNOWN_TOPIC_ID, f"Unknown topic id {cmd.topic_id}")
    part = changes.partition(cmd.topic_id, cmd.partition)
    if part is None:
        raise Rejected(E.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {cmd.partition} of topic {cmd.topic_id}")
    if part.leader != cmd.broker_id:
        raise Rejected(E.NOT_LEADER_OR_FOLLOWER, f"Broker {cmd.broker_id} is not the leader (leader: {part.leader})")
    if cmd.leader_epoch != part.leader_epoch:
        raise Rejected(E.FENCED_LEADER_EPOCH, f"Leader epoch {cmd.leader_epoch}, current {part.leader_epoch}")
    if cmd.partition_epoch != part.partition_epoch:
        raise Rejected(E.INVALID_UPDATE_VERSION, f"Partition epoch {cmd.partition_epoch}, current "
                                                 f"{part.partition_epoch}")
    isr = list(cmd.new_isr)
    leader = part.leader if cmd.new_leader == NO_LEADER_CHANGE else cmd.new_leader
    if not isr or len(set(isr)) != len(isr) or not set(isr) <= set(part.replicas) or leader not in isr:
        raise Rejected(E.INVALID_REQUEST, f"Invalid ISR {isr} for replicas {list(part.replicas)} and leader {leader}")
    newcomers = [r for r in isr if r not in part.isr and not changes.leader_acceptor(part)(r)]
    if newcomers or not changes.leader_acceptor(part)(leader):
        raise Rejected(E.INELIGIBLE_REPLICA, f"Ineligible replicas {newcomers or [leader]}: fenced, in controlled "
                                             "shutdown or in an offline directory")
    rec = PartitionChangeRecord(topic_id=cmd.topic_id, partition_id=cmd.partition, isr=isr,
                                                 leader=NO_LEADER_CHANGE if leader == part.leader else leader)
    if isr != list(part.isr) or rec.leader != NO_LEADER_CHANGE:
        changes.emit(rec, partition_record_version(changes.level))
    new = changes.partition(cmd.topic_id, cmd.partition)
    assert new is not None
    return ApiResult(data={"leader": new.leader, "leader_epoch": new.leader_epoch, "isr": list(new.isr),
                           "partition_epoch": new.partition_epoch})


# ---- brokers and features ---------------------------------------------------------------------------
def _unregister_broker(changes: Changes, cmd: UnregisterBroker, ctx: CommandContext) -> ApiResult:
    broker = changes.broker(cmd.broker_id)
    if broker is None:
        raise Rejected(E.BROKER_ID_NOT_REGISTERED, f"Broker ID {cmd.broker_id} is not currently registered")
    changes.remove_from_isr(cmd.broker_id, changes.partitions_where(lambda p: cmd.broker_id in p.isr))
    changes.emit(UnregisterBrokerRecord(broker_id=cmd.broker_id, broker_epoch=broker.epoch), 0)
    return ApiResult()


def _set_feature_level(changes: Changes, cmd: SetFeatureLevel, ctx: CommandContext) -> ApiResult:
    if cmd.name == METADATA_VERSION_FEATURE:
        _check_metadata_version(changes, cmd.level)
    elif cmd.level < 0:
        raise Rejected(E.INVALID_UPDATE_VERSION, f"Invalid update version {cmd.level} for feature {cmd.name}.")
    for b in sorted(changes.image.brokers.values(), key=lambda b: b.id):
        ranges = {n: (lo, hi) for n, lo, hi in b.features}
        if cmd.level > 0 and cmd.name in ranges and not ranges[cmd.name][0] <= cmd.level <= ranges[cmd.name][1]:
            lo, hi = ranges[cmd.name]
            raise Rejected(E.INVALID_UPDATE_VERSION, f"Invalid update version {cmd.level} for feature {cmd.name}. "
                                                     f"Broker {b.id} only supports versions {lo}-{hi}")
    changes.emit(FeatureLevelRecord(name=cmd.name, feature_level=cmd.level), 0)
    return ApiResult()


def _check_metadata_version(changes: Changes, level: int) -> None:
    if level not in METADATA_VERSIONS:
        raise Rejected(E.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature metadata.version.")
    current = changes.image.features.metadata_version
    if current is not None and level < current:
        raise Rejected(E.INVALID_UPDATE_VERSION, f"Invalid metadata.version {level}. Refusing to perform the "
                                                 f"requested downgrade because it might delete metadata "
                                                 f"information.")


# ---- ZK migration -------------------------------------------------------------------------------------
_MIGRATION_STEPS = {  # current state -> the state it may move to
    ZK_MIGRATION_VALUES["PRE_MIGRATION"]: ZK_MIGRATION_VALUES["MIGRATION"],
    ZK_MIGRATION_VALUES["MIGRATION"]: ZK_MIGRATION_VALUES["POST_MIGRATION"],
}


def _zk_migration(changes: Changes, cmd: ZkMigrationTransition, ctx: CommandContext) -> ApiResult:
    if changes.level < MV_3_4_IV0_MIGRATION:
        raise Rejected(E.UNSUPPORTED_VERSION, "ZK migration needs metadata.version 3.4-IV0 or later")
    current = changes.image.features.zk_migration_state
    names = ZK_MIGRATION_STATES
    bootstrap = current == 0 and cmd.target == ZK_MIGRATION_VALUES["PRE_MIGRATION"] and _empty(changes.image)
    if not bootstrap and _MIGRATION_STEPS.get(current) != cmd.target:
        raise Rejected(E.INVALID_REQUEST, f"cannot move the ZK migration state from {names.get(current)} to "
                                          f"{names.get(cmd.target, cmd.target)}")
    if cmd.migrated and cmd.target != ZK_MIGRATION_VALUES["MIGRATION"]:
        raise Rejected(E.INVALID_REQUEST, "only the move to MIGRATION carries migrated records")
    state = ZkMigrationStateRecord(zk_migration_state=cmd.target)
    transaction = cmd.target == ZK_MIGRATION_VALUES["MIGRATION"] and changes.level >= MV_3_6_IV1_TRANSACTIONS
    if transaction:
        changes.emit(BeginTransactionRecord(name="Bulk ZK metadata migration"), 0)
    for record, version in cmd.migrated:
        changes.emit(record, version)
    changes.emit(state, 0)
    if transaction:
        changes.emit(EndTransactionRecord(), 0)
    return ApiResult(data={"state": names[cmd.target], "transaction": transaction})


def _empty(image: MetadataImage) -> bool:
    return not image.brokers and not image.topics


Command = (BrokerRegistrationRequest | BrokerHeartbeatRequest | AssignReplicasToDirsRequest | CreateTopic | DeleteTopic
           | AlterPartition | UnregisterBroker | SetFeatureLevel | ZkMigrationTransition)
# by the command's class name: (the handler, which takes that command, and the response to an error); the table
# holds handlers of every command type, so the command argument is Any here and typed in each handler
Handler = Callable[[Changes, Any, CommandContext], ApiMessage | ApiResult]
_HANDLERS: dict[str, tuple[Handler, Callable[[int, str], ApiMessage | ApiResult]]] = {
    "BrokerRegistrationRequest": (_register_broker, _registration_error),
    "BrokerHeartbeatRequest": (_heartbeat, _heartbeat_error),
    "AssignReplicasToDirsRequest": (_assign_replicas_to_dirs, _assign_error),
    "CreateTopic": (_create_topic, _api_error),
    "DeleteTopic": (_delete_topic, _api_error),
    "AlterPartition": (_alter_partition, _api_error),
    "UnregisterBroker": (_unregister_broker, _api_error),
    "SetFeatureLevel": (_set_feature_level, _api_error),
    "ZkMigrationTransition": (_zk_migration, _api_error),
}
