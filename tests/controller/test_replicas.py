"""Broker state changes from deltas, and the bounded state-change queue."""

from __future__ import annotations

import pytest

from metalog.codec.uuid import Uuid
from metalog.controller.commands import AlterPartition, CreateTopic, DeleteTopic
from metalog.controller.replicas import (
    Change,
    StateChange,
    StateChangeQueue,
    StateChangeQueueFull,
    state_changes,
)
from tests.controller.helpers import cluster, epoch, heartbeat

TID = Uuid.of(3, 3)


def kinds(changes: list[StateChange]) -> list[tuple[str, str, int, int]]:
    return [(c.change.value, f"{c.topic}-{c.partition}", c.epoch, c.leader) for c in changes]


def test_create_fence_delete() -> None:
    c = cluster(dirs_per_broker=(1, 1, 1))
    empty = c.image
    c.submit(CreateTopic("foo", TID, 2, 2, 0))
    created = c.image
    assert kinds(state_changes(empty, created, 1)) == [
        ("start-replica", "foo-0", 0, 0), ("become-follower", "foo-0", 0, 0),
        ("start-replica", "foo-1", 0, 1), ("become-leader", "foo-1", 0, 1)]
    assert state_changes(created, created, 1) == []
    c.submit(heartbeat(0, epoch(c, 0), want_fence=True))
    assert kinds(state_changes(created, c.image, 1)) == [("become-leader", "foo-0", 1, 1)]
    assert state_changes(created, c.image, 2) == []  # foo-1 is on brokers 1 and 2: untouched
    fenced = c.image
    c.submit(DeleteTopic("foo"))
    assert kinds(state_changes(fenced, c.image, 1)) == [("close-replica", "foo-0", 1, -1),
                                                       ("close-replica", "foo-1", 0, -1)]


def test_isr_only_change_needs_nothing() -> None:
    c = cluster(dirs_per_broker=(1, 1, 1))
    c.submit(CreateTopic("foo", TID, 1, 3, 0))
    before = c.image
    assert c.submit(AlterPartition(0, epoch(c, 0), TID, 0, 0, 0, (0, 1))).ok
    assert state_changes(before, c.image, 2) == []


def sc(kind: Change, pid: int, e: int) -> StateChange:
    return StateChange(kind, "t", pid, e)


def test_queue_shrinks_to_latest_close_per_partition_and_drops_starts() -> None:
    q = StateChangeQueue(7, 4)
    for item in [sc(Change.START_REPLICA, 0, 1), sc(Change.CLOSE_REPLICA, 0, 1), sc(Change.CLOSE_REPLICA, 0, 3),
                 sc(Change.BECOME_LEADER, 1, 2)]:
        q.put(item)
    q.put(sc(Change.CLOSE_REPLICA, 2, 5))
    assert q.drain() == [sc(Change.CLOSE_REPLICA, 0, 3), sc(Change.BECOME_LEADER, 1, 2),
                         sc(Change.CLOSE_REPLICA, 2, 5)]
    assert len(q) == 0


def test_queue_full_after_shrinking_is_an_error() -> None:
    q = StateChangeQueue(7, 2)
    q.put(sc(Change.CLOSE_REPLICA, 0, 1))
    q.put(sc(Change.BECOME_FOLLOWER, 1, 1))
    with pytest.raises(StateChangeQueueFull, match="state-change queue of broker 7 is full \\(2 requests"):
        q.put(sc(Change.START_REPLICA, 2, 1))
    assert len(q) == 2
    with pytest.raises(ValueError):
        StateChangeQueue(1, 0)
