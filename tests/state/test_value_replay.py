"""``MetadataLoader.replay_value`` and its compiled twin against the rule table: PartitionChangeRecord's,
PartitionRecord's and ConfigRecord's rules have one home each (``metalog.state.rules``: ``partition_change``,
``partition_record``, ``config``), and the twin's compiled forms of them are checked against them here over random
partitions and records, on whichever core runs (``METALOG_PURE=1``: the pure method, which calls the rule). The
twin's contract: it is given ``ValueReplayParts`` and reads positions and sentinels from them."""

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
from metalog.state.enums import LEADER_RECOVERY_NO_CHANGE, NO_LEADER_CHANGE, record_type_name
from metalog.state.image import EMPTY, MetadataImage, PartitionRegistration
from metalog.state.loader import VALUE_REPLAY, LoaderPosition
from metalog.state.rules import (
    PARTITION_CHANGE_LISTS,
    PARTITION_RECORD_LISTS,
    RULES,
    config,
    partition_change,
    partition_record,
)
from metalog.state.value_replay import value_replay_parts
from tests.quick import examples
from tests.state.histories import histories

compiled_value_replay = VALUE_REPLAY.compiled  # None where the pure twin runs

TOPIC = Uuid.of(5, 1)
OTHER_TOPIC = Uuid.of(5, 2)
DIRS = [Uuid.of(6, i) for i in (1, 2, 3)]
PARTITION_CHANGE = message_class("PartitionChangeRecord")
PARTITION_RECORD = message_class("PartitionRecord")
CONFIG_RECORD = message_class("ConfigRecord")


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


@st.composite
def partition_records(draw: Any) -> Any:
    """A PartitionRecord of any form: mostly one the rule takes (directories empty, all MIGRATING or one per replica;
    never null: the field is not nullable), sometimes one it refuses (directories that do not fit the replicas, an
    unknown recovery state, another topic)."""
    replicas = draw(st.lists(st.integers(0, 5), max_size=4, unique=True))
    fitting = [draw(st.sampled_from([*DIRS, MIGRATING])) for _ in replicas]
    fields: dict[str, Any] = {
        "topic_id": draw(st.sampled_from([TOPIC, TOPIC, TOPIC, OTHER_TOPIC])),
        "partition_id": draw(st.sampled_from([0, 0, 1])),
        "replicas": replicas,
        "directories": draw(st.sampled_from([[], fitting, fitting, [MIGRATING] * len(replicas)])
                            | st.lists(st.sampled_from(DIRS), max_size=4)),
        **{name: draw(_maybe(_ints()) if null_empty else _ints()) for name, _, null_empty in PARTITION_RECORD_LISTS
           if name != "replicas"},
        "leader": draw(st.integers(-1, 5)),
        "leader_recovery_state": draw(st.sampled_from([0, 0, 1, 7])),
        "leader_epoch": draw(st.integers(0, 2**31 - 1)),
        "partition_epoch": draw(st.integers(0, 2**31 - 1)),
    }
    return PARTITION_RECORD(**fields)


def _outcome_of(image: MetadataImage, before: list[Any], apply: Any) -> tuple[Any, str | None]:
    """The delta's topics and configs after ``apply(delta)`` over ``image`` and the records ``before``, or the error."""
    delta = MetadataDelta(image)
    for r in before:
        RULES[r.NAME].apply(delta, r)
    try:
        apply(delta)
    except ReplayError as e:
        return None, e.reason
    return _changes(delta), None


def _changes(delta: MetadataDelta) -> Any:
    topics = {tid: (t.name, t.base, {pid: (type(p), p) for pid, p in t.partitions.items()})
              for tid, t in delta.topics.items()}
    return topics, delta.deleted_topics, delta.configs, delta.cleared_configs


def _loaded(image: MetadataImage, before: list[Any], record: Any, version: int) -> tuple[Any, str | None]:
    loader = MetadataLoader(image)
    for r in before:
        loader.replay_value(encode_metadata_record(r, 0), 1)
    try:
        loader.replay_value(encode_metadata_record(record, version), 2)
    except ReplayError as e:
        return None, e.reason
    return _changes(loader.delta), None


NEW_TOPIC = [message_class("TopicRecord")(name="t2", topic_id=TOPIC)]  # the topic re-created: a delta with no base


@settings(max_examples=examples(400), deadline=None)
@given(partition=partitions(), record=partition_records(),
       before=st.sampled_from(["none", "changed", "removed", "new"]), version=st.sampled_from([0, 1, 2]))
