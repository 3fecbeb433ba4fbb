"""The parallel replay's overlays (metalog.state.overlay) compose to what sequential replay computes: for valid
histories of every record type cut anywhere, the composed deltas applied to the state before them give the
state Kafka's loader publishes, and the open transaction's pending state."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import message_class, struct_class
from metalog.codec.framing import encode_metadata_record
from metalog.codec.uuid import Uuid
from metalog.errors import ReplayError
from metalog.state.image import EMPTY, MetadataImage
from metalog.state.overlay import RangeBuilder, RangeDelta, entity_values, fold, image_of, start_state, then
from tests.state.histories import histories, published

END = encode_metadata_record(message_class("EndTransactionRecord")(), 0)
ABORT = encode_metadata_record(message_class("AbortTransactionRecord")(), 0)


def range_deltas(values: list[bytes], cuts: list[int], first: int = 0) -> list[RangeDelta]:
    """The deltas of ``values`` cut at ``cuts`` (indexes), each built knowing nothing of what came before."""
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    out = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        builder = RangeBuilder()
        for offset, value in enumerate(values[lo:hi], first + lo):
            builder.add(value, offset)
        out.append(builder.finish())
    return out


def state(image: MetadataImage) -> MetadataImage:
    """An image less its offset: where the last published offset lies is the log-level tests' business
    (tests/analysis/test_parallel.py), since a range delta knows only the offsets of the records it holds."""
    return replace(image, offset=-1)


# each example draws about 40 records through the codec's strategies and replays them four ways (~0.1 s)
@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@settings(max_examples=50)
@given(history=histories(), cuts=st.lists(st.integers(0, 100), max_size=6))
def test_composed_overlays_of_any_cuts_equal_sequential_replay(history: list[bytes], cuts: list[int]) -> None:
    expected, open_transaction = published(history)
    deltas = range_deltas(history, cuts) or [RangeDelta()]
    start = start_state(EMPTY, fold(deltas))
    assert state(start.image) == state(expected)
    left = right = None  # composition is associative: from the left, from the right, pairwise (fold) agree
    for d in deltas:
        left = d if left is None else then(left, d)
    for d in reversed(deltas):
        right = d if right is None else then(d, right)
    assert start_state(EMPTY, left) == start_state(EMPTY, right) == start  # type: ignore[arg-type]
    # the overlay's view of an image (an entity per key) loses nothing: every entity of the rule table is read
    # from an image and written back
    assert image_of(entity_values(expected), expected.configs, expected.offset) == expected
    assert (start.transaction is not None) == open_transaction
    if open_transaction:  # the pending state is what committing the transaction would publish
        assert start.transaction is not None
        assert state(start.transaction[1]) == state(published([*history, END])[0])


@pytest.mark.slow  # as above
@settings(max_examples=50)
@given(history=histories(), split=st.integers(0, 100), cuts=st.lists(st.integers(0, 100), max_size=4))
def test_overlays_apply_to_the_state_they_start_from(history: list[bytes], split: int, cuts: list[int]) -> None:
    """The deltas of a history's tail, built knowing nothing of its head, applied to the state the head published:
    the records they change resolve against that state."""
    k = split % (len(history) + 1)
    image, open_transaction = published(history[:k])
    if open_transaction or not k:
        return
    image = replace(image, offset=k - 1)
    expected, open_at_end = published(history[k:], image)
    start = start_state(image, fold(range_deltas(history[k:], cuts, k)))
    assert state(start.image) == state(expected)
    assert (start.transaction is not None) == open_at_end


@pytest.mark.slow  # as above
@settings(max_examples=50)
@given(history=histories(max_size=20), other=histories(max_size=20), cuts=st.lists(st.integers(0, 100), max_size=3))
def test_a_record_that_cannot_apply_fails_composed_as_it_fails_sequential_replay(
        history: list[bytes], other: list[bytes], cuts: list[int]) -> None:
    """``other``, valid from the empty state, after ``history``: where sequential replay refuses a record, so does
    the composition. One difference, known: a record that cannot apply inside a transaction that is later
    aborted fails sequential replay, which applies it when it comes, while composition drops the aborted records
    unresolved (it cannot resolve them without the state before the range)."""
    image, open_transaction = published(history)
    if open_transaction or any(value[1] == ABORT[1] for value in other):  # an abort of any reason: the known case
        return
    image = replace(image, offset=len(history) - 1)
    try:
        published(other, image)
    except ReplayError:
        with pytest.raises(ReplayError):
            start_state(image, fold(range_deltas(other, cuts, len(history))))


def test_a_config_resource_type_kafka_does_not_know_composes_as_it_replays() -> None:
    """Kafka's ConfigurationsDelta applies a ConfigRecord of any resource type (ConfigResource.Type.forId gives
    UNKNOWN): so do sequential replay and, since the rule is one, the overlays (they used to refuse it)."""
    config = message_class("ConfigRecord")
    values = [encode_metadata_record(config(resource_type=64, resource_name="x", name="a", value="1"), 0),
              encode_metadata_record(config(resource_type=2, resource_name="x", name="a", value="2"), 0)]
    for cuts in ([], [1]):
        image = start_state(EMPTY, fold(range_deltas(values, cuts))).image
        assert image.configs == published(values)[0].configs == {(64, "x"): {"a": "1"}, (2, "x"): {"a": "2"}}


def test_a_quota_entity_naming_a_type_twice_keys_as_it_replays() -> None:
    """Kafka's ClientQuotaImage.dataToEntity keeps the last name of a type named twice: the overlays key the
    entity with the same function as the rule, so a later record on the same entity finds it."""
    cls = message_class("ClientQuotaRecord")
    data = struct_class("ClientQuotaRecord", "EntityData")
    twice = [data(entity_type="user", entity_name="bob"), data(entity_type="user", entity_name="alice")]
    values = [encode_metadata_record(cls(entity=twice, key="k", value=1.0), 0),
              encode_metadata_record(cls(entity=[data(entity_type="user", entity_name="alice")], key="k",
                                         remove=True), 0)]
    for cuts in ([], [1]):
        assert start_state(EMPTY, fold(range_deltas(values, cuts))).image.client_quotas == {}
    assert published(values[:1])[0].client_quotas == {(("user", "alice"),): {"k": 1.0}}


def test_a_topic_removed_then_created_again_under_its_id_still_clears_the_old_configs() -> None:
    """Kafka's MetadataDelta.replay(RemoveTopicRecord) clears the removed topic's configs by its name: a range
    that removes a topic it did not create, then creates a topic under the same id (a full write of the key),
    must still clear them once composition learns the name, wherever the log is cut (the overlays used to drop
    the removal with the records the full write replaced, and kept the old topic's configs)."""
    topic, remove = message_class("TopicRecord"), message_class("RemoveTopicRecord")
    config = message_class("ConfigRecord")
    tid = Uuid.of(0, 1)
    values = [encode_metadata_record(r, 0) for r in (
        topic(name="old", topic_id=tid), config(resource_type=2, resource_name="old", name="a", value="1"),
        remove(topic_id=tid), topic(name="new", topic_id=tid))]
    expected = published(values)[0]
    assert expected.configs == {} and expected.topics[tid].name == "new"
    for cuts in ([], [1], [2], [3], [1, 2], [1, 3], [2, 3], [1, 2, 3]):
        image = start_state(EMPTY, fold(range_deltas(values, cuts))).image
        assert state(image) == state(expected), cuts
