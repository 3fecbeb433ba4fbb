"""``MetadataLoader.replay_value`` and its compiled twin against the rule table: PartitionChangeRecord's rule has one
home (``metalog.state.rules.partition_change``), and the twin's compiled form of its common case is checked against
it here over random partitions and change records, on whichever core runs (``METALOG_PURE=1``: the pure method, which
calls the rule). The twin's contract: it is given ``ValueReplayParts`` and reads positions and sentinels from them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import MIGRATING, Uuid, core, message_class
from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.framing import encode_metadata_record
from metalog.errors import MetalogError, ReplayError
from metalog.state import MetadataDelta, MetadataLoader
from metalog.state.delta import TopicDelta
from metalog.state.enums import LEADER_RECOVERY_NO_CHANGE, NO_LEADER_CHANGE
from metalog.state.image import EMPTY, MetadataImage, PartitionRegistration
from metalog.state.loader import VALUE_REPLAY
from metalog.state.rules import PARTITION_CHANGE_LISTS, RULES, partition_change
from metalog.state.value_replay import value_replay_parts
from tests.quick import examples
from tests.state.histories import histories

compiled_value_replay = VALUE_REPLAY.compiled  # None where the pure twin runs

TOPIC = Uuid.of(5, 1)
OTHER_TOPIC = Uuid.of(5, 2)
DIRS = [Uuid.of(6, i) for i in (1, 2, 3)]
PARTITION_CHANGE = message_class("PartitionChangeRecord")


def _ints(max_size: int = 4) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(-1, 5), max_size=max_size)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


@st.composite
def partitions(draw: Any) -> PartitionRegistration:
    """A registration as replay keeps one (any values: the rule copies what the record does not change)."""
    replicas = tuple(draw(st.lists(st.integers(0, 5), max_size=4, unique=True)))
    directories = tuple(draw(st.sampled_from([*DIRS, MIGRATING])) for _ in replicas)
    lists = [tuple(draw(_ints())) for _ in range(5)]
    return PartitionRegistration(replicas, directories, *lists, draw(st.integers(-1, 5)), draw(st.sampled_from([0, 1])),
                                 draw(st.integers(0, 2**31 - 2)), draw(st.integers(0, 2**31 - 2)))


@st.composite
def change_records(draw: Any) -> Any:
    """A PartitionChangeRecord of any form: mostly the common one (leader, ISR, ELR), sometimes new replicas,
    directories or a recovery state, another partition or topic."""
    rarer = draw(st.booleans()) and draw(st.booleans())
    fields: dict[str, Any] = {
        "topic_id": draw(st.sampled_from([TOPIC, TOPIC, TOPIC, OTHER_TOPIC])),
        "partition_id": draw(st.sampled_from([0, 0, 0, 1])),
        "leader": draw(st.sampled_from([NO_LEADER_CHANGE, NO_LEADER_CHANGE]) | st.integers(-1, 5)),
        **{name: draw(_maybe(_ints())) for name, _ in PARTITION_CHANGE_LISTS},
    }
    if rarer:
        replicas = draw(_maybe(st.lists(st.integers(0, 5), max_size=4, unique=True)))
        fields["replicas"] = replicas
        fields["directories"] = draw(_maybe(st.lists(st.sampled_from([*DIRS, MIGRATING]), max_size=4)))
        fields["leader_recovery_state"] = draw(st.sampled_from([LEADER_RECOVERY_NO_CHANGE, 0, 1, 7]))
    return PARTITION_CHANGE(**fields)


def _image(partition: PartitionRegistration, before: str) -> tuple[MetadataImage, list[Any]]:
    """An image holding topic TOPIC with ``partition`` as partition 0, and the records loaded before the one tested:
    ``changed``, the partition changed once already in the delta, so the rule finds it in the topic delta's own
    partitions rather than the image's; ``removed``, the topic removed in the delta (the rule refuses it); none."""
    delta = MetadataDelta(EMPTY)
    delta.start_topic("t", TOPIC)
    delta.topics[TOPIC].partitions[0] = partition
    image = delta.apply()
    records = {"changed": [PARTITION_CHANGE(topic_id=TOPIC, partition_id=0)],
               "removed": [message_class("RemoveTopicRecord")(topic_id=TOPIC)], "none": []}
    return image, records[before]


