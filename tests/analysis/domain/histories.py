"""Random cluster histories for the analysis' properties: the records its counts read, drawn so that they meet each
other (a few brokers, topics, partitions and log directories), valid by construction.

``tests.state.histories`` draws every record type from the codec's own strategies, which suits the state's
properties but seldom makes a partition change that applies (a random ELR or recovery state is refused); these
draw brokers registering, fenced, unfenced, changing their log directories, in controlled shutdown and leaving,
topics made and removed, partitions placed on MIGRATING, UNASSIGNED, LOST or real directories, leaders moving
among the same replicas or going away, replicas and directories moving, metadata.version and the ZooKeeper
migration state changing, transactions that end or abort, and NoOpRecords. A history keeps the records that apply,
in order, to what sequential replay has made of those before them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED
from tests.state.histories import replayable

BROKERS = (1, 2, 3, 4)
# broker ids on both sides of the end of the compiled step's array of broker numbers (ids 0 to 65,535; the others
# through its dict), a negative one among them
FAR_BROKERS = (-3, 65_535, 65_536, 2_147_483_647)
EPOCHS = [1, 2]
TOPICS = [(f"t{i}", Uuid.of(7, i)) for i in (1, 2)]
PARTITIONS = [0, 1]
REAL_DIRS = [Uuid.of(8, i) for i in (1, 2, 3, 4)]
DIRS = [MIGRATING, UNASSIGNED, LOST, *REAL_DIRS]


def _record(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


@st.composite
def _replicas(draw: st.DrawFn, brokers: tuple[int, ...]) -> list[int]:
    return draw(st.lists(st.sampled_from(brokers), max_size=3, unique=True))


@st.composite
def _register(draw: st.DrawFn, brokers: tuple[int, ...]) -> Any:
    bid = draw(st.sampled_from(brokers))
    return _record("RegisterBrokerRecord", broker_id=bid, broker_epoch=draw(st.sampled_from(EPOCHS)),
                   incarnation_id=Uuid.of(9, bid), fenced=draw(st.booleans()),
                   in_controlled_shutdown=draw(st.booleans()), is_migrating_zk_broker=draw(st.booleans()),
                   log_dirs=draw(st.lists(st.sampled_from(REAL_DIRS), max_size=2, unique=True)))


@st.composite
def _broker_change(draw: st.DrawFn, brokers: tuple[int, ...]) -> Any:
    kind = draw(st.sampled_from(["fence", "unfence", "change", "unregister"]))
    bid, epoch = draw(st.sampled_from(brokers)), draw(st.sampled_from(EPOCHS))
    if kind == "fence":
        return _record("FenceBrokerRecord", id=bid, epoch=epoch)
    if kind == "unfence":
        return _record("UnfenceBrokerRecord", id=bid, epoch=epoch)
    if kind == "unregister":
        return _record("UnregisterBrokerRecord", broker_id=bid, broker_epoch=epoch)
    return _record("BrokerRegistrationChangeRecord", broker_id=bid, broker_epoch=epoch,
                   fenced=draw(st.sampled_from([-1, 0, 1])), in_controlled_shutdown=draw(st.sampled_from([0, 1])),
                   log_dirs=draw(st.just([]) | st.lists(st.sampled_from(REAL_DIRS), max_size=2, unique=True)))


@st.composite
def _topic(draw: st.DrawFn) -> Any:
    name, tid = draw(st.sampled_from(TOPICS))
    if draw(st.booleans()):
        return _record("TopicRecord", name=name, topic_id=tid)
    return _record("RemoveTopicRecord", topic_id=tid)


@st.composite
def _partition(draw: st.DrawFn, brokers: tuple[int, ...], topic: int | None = None, pid: int | None = None) -> Any:
    replicas = draw(_replicas(brokers))
    directories = draw(st.just([]) | st.lists(st.sampled_from(DIRS), min_size=len(replicas), max_size=len(replicas)))
    return _record("PartitionRecord", topic_id=TOPICS[draw(st.sampled_from([0, 1])) if topic is None else topic][1],
                   partition_id=draw(st.sampled_from(PARTITIONS)) if pid is None else pid, replicas=replicas,
                   isr=replicas, leader=draw(st.sampled_from([-1, *replicas, *replicas, 5])), directories=directories)


@st.composite
def _partition_change(draw: st.DrawFn, brokers: tuple[int, ...]) -> Any:
    fields: dict[str, Any] = {"topic_id": draw(st.sampled_from(TOPICS))[1],
                              "partition_id": draw(st.sampled_from(PARTITIONS)),
                              "leader": draw(st.sampled_from([-2, -2, -1, *brokers]))}
    move = draw(st.sampled_from(["leader", "leader", "isr", "replicas", "directories"]))
    if move == "isr":
        fields["isr"] = draw(_replicas(brokers))
    elif move == "replicas":
        replicas = draw(_replicas(brokers))
        fields["replicas"] = replicas
        if draw(st.booleans()):
            fields["directories"] = draw(st.lists(st.sampled_from(DIRS), min_size=len(replicas),
                                                  max_size=len(replicas)))
    elif move == "directories":
        fields["directories"] = draw(st.lists(st.sampled_from(DIRS), min_size=0, max_size=3))
    return _record("PartitionChangeRecord", **fields)


@st.composite
def _other(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["version", "zk", "begin", "end", "abort", "noop", "noop"]))
    if kind == "version":
        return _record("FeatureLevelRecord", name="metadata.version", feature_level=draw(st.integers(1, 20)))
    if kind == "zk":
        return _record("ZkMigrationStateRecord", zk_migration_state=draw(st.integers(0, 4)))
    if kind == "begin":
        return _record("BeginTransactionRecord", name="t")
    if kind == "end":
        return _record("EndTransactionRecord")
    if kind == "abort":
        return _record("AbortTransactionRecord")
    return _record("NoOpRecord")


def _any(brokers: tuple[int, ...]) -> st.SearchStrategy[Any]:
    return st.one_of(_register(brokers), _broker_change(brokers), _broker_change(brokers), _topic(),
                     _partition(brokers), _partition_change(brokers), _partition_change(brokers),
                     _partition_change(brokers), _partition_change(brokers), _other(), _other())


def _first(brokers: tuple[int, ...]) -> list[st.SearchStrategy[Any]]:
    return [_register(brokers), _register(brokers), _register(brokers),
            st.just(_record("TopicRecord", name=TOPICS[0][0], topic_id=TOPICS[0][1])),
            st.just(_record("TopicRecord", name=TOPICS[1][0], topic_id=TOPICS[1][1])),
            *(_partition(brokers, t, p) for t in (0, 1) for p in PARTITIONS)]


@st.composite
def cluster_histories(draw: st.DrawFn, max_size: int = 80, brokers: tuple[int, ...] = BROKERS) -> list[bytes]:
    """Record values that replay without error from the empty state, in one batch (the brokers' ids among
    ``brokers``)."""
    candidates = [draw(s) for s in _first(brokers)] + draw(st.lists(_any(brokers), min_size=max_size // 2,
                                                                    max_size=max_size))
    return [encode_metadata_record(r, max(type(r).VERSIONS)) for r in replayable(candidates, lambda r: r)]
