"""Each record type's replay rule, table-driven: (state built by records, record, expected effect)."""

from __future__ import annotations

from typing import Any

import pytest

from metalog.codec import LOST, MIGRATING, UNASSIGNED, Uuid, message_class
from metalog.errors import ReplayError
from metalog.state import MetadataDelta, MetadataLoader
from metalog.state.image import EMPTY, MetadataImage

T = Uuid.parse("UXyU9i5ARn6W00ON2taeWA")
D1, D2, D3 = (Uuid.of(7, i) for i in (1, 2, 3))


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


def broker(bid: int, epoch: int = 10, dirs: tuple[Uuid, ...] = (), fenced: bool = True, rack: str | None = None) -> Any:
    return rec("RegisterBrokerRecord", broker_id=bid, broker_epoch=epoch, incarnation_id=Uuid.of(bid, bid),
               log_dirs=list(dirs), fenced=fenced, rack=rack)


def partition(pid: int = 0, replicas: tuple[int, ...] = (1, 2, 3), dirs: list[Uuid] | None = None, **kw: Any) -> Any:
    return rec("PartitionRecord", partition_id=pid, topic_id=T, replicas=list(replicas), isr=list(replicas),
               leader=replicas[0], leader_epoch=0, partition_epoch=0, directories=dirs or [], **kw)


def build(*records: Any) -> MetadataImage:
    delta = MetadataDelta(EMPTY)
    for i, r in enumerate(records):
        delta.replay(r, i)
    return delta.apply()


BASE = (broker(1, dirs=(D1,)), broker(2, dirs=(D2,)), broker(3, dirs=(D3,)),
        rec("TopicRecord", name="foo", topic_id=T), partition())


def replay_on(image: MetadataImage, *records: Any) -> MetadataImage:
    delta = MetadataDelta(image)
    for r in records:
        delta.replay(r, image.offset + 1)
    return delta.apply()


# ---- brokers -------------------------------------------------------------------------------
def test_register_broker_replaces_the_registration_and_sorts_dirs_in_kafka_uuid_order() -> None:
    neg = Uuid.of(-5, 0)  # negative high half sorts first in Kafka's signed order
    img = build(broker(1, epoch=1, rack="r1"), broker(1, epoch=2, dirs=(D2, neg, D1)))
    b = img.brokers[1]
    assert (b.epoch, b.rack, b.directories) == (2, None, (neg, D1, D2))


@pytest.mark.parametrize(("fenced", "shutdown", "dirs", "expect"), [
    (1, 0, [], (True, False, (D1,))),
    (0, 0, [], (False, False, (D1,))),
    (-1, 0, [], (False, False, (D1,))),
    (0, 1, [], (False, True, (D1,))),
    (0, 0, [D2, D1], (False, False, (D1, D2))),
], ids=["fence", "unchanged", "unfence", "controlled-shutdown", "new-dirs"])
def test_broker_registration_change(fenced: int, shutdown: int, dirs: list[Uuid], expect: tuple[Any, ...]) -> None:
    img = build(broker(1, dirs=(D1,), fenced=False),
                rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=fenced,
                    in_controlled_shutdown=shutdown, log_dirs=dirs))
    b = img.brokers[1]
    assert (b.fenced, b.in_controlled_shutdown, b.directories) == expect


@pytest.mark.parametrize("record", [
    rec("FenceBrokerRecord", id=1, epoch=9),
    rec("UnfenceBrokerRecord", id=1, epoch=11),
    rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=9, fenced=1),
    rec("UnregisterBrokerRecord", broker_id=1, broker_epoch=9),
    rec("FenceBrokerRecord", id=4, epoch=10),
    rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=2),
    rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, in_controlled_shutdown=5),
], ids=["fence-stale-epoch", "unfence-wrong-epoch", "change-stale-epoch", "unregister-stale-epoch",
        "fence-unknown-broker", "bad-fenced-value", "bad-shutdown-value"])
def test_broker_records_that_cannot_apply(record: Any) -> None:
    img = build(broker(1))
    with pytest.raises(ReplayError) as e:
        replay_on(img, record)
    assert e.value.offset == img.offset + 1


def test_fence_and_unfence_records() -> None:
    img = build(broker(1, fenced=True), rec("UnfenceBrokerRecord", id=1, epoch=10))
    assert not img.brokers[1].fenced
    assert build(broker(1, fenced=False), rec("FenceBrokerRecord", id=1, epoch=10)).brokers[1].fenced


def test_unregister_removes_the_broker() -> None:
    assert 1 not in build(broker(1), rec("UnregisterBrokerRecord", broker_id=1, broker_epoch=10)).brokers


# ---- partitions ----------------------------------------------------------------------------
@pytest.mark.parametrize("dirs", [None, [], [MIGRATING] * 3], ids=["null", "empty", "all-migrating"])
def test_partition_record_without_real_dirs_is_migrating_everywhere(dirs: list[Uuid] | None) -> None:
    img = build(*BASE[:4], partition(dirs=dirs))
    assert img.topics[T].partitions[0].directories == (MIGRATING,) * 3