def _by_rule(image: MetadataImage, before: list[Any], record: Any) -> tuple[Any, str | None]:
    delta = MetadataDelta(image)
    for r in before:
        RULES[r.NAME].apply(delta, r)
    try:
        partition_change(delta, record)
    except ReplayError as e:
        return None, e.reason
    return delta.topics[TOPIC].partitions.get(0), None


def _by_loader(image: MetadataImage, before: list[Any], record: Any, version: int) -> tuple[Any, str | None]:
    loader = MetadataLoader(image)
    for r in before:
        loader.replay_value(encode_metadata_record(r, version if r.NAME == "PartitionChangeRecord" else 0), 1)
    try:
        loader.replay_value(encode_metadata_record(record, version), 2)
    except ReplayError as e:
        return None, e.reason
    topic = loader.delta.topics.get(TOPIC)
    return None if topic is None else topic.partitions.get(0), None


@settings(max_examples=examples(400), deadline=None)
@given(partition=partitions(), record=change_records(), before=st.sampled_from(["none", "changed", "removed"]),
       version=st.sampled_from([0, 1, 2]))
def test_replay_value_applies_partition_change_records_as_the_rule_does(partition: PartitionRegistration,
                                                                       record: Any, before: str,
                                                                       version: int) -> None:
    """The loader's replay_value (the compiled twin where it runs) and the rule itself give the same registration,
    of the same class, or the same error, for every form of the record (each version's fields: a field a version
    lacks is written as its default)."""
    record = _as_written(record, version)
    image, records = _image(partition, before)
    expected = _by_rule(image, records, record)
    got = _by_loader(image, records, record, version)
    assert got == expected
    assert type(got[0]) is type(expected[0])


SINCE = {"directories": 1, "eligible_leader_replicas": 2, "last_known_elr": 2}  # the record's fields after v0


def _as_written(record: Any, version: int) -> Any:
    """``record`` as a record of ``version`` can hold it: the fields the version lacks at their defaults (null)."""
    for name, since in SINCE.items():
        if version < since:
            setattr(record, name, None)
    return record


# ---- the contract ------------------------------------------------------------------------------------------------
compiled_only = pytest.mark.skipif(compiled_value_replay is None, reason="the compiled state core does not run here")


@compiled_only
def test_the_twin_places_the_registration_fields_by_their_names() -> None:
    """The twin reads the registration's positions from the parts: given a registration whose fields come in
    another order, it builds that class's tuples in that order (the positions are not copied into it)."""
    from typing import NamedTuple

    class Reversed(NamedTuple):  # PartitionRegistration's fields, last first
        partition_epoch: int
        leader_epoch: int
        leader_recovery_state: int
        leader: int
        last_known_elr: tuple[int, ...]
        elr: tuple[int, ...]
        adding_replicas: tuple[int, ...]
        removing_replicas: tuple[int, ...]
        isr: tuple[int, ...]
        directories: tuple[Uuid, ...]
        replicas: tuple[int, ...]

    parts = value_replay_parts()
    change = replace(parts.partition_change, registration=Reversed, registration_fields=Reversed._fields)
    loader = MetadataLoader()
    delta = loader.delta = MetadataDelta(EMPTY)
    delta.start_topic("t", TOPIC)
    delta.topics[TOPIC].partitions[0] = Reversed(3, 4, 0, 1, (), (), (), (), (1,), (DIRS[0],), (1,))
    twin = compiled_value_replay(loader, loader.replay_value, replace(parts, partition_change=change))
    twin(encode_metadata_record(PARTITION_CHANGE(topic_id=TOPIC, partition_id=0, leader=2, isr=[1, 2]), 0), 7)
    assert delta.topics[TOPIC].partitions[0] == Reversed(4, 5, 0, 2, (), (), (), (), (1, 2), (DIRS[0],), (1,))
    assert loader.offset == 7


