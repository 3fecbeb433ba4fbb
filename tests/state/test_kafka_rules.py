"""Kafka's replay rules, field by field: one test per rule, each naming the Kafka source it follows.

The reference is apache/kafka's metadata module as of the codec's pinned commit (4.0.0-SNAPSHOT), which
includes KAFKA-16583 (PartitionChangeRecord without directories, Kafka 3.7.1 and 3.8). "Kafka's image" means
the broker-side deltas under ``org.apache.kafka.image``; "Kafka's controller" the ``*ControlManager.replay``
methods. Where metalog deliberately differs, the test says so and why (docs/compatibility.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import LOST, MIGRATING, UNASSIGNED, Uuid, message_class, struct_class
from metalog.codec.framing import decode_metadata_record, encode_metadata_record
from metalog.errors import ReplayError
from metalog.state import MetadataDelta
from metalog.state.image import EMPTY, MetadataImage, PartitionRegistration
from tests.conftest import load_vectors

T = Uuid.parse("UXyU9i5ARn6W00ON2taeWA")  # the topic id of Kafka's PartitionChangeRecord vectors
D1, D2, D3, D4 = (Uuid.of(7, i) for i in (1, 2, 3, 4))


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


def build(*records: Any, image: MetadataImage = EMPTY) -> MetadataImage:
    delta = MetadataDelta(image)
    for i, r in enumerate(records):
        delta.replay(r, image.offset + 1 + i)
    return delta.apply()


def topic_with(*partitions: Any) -> MetadataImage:
    return build(rec("TopicRecord", name="foo", topic_id=T), *partitions)


def partition(pid: int = 0, replicas: tuple[int, ...] = (1, 2, 3), dirs: list[Uuid] | None = None, **kw: Any) -> Any:
    fields = {"partition_id": pid, "topic_id": T, "replicas": list(replicas), "isr": list(replicas),
              "leader": replicas[0] if replicas else -1, "leader_epoch": 5, "partition_epoch": 9,
              "directories": [] if dirs is None else dirs, **kw}
    return rec("PartitionRecord", **fields)


def change(**kw: Any) -> Any:
    return rec("PartitionChangeRecord", **{"partition_id": 0, "topic_id": T, **kw})


def after(image: MetadataImage, *records: Any, pid: int = 0) -> PartitionRegistration:
    return build(*records, image=image).topics[T].partitions[pid]


def kafka_record(name: str) -> Any:
    """A record decoded from the bytes Kafka's own serde wrote (tests/data/kafka/kafka-vectors.json)."""
    vector = next(v for v in load_vectors()["metadataRecords"] if v["name"] == name)
    return decode_metadata_record(bytes.fromhex(vector["framedHex"])).message


def broker(bid: int, epoch: int = 10, **kw: Any) -> Any:
    return rec("RegisterBrokerRecord", **{"broker_id": bid, "broker_epoch": epoch, "incarnation_id": Uuid.of(bid, 1),
                                          **kw})


# ==== PartitionRegistration(PartitionRecord) ========================================================
# Kafka: metadata/.../metadata/PartitionRegistration.java, the PartitionRecord constructor (checkDirectories,
# defaultToMigrating), and image/TopicDelta.java replay(PartitionRecord).

@pytest.mark.parametrize("dirs", [None, [], [MIGRATING] * 3], ids=["null", "empty", "all-migrating"])
def test_partition_record_without_assigned_directories_is_migrating_for_every_replica(dirs: Any) -> None:
    # PartitionRegistration(PartitionRecord): defaultToMigrating turns null, empty and all-MIGRATING into
    # DirectoryId.migratingArray(replicas).
    record = partition(dirs=dirs)
    record.directories = dirs  # None is what a v0 record's Directories decodes to before defaulting
    assert after(topic_with(), record).directories == (MIGRATING,) * 3


