"""KIP-36 replica placement, as Kafka's ``AdminUtils.assignReplicasToBrokers`` computes it.

The first replica of each partition goes round-robin over the broker list from a start index;
the others follow at a shift that grows by one each time the partition ids wrap around the
list, so successive rounds do not repeat the same follower sequences. With racks, the list is
first interlaced by rack (one broker of each rack in turn, racks sorted by name, brokers by id),
and a follower is skipped while its rack, or the broker itself, already holds a replica of the
partition and some other rack (broker) holds none.

Arithmetic is Java's 32-bit ``int`` (wrapping, remainder truncating toward zero), so even a huge
start index gives Kafka's answer. A negative start index or start partition means "random" in
Kafka; here the random choice comes from ``rng`` so callers can make it reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from metalog.controller import errors as E
from metalog.errors import PlacementError

_NOT_ALL_RACKS = "Not all brokers have rack information for replica rack aware assignment."


@dataclass(frozen=True)
class BrokerMetadata:
    """A broker as placement sees it (Kafka's ``BrokerMetadata``): its id and its rack, if any."""

    id: int
    rack: str | None = None


def assign_replicas_to_brokers(brokers: Sequence[BrokerMetadata], n_partitions: int, replication_factor: int,
                               fixed_start_index: int = -1, start_partition_id: int = -1,
                               rng: random.Random | None = None) -> dict[int, list[int]]:
    """Partition id -> replicas (the first is the preferred leader), in partition id order."""
    if n_partitions <= 0:
        raise PlacementError("Number of partitions must be larger than 0.", code=E.INVALID_PARTITIONS,
                             kind="InvalidPartitionsException")
    if replication_factor <= 0:
        raise PlacementError("Replication factor must be larger than 0.", code=E.INVALID_REPLICATION_FACTOR,
                             kind="InvalidReplicationFactorException")
    if replication_factor > len(brokers):
        raise PlacementError(f"Replication factor: {replication_factor} larger than available brokers: "
                             f"{len(brokers)}.", code=E.INVALID_REPLICATION_FACTOR,
                             kind="InvalidReplicationFactorException")
    ids = [b.id for b in brokers]
    if len(set(ids)) != len(ids):  # metalog's own rule: Kafka's callers never pass duplicates
        raise PlacementError(f"Broker list contains duplicate entries: {sorted(ids)}", code=E.INVALID_REQUEST,
                             kind="AdminOperationException")
    rng = rng or random.Random()
    if all(b.rack is None for b in brokers):
        return _rack_unaware(ids, n_partitions, replication_factor, fixed_start_index, start_partition_id, rng)
    if any(b.rack is None for b in brokers):
        raise PlacementError(_NOT_ALL_RACKS, code=E.UNKNOWN_SERVER_ERROR, kind="AdminOperationException")
    racks = {b.id: b.rack for b in brokers if b.rack is not None}
    return _rack_aware(racks, n_partitions, replication_factor, fixed_start_index, start_partition_id, rng)


def rack_alternated_broker_list(broker_racks: dict[int, str]) -> list[int]:
    """Brokers interlaced by rack: the lowest id of each rack in rack-name order, then the next, ..."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker_id)
    queues = [iter(sorted(by_rack[r])) for r in sorted(by_rack, key=_java_string_key)]
    result: list[int] = []
    while len(result) < len(broker_racks):
        for queue in queues:
            taken = next(queue, None)
            if taken is not None:
                result.append(taken)
    return result


def parse_brokers(text: str) -> list[BrokerMetadata]:
    """``0:rack1,1:rack3,2`` -> brokers in that order (a broker without ``:rack`` has none)."""
    out = []
    for item in text.split(","):
        item = item.strip()
        broker, sep, rack = item.partition(":")
        try:
            broker_id = int(broker)
        except ValueError:
            raise ValueError(f"not a broker id: {broker!r} (expected ID or ID:RACK)") from None
        if sep and not rack:
            raise ValueError(f"empty rack for broker {broker_id}")
        out.append(BrokerMetadata(broker_id, rack if sep else None))
    return out


# ---- Kafka's two algorithms ----------------------------------------------------------------------
def _starts(n_brokers: int, fixed_start_index: int, start_partition_id: int,
            rng: random.Random) -> tuple[int, int, int]:
    start = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n_brokers)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n_brokers)
    return start, max(0, start_partition_id), shift


def _rack_unaware(brokers: list[int], n_partitions: int, rf: int, fixed_start_index: int,
                  start_partition_id: int, rng: random.Random) -> dict[int, list[int]]:
    n = len(brokers)
    start, pid, shift = _starts(n, fixed_start_index, start_partition_id, rng)
    out: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if pid > 0 and _rem(pid, n) == 0:
            shift = _i32(shift + 1)
        first = _index(_rem(_i32(pid + start), n), n)
        out[pid] = [brokers[first]] + [brokers[_replica_index(first, shift, j, n)] for j in range(rf - 1)]
        pid = _i32(pid + 1)
    return out


def _rack_aware(racks: dict[int, str], n_partitions: int, rf: int, fixed_start_index: int,
                start_partition_id: int, rng: random.Random) -> dict[int, list[int]]:
    n_racks = len(set(racks.values()))
    arranged = rack_alternated_broker_list(racks)
    n = len(arranged)
    start, pid, shift = _starts(n, fixed_start_index, start_partition_id, rng)
    out: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if pid > 0 and _rem(pid, n) == 0:
            shift = _i32(shift + 1)
        first = _index(_rem(_i32(pid + start), n), n)
        leader = arranged[first]
        replicas = [leader]
        racks_used, brokers_used = {racks[leader]}, {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, _i32(shift * n_racks), k, n)]
                k += 1
                rack = racks[broker]
                if (rack not in racks_used or len(racks_used) == n_racks) and \
                        (broker not in brokers_used or len(brokers_used) == n):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        out[pid] = replicas
        pid = _i32(pid + 1)
    return out


def _replica_index(first: int, second_shift: int, j: int, n: int) -> int:
    shift = 1 + _rem(_i32(second_shift + j), n - 1)  # widened to long in Kafka: no wrap here
    return _index(_rem(first + shift, n), n)


# ---- Java semantics ------------------------------------------------------------------------------
def _i32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def _rem(a: int, b: int) -> int:
    """Java's ``%``: the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _index(i: int, n: int) -> int:
    if i < 0:  # only after int overflow; Kafka would fail with IndexOutOfBoundsException here
        raise PlacementError(f"Index {i} out of bounds for length {n} (int overflow in the start index or "
                             "partition id)", code=E.UNKNOWN_SERVER_ERROR, kind="IndexOutOfBoundsException")
    return i


def _java_string_key(s: str) -> bytes:
    """Java's String.compareTo orders by UTF-16 code unit, not by code point."""
    return s.encode("utf-16-be", "surrogatepass")