@pytest.mark.parametrize("direct", [True, False], ids=["slots-set-by-the-twin", "another-topic-delta-class"])
def test_a_topic_delta_made_by_the_twin_is_the_one_the_delta_makes(direct: bool) -> None:
    """A record of a topic the delta has not touched yet makes its TopicDelta as ``MetadataDelta.topic_delta`` does
    (the twin sets its slots itself where TopicDelta is the class it expects, and calls the class otherwise)."""
    partition = PartitionRegistration((1,), (DIRS[0],), (1,), (), (), (), (), 1, 0, 3, 4)
    image, _ = _image(partition, "none")
    loader = MetadataLoader(image)
    if not direct and compiled_value_replay is not None:
        class Other:  # TopicDelta's slots in another order: the twin calls the class
            __slots__ = ("partitions", "base_partitions", "base", "id", "name")
            __init__, image = TopicDelta.__init__, TopicDelta.image

        parts = value_replay_parts()
        change = replace(parts.partition_change, topic_delta=Other)
        loader.replay_value = compiled_value_replay(loader, loader.replay_value,  # type: ignore[method-assign]
                                                    replace(parts, partition_change=change))
    loader.replay_value(encode_metadata_record(PARTITION_CHANGE(topic_id=TOPIC, partition_id=0, leader=-1), 0), 5)
    made, expected = loader.delta.topics[TOPIC], MetadataDelta(image).topic_delta(TOPIC)
    assert made.id == expected.id
    for name in ("name", "base", "base_partitions"):
        assert getattr(made, name) is getattr(expected, name), name
    assert type(made).__name__ == ("TopicDelta" if direct or compiled_value_replay is None else "Other")
    assert made.partitions == {0: partition._replace(leader=-1, leader_epoch=4,
                                                                                        partition_epoch=5)}
    assert made.image() == replace(image.topics[TOPIC], partitions={0: made.partitions[0]})
    assert set(TopicDelta.__slots__) == {"name", "id", "base", "base_partitions", "partitions"}  # what the twin sets


@compiled_only
def test_the_twin_refuses_parts_that_do_not_match_the_registration() -> None:
    parts = value_replay_parts()
    wrong = replace(parts.partition_change, registration_fields=PartitionRegistration._fields[:-1])
    loader = MetadataLoader()
    with pytest.raises(TypeError, match="do not match"):
        compiled_value_replay(loader, loader.replay_value, replace(parts, partition_change=wrong))


def test_the_parts_name_the_rule_and_the_definitions_it_mirrors() -> None:
    change = value_replay_parts().partition_change
    assert change.rule is partition_change and change.registration is PartitionRegistration
    assert change.registration_fields == PartitionRegistration._fields
    assert (change.no_leader_change, change.no_recovery_change) == (NO_LEADER_CHANGE, LEADER_RECOVERY_NO_CHANGE)
    assert {field for _, field in change.lists} <= set(PartitionRegistration._fields)
    assert {name for name, _ in change.lists} <= set(PARTITION_CHANGE.__slots__)


@compiled_only
def test_the_parts_give_each_compiled_reader_its_c_entry_point() -> None:
    """Every reader of the dispatch table that is a compiled reader comes with its C entry point (the twin reads
    records through it), and no other does."""
    parts = value_replay_parts()
    assert parts.entries and set(parts.entries) <= set(parts.dispatch)
    for key, (reader, _) in parts.dispatch.items():
        cls = message_class(METADATA_BY_API_KEY[key >> 8].name)
        assert parts.entries.get(key) is core.compiled_entry(cls, key & 0xFF, reader)
        assert (key in parts.entries) == core.is_compiled(cls), cls.__name__


# ---- a batch's values at once ------------------------------------------------------------------------------------
REFUSED = encode_metadata_record(PARTITION_CHANGE(topic_id=Uuid.of(9, 9), partition_id=0), 0)  # an unknown topic


@settings(max_examples=examples(80), deadline=None)
@given(values=histories(), as_list=st.booleans(), bad=st.sampled_from([None, b"", b"\x01\x05\x02\xff", REFUSED]),
       at=st.integers(0, 8))
def test_replay_values_loads_a_batch_as_replay_value_does_one_by_one(values: list[bytes], as_list: bool,
                                                                     bad: bytes | None, at: int) -> None:
    """``replay_values`` (the twin's loop where it runs; replay_scanned's per-batch call) gives the state and the
    offset that ``replay_value`` per value gives, and stops at a value that does not decode or apply with the same
    error (naming the same offset), the values before it loaded; a batch's values given as another sequence than
    a list too."""
    values = [*values[:at], bad, *values[at:]]
    one, batch = MetadataLoader(), MetadataLoader()
    expected = _outcome(one, lambda: [one.replay_value(v, offset) for offset, v in enumerate(values, 10)])
    got = _outcome(batch, lambda: batch.replay_values(values if as_list else tuple(values), 10))
    assert got == expected


def _outcome(loader: MetadataLoader, run: Any) -> tuple[Any, ...]:
    try:
        run()
        error = None
    except MetalogError as e:
        error = (type(e), str(e))
    return error, loader.offset, loader.delta.apply()