@pytest.mark.parametrize("dirs", [[D1, D2], [MIGRATING], [D1, D2, D3, D4]], ids=["short", "one-migrating", "long"])
def test_partition_record_directories_of_another_length_are_refused(dirs: list[Uuid]) -> None:
    # PartitionRegistration.checkDirectories(PartitionRecord): a non-empty list whose length is not the
    # replicas' throws InvalidReplicaDirectoriesException, even when every entry is MIGRATING.
    with pytest.raises(ReplayError, match=f"{len(dirs)} directories for 3 replicas"):
        build(rec("TopicRecord", name="foo", topic_id=T), partition(dirs=dirs))


def test_partition_record_unknown_leader_recovery_state_is_refused() -> None:
    # PartitionRegistration(PartitionRecord): LeaderRecoveryState.of throws for a value other than 0 and 1.
    with pytest.raises(ReplayError, match="unknown LeaderRecoveryState value 2"):
        build(rec("TopicRecord", name="foo", topic_id=T), partition(leader_recovery_state=2))


def test_partition_record_null_elr_fields_are_empty() -> None:
    # PartitionRegistration's constructor: "We could parse a lower version record without elr/lastKnownElr".
    p = after(topic_with(), partition(eligible_leader_replicas=None, last_known_elr=None))
    assert (p.elr, p.last_known_elr) == ((), ())


def test_partition_record_replaces_the_partition_whole() -> None:
    # TopicDelta.replay(PartitionRecord): a new PartitionRegistration replaces the previous one, epochs included.
    image = topic_with(partition(dirs=[D1, D2, D3], eligible_leader_replicas=[2]))
    p = after(image, partition(replicas=(4, 5), leader_epoch=0, partition_epoch=0))
    assert p == PartitionRegistration((4, 5), (MIGRATING, MIGRATING), (4, 5), (), (), (), (), 4, 0, 0, 0)


def test_partition_record_for_an_unknown_topic_is_refused() -> None:
    # TopicsDelta.getOrCreateTopicDelta: a TopicDelta over no TopicImage fails on its first partition.
    with pytest.raises(ReplayError, match="unknown topic id"):
        build(partition())


# ==== PartitionRegistration.merge(PartitionChangeRecord): Replicas and Directories ===================
# Kafka: PartitionRegistration.merge and checkDirectories(PartitionChangeRecord), since KAFKA-16583
# ("Handle PartitionChangeRecord without directory IDs", apache/kafka#16118, Kafka 3.7.1 and 3.8): the
# directories come from the record when it has the field, else stay as they are; all MIGRATING (or empty)
# becomes MIGRATING for every new replica. Kafka 3.7.0 gave a new replica UNASSIGNED here, which made its
# brokers fail writing a snapshot below 3.7-IV2; metalog follows the fix.

def _v0(record: Any) -> Any:
    """The record as Kafka writes it below metadata.version 3.7-IV2: version 0, where Directories is null."""
    decoded = decode_metadata_record(encode_metadata_record(record, 0)).message
    assert decoded.directories is None
    return decoded


def test_change_without_directories_keeps_every_replica_migrating() -> None:
    # merge: record.directories() == null -> the current directories; all MIGRATING -> migratingArray(new count).
    image = topic_with(partition())
    p = after(image, _v0(change(replicas=[3, 4, 5, 6], isr=[3, 4], leader=3)))
    assert (p.replicas, p.directories) == ((3, 4, 5, 6), (MIGRATING,) * 4)
    p = after(image, _v0(change(replicas=[2])))
    assert (p.replicas, p.directories) == ((2,), (MIGRATING,))


def test_change_without_directories_keeps_assigned_directories_by_position() -> None:
    # merge keeps the directories array as it is when the record has none, by position, not by broker: the
    # controller always writes Directories with Replicas from 3.7-IV2 on (PartitionChangeBuilder), so Kafka
    # does not remap them.
    image = topic_with(partition(dirs=[D1, D2, D3]))
    p = after(image, change(replicas=[3, 2, 1]))
    assert (p.replicas, p.directories) == ((3, 2, 1), (D1, D2, D3))