def test_partition_record_directories_must_match_replicas() -> None:
    with pytest.raises(ReplayError, match="2 directories for 3 replicas"):
        build(*BASE[:4], partition(dirs=[D1, D2]))


def test_partition_record_for_unknown_topic() -> None:
    with pytest.raises(ReplayError, match="unknown topic id") as e:
        build(partition())
    assert e.value.offset == 0 and e.value.record == "PARTITION_RECORD"


def change(**kw: Any) -> Any:
    return rec("PartitionChangeRecord", **{"partition_id": 0, "topic_id": T, **kw})


@pytest.mark.parametrize(("record", "check"), [
    (change(), lambda p: (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1, 2, 3), 1, 0, 1)),
    (change(isr=[1]), lambda p: (p.isr, p.leader_epoch) == ((1,), 0)),
    (change(leader=2), lambda p: (p.leader, p.leader_epoch) == (2, 1)),
    (change(leader=1), lambda p: (p.leader, p.leader_epoch) == (1, 1)),  # same leader still bumps the epoch
    (change(leader=-1), lambda p: (p.leader, p.leader_epoch) == (-1, 1)),
    (change(leader_recovery_state=1), lambda p: p.leader_recovery_state == 1),
    (change(directories=[D1, D2, D3]), lambda p: p.directories == (D1, D2, D3)),
    (change(replicas=[3, 4]), lambda p: (p.replicas, p.directories) == ((3, 4), (MIGRATING, MIGRATING))),
    (change(replicas=[3, 4], directories=[D3, LOST]), lambda p: p.directories == (D3, LOST)),
    (change(eligible_leader_replicas=[2], last_known_elr=[3]), lambda p: (p.elr, p.last_known_elr) == ((2,), (3,))),
    (change(removing_replicas=[3], adding_replicas=[4]),
     lambda p: (p.removing_replicas, p.adding_replicas) == ((3,), (4,))),
], ids=["empty-bumps-partition-epoch", "isr", "new-leader", "same-leader", "no-leader", "recovery-state",
        "directories", "replicas-of-migrating-dirs", "replicas-and-dirs", "elr", "reassignment"])
def test_partition_change_merges(record: Any, check: Any) -> None:
    img = replay_on(build(*BASE), record)
    assert check(img.topics[T].partitions[0])


@pytest.mark.parametrize(("record", "reason"), [
    (change(partition_id=9), "unknown partition foo-9"),
    (rec("PartitionChangeRecord", partition_id=0, topic_id=Uuid.of(9, 9)), "unknown topic id"),
    (change(replicas=[1, 2], directories=[D1]), "1 directories for 2 replicas"),
    (change(directories=[D1]), "1 directories for 3 replicas"),
    (change(leader_recovery_state=7), "unknown LeaderRecoveryState value 7"),
])
def test_partition_change_errors(record: Any, reason: str) -> None:
    with pytest.raises(ReplayError, match=reason):
        replay_on(build(*BASE), record)


def test_remove_topic_removes_topic_and_its_configs() -> None:
    img = build(*BASE, rec("ConfigRecord", resource_type=2, resource_name="foo", name="a", value="1"),
                rec("ConfigRecord", resource_type=4, resource_name="1", name="b", value="2"),
                rec("RemoveTopicRecord", topic_id=T))
    assert img.topics == {} and img.topics_by_name == {}
    assert img.configs == {(4, "1"): {"b": "2"}}


def test_remove_unknown_topic() -> None:
    with pytest.raises(ReplayError, match="unknown topic id"):
        build(rec("RemoveTopicRecord", topic_id=T))


def test_recreated_topic_starts_without_partitions() -> None:
    img = build(*BASE, rec("RemoveTopicRecord", topic_id=T), rec("TopicRecord", name="foo", topic_id=T))
    assert img.topics[T].partitions == {}


# ---- configs, features, the rest -----------------------------------------------------------
def test_config_null_value_deletes_key_and_empty_resource_disappears() -> None:
    img = build(rec("ConfigRecord", resource_type=4, resource_name="", name="a", value="1"),
                rec("ConfigRecord", resource_type=4, resource_name="", name="a", value=None))
    assert img.configs == {}


def test_feature_levels() -> None:
    img = build(rec("FeatureLevelRecord", name="metadata.version", feature_level=17),
                rec("FeatureLevelRecord", name="kraft.version", feature_level=1),
                rec("FeatureLevelRecord", name="group.version", feature_level=1),
                rec("FeatureLevelRecord", name="group.version", feature_level=0))
    assert (img.features.metadata_version, img.features.finalized) == (17, {"kraft.version": 1})


@pytest.mark.parametrize(("value", "ok"), [(0, True), (1, True), (2, True), (3, True), (9, False)])
def test_zk_migration_state(value: int, ok: bool) -> None:
    record = rec("ZkMigrationStateRecord", zk_migration_state=value)
    if ok:
        assert build(record).features.zk_migration_state == value
    else:
        with pytest.raises(ReplayError, match="unknown ZkMigrationState"):
            build(record)