def test_replay_value_applies_partition_records_as_the_rule_does(partition: PartitionRegistration, record: Any,
                                                                 before: str, version: int) -> None:
    """The loader's replay_value (the compiled twin where it runs) and ``rules.partition_record`` register the same
    partition, of the same class, in the same topic delta, or raise the same error, whatever the record's form and
    the topic's: in the image, changed in the delta already, removed in it, or re-created in it (no base)."""
    for name, since in (("directories", 1), ("eligible_leader_replicas", 2), ("last_known_elr", 2)):
        if version < since:  # what a version lacks is written as its default
            setattr(record, name, None if name != "directories" else [])
    image, records = _image(partition, before) if before != "new" else (_image(partition, "none")[0], NEW_TOPIC)
    expected = _outcome_of(image, records, lambda d: partition_record(d, record))
    assert _loaded(image, records, record, version) == expected


@settings(max_examples=examples(200), deadline=None)
@given(resource_type=st.sampled_from([2, 4, 99]), resource_name=st.sampled_from(["", "t", "1"]),
       name=st.sampled_from(["a", "b"]), value=_maybe(st.sampled_from(["", "v"])), set_before=st.booleans(),
       cleared_before=st.booleans())
def test_replay_value_applies_config_records_as_the_rule_does(resource_type: int, resource_name: str, name: str,
                                                              value: str | None, set_before: bool,
                                                              cleared_before: bool) -> None:
    """The loader's replay_value (the compiled twin where it runs) and ``rules.config`` make the same changes of
    the resource's configs (a null value: deleted), over changes the delta holds already or none, after the
    resource's configs were cleared in the delta or not."""
    record = CONFIG_RECORD(resource_type=resource_type, resource_name=resource_name, name=name, value=value)
    before = []
    if cleared_before:  # a topic removed in the delta clears its configs
        before += [message_class("TopicRecord")(name="t", topic_id=OTHER_TOPIC),
                   message_class("RemoveTopicRecord")(topic_id=OTHER_TOPIC)]
    if set_before:
        before.append(CONFIG_RECORD(resource_type=resource_type, resource_name=resource_name, name="a", value="x"))
    expected = _outcome_of(EMPTY, before, lambda d: config(d, record))
    assert _loaded(EMPTY, before, record, 0) == expected


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


def test_a_registration_the_delta_made_changes_again_without_touching_what_others_hold() -> None:
    """A partition changed twice in one delta: the twin changes the registration it made the first time in place
    only where the delta alone holds it; one held elsewhere too (here by the test, as a subscriber may hold what it
    was published) keeps its values, and the delta gets a new one, as the rule makes."""
    partition = PartitionRegistration((1, 2), (DIRS[0], DIRS[1]), (1,), (), (), (), (), 1, 0, 3, 4)
    image, _ = _image(partition, "none")
    loader = MetadataLoader(image)
    for offset, leader in ((5, 2), (6, 1), (7, 2)):
        if offset == 6:
            held = loader.delta.topics[TOPIC].partitions[0]
            kept = tuple(held)
        loader.replay_value(encode_metadata_record(PARTITION_CHANGE(topic_id=TOPIC, partition_id=0, leader=leader,
                                                                    isr=[leader]), 1), offset)
    assert tuple(held) == kept == tuple(partition._replace(leader=2, isr=(2,), leader_epoch=4, partition_epoch=5))
    got = loader.delta.topics[TOPIC].partitions[0]
    assert got is not held and type(got) is PartitionRegistration
    assert got == partition._replace(leader=2, isr=(2,), leader_epoch=6, partition_epoch=7)
    assert image.topics[TOPIC].partitions[0] == partition


@compiled_only
def test_the_twin_refuses_parts_that_do_not_match_the_registration() -> None:
    parts = value_replay_parts()
    wrong = replace(parts.partition_change, registration_fields=PartitionRegistration._fields[:-1])
    loader = MetadataLoader()
    with pytest.raises(TypeError, match="do not match"):
        compiled_value_replay(loader, loader.replay_value, replace(parts, partition_change=wrong))
    short = replace(parts.partition_record, lists=(*PARTITION_RECORD_LISTS[:-1], ("last_known_elr", "elr", True)))
    with pytest.raises(TypeError, match="every PartitionRegistration field"):
        compiled_value_replay(loader, loader.replay_value, replace(parts, partition_record=short))


