"""Every controller command's rules and errors, table-driven; a refused command appends nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from metalog.codec import message_class
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.controller import errors as E
from metalog.controller.commands import (
    AlterPartition,
    CreateTopic,
    DeleteTopic,
    SetFeatureLevel,
    UnregisterBroker,
    ZkMigrationTransition,
    execute,
)
from metalog.controller.controller import Controller
from metalog.state.enums import NO_LEADER_CHANGE, ZK_MIGRATION_VALUES
from tests.controller.helpers import (
    CLUSTER_ID,
    assign_request,
    cluster,
    dir_id,
    epoch,
    heartbeat,
    registration,
)

TID = Uuid.of(77, 77)


def names(result: Any) -> list[str]:
    return [r.NAME for r, _ in result.records]


def with_topic(c: Controller | None = None, rf: int = 3, partitions: int = 3, **kw: Any) -> tuple[Controller, Uuid]:
    c = c or cluster(**kw)
    r = c.submit(CreateTopic("foo", TID, partitions, rf, 0))
    assert r.ok, r.error_message
    return c, TID


# ---- refusals: (name, setup, command factory, code, message) -------------------------------------------
def _reg(**kw: Any) -> Callable[[Controller], Any]:
    def make(c: Controller) -> Any:
        args = {"broker_id": 5, "dirs": [dir_id(5, 0)]}
        args.update(kw)
        b, d = args.pop("broker_id"), args.pop("dirs")
        return registration(b, d, **args)
    return make


REFUSED: list[tuple[str, Callable[[Controller], Any], int, str]] = [
    ("register: no dirs", _reg(dirs=[]), E.INVALID_REGISTRATION, "No directories specified in request"),
    ("register: reserved dir", _reg(dirs=[dir_id(5, 0), UNASSIGNED]), E.INVALID_REGISTRATION,
     "Reserved directory ID in request"),
    ("register: reserved LOST", _reg(dirs=[LOST]), E.INVALID_REGISTRATION, "Reserved directory ID in request"),
    ("register: duplicate dir", _reg(dirs=[dir_id(5, 0), dir_id(5, 0)]), E.INVALID_REGISTRATION,
     "Duplicate directory ID in request"),
    ("register: dir of another broker", _reg(dirs=[dir_id(5, 0), dir_id(1, 1)]), E.INVALID_REGISTRATION,
     f"Broker 1 is already registered with directory {dir_id(1, 1)}"),
    ("register: other cluster", _reg(cluster_id="AAAAAAAAAAAAAAAAAAAAAA"), E.INCONSISTENT_CLUSTER_ID,
     f"Expected cluster ID {CLUSTER_ID}, but got cluster ID AAAAAAAAAAAAAAAAAAAAAA"),
    ("register: live broker, other incarnation", _reg(broker_id=1, dirs=[dir_id(1, 0)], incarnation=9),
     E.DUPLICATE_BROKER_REGISTRATION, "Another broker is registered with that broker id."),
    ("register: metadata.version unsupported", _reg(mv_range=(1, 14)), E.UNSUPPORTED_VERSION,
     "Unable to register because the broker does not support finalized version 21 of metadata.version. "
     "The broker wants a version between 1 and 14, inclusive."),
    ("heartbeat: unknown broker", lambda c: heartbeat(9, 0), E.STALE_BROKER_EPOCH,
     "No broker registration found for broker 9"),
    ("heartbeat: stale epoch", lambda c: heartbeat(1, 0), E.STALE_BROKER_EPOCH,
     "Expected broker epoch 3, but got broker epoch 0"),
    ("assign: stale epoch", lambda c: assign_request(1, 99, [(dir_id(1, 0), TID, 0)]), E.STALE_BROKER_EPOCH,
     "Expected broker epoch 3, but got broker epoch 99"),
    ("assign: unknown broker", lambda c: assign_request(7, 3, [(dir_id(1, 0), TID, 0)]), E.STALE_BROKER_EPOCH,
     "No broker registration found for broker 7"),
    ("create: exists", lambda c: CreateTopic("foo", Uuid.of(5, 5), 1, 1), E.TOPIC_ALREADY_EXISTS,
     "Topic 'foo' already exists."),
    ("create: empty name", lambda c: CreateTopic("", Uuid.of(5, 5), 1, 1), E.INVALID_TOPIC_EXCEPTION,
     "Topic name is illegal, it can't be empty"),
    ("create: dot", lambda c: CreateTopic("..", Uuid.of(5, 5), 1, 1), E.INVALID_TOPIC_EXCEPTION,
     'Topic name cannot be "." or ".."'),
    ("create: bad char", lambda c: CreateTopic("a/b", Uuid.of(5, 5), 1, 1), E.INVALID_TOPIC_EXCEPTION,
     "Topic name \"a/b\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"),
    ("create: too long", lambda c: CreateTopic("x" * 250, Uuid.of(5, 5), 1, 1), E.INVALID_TOPIC_EXCEPTION,
     "Topic name is illegal, it can't be longer than 249 characters"),
    ("create: zero partitions", lambda c: CreateTopic("bar", Uuid.of(5, 5), 0, 1), E.INVALID_PARTITIONS,
     "Number of partitions must be larger than 0."),
    ("create: rf 0", lambda c: CreateTopic("bar", Uuid.of(5, 5), 1, 0), E.INVALID_REPLICATION_FACTOR,
     "Replication factor must be larger than 0."),
    ("create: rf > brokers", lambda c: CreateTopic("bar", Uuid.of(5, 5), 1, 4), E.INVALID_REPLICATION_FACTOR,
     "Replication factor: 4 larger than available brokers: 3."),
    ("create: reserved id", lambda c: CreateTopic("bar", Uuid.of(0, 7), 1, 1), E.INVALID_REQUEST,
     f"topic id {Uuid.of(0, 7)} is reserved or already in use"),
    ("create: id in use", lambda c: CreateTopic("bar", TID, 1, 1), E.INVALID_REQUEST,
     f"topic id {TID} is reserved or already in use"),
    ("delete: unknown", lambda c: DeleteTopic("nope"), E.UNKNOWN_TOPIC_OR_PARTITION,
     "This server does not host topic 'nope'."),
    ("alter: stale epoch", lambda c: AlterPartition(0, 99, TID, 0, 0, 0, (0, 1)), E.STALE_BROKER_EPOCH,
     "Expected broker epoch 1, but got broker epoch 99"),
    ("alter: unknown topic", lambda c: AlterPartition(0, 1, Uuid.of(9, 9), 0, 0, 0, (0, 1)), E.UNKNOWN_TOPIC_ID,
     f"Unknown topic id {Uuid.of(9, 9)}"),
    ("alter: unknown partition", lambda c: AlterPartition(0, 1, TID, 9, 0, 0, (0, 1)), E.UNKNOWN_TOPIC_OR_PARTITION,
     f"Unknown partition 9 of topic {TID}"),
    ("alter: not leader", lambda c: AlterPartition(1, 3, TID, 0, 0, 0, (0, 1)), E.NOT_LEADER_OR_FOLLOWER,
     "Broker 1 is not the leader (leader: 0)"),
    ("alter: leader epoch", lambda c: AlterPartition(0, 1, TID, 0, 3, 0, (0, 1)), E.FENCED_LEADER_EPOCH,
     "Leader epoch 3, current 0"),
    ("alter: partition epoch", lambda c: AlterPartition(0, 1, TID, 0, 0, 4, (0, 1)), E.INVALID_UPDATE_VERSION,
     "Partition epoch 4, current 0"),
    ("alter: leader not in isr", lambda c: AlterPartition(0, 1, TID, 0, 0, 0, (1, 2)), E.INVALID_REQUEST,
     "Invalid ISR [1, 2] for replicas [0, 1, 2] and leader 0"),
    ("alter: not a replica", lambda c: AlterPartition(0, 1, TID, 0, 0, 0, (0, 7)), E.INVALID_REQUEST,
     "Invalid ISR [0, 7] for replicas [0, 1, 2] and leader 0"),
    ("alter: empty isr", lambda c: AlterPartition(0, 1, TID, 0, 0, 0, ()), E.INVALID_REQUEST,
     "Invalid ISR [] for replicas [0, 1, 2] and leader 0"),
    ("unregister: unknown", lambda c: UnregisterBroker(9), E.BROKER_ID_NOT_REGISTERED,
     "Broker ID 9 is not currently registered"),
    ("feature: unknown mv", lambda c: SetFeatureLevel("metadata.version", 99), E.INVALID_UPDATE_VERSION,
     "Invalid update version 99 for feature metadata.version."),
    ("feature: mv downgrade", lambda c: SetFeatureLevel("metadata.version", 17), E.INVALID_UPDATE_VERSION,
     "Invalid metadata.version 17. Refusing to perform the requested downgrade because it might delete metadata "
     "information."),
    ("feature: negative", lambda c: SetFeatureLevel("kraft.version", -1), E.INVALID_UPDATE_VERSION,
     "Invalid update version -1 for feature kraft.version."),
    ("feature: unsupported by a broker", lambda c: SetFeatureLevel("metadata.version", 29), E.NONE, ""),
    ("zk: NONE to MIGRATION", lambda c: ZkMigrationTransition(ZK_MIGRATION_VALUES["MIGRATION"]), E.INVALID_REQUEST,
     "cannot move the ZK migration state from NONE to MIGRATION"),
    ("zk: PRE_MIGRATION on a used cluster", lambda c: ZkMigrationTransition(ZK_MIGRATION_VALUES["PRE_MIGRATION"]),
     E.INVALID_REQUEST, "cannot move the ZK migration state from NONE to PRE_MIGRATION"),
]
REFUSED = [r for r in REFUSED if r[2] != E.NONE]


@pytest.mark.parametrize(("make", "code", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_commands_say_why_and_append_nothing(make: Callable[[Controller], Any], code: int,
                                                     message: str) -> None:
    c, _ = with_topic()
    before, offset = c.image, c.next_offset
    result = c.submit(make(c))
    assert (result.error_code, result.error_message) == (code, message)
    assert result.records == [] and c.next_offset == offset and c.image is before
    assert getattr(result.response, "error_code", None) == code


def test_assign_below_3_7_iv2_is_unsupported() -> None:
    c, tid = with_topic(level=16)
    r = c.submit(assign_request(0, epoch(c, 0), [(dir_id(0, 0), tid, 0)]))
    assert (r.error_code, r.error_message, r.records) == (E.UNSUPPORTED_VERSION,
                                                           "Directory assignment is not supported yet.", [])
    assert r.response.to_json(0) == {"throttleTimeMs": 0, "errorCode": E.UNSUPPORTED_VERSION, "directories": []}


def test_metadata_version_a_broker_cannot_run_is_refused() -> None:
    c = Controller(cluster_id=CLUSTER_ID)
    c.submit(SetFeatureLevel("metadata.version", 17))
    assert c.submit(registration(0, [dir_id(0, 0)], mv_range=(1, 20))).ok
    r = c.submit(SetFeatureLevel("metadata.version", 21))
    assert (r.error_code, r.error_message) == (
        E.INVALID_UPDATE_VERSION, "Invalid update version 21 for feature metadata.version. Broker 0 only supports "
                                  "versions 1-20")


# ---- accepted commands ------------------------------------------------------------------------------
def test_register_broker_record_and_epoch() -> None:
    c = cluster()
    offset = c.next_offset
    r = c.submit(registration(5, [dir_id(5, 0), dir_id(5, 1)], "rack-x"))
    assert r.ok and r.response.broker_epoch == offset
    (rec, version), = r.records
    assert (rec.NAME, version, rec.fenced, rec.rack, rec.broker_epoch) == ("RegisterBrokerRecord", 3, True,
                                                                           "rack-x", offset)
    b = c.image.brokers[5]
    assert b.fenced and b.rack == "rack-x" and set(b.directories) == {dir_id(5, 0), dir_id(5, 1)}


def test_register_without_rack_and_reregister_same_dirs() -> None:
    c = cluster()
    r = c.submit(registration(1, [dir_id(1, 0), dir_id(1, 1)], incarnation=1))  # same incarnation: a restart
    assert r.ok and c.image.brokers[1].rack is None and c.image.brokers[1].fenced


def test_fenced_broker_may_reregister_with_new_incarnation() -> None:
    c = cluster(unfence=False)
    assert c.submit(registration(1, [dir_id(1, 0)], incarnation=5)).ok


def test_register_before_3_7_iv2_writes_no_directories() -> None:
    c = cluster(level=14)
    r = c.submit(registration(5, []))  # no dirs is fine before directory assignment
    assert r.ok and r.records[0][1] == 2 and c.image.brokers[5].directories == ()


@pytest.mark.parametrize(("level", "expected"), [(5, ("UnfenceBrokerRecord", 0)),
                                                 (6, ("BrokerRegistrationChangeRecord", 0)),
                                                 (21, ("BrokerRegistrationChangeRecord", 0))])
def test_heartbeat_unfences_when_caught_up(level: int, expected: tuple[str, int]) -> None:
    c = cluster(level=level, unfence=False, dirs_per_broker=(1,))
    e = epoch(c, 0)
    r = c.submit(heartbeat(0, e, offset=e - 1))
    assert r.ok and r.records == [] and r.response.is_fenced and not r.response.is_caught_up
    r = c.submit(heartbeat(0, e, offset=e))
    assert [(rec.NAME, v) for rec, v in r.records] == [expected]
    assert not r.response.is_fenced and r.response.is_caught_up and not c.image.brokers[0].fenced


def test_heartbeat_want_fence_moves_leadership_and_isr_first() -> None:
    c, tid = with_topic()
    r = c.submit(heartbeat(0, epoch(c, 0), want_fence=True))
    assert names(r) == ["PartitionChangeRecord"] * 3 + ["BrokerRegistrationChangeRecord"]
    assert r.response.is_fenced and c.image.brokers[0].fenced
    for pid, p in c.image.topics[tid].partitions.items():
        assert 0 not in p.isr and p.leader != 0, pid
    assert c.image.topics[tid].partitions[0].leader == 1  # the next ISR member in replica order


def test_fenced_broker_wanting_shutdown_is_told_to_shut_down() -> None:
    c = cluster(unfence=False)
    r = c.submit(heartbeat(0, epoch(c, 0), want_shut_down=True))
    assert r.ok and r.records == [] and r.response.should_shut_down


def test_unfencing_elects_leaderless_partitions() -> None:
    c, tid = with_topic(rf=1, partitions=1, dirs_per_broker=(1,))
    c.submit(heartbeat(0, epoch(c, 0), want_fence=True))
    p = c.image.topics[tid].partitions[0]
    assert (p.leader, p.isr) == (-1, (0,))  # without ELR the ISR never becomes empty
    c.submit(heartbeat(0, epoch(c, 0)))
    assert c.image.topics[tid].partitions[0].leader == 0


def test_offline_log_dir_moves_leadership_and_isr_and_shrinks_registration() -> None:
    c, tid = with_topic()
    # put broker 0's replica of partition 0 in its dir 1, of partition 1 in dir 0
    assert c.submit(assign_request(0, epoch(c, 0), [(dir_id(0, 1), tid, 0), (dir_id(0, 0), tid, 1)])).ok
    r = c.submit(heartbeat(0, epoch(c, 0), offline=[dir_id(0, 1)]))
    assert names(r) == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert r.records[1][1] == 2 and list(r.records[1][0].log_dirs) == [dir_id(0, 0)]
    p0, p1 = c.image.topics[tid].partitions[0], c.image.topics[tid].partitions[1]
    assert (p0.leader, 0 in p0.isr) == (1, False) and 0 in p1.isr
    assert c.image.offline_replicas(p0) == [0] and c.image.offline_replicas(p1) == []
    again = c.submit(heartbeat(0, epoch(c, 0), offline=[dir_id(0, 1)]))
    assert again.records == []  # only newly offline directories count


def test_create_topic_default_directories() -> None:
    c = cluster(dirs_per_broker=(0, 0, 0), level=16)  # registered before directories existed
    assert c.submit(SetFeatureLevel("metadata.version", 21)).ok
    for b, n in ((0, 2), (1, 1)):  # brokers 0 and 1 restart with directories; 2 keeps none
        r = c.submit(registration(b, [dir_id(b, i) for i in range(n)]))
        assert r.ok and c.submit(heartbeat(b, r.response.broker_epoch)).ok
    r = c.submit(CreateTopic("foo", TID, 1, 3, 0))
    assert r.ok and names(r) == ["TopicRecord", "PartitionRecord"]
    p = c.image.topics[TID].partitions[0]
    assert p.replicas == (0, 1, 2) and p.isr == (0, 1, 2) and p.leader == 0
    assert p.directories == (UNASSIGNED, dir_id(1, 0), MIGRATING)
    assert r.response.data["assignment"] == {0: [0, 1, 2]}


def test_create_topic_is_rack_aware_and_skips_fenced_brokers() -> None:
    c = cluster(dirs_per_broker=(1, 1, 1, 1), racks=("a", "a", "b", "b"))
    c.submit(heartbeat(3, epoch(c, 3), want_fence=True))
    r = c.submit(CreateTopic("foo", TID, 4, 2, 0))
    # rack-alternated list of the unfenced brokers: 0 (a), 2 (b), 1 (a); every partition spans both racks
    assert r.response.data["assignment"] == {0: [0, 2], 1: [2, 1], 2: [1, 2], 3: [0, 2]}


def test_create_topic_mixed_racks_is_refused() -> None:
    c = cluster(dirs_per_broker=(1, 1), racks=("a", None))
    r = c.submit(CreateTopic("foo", TID, 1, 1, 0))
    assert (r.error_code, r.records) == (E.UNKNOWN_SERVER_ERROR, [])


def test_create_topic_before_3_7_iv2_has_version_0_records() -> None:
    c = cluster(level=14)
    r = c.submit(CreateTopic("foo", TID, 2, 2, 0))
    assert [v for _, v in r.records] == [0, 0, 0] and c.image.topics[TID].partitions[0].directories == (MIGRATING,) * 2


def test_assign_replicas_to_dirs_codes_and_records() -> None:
    c, tid = with_topic(dirs_per_broker=(2, 2, 1, 1))  # broker 3 holds none of foo's replicas? rf 3 of 4
    foo = c.image.topics[tid]
    outsider = next(b for b in range(4) if b not in foo.partitions[0].replicas)
    unknown = Uuid.of(1, 99)
    r = c.submit(assign_request(outsider, epoch(c, outsider), [
        (dir_id(outsider, 0), tid, 0), (dir_id(outsider, 0), tid, 42), (dir_id(outsider, 0), unknown, 0)]))
    codes = {(t.topic_id, p.partition_index): p.error_code
             for d in r.response.directories for t in d.topics for p in t.partitions}
    assert codes == {(tid, 0): E.NOT_LEADER_OR_FOLLOWER, (tid, 42): E.UNKNOWN_TOPIC_OR_PARTITION,
                     (unknown, 0): E.UNKNOWN_TOPIC_ID}
    assert r.ok and r.records == []


def test_assign_to_the_current_dir_writes_nothing_and_change_carries_only_directories() -> None:
    c, tid = with_topic(dirs_per_broker=(2, 2, 2))
    r = c.submit(assign_request(0, epoch(c, 0), [(dir_id(0, 1), tid, 0)]))
    (rec, version), = r.records
    assert version == 1 and rec.isr is None and rec.leader == NO_LEADER_CHANGE and rec.replicas is None
    assert list(rec.directories) == [dir_id(0, 1), UNASSIGNED, UNASSIGNED]
    assert c.submit(assign_request(0, epoch(c, 0), [(dir_id(0, 1), tid, 0)])).records == []


def test_assign_to_an_offline_dir_takes_the_replica_out_of_isr_and_leadership() -> None:
    c, tid = with_topic(dirs_per_broker=(2, 2, 2))
    gone = Uuid.of(0x5555, 1)  # not among broker 0's registered directories
    r = c.submit(assign_request(0, epoch(c, 0), [(gone, tid, 0)]))
    assert names(r) == ["PartitionChangeRecord", "PartitionChangeRecord"]
    p = c.image.topics[tid].partitions[0]
    assert p.directory(0) == gone and 0 not in p.isr and p.leader == 1
    assert c.image.offline_replicas(p) == [0]


def test_alter_partition_shrinks_and_expands_isr() -> None:
    c, tid = with_topic()
    r = c.submit(AlterPartition(0, epoch(c, 0), tid, 0, 0, 0, (0, 1)))
    assert r.ok and r.response.data == {"leader": 0, "leader_epoch": 0, "isr": [0, 1], "partition_epoch": 1}
    r = c.submit(AlterPartition(0, epoch(c, 0), tid, 0, 0, 1, (0, 1, 2)))
    assert r.ok and r.response.data["isr"] == [0, 1, 2]


def test_alter_partition_leader_change_and_ineligible_replica() -> None:
    c, tid = with_topic()
    r = c.submit(AlterPartition(0, epoch(c, 0), tid, 0, 0, 0, (0, 1), new_leader=1))
    assert r.ok and r.response.data["leader"] == 1 and r.response.data["leader_epoch"] == 1
    c.submit(heartbeat(2, epoch(c, 2), want_fence=True))
    part = c.image.topics[tid].partitions[0]
    r = c.submit(AlterPartition(1, epoch(c, 1), tid, 0, part.leader_epoch, part.partition_epoch, (1, 0, 2)))
    assert (r.error_code, r.records) == (E.INELIGIBLE_REPLICA, [])


def test_isr_shrink_bumps_leader_epoch_before_3_6() -> None:
    c, tid = with_topic(level=11)
    c.submit(AlterPartition(0, epoch(c, 0), tid, 0, 0, 0, (0, 1)))
    assert c.image.topics[tid].partitions[0].leader_epoch == 0  # AlterPartition writes what the leader asked
    c.submit(heartbeat(1, epoch(c, 1), want_fence=True))
    assert c.image.topics[tid].partitions[0].leader_epoch == 1  # the controller's shrink bumps it at 3.5


def test_delete_topic() -> None:
    c, tid = with_topic()
    r = c.submit(DeleteTopic("foo"))
    assert names(r) == ["RemoveTopicRecord"] and "foo" not in c.image.topics_by_name


def test_unregister_broker_moves_leadership_first() -> None:
    c, tid = with_topic()
    r = c.submit(UnregisterBroker(0))
    assert names(r)[-1] == "UnregisterBrokerRecord" and 0 not in c.image.brokers
    assert all(p.leader != 0 and 0 not in p.isr for p in c.image.topics[tid].partitions.values())


def test_set_feature_level_changes_record_versions() -> None:
    c = cluster(level=16)
    r = c.submit(CreateTopic("a", Uuid.of(5, 1), 1, 1, 0))
    assert r.records[1][1] == 0
    assert c.submit(SetFeatureLevel("metadata.version", 17)).ok
    r = c.submit(CreateTopic("b", Uuid.of(5, 2), 1, 1, 0))
    assert r.records[1][1] == 1
    assert c.submit(SetFeatureLevel("metadata.version", 23)).ok
    r = c.submit(CreateTopic("c", Uuid.of(5, 3), 1, 1, 0))
    assert r.records[1][1] == 2
    assert c.submit(SetFeatureLevel("group.version", 1)).ok and c.image.features.finalized == {"group.version": 1}
    assert c.submit(SetFeatureLevel("group.version", 0)).ok and c.image.features.finalized == {}


def test_zk_migration_walk() -> None:
    c = Controller()
    c.submit(SetFeatureLevel("metadata.version", 14))
    assert c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["PRE_MIGRATION"])).ok
    topic = message_class("TopicRecord")(name="zk-topic", topic_id=Uuid.of(9, 1))
    r = c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["MIGRATION"], ((topic, 0),)))
    assert names(r) == ["BeginTransactionRecord", "TopicRecord", "ZkMigrationStateRecord", "EndTransactionRecord"]
    assert c.image.features.zk_migration_state == ZK_MIGRATION_VALUES["MIGRATION"]
    assert "zk-topic" in c.image.topics_by_name and not c.loader.in_transaction
    r = c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["POST_MIGRATION"]))
    assert names(r) == ["ZkMigrationStateRecord"]
    r = c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["MIGRATION"]))
    assert (r.error_code, r.error_message) == (E.INVALID_REQUEST,
                                               "cannot move the ZK migration state from POST_MIGRATION to MIGRATION")


def test_zk_migration_needs_3_4_and_only_migration_carries_records() -> None:
    c = Controller()
    c.submit(SetFeatureLevel("metadata.version", 7))
    r = c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["PRE_MIGRATION"]))
    assert r.error_code == E.UNSUPPORTED_VERSION
    c = Controller()
    c.submit(SetFeatureLevel("metadata.version", 14))
    rec = message_class("TopicRecord")(name="t", topic_id=Uuid.of(9, 1))
    r = c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["PRE_MIGRATION"], ((rec, 0),)))
    assert (r.error_code, r.records) == (E.INVALID_REQUEST, [])


def test_a_migrated_record_that_does_not_apply_refuses_the_whole_command() -> None:
    c = Controller()
    c.submit(SetFeatureLevel("metadata.version", 14))
    c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["PRE_MIGRATION"]))
    bad = message_class("RemoveTopicRecord")(topic_id=Uuid.of(9, 9))
    before = c.next_offset
    r = c.submit(ZkMigrationTransition(ZK_MIGRATION_VALUES["MIGRATION"], ((bad, 0),)))
    assert r.error_code == E.UNKNOWN_SERVER_ERROR and "unknown topic id" in (r.error_message or "")
    assert r.records == [] and c.next_offset == before


def test_execute_is_pure() -> None:
    c, tid = with_topic()
    image = c.image
    a = execute(image, heartbeat(0, epoch(c, 0), want_fence=True))
    b = execute(image, heartbeat(0, epoch(c, 0), want_fence=True))
    assert [(r.to_json(v), v) for r, v in a.records] == [(r.to_json(v), v) for r, v in b.records]
    assert c.image is image and not c.image.brokers[0].fenced