def test_change_without_directories_to_another_replica_count_is_refused_when_directories_are_assigned() -> None:
    # merge keeps [D1, D2, D3] for two replicas; PartitionRegistration's constructor throws
    # IllegalArgumentException ("The lengths for replicas and directories do not match").
    image = topic_with(partition(dirs=[D1, MIGRATING, D3]))
    with pytest.raises(ReplayError, match="without Directories, and the 3 current directories are not all MIGRATING"):
        build(change(replicas=[1, 2]), image=image)


def test_change_with_empty_directories_makes_every_replica_migrating() -> None:
    # merge: an empty (non-null) Directories list passes checkDirectories and defaultToMigrating makes it
    # migratingArray(new replica count), whatever the partition had.
    image = topic_with(partition(dirs=[D1, D2, D3]))
    assert after(image, change(directories=[])).directories == (MIGRATING,) * 3
    assert after(image, change(replicas=[1, 2], directories=[])).directories == (MIGRATING,) * 2


def test_change_with_all_migrating_directories_and_no_replicas_fits_the_replica_count() -> None:
    # checkDirectories(PartitionChangeRecord) compares lengths only when Replicas is set; defaultToMigrating
    # then sizes an all-MIGRATING list to the replicas.
    image = topic_with(partition(dirs=[D1, D2, D3]))
    assert after(image, change(directories=[MIGRATING])).directories == (MIGRATING,) * 3


@pytest.mark.parametrize(("record", "reason"), [
    (change(replicas=[1, 2], directories=[D1]), "1 directories for 2 replicas"),
    (change(replicas=[1, 2], directories=[MIGRATING]), "1 directories for 2 replicas"),
    (change(directories=[D1, D2]), "2 directories for 3 replicas"),
], ids=["with-replicas", "migrating-with-replicas", "without-replicas"])
def test_change_directories_of_another_length_than_the_replicas_are_refused(record: Any, reason: str) -> None:
    # checkDirectories(PartitionChangeRecord) throws InvalidReplicaDirectoriesException when Replicas and a
    # non-empty Directories differ in length; without Replicas the constructor throws for real directories.
    with pytest.raises(ReplayError, match=reason):
        build(record, image=topic_with(partition(dirs=[D1, D2, D3])))


def test_change_with_directories_replaces_them() -> None:
    # merge: a non-null Directories list replaces the directories, reserved ids included.
    image = topic_with(partition())
    p = after(image, change(replicas=[3, 4], directories=[D3, LOST]))
    assert (p.replicas, p.directories) == ((3, 4), (D3, LOST))
    assert after(image, change(directories=[UNASSIGNED, D2, D3])).directories == (UNASSIGNED, D2, D3)


def test_kafkas_reassignment_record_with_directories() -> None:
    # Kafka's bytes (PartitionChange-v1-reassign): Replicas [2, 3, 1] with their directories.
    record = kafka_record("PartitionChange-v1-reassign")
    image = topic_with(partition(pid=1))
    p = after(image, record, pid=1)
    assert (p.replicas, p.directories) == (tuple(record.replicas), tuple(record.directories))
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((2, 3), 2, 6, 10)


_directory = st.sampled_from([MIGRATING, UNASSIGNED, LOST, D1, D2, D3])
_replicas = st.lists(st.integers(0, 6), max_size=5, unique=True)


@settings(max_examples=300, deadline=None)
@given(start=st.lists(_directory, min_size=3, max_size=3), replicas=st.none() | _replicas,
       directories=st.none() | st.lists(_directory, max_size=5))
def test_change_directories_always_fit_the_replicas(start: list[Uuid], replicas: list[int] | None,
                                                    directories: list[Uuid] | None) -> None:
    # Property of PartitionRegistration.merge: a merge either throws or leaves exactly one directory per
    # replica; without Directories the directories are the current ones (or MIGRATING for all when the
    # current ones are all MIGRATING); a record with neither field leaves them alone.
    image = topic_with(partition(dirs=start))
    record = change(replicas=replicas, directories=directories)
    try:
        p = after(image, record)
    except ReplayError:
        return
    assert len(p.directories) == len(p.replicas)
    if directories is None:
        expected = (MIGRATING,) * len(p.replicas) if set(start) == {MIGRATING} else tuple(start)
        assert p.directories == expected
    if replicas is None and directories is None:
        assert p.directories == tuple(start)


