"""The one table of record rules (metalog.state.rules) is complete and tells the truth: every metadata record type
of the codec's definitions has a row, every row that changes an entity names one the overlays know, the fused
replay's dispatch covers every record version, and a record marked ``full`` writes its entity whatever was there.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.framing import decode_metadata_record, metadata_readers
from metalog.errors import ReplayError
from metalog.state import MetadataDelta
from metalog.state.image import EMPTY, MetadataImage
from metalog.state.overlay import MAPS, entity_value
from metalog.state.rules import APPLY, RULES, Domain, dispatch, entity_key
from tests.state.histories import histories, published, record_values

FULL_TYPES = sorted(name for name, rule in RULES.items() if rule.full)


def test_every_metadata_record_type_of_the_definitions_has_a_rule() -> None:
    # Kafka's MetadataDelta.replay throws for a record type it has no case for; so does the table's test
    assert sorted(RULES) == sorted(m.name for m in METADATA_BY_API_KEY.values())
    assert all(rule.record == name for name, rule in RULES.items())


def test_every_rule_that_changes_the_state_names_its_entity_and_key() -> None:
    for name, rule in RULES.items():
        if rule.domain in (Domain.TRANSACTIONS, Domain.NONE):
            # MetadataBatchLoader handles the transaction markers; MetadataDelta.replay skips NoOpRecord
            assert rule.entity is None and rule.key is None and not rule.full, name
            assert (rule.apply is None) == (rule.domain is Domain.TRANSACTIONS), name
        else:
            assert rule.apply is not None and rule.entity is not None and rule.key is not None, name
            assert APPLY[name] is rule.apply


def test_every_rule_and_key_is_declared_for_its_rows_record_class() -> None:
    # the table picks a rule by the record's name at run time; each rule names its record class for the type
    # checker (apply(d: MetadataDelta, r: PartitionRecord)): the class it names is the row's record, so mypy
    # checks the rule against the fields of the record it is given
    for name, rule in RULES.items():
        if rule.apply is not None:
            assert rule.apply.__annotations__["r"] == name, name
        key = rule.key
        if key is not None and not isinstance(key, attrgetter):  # an attrgetter reads one field, by name
            assert name in key.__annotations__["r"].split(" | ") or key.__annotations__["r"] == "ApiMessage", name


def test_every_entity_is_one_the_overlays_read_and_write() -> None:
    fields = {f.name for f in dataclasses.fields(MetadataImage)}
    entities = {rule.entity for rule in RULES.values() if rule.entity is not None}
    assert entities == {*MAPS, "configs", "features", "zk_migration_state", "next_producer_id"}
    assert set(MAPS) <= fields and all(isinstance(getattr(EMPTY, kind), dict) for kind in MAPS)


def test_the_fused_replay_dispatches_every_record_version_to_its_reader_and_rule() -> None:
    readers, table = metadata_readers(), dispatch()
    assert table is dispatch()  # built once
    assert set(table) == set(readers)
    for key, (reader, rule) in table.items():
        assert reader is readers[key]
        assert rule is RULES[METADATA_BY_API_KEY[key >> 8].name].apply


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@given(history=histories(max_size=30), name=st.sampled_from(FULL_TYPES), data=st.data())
@settings(max_examples=50)  # each example draws about 30 records through the codec's strategies (~0.05 s)
def test_a_full_record_writes_its_entity_whatever_was_there(history: list[bytes], name: str,
                                                            data: st.DataObject) -> None:
    """What makes the overlays' ``full`` sound: the entity after the record does not depend on the state before
    (unless the record cannot apply there at all)."""
    record = decode_metadata_record(data.draw(record_values(name))).message
    key, full = entity_key(record)
    assert full
    after = []
    for image in (EMPTY, published(history)[0]):
        delta = MetadataDelta(image)
        try:
            delta.replay(record, image.offset + 1)
        except ReplayError:
            return
        after.append(entity_value(delta.apply(), key))
    assert after[0] == after[1]
