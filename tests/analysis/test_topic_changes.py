"""The topics a batch changed: the ids the loader's deltas name, and the search limited to them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from metalog.analysis.topic_changes import TopicChanges, TopicIds, changed_entries, changed_topics
from metalog.codec import Uuid, message_class
from metalog.state import MetadataLoader
from metalog.state.image import EMPTY, TopicImage
from metalog.state.loader import OpenTransaction
from tests.state.histories import histories
from tests.state.test_loader import END

_IDS = [Uuid.of(1, i) for i in range(8)]
_OBJECTS = [TopicImage(f"t{i}", _IDS[i]) for i in range(4)]  # (only their identity counts)
_topic_maps = st.dictionaries(st.sampled_from(_IDS), st.sampled_from(_OBJECTS), max_size=8)


def _as_sets(found: tuple[list[tuple[Any, Any]], list[Any]]) -> tuple[set[tuple[Any, int]], set[Any]]:
    changed, removed = found
    return {(key, id(value)) for key, value in changed}, set(removed)


@given(before=_topic_maps, after=_topic_maps, extra=st.sets(st.sampled_from(_IDS)))
def test_the_search_finds_each_entry_that_is_not_the_same_object(before: dict[Uuid, TopicImage],
                                                                 after: dict[Uuid, TopicImage],
                                                                 extra: set[Uuid]) -> None:
    expected = ({(tid, id(t)) for tid, t in after.items() if before.get(tid) is not t},
                set(before) - set(after))
    assert _as_sets(changed_entries(before, after)) == expected
    named = {tid for tid in before.keys() | after.keys() if before.get(tid) is not after.get(tid)}
    assert _as_sets(changed_entries(before, after, named | extra)) == expected
    pids: dict[Uuid, set[int] | None] = {tid: {1} for tid in named | extra}
    found = changed_topics(before, after, TopicIds(before, pids))
    assert _as_sets(([(tid, t) for tid, t, _ in found[0]], found[1])) == expected
    assert all(p == ({1} if tid in before else None) for tid, _, p in found[0])  # a new topic: all partitions
    # ids taken against other topics, or not known, are not trusted: every topic and partition is compared
    for hint in (TopicIds(dict(before), {}), TopicIds(before, None), None):
        found = changed_topics(before, after, hint)
        assert _as_sets(([(tid, t) for tid, t, _ in found[0]], found[1])) == expected
        assert all(p is None for _, _, p in found[0])


def _batches(values: list[bytes], cuts: list[int]) -> list[list[bytes]]:
    edges = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return [values[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]


@given(values=histories(), cuts=st.lists(st.integers(0, 100), max_size=8))
def test_the_ids_name_every_topic_the_batches_changed(values: list[bytes], cuts: list[int]) -> None:
    changes = TopicChanges(EMPTY.topics)
    loader = MetadataLoader(on_publish=changes.published)
    before, offset = EMPTY.topics, 0
    for batch in _batches(values, cuts):  # transactions open and close anywhere, Begins publish mid-batch
        loader.load_batch(offset, batch)
        offset += len(batch)
        after = loader.image.topics
        taken = changes.take(after)
        assert taken.base is before and taken.ids is not None
        changed, removed = changed_entries(before, after)
        assert {tid for tid, _ in changed} | set(removed) <= taken.ids.keys()
        for tid, topic in changed:
            pids = taken.ids[tid]
            if pids is not None:  # the topic was there before: its partitions that changed are named
                assert tid in before and set(changed_entries(before[tid].partitions, topic.partitions)[0]) <= {
                    (pid, topic.partitions[pid]) for pid in pids}
        found = changed_topics(before, after, taken)
        assert _as_sets(([(tid, t) for tid, t, _ in found[0]], found[1])) == _as_sets((changed, removed))
        before = after


def test_ids_are_unknown_after_a_snapshot_or_a_delta_over_a_pending_transaction() -> None:
    topic = TopicImage("t", _IDS[0])
    pending = replace(EMPTY, offset=5, topics={_IDS[0]: topic}, topics_by_name={"t": topic})
    changes = TopicChanges(EMPTY.topics)
    loader = MetadataLoader(EMPTY, transaction=OpenTransaction(0, pending), on_publish=changes.published)
    loader.load_batch(6, [END])
    assert set(loader.image.topics) == {_IDS[0]}
    assert changes.take(loader.image.topics).ids is None  # the delta started from the pending state
    assert changes.take(loader.image.topics).ids == {}  # and known again from there
    loader.load_snapshot([], offset=10)
    assert changes.take(loader.image.topics).ids is None
    assert changes.take({}).ids is None  # not the topics last published


def test_a_partition_change_names_its_topic_and_partition_only() -> None:
    loader = MetadataLoader()
    tid = Uuid.of(9, 9)
    records = [message_class("TopicRecord")(name="t", topic_id=tid),
               *[message_class("PartitionRecord")(partition_id=p, topic_id=tid, replicas=[1], isr=[1], leader=1)
                 for p in range(4)]]
    loader.load_batch(0, records)
    changes = TopicChanges(loader.image.topics)
    loader.on_publish = changes.published
    loader.load_batch(5, [message_class("PartitionChangeRecord")(partition_id=2, topic_id=tid, leader=-1)])
    loader.load_batch(6, [message_class("PartitionChangeRecord")(partition_id=3, topic_id=tid, leader=-1)])
    assert changes.take(loader.image.topics).ids == {tid: {2, 3}}
    loader.load_batch(7, [message_class("RemoveTopicRecord")(topic_id=tid)])
    assert changes.take(loader.image.topics).ids == {tid: None}