# ==== merge: the other fields ==========================================================================
# Kafka: PartitionRegistration.merge; LeaderRecoveryState.changeTo; LeaderConstants (NO_LEADER -1,
# NO_LEADER_CHANGE -2).

@pytest.mark.parametrize(("leader", "expected"), [(-2, (1, 5)), (2, (2, 6)), (1, (1, 6)), (-1, (-1, 6))],
                         ids=["no-change", "new", "same", "none"])
def test_change_leader_field_bumps_the_leader_epoch_whenever_it_is_set(leader: int, expected: tuple[int, int]) -> None:
    # merge: NO_LEADER_CHANGE (-2) keeps leader and leader epoch; any other value, the current leader or
    # NO_LEADER (-1) included, becomes the leader and bumps the leader epoch by one.
    p = after(topic_with(partition()), change(leader=leader))
    assert (p.leader, p.leader_epoch) == expected


def test_change_bumps_the_partition_epoch_for_every_record() -> None:
    # merge: partitionEpoch + 1 whatever the record carries, even nothing (Kafka's PartitionChange-v0-empty).
    image = topic_with(partition())
    p = after(image, kafka_record("PartitionChange-v0-empty"), kafka_record("PartitionChange-v0-empty"))
    assert (p.partition_epoch, p.leader_epoch, p.replicas, p.isr) == (11, 5, (1, 2, 3), (1, 2, 3))


@pytest.mark.parametrize(("value", "expected"), [(-1, 1), (0, 0), (1, 1)])
def test_change_leader_recovery_state_minus_one_keeps_it(value: int, expected: int) -> None:
    # LeaderRecoveryState.changeTo: NO_CHANGE (-1) keeps the state; 0 and 1 set it.
    p = after(topic_with(partition(leader_recovery_state=1)), change(leader_recovery_state=value))
    assert p.leader_recovery_state == expected


def test_change_unknown_leader_recovery_state_is_refused() -> None:
    # LeaderRecoveryState.changeTo -> of(value) throws IllegalArgumentException for any other value.
    with pytest.raises(ReplayError, match="unknown LeaderRecoveryState value 3"):
        build(change(leader_recovery_state=3), image=topic_with(partition()))


def test_change_null_lists_keep_and_set_lists_replace() -> None:
    # merge: Isr, RemovingReplicas, AddingReplicas, EligibleLeaderReplicas and LastKnownElr are kept when null
    # and replaced (an empty list included) when set. Kafka's bytes: PartitionChange-v2-elr sets Isr [1],
    # ELR [] and LastKnownElr [3].
    image = topic_with(partition(pid=2, eligible_leader_replicas=[2], last_known_elr=[], removing_replicas=[3]))
    p = after(image, kafka_record("PartitionChange-v2-elr"), pid=2)
    assert (p.isr, p.elr, p.last_known_elr, p.removing_replicas, p.adding_replicas) == ((1,), (), (3,), (3,), ())
    p = after(image, change(partition_id=2, removing_replicas=[], adding_replicas=[4]), pid=2)
    assert (p.isr, p.elr, p.removing_replicas, p.adding_replicas) == ((1, 2, 3), (2,), (), (4,))


def test_change_for_an_unknown_partition_is_refused() -> None:
    # TopicDelta.replay(PartitionChangeRecord): "Unable to find partition".
    with pytest.raises(ReplayError, match="unknown partition foo-7"):
        build(change(partition_id=7), image=topic_with(partition()))


# ==== topics ==========================================================================================
# Kafka: image/TopicsDelta.java.

def test_topic_record_for_an_existing_topic_id_starts_it_without_partitions() -> None:
    # TopicsDelta.replay(TopicRecord): a new TopicDelta over an empty TopicImage, whatever was there.
    image = topic_with(partition())
    assert build(rec("TopicRecord", name="foo", topic_id=T), image=image).topics[T].partitions == {}


