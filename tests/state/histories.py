"""Random valid histories of every metadata record type, for properties of replay.

Each record is drawn from the codec's own strategy for its type (``tests.codec.strategies``), with the fields
that name entities (broker ids and epochs, topic ids, partition ids, config resources, quota entities, ACL ids,
SCRAM users, token ids, feature names) drawn from small pools, so that records meet the entities earlier
records made. A history keeps the records that apply, in order, to what sequential replay has made of those
before them (a record that cannot apply changes nothing: the rules' contract), so it is valid by construction;
it also leaves out what no Kafka controller writes though replay applies it (a TopicRecord reusing the name
of a topic that exists).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from hypothesis import strategies as st

from metalog.codec import Uuid, message_class, struct_class
from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.framing import decode_metadata_record, encode_metadata_record
from metalog.errors import ReplayError
from metalog.state import MetadataLoader
from metalog.state.image import EMPTY, MetadataImage
from tests.codec.strategies import message_objects

RECORD_TYPES = sorted(m.name for m in METADATA_BY_API_KEY.values())
T = TypeVar("T")
TOPICS = [Uuid.of(1, i) for i in (1, 2, 3)]
DIRS = [Uuid.of(2, i) for i in (1, 2, 3)]
ACLS = [Uuid.of(3, i) for i in (1, 2)]
BROKERS, EPOCHS = st.sampled_from([1, 2]), st.sampled_from([1, 2])


def _replicas() -> st.SearchStrategy[list[int]]:
    return st.lists(st.sampled_from([1, 2, 3]), max_size=3, unique=True)


def _entity(draw: Any) -> list[Any]:
    data = struct_class("ClientQuotaRecord", "EntityData")
    return draw(st.lists(st.builds(data, entity_type=st.sampled_from(["user", "client-id"]),
                                   entity_name=st.sampled_from(["alice", None])), min_size=1, max_size=2))


def _endpoints(draw: Any) -> list[Any]:
    endpoint = struct_class("RegisterControllerRecord", "ControllerEndpoint")
    return draw(st.lists(st.builds(endpoint, name=st.sampled_from(["A", "B"]), host=st.just("h"),
                                   port=st.integers(1, 9), security_protocol=st.sampled_from([0, 1, 3, 7])),
                         max_size=2))


# record type -> field -> a strategy, or a function of ``draw`` for fields that are structs
POOLS: dict[str, dict[str, Any]] = {
    "RegisterBrokerRecord": {"broker_id": BROKERS, "broker_epoch": EPOCHS,
                             "log_dirs": st.lists(st.sampled_from(DIRS), max_size=2, unique=True)},
    "UnregisterBrokerRecord": {"broker_id": BROKERS, "broker_epoch": EPOCHS},
    "FenceBrokerRecord": {"id": BROKERS, "epoch": EPOCHS},
    "UnfenceBrokerRecord": {"id": BROKERS, "epoch": EPOCHS},
    "BrokerRegistrationChangeRecord": {"broker_id": BROKERS, "broker_epoch": EPOCHS,
                                       "fenced": st.sampled_from([-1, 0, 1, 2]),
                                       "in_controlled_shutdown": st.sampled_from([0, 1, 2]),
                                       "log_dirs": st.lists(st.sampled_from(DIRS), max_size=2, unique=True)},
    "RegisterControllerRecord": {"controller_id": st.sampled_from([1, 2]), "end_points": _endpoints},
    "TopicRecord": {"name": st.sampled_from(["t1", "t2"]), "topic_id": st.sampled_from(TOPICS)},
    "PartitionRecord": {"topic_id": st.sampled_from(TOPICS), "partition_id": st.sampled_from([0, 1]),
                        "replicas": _replicas(), "isr": _replicas(), "leader": st.sampled_from([-1, 1, 2]),
                        "leader_recovery_state": st.sampled_from([0, 0, 1, 2]),
                        "directories": st.just([]) | st.lists(st.sampled_from(DIRS), max_size=3)},
    "PartitionChangeRecord": {"topic_id": st.sampled_from(TOPICS), "partition_id": st.sampled_from([0, 1]),
                              "replicas": st.none() | _replicas(), "isr": st.none() | _replicas(),
                              "leader": st.sampled_from([-2, -1, 1, 2]),
                              "leader_recovery_state": st.sampled_from([-1, 0, 1]),
                              "directories": st.none() | st.lists(st.sampled_from(DIRS), max_size=3)},
    "RemoveTopicRecord": {"topic_id": st.sampled_from(TOPICS)},
    "ConfigRecord": {"resource_type": st.sampled_from([2, 4, 64]), "resource_name": st.sampled_from(["t1", "t2"]),
                     "name": st.sampled_from(["a", "b"]), "value": st.sampled_from([None, "1", "2"])},
    "ClientQuotaRecord": {"entity": _entity, "key": st.sampled_from(["k1", "k2"]),
                          "value": st.sampled_from([1.0, 2.5])},
    "ProducerIdsRecord": {"next_producer_id": st.integers(0, 50)},
    "AccessControlEntryRecord": {"id": st.sampled_from(ACLS)},
    "RemoveAccessControlEntryRecord": {"id": st.sampled_from(ACLS)},
    "UserScramCredentialRecord": {"name": st.sampled_from(["u1", "u2"]), "mechanism": st.sampled_from([1, 2])},
    "RemoveUserScramCredentialRecord": {"name": st.sampled_from(["u1", "u2"]), "mechanism": st.sampled_from([1, 2])},
    "DelegationTokenRecord": {"token_id": st.sampled_from(["tok1", "tok2"])},
    "RemoveDelegationTokenRecord": {"token_id": st.sampled_from(["tok1", "tok2"])},
    "FeatureLevelRecord": {"name": st.sampled_from(["metadata.version", "group.version"]),
                           "feature_level": st.integers(0, 3)},
    "ZkMigrationStateRecord": {"zk_migration_state": st.integers(0, 5)},
}


@st.composite
def record_values(draw: Any, name: str) -> bytes:
    """One record of type ``name`` at its latest version, framed as the log stores it."""
    cls = message_class(name)
    version = max(cls.VERSIONS)
    record = draw(message_objects(name, version))
    for field, pool in POOLS.get(name, {}).items():
        setattr(record, field, pool(draw) if callable(pool) and not isinstance(pool, st.SearchStrategy)
                else draw(pool))
    return encode_metadata_record(record, version)


# drawn first in every history, so that the records that change brokers, topics and partitions find some
_FIRST = ["RegisterBrokerRecord", "RegisterBrokerRecord", "TopicRecord", "TopicRecord", "PartitionRecord",
          "PartitionRecord", "PartitionRecord"]


@st.composite
def histories(draw: Any, max_size: int = 60) -> list[bytes]:
    """Record values that replay without error from the empty state, in one batch."""
    candidates = [draw(record_values(name)) for name in _FIRST]
    candidates += draw(st.lists(st.sampled_from(RECORD_TYPES).flatmap(record_values), min_size=max_size // 2,
                                max_size=max_size))
    return replayable(candidates, lambda value: decode_metadata_record(value).message)


def replayable(candidates: Iterable[T], record_of: Callable[[T], Any]) -> list[T]:
    """The candidates whose records (``record_of``) apply, in order, to what sequential replay from the empty state
    has made of those kept before them: a random history's records that replay without error, in one batch."""
    loader, kept = MetadataLoader(), []
    for candidate in candidates:
        record = record_of(candidate)
        if record.NAME == "TopicRecord" and _name_taken(loader, record):
            continue
        try:
            loader.replay(record, len(kept))
        except ReplayError:
            continue
        kept.append(candidate)
    return kept


def _name_taken(loader: MetadataLoader, record: Any) -> bool:
    """A TopicRecord naming a topic that exists under another id: metalog's replay points the name at the new
    topic (as Kafka's TopicsDelta does), but no Kafka controller writes one (CreateTopics refuses a name in use),
    and a range delta cannot tell which of two live topics of one name came last."""
    pending = loader.delta.apply()  # the state with the records loaded so far
    topic = pending.topics_by_name.get(record.name)
    return topic is not None and topic.id != record.topic_id


def published(values: list[bytes], image: MetadataImage = EMPTY) -> tuple[MetadataImage, bool]:
    """The state Kafka's loader publishes after ``values``, one batch over ``image``; and whether a transaction
    is open at its end."""
    loader = MetadataLoader(image)
    start = image.offset + 1
    for offset, value in enumerate(values, start):
        loader.replay_value(value, offset)
    loader.end_batch(start + len(values) - 1)
    return loader.image, loader.in_transaction
