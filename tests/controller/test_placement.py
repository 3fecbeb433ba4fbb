"""KIP-36 placement: Kafka's AdminUtils vectors byte for byte, the errors, and the invariants it promises."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.controller import errors as E
from metalog.controller.placement import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    parse_brokers,
    rack_alternated_broker_list,
)
from metalog.errors import PlacementError
from tests.conftest import load_vectors

VECTORS = load_vectors()["adminUtilsAssignReplicasToBrokers"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["source"].split(".")[-1] for v in VECTORS])
def test_kafka_vectors(vector: dict[str, Any]) -> None:
    brokers = [BrokerMetadata(b["id"], b["rack"]) for b in vector["brokers"]]
    got = assign_replicas_to_brokers(brokers, vector["nPartitions"], vector["replicationFactor"],
                                     vector["fixedStartIndex"], vector["startPartitionId"])
    assert {str(p): r for p, r in got.items()} == vector["assignment"]
    assert list(got) == sorted(got)
    if "rackAlternatedBrokerList" in vector:
        racks = {b.id: b.rack for b in brokers}
        assert rack_alternated_broker_list(racks) == vector["rackAlternatedBrokerList"]


def test_rack_alternated_list_interlaces_racks_of_uneven_size() -> None:
    racks = {0: "r1", 1: "r1", 2: "r1", 3: "r2", 4: "r3", 5: "r3"}
    assert rack_alternated_broker_list(racks) == [0, 3, 4, 1, 5, 2]


def test_racks_sort_as_java_strings() -> None:
    # U+FF21 sorts after U+1F600 by code point but before it by UTF-16 code unit (0xFF21 > 0xD83D).
    racks = {0: "\U0001F600", 1: "\uFF21"}
    assert rack_alternated_broker_list(racks) == [0, 1]


def test_start_partition_continues_leaders_but_not_the_follower_shift() -> None:
    """Kafka starts the shift at the start index again: only crossing a multiple of the broker count
    inside one call moves it, so added partitions 6..9 do not repeat the second round's followers."""
    brokers = [BrokerMetadata(i) for i in range(5)]
    whole = assign_replicas_to_brokers(brokers, 10, 3, 0, 0)
    tail = assign_replicas_to_brokers(brokers, 5, 3, 0, 6)
    assert [r[0] for r in tail.values()] == [whole[p][0] for p in range(6, 10)] + [0]
    assert tail == {6: [1, 2, 3], 7: [2, 3, 4], 8: [3, 4, 0], 9: [4, 0, 1], 10: [0, 2, 3]}


def test_rack_unaware_keeps_the_given_order() -> None:
    got = assign_replicas_to_brokers([BrokerMetadata(i) for i in (5, 1, 9)], 3, 1, 0, 0)
    assert got == {0: [5], 1: [1], 2: [9]}


def test_huge_start_index_wraps_like_java_int() -> None:
    brokers = [BrokerMetadata(i) for i in range(3)]
    # (0 + 2^31-1) % 3 == 1 in Java too; the replica shift 2^31-1 + 0 stays positive.
    assert assign_replicas_to_brokers(brokers, 1, 2, 2**31 - 1, 0) == {0: [1, 0]}
    # Partition 3 wraps the start index past 2^31: Java indexes with a negative number and fails.
    with pytest.raises(PlacementError, match="out of bounds"):
        assign_replicas_to_brokers(brokers, 4, 1, 2**31 - 1, 0)