def test_topic_record_reusing_a_name_points_the_name_at_the_new_id() -> None:
    # TopicsDelta.apply: the name maps to the new topic; the old id stays (Kafka's controller refuses such a
    # record, "Found duplicate TopicRecord", so no controller writes it; the brokers' image takes it like this).
    other = Uuid.of(5, 5)
    image = build(rec("TopicRecord", name="foo", topic_id=other), image=topic_with(partition()))
    assert image.topics_by_name["foo"].id == other and set(image.topics) == {T, other}


def test_remove_topic_for_an_unknown_topic_is_refused() -> None:
    # TopicsDelta.replay(RemoveTopicRecord): "Unable to delete topic with id ...: no such topic found."
    with pytest.raises(ReplayError, match="unknown topic id"):
        build(rec("RemoveTopicRecord", topic_id=T))


# ==== brokers and controllers ==========================================================================
# Kafka: image/ClusterDelta.java, metadata/BrokerRegistration.java (fromRecord, cloneWith),
# BrokerRegistrationFencingChange, BrokerRegistrationInControlledShutdownChange, ControllerRegistration.

def test_register_broker_keeps_the_last_listener_and_feature_of_a_name() -> None:
    # BrokerRegistration.fromRecord puts endpoints and features into maps by name: a repeated name keeps the last.
    endpoint = struct_class("RegisterBrokerRecord", "BrokerEndpoint")
    feature = struct_class("RegisterBrokerRecord", "BrokerFeature")
    image = build(broker(1, end_points=[endpoint(name="PLAINTEXT", host="a", port=1, security_protocol=0),
                                        endpoint(name="SSL", host="b", port=2, security_protocol=1),
                                        endpoint(name="PLAINTEXT", host="c", port=3, security_protocol=0)],
                         features=[feature(name="group.version", min_supported_version=0, max_supported_version=0),
                                   feature(name="group.version", min_supported_version=0, max_supported_version=1)]))
    b = image.brokers[1]
    assert b.listeners == (("PLAINTEXT", "c", 3, 0), ("SSL", "b", 2, 1))
    assert b.features == (("group.version", 0, 1),)


@pytest.mark.parametrize("log_dirs", [[], None], ids=["empty", "null"])
def test_broker_registration_change_without_log_dirs_keeps_the_directories(log_dirs: Any) -> None:
    # ClusterDelta.replay(BrokerRegistrationChangeRecord): Optional.ofNullable(logDirs).filter(non-empty), so
    # null and empty both leave the broker's directories alone (LogDirs is a non-nullable field: absent is empty).
    image = build(broker(1, log_dirs=[D2, D1], fenced=True))
    record = rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=-1, log_dirs=log_dirs)
    b = build(record, image=image).brokers[1]
    assert (b.fenced, b.directories) == (False, (D1, D2))


def test_broker_registration_change_in_controlled_shutdown_only_enters_it() -> None:
    # BrokerRegistrationInControlledShutdownChange: 0 is no change, 1 enters controlled shutdown; nothing
    # leaves it but a new registration.
    image = build(broker(1, fenced=False),
                  rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, in_controlled_shutdown=1))
    assert image.brokers[1].in_controlled_shutdown
    image = build(rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=-1), image=image)
    assert image.brokers[1].in_controlled_shutdown and not image.brokers[1].fenced
    assert not build(broker(1, epoch=11), image=image).brokers[1].in_controlled_shutdown


@pytest.mark.parametrize("record", [
    rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=2),
    rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, in_controlled_shutdown=-1),
    rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=11),
    rec("FenceBrokerRecord", id=1, epoch=9),
    rec("UnfenceBrokerRecord", id=2, epoch=10),
], ids=["fenced-2", "shutdown-minus-1", "stale-epoch", "fence-stale-epoch", "unfence-unknown"])
def test_broker_changes_with_unknown_values_or_brokers_are_refused(record: Any) -> None:
    # ClusterDelta.getBrokerOrThrow ("Tried to change broker ...") and the two fromValue(...).orElseThrow.
    with pytest.raises(ReplayError):
        build(record, image=build(broker(1)))