class PropertyOffset(MetadataLoader):
    """A loader whose ``offset`` is a property (every value set is kept): not the slot the twin writes."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        super().__init__()

    @property  # type: ignore[override]
    def offset(self) -> int:
        return self.offsets[-1]

    @offset.setter
    def offset(self, value: int) -> None:
        self.offsets.append(value)


@pytest.mark.parametrize("cls", [MetadataLoader, PropertyOffset])
def test_the_twin_moves_the_loaders_offset_and_loads_into_its_delta(cls: type[MetadataLoader]) -> None:
    """The loader's ``offset`` and ``delta`` are ``LoaderPosition``'s slots, which the twin writes and reads in place;
    a loader class that makes ``offset`` something else is set through it, as the pure method sets it."""
    assert type(LoaderPosition.__dict__["offset"]).__name__ == "member_descriptor" and LoaderPosition.__slots__ == (
        "offset", "delta")
    loader = cls()
    loader.delta = delta = MetadataDelta(EMPTY)
    loader.replay_values([NO_OP_VALUE, encode_metadata_record(message_class("TopicRecord")(name="t", topic_id=TOPIC),
                                                              0), NO_OP_VALUE], 4)
    assert loader.offset == 6 and loader.delta is delta and list(delta.topics) == [TOPIC]
    if cls is PropertyOffset:
        assert loader.offsets == [-1, 4, 5, 6]


def test_an_offset_someone_holds_never_changes_as_the_loader_moves_on() -> None:
    """The twin gives the int at the loader's ``offset`` slot the next offset in place only where nothing else holds
    it: an offset read from the loader (or shared with the image it started from) keeps its value; offsets past a
    machine word, the small ints and the ones around 2**30 (where an int grows a digit) read as any int does."""
    loader = MetadataLoader()
    held = []
    for offset in [300, 301, 302, 5, 257, 256, 2**30 - 1, 2**30, 2**30 + 1, 2**62, 2**64 + 3, 1000, 1001]:
        loader.replay_value(NO_OP_VALUE, offset)
        assert loader.offset == offset and type(loader.offset) is int
        if offset % 2:  # every other one held, so the next write finds it shared
            held.append((offset, loader.offset))
    loader.replay_values([NO_OP_VALUE] * 4, 700)
    assert loader.offset == 703
    assert all(value == offset for offset, value in held)
    image = replace(EMPTY, offset=500)
    start = MetadataLoader(image)
    start.replay_value(NO_OP_VALUE, 501)
    assert image.offset == 500 and start.offset == 501


NO_OP_VALUE = encode_metadata_record(message_class("NoOpRecord")(), 0)


def test_the_parts_name_the_rule_and_the_definitions_it_mirrors() -> None:
    parts = value_replay_parts()
    assert parts.partition_record.rule is partition_record and parts.partition_record.record is PARTITION_RECORD
    assert parts.partition_record.lists == PARTITION_RECORD_LISTS
    assert {field for _, field, _ in PARTITION_RECORD_LISTS} <= set(PartitionRegistration._fields)
    assert {name for name, _, _ in PARTITION_RECORD_LISTS} <= set(PARTITION_RECORD.__slots__)
    assert parts.config.rule is config and parts.config.record is CONFIG_RECORD and parts.delta is MetadataDelta
    change = parts.partition_change
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



@pytest.mark.parametrize("refused", ["change", "registration", "rule"])
def test_a_refused_record_is_named_at_its_own_offset_after_others(refused: str) -> None:
    """A record the rule refuses is named by its own offset and type, whichever way it reaches the rule: handed on by
    the twin's own PartitionChangeRecord or PartitionRecord rule, or a record the twin does not read
    (RemoveTopicRecord's rule). Records at other offsets came before it, one of them refused and caught: the offset
    named is never one of theirs (the twin locates the error where it hands the record on, not in the record loop)."""
    image, _ = _image(PartitionRegistration((1,), (MIGRATING,), (1,), (), (), (), (), 1, 0, 0, 0), "none")
    bad = {"change": PARTITION_CHANGE(topic_id=TOPIC, partition_id=9),  # no partition 9
           "registration": PARTITION_RECORD(topic_id=OTHER_TOPIC, partition_id=0, replicas=[1], isr=[1]),  # no topic
           "rule": message_class("RemoveTopicRecord")(topic_id=OTHER_TOPIC)}[refused]
    loader = MetadataLoader(image)
    loader.replay_value(encode_metadata_record(PARTITION_CHANGE(topic_id=TOPIC, partition_id=0, leader=1), 0), 7)
    with pytest.raises(ReplayError) as first:
        loader.replay_value(encode_metadata_record(PARTITION_CHANGE(topic_id=OTHER_TOPIC, partition_id=0), 0), 8)
    assert first.value.offset == 8
    with pytest.raises(ReplayError) as e:
        loader.replay_value(encode_metadata_record(bad, 0), 11)
    name = record_type_name(bad.NAME)
    assert e.value.offset == 11 and e.value.record == name and str(e.value).startswith(f"offset 11, {name}: ")
    assert loader.delta.topics[TOPIC].partitions[0].leader_epoch == 1  # (what came before stays)
