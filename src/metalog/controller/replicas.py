"""Broker state changes from a metadata delta (Kafka's replication design): start-replica,
close-replica, become-leader, become-follower, each with the partition's leader epoch, and the
bounded per-broker queue they wait in."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from metalog.codec.uuid import Uuid
from metalog.errors import StateChangeQueueFull
from metalog.state.image import MetadataImage, PartitionRegistration


class Change(Enum):
    START_REPLICA = "start-replica"
    CLOSE_REPLICA = "close-replica"
    BECOME_LEADER = "become-leader"
    BECOME_FOLLOWER = "become-follower"


@dataclass(frozen=True)
class StateChange:
    change: Change
    topic: str
    partition: int
    epoch: int  # the partition's leader epoch the change belongs to
    leader: int = -1


def state_changes(old: MetadataImage, new: MetadataImage, broker_id: int) -> list[StateChange]:
    """What ``broker_id`` must do to go from ``old`` to ``new``: in topic-name, partition order."""
    out: list[StateChange] = []
    for name, pid, before, after in _partitions(old, new):
        was = before is not None and broker_id in before.replicas
        now = after is not None and broker_id in after.replicas
        if was and not now:
            assert before is not None
            epoch = after.leader_epoch if after is not None else before.leader_epoch
            out.append(StateChange(Change.CLOSE_REPLICA, name, pid, epoch))
        elif now:
            assert after is not None
            if not was:
                out.append(StateChange(Change.START_REPLICA, name, pid, after.leader_epoch, after.leader))
            if not was or (before is not None and (before.leader, before.leader_epoch) !=
                           (after.leader, after.leader_epoch)):
                kind = Change.BECOME_LEADER if after.leader == broker_id else Change.BECOME_FOLLOWER
                out.append(StateChange(kind, name, pid, after.leader_epoch, after.leader))
    return out


def _partitions(old: MetadataImage, new: MetadataImage) -> Iterator[
        tuple[str, int, PartitionRegistration | None, PartitionRegistration | None]]:
    """Every partition of either image, matched by topic id (a re-created topic is a different topic)."""
    keys: set[tuple[str, Uuid, int]] = set()
    for image in (old, new):
        for topic in image.topics.values():
            keys.update((topic.name, topic.id, pid) for pid in topic.partitions)
    for name, tid, pid in sorted(keys, key=lambda k: (k[0], bytes(k[1]), k[2])):
        before = old.topics[tid].partitions.get(pid) if tid in old.topics else None
        after = new.topics[tid].partitions.get(pid) if tid in new.topics else None
        if before != after:
            yield name, pid, before, after


class StateChangeQueue:
    """One follower's queue. When full, ``put`` first keeps only the latest close-replica of each
    partition and drops start-replicas (an offline broker must still delete what it hosted, but it
    need not start what it will hear about again); if that frees nothing, it refuses."""

    def __init__(self, broker_id: int, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a state-change queue holds at least one request")
        self.broker_id = broker_id
        self.capacity = capacity
        self.items: list[StateChange] = []

    def put(self, change: StateChange) -> None:
        if len(self.items) >= self.capacity:
            self.shrink()
            if len(self.items) >= self.capacity:
                raise StateChangeQueueFull(
                    f"state-change queue of broker {self.broker_id} is full ({self.capacity} requests, none "
                    f"droppable) and cannot take {change.change.value} {change.topic}-{change.partition} "
                    f"epoch {change.epoch}")
        self.items.append(change)

    def shrink(self) -> None:
        latest_close: dict[tuple[str, int], StateChange] = {}
        for c in self.items:
            if c.change is Change.CLOSE_REPLICA:
                key = (c.topic, c.partition)
                if key not in latest_close or c.epoch >= latest_close[key].epoch:
                    latest_close[key] = c
        self.items = [c for c in self.items if c.change is not Change.START_REPLICA
                      and (c.change is not Change.CLOSE_REPLICA or latest_close[(c.topic, c.partition)] is c)]

    def drain(self) -> list[StateChange]:
        items, self.items = self.items, []
        return items

    def __len__(self) -> int:
        return len(self.items)