@pytest.mark.parametrize("record", [
    rec("UnregisterBrokerRecord", broker_id=2, broker_epoch=10),
    rec("UnregisterBrokerRecord", broker_id=1, broker_epoch=9),
], ids=["unknown", "stale-epoch"])
def test_unregister_of_a_broker_not_registered_at_that_epoch_is_refused(record: Any) -> None:
    # Deliberate difference: Kafka's image (ClusterDelta.replay(UnregisterBrokerRecord)) removes without looking;
    # Kafka's controller refuses it (ClusterControlManager.replay: "no broker registration found for that id" /
    # "... with that epoch found"), so no controller wrote it. metalog reports it: records are missing.
    with pytest.raises(ReplayError, match="but that broker was not registered|did not match"):
        build(record, image=build(broker(1)))


def test_register_controller_with_an_unknown_security_protocol_is_refused() -> None:
    # ControllerRegistration.Builder(RegisterControllerRecord): "Unknown security protocol" for an id that
    # SecurityProtocol.forId does not know.
    endpoint = struct_class("RegisterControllerRecord", "ControllerEndpoint")
    good = rec("RegisterControllerRecord", controller_id=3000, incarnation_id=Uuid.of(1, 1),
               end_points=[endpoint(name="CONTROLLER", host="h", port=9093, security_protocol=3)])
    assert set(build(good).controllers) == {3000}
    bad = rec("RegisterControllerRecord", controller_id=3000, incarnation_id=Uuid.of(1, 1),
              end_points=[endpoint(name="CONTROLLER", host="h", port=9093, security_protocol=9)])
    with pytest.raises(ReplayError, match="unknown security protocol 9 for endpoint 'CONTROLLER'"):
        build(bad)


# ==== features ========================================================================================
# Kafka: image/FeaturesDelta.java, MetadataVersion.fromFeatureLevel, ZkMigrationState.of.

def test_feature_level_zero_removes_a_feature() -> None:
    # FeaturesDelta.replay(FeatureLevelRecord): level 0 of a feature other than metadata.version removes it.
    image = build(rec("FeatureLevelRecord", name="group.version", feature_level=1),
                  rec("FeatureLevelRecord", name="kraft.version", feature_level=1),
                  rec("FeatureLevelRecord", name="group.version", feature_level=0))
    assert image.features.finalized == {"kraft.version": 1}


def test_metadata_version_level_zero_is_refused() -> None:
    # MetadataVersion.fromFeatureLevel(0) throws: no metadata.version has level 0.
    with pytest.raises(ReplayError, match="metadata.version cannot be set to level 0"):
        build(rec("FeatureLevelRecord", name="metadata.version", feature_level=0))


def test_metadata_version_level_metalog_does_not_name_is_kept() -> None:
    # Deliberate difference: fromFeatureLevel throws for a level newer than the Kafka reading the log; metalog
    # reads logs of newer Kafkas, so it keeps the level (shown as unknown-level-N) rather than stop.
    image = build(rec("FeatureLevelRecord", name="metadata.version", feature_level=99))
    assert image.features.metadata_version == 99


@pytest.mark.parametrize("value", [-1, 5])
def test_unknown_zk_migration_state_is_refused(value: int) -> None:
    # ZkMigrationState.of throws "is not a valid Zk migration state" outside 0..4.
    with pytest.raises(ReplayError, match="unknown ZkMigrationState"):
        build(rec("ZkMigrationStateRecord", zk_migration_state=value))


# ==== configs, quotas, producer ids ======================================================================
# Kafka: image/ConfigurationsDelta.java, ConfigurationDelta.java, ClientQuotasDelta.java, ClientQuotaDelta.java,
# ClientQuotaImage.dataToEntity, ProducerIdsDelta.java, controller/ProducerIdControlManager.replay.

def test_config_record_of_an_unknown_resource_type_is_applied() -> None:
    # ConfigurationsDelta.replay(ConfigRecord): ConfigResource.Type.forId gives UNKNOWN for an id it does not
    # know, and the config is applied (Kafka's controller does the same). metalog keeps the id itself, so two
    # unknown types never merge into one resource.
    image = build(rec("ConfigRecord", resource_type=64, resource_name="x", name="a", value="1"),
                  rec("ConfigRecord", resource_type=0, resource_name="x", name="b", value="2"))
    assert image.configs == {(64, "x"): {"a": "1"}, (0, "x"): {"b": "2"}}