def test_acl_scram_token_add_and_remove() -> None:
    acl_id = Uuid.of(3, 3)
    img = build(rec("AccessControlEntryRecord", id=acl_id, resource_name="t", principal="User:a", host="*"),
                rec("UserScramCredentialRecord", name="alice", mechanism=1, iterations=4096),
                rec("DelegationTokenRecord", owner="User:a", token_id="tok"))
    assert set(img.acls) == {acl_id} and set(img.scram) == {("alice", 1)} and set(img.delegation_tokens) == {"tok"}
    img = replay_on(img, rec("RemoveAccessControlEntryRecord", id=acl_id),
                    rec("RemoveUserScramCredentialRecord", name="alice", mechanism=1),
                    rec("RemoveDelegationTokenRecord", token_id="tok"))
    assert not img.acls and not img.scram and not img.delegation_tokens


@pytest.mark.parametrize("record", [
    rec("RemoveAccessControlEntryRecord", id=Uuid.of(3, 3)),
    rec("RemoveUserScramCredentialRecord", name="bob", mechanism=1),
])
def test_removing_what_does_not_exist(record: Any) -> None:
    with pytest.raises(ReplayError, match="to remove"):
        build(record)


def test_client_quotas_and_producer_ids() -> None:
    entity = message_class("ClientQuotaRecord")
    data = __import__(entity.__module__, fromlist=["EntityData"]).EntityData
    q = rec("ClientQuotaRecord", entity=[data(entity_type="user", entity_name="a")], key="producer_byte_rate",
            value=1024.0)
    img = build(q, rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=1000))
    assert img.client_quotas == {(("user", "a"),): {"producer_byte_rate": 1024.0}}
    assert img.next_producer_id == 1000
    q.remove = True
    assert replay_on(img, q).client_quotas == {}
    with pytest.raises(ReplayError, match="is not greater than the current 1000"):
        replay_on(img, rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=10))


def test_a_failed_record_leaves_the_delta_as_it_was() -> None:
    delta = MetadataDelta(build(*BASE))
    with pytest.raises(ReplayError):
        delta.replay(change(directories=[D1]), 99)
    assert delta.apply().topics[T].partitions[0] == build(*BASE).topics[T].partitions[0]


def test_non_metadata_messages_are_refused() -> None:
    with pytest.raises(ReplayError, match="not a metadata record"):
        build(rec("SnapshotHeaderRecord"))


# ---- offline replicas ----------------------------------------------------------------------
def test_offline_replicas_as_kafka_computes_them() -> None:
    img = build(broker(1, dirs=(D1,), fenced=False), broker(2, dirs=(D2,), fenced=True), broker(4, fenced=False),
                rec("TopicRecord", name="foo", topic_id=T),
                partition(replicas=(1, 2, 3, 4, 5), dirs=[D2, D2, D3, D1, UNASSIGNED]),
                partition(pid=1, replicas=(1, 4), dirs=[LOST, D3]))
    parts = img.topics[T].partitions
    # 1: dir D2 is not one of broker 1's; 2: fenced; 3, 5: not registered; 4 registered no dirs: assumed online
    assert img.offline_replicas(parts[0]) == [1, 2, 3, 5]
    # LOST is never online; a broker without registered dirs counts every dir as online
    assert img.offline_replicas(parts[1]) == [1]


# ---- transactions and snapshots (the loader) -------------------------------------------------
def test_transactions_become_visible_at_end_and_aborts_are_dropped() -> None:
    loader = MetadataLoader()
    loader.replay(broker(1), 0)
    loader.replay(rec("BeginTransactionRecord", name="load"), 1)
    loader.replay(broker(2), 2)
    assert set(loader.image.brokers) == {1}  # open: not yet visible
    loader.replay(rec("AbortTransactionRecord", reason="failover"), 3)
    assert set(loader.image.brokers) == {1}
    loader.replay(rec("BeginTransactionRecord", name="load"), 4)
    loader.replay(broker(3), 5)
    loader.replay(rec("EndTransactionRecord"), 6)
    assert set(loader.image.brokers) == {1}  # published at the end of the batch, not at the record
    loader.end_batch(6)
    assert set(loader.image.brokers) == {1, 3}


@pytest.mark.parametrize(("records", "reason"), [
    (["EndTransactionRecord"], "no transaction is open"),
    (["AbortTransactionRecord"], "no transaction is open"),
    (["BeginTransactionRecord", "BeginTransactionRecord"], "already open"),
])
def test_transaction_marker_errors(records: list[str], reason: str) -> None:
    loader = MetadataLoader()
    with pytest.raises(ReplayError, match=reason):
        for i, name in enumerate(records):
            loader.replay(rec(name), i)


def test_snapshot_replaces_the_image() -> None:
    loader = MetadataLoader()
    loader.replay_all(enumerate(BASE))
    image = loader.load_snapshot([broker(7)], offset=100)
    assert set(image.brokers) == {7} and image.topics == {} and image.offset == 100