@pytest.mark.parametrize(("brokers", "partitions", "rf", "code", "message"), [
    ([0, 1], 0, 1, E.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
    ([0, 1], -3, 1, E.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
    ([0, 1], 1, 0, E.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."),
    ([0, 1], 1, 3, E.INVALID_REPLICATION_FACTOR, "Replication factor: 3 larger than available brokers: 2."),
    ([], 1, 1, E.INVALID_REPLICATION_FACTOR, "Replication factor: 1 larger than available brokers: 0."),
    ([(0, "a"), 1], 1, 1, E.UNKNOWN_SERVER_ERROR,
     "Not all brokers have rack information for replica rack aware assignment."),
    ([0, 0], 1, 1, E.INVALID_REQUEST, "Broker list contains duplicate entries: [0, 0]"),
])
def test_errors(brokers: list[Any], partitions: int, rf: int, code: int, message: str) -> None:
    metas = [BrokerMetadata(*b) if isinstance(b, tuple) else BrokerMetadata(b) for b in brokers]
    with pytest.raises(PlacementError) as info:
        assign_replicas_to_brokers(metas, partitions, rf, 0, 0)
    assert (info.value.code, str(info.value)) == (code, message)


def test_random_start_is_reproducible_with_a_seeded_rng() -> None:
    brokers = [BrokerMetadata(i, f"r{i % 3}") for i in range(7)]
    a = assign_replicas_to_brokers(brokers, 9, 3, rng=random.Random(7))
    b = assign_replicas_to_brokers(brokers, 9, 3, rng=random.Random(7))
    assert a == b
    starts = {assign_replicas_to_brokers(brokers, 1, 1, rng=random.Random(s))[0][0] for s in range(40)}
    assert len(starts) > 1


def test_parse_brokers() -> None:
    assert parse_brokers("0:rack1,1:rack3,2") == [BrokerMetadata(0, "rack1"), BrokerMetadata(1, "rack3"),
                                                  BrokerMetadata(2, None)]
    with pytest.raises(ValueError, match="not a broker id"):
        parse_brokers("x:rack1")
    with pytest.raises(ValueError, match="empty rack"):
        parse_brokers("1:")


# ---- invariants ----------------------------------------------------------------------------------
@st.composite
def clusters(draw: st.DrawFn, racked: bool) -> tuple[list[BrokerMetadata], int, int, int]:
    ids = draw(st.lists(st.integers(0, 50), min_size=1, max_size=9, unique=True))
    racks = draw(st.lists(st.sampled_from("abcd"), min_size=len(ids), max_size=len(ids))) if racked else None
    brokers = [BrokerMetadata(i, racks[k] if racks else None) for k, i in enumerate(ids)]
    rf = draw(st.integers(1, len(ids)))
    return brokers, draw(st.integers(1, 30)), rf, draw(st.integers(0, 20))


@given(clusters(racked=True) | clusters(racked=False), st.integers(0, 40))
def test_each_partition_on_distinct_brokers_and_as_many_racks_as_possible(
        cluster: tuple[list[BrokerMetadata], int, int, int], start_partition: int) -> None:
    brokers, n, rf, start = cluster
    got = assign_replicas_to_brokers(brokers, n, rf, start, start_partition)
    assert list(got) == list(range(start_partition, start_partition + n))
    rack_of = {b.id: b.rack for b in brokers}
    n_racks = len({b.rack for b in brokers})
    for replicas in got.values():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= set(rack_of)
        if brokers[0].rack is not None:
            assert len({rack_of[b] for b in replicas}) == min(rf, n_racks)


@given(clusters(racked=True) | clusters(racked=False))
def test_leaders_spread_evenly(cluster: tuple[list[BrokerMetadata], int, int, int]) -> None:
    brokers, n, rf, start = cluster
    got = assign_replicas_to_brokers(brokers, n, rf, start, 0)
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(b.id, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 4), st.integers(0, 12), st.data())
def test_replicas_spread_evenly_in_whole_rounds(n_racks: int, per_rack: int, rounds: int, start: int,
                                                data: st.DataObject) -> None:
    """Equal racks and RF = number of racks (Kafka's promise), or no racks at all: whole rounds place
    exactly the same number of replicas on every broker."""
    racked = data.draw(st.booleans())
    n = n_racks * per_rack
    brokers = [BrokerMetadata(i, f"rack{i % n_racks}" if racked else None) for i in range(n)]
    rf = n_racks if racked else data.draw(st.integers(1, n))
    got = assign_replicas_to_brokers(brokers, rounds * n, rf, start, 0)
    counts = Counter(b for r in got.values() for b in r)
    assert set(counts.values()) == {rounds * rf}