def test_config_record_null_value_removes_the_key_and_an_empty_resource() -> None:
    # ConfigurationDelta.replay: Optional.ofNullable(value); ConfigurationsDelta.apply drops empty images.
    image = build(rec("ConfigRecord", resource_type=4, resource_name="1", name="a", value="1"),
                  rec("ConfigRecord", resource_type=4, resource_name="1", name="a", value=None))
    assert image.configs == {}


def test_client_quota_entity_naming_a_type_twice_keeps_the_last_name() -> None:
    # ClientQuotaImage.dataToEntity puts the entity's (type, name) pairs into a map by type.
    data = struct_class("ClientQuotaRecord", "EntityData")
    q = rec("ClientQuotaRecord", entity=[data(entity_type="user", entity_name="a"),
                                         data(entity_type="client-id", entity_name=None),
                                         data(entity_type="user", entity_name="b")],
            key="producer_byte_rate", value=10.0)
    assert build(q).client_quotas == {(("client-id", None), ("user", "b")): {"producer_byte_rate": 10.0}}


def test_client_quota_remove_takes_the_key_away() -> None:
    # ClientQuotaDelta.replay: remove -> OptionalDouble.empty(); an entity without quotas disappears.
    data = struct_class("ClientQuotaRecord", "EntityData")
    entity = [data(entity_type="user", entity_name="a")]
    image = build(rec("ClientQuotaRecord", entity=entity, key="k", value=1.0),
                  rec("ClientQuotaRecord", entity=entity, key="k", remove=True))
    assert image.client_quotas == {}


@pytest.mark.parametrize("next_id", [1000, 999])
def test_producer_ids_that_do_not_increase_are_refused(next_id: int) -> None:
    # Deliberate difference: Kafka's image (ProducerIdsDelta.replay) takes any value; Kafka's controller
    # (ProducerIdControlManager.replay) refuses a next producer id that is not greater than the current one.
    image = build(rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=1000))
    with pytest.raises(ReplayError, match=f"next producer id {next_id} is not greater than the current 1000"):
        build(rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=next_id), image=image)
    assert build(rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=1001),
                 image=image).next_producer_id == 1001


# ==== ACLs, SCRAM, delegation tokens ======================================================================
# Kafka: image/AclsDelta.java, ScramDelta.java, DelegationTokenDelta.java and the controller's
# AclControlManager, ScramControlManager and DelegationTokenControlManager replay methods.

def test_remove_of_an_unknown_acl_is_refused() -> None:
    # AclsDelta.replay(RemoveAccessControlEntryRecord): "Failed to find existing ACL with ID ...".
    with pytest.raises(ReplayError, match="no ACL with id"):
        build(rec("RemoveAccessControlEntryRecord", id=Uuid.of(3, 3)))


def test_remove_of_an_unknown_scram_credential_is_refused() -> None:
    # Deliberate difference: Kafka's image (ScramDelta) removes without looking; Kafka's controller
    # (ScramControlManager.replay) throws "Unable to find credential to delete".
    with pytest.raises(ReplayError, match="no SCRAM credential"):
        build(rec("RemoveUserScramCredentialRecord", name="bob", mechanism=1))


def test_remove_of_an_unknown_delegation_token_changes_nothing() -> None:
    # DelegationTokenDelta.replay(RemoveDelegationTokenRecord) and DelegationTokenControlManager.replay take it
    # as it comes: the controller may expire a token its cache still shows after it was removed.
    token = rec("DelegationTokenRecord", owner="User:a", token_id="tok")
    image = build(token, rec("RemoveDelegationTokenRecord", token_id="nope"))
    assert set(image.delegation_tokens) == {"tok"}
    image = build(rec("RemoveDelegationTokenRecord", token_id="tok"), rec("RemoveDelegationTokenRecord",
                                                                            token_id="tok"), image=image)
    assert image.delegation_tokens == {}
