"""What ``MetadataLoader.replay_value``'s compiled twin (``metalog.state.compiled.loader.ValueReplay``) is given:
one typed object, ``ValueReplayParts``, built here from the definitions the twin mirrors, so that the twin holds no
copy of a constant, a field order or a private name.

The twin calls its loader through three public names only: ``delta`` (the MetadataDelta records load into),
``offset`` (the last record loaded) and ``load_marker(name, offset)`` (a transaction marker); whatever it does
not read itself it hands to the pure method. It reads records through their compiled readers' C entry points
(``entries``). Its compiled form of PartitionChangeRecord's rule (every form the rule accepts; what it refuses goes
to the rule) reads the registration's field positions, the record's sentinels, the recovery states and MIGRATING
from ``partition_change``'s own definitions here, and ``tests/state/test_value_replay.py`` checks it against the
rule (``metalog.state.rules.partition_change``) over random partitions and change records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from metalog.codec import MIGRATING, Uuid, message_class
from metalog.codec.framing import FAST_PATH_MISSES, FRAME_VERSION, encode_metadata_record, metadata_entries
from metalog.errors import ReplayError
from metalog.state.delta import MetadataDelta, TopicDelta, located
from metalog.state.enums import LEADER_RECOVERY_NO_CHANGE, LEADER_RECOVERY_STATES, NO_LEADER_CHANGE
from metalog.state.image import MetadataImage, PartitionRegistration
from metalog.state.rules import (
    PARTITION_CHANGE_LISTS,
    PARTITION_RECORD_LISTS,
    Dispatch,
    Rule,
    config,
    dispatch,
    partition_change,
    partition_record,
)

NO_OP = encode_metadata_record(message_class("NoOpRecord")(), 0)
"""A NoOpRecord's value as KRaft writes it (version 0): most of a quiet cluster's log, and it changes nothing."""


@dataclass(frozen=True)
class PartitionChangeParts:
    """What the twin's PartitionChangeRecord rule mirrors: the rule itself (for what it refuses), the classes
    whose slots it reads, the registration's fields in order, the record's lists with the registration field
    each replaces (``rules.PARTITION_CHANGE_LISTS``), the record's no-change sentinels, the recovery states the
    rule accepts and the MIGRATING directory."""

    rule: Rule
    record: type[Any]  # PartitionChangeRecord
    topic_delta: type[TopicDelta]
    registration: type[PartitionRegistration]
    registration_fields: tuple[str, ...]
    lists: tuple[tuple[str, str], ...]  # (record field, registration field)
    no_leader_change: int
    no_recovery_change: int
    recovery_states: frozenset[int]  # the leader recovery states the rule accepts
    migrating: Uuid  # the directory that stands for every replica's when all are it (``rules._merged_directories``)


@dataclass(frozen=True)
class PartitionRecordParts:
    """What the twin's PartitionRecord rule mirrors (``rules.partition_record``): the rule itself (for what it
    refuses), the record's class, its lists with the registration field each fills (``rules.PARTITION_RECORD_LISTS``);
    the registration, the recovery states and MIGRATING are ``PartitionChangeParts``'."""

    rule: Rule
    record: type[Any]  # PartitionRecord
    lists: tuple[tuple[str, str, bool], ...]  # (record field, registration field, a null list is empty)


@dataclass(frozen=True)
class ConfigParts:
    """What the twin's ConfigRecord rule mirrors (``rules.config``): the rule itself (for a record of another
    class) and the record's class."""

    rule: Rule
    record: type[Any]  # ConfigRecord


@dataclass(frozen=True)
class ValueReplayParts:
    """Everything ``ValueReplay`` needs besides its loader and the pure method."""

    dispatch: Dispatch  # apiKey << 8 | version -> (reader, rule or None for a transaction marker)
    entries: dict[int, object]  # the same keys -> the reader's C entry point, where it is a compiled reader
    noop: bytes
    frame_version: int
    misses: tuple[type[BaseException], ...]  # what a reader raises on bytes it does not read
    located: Callable[[ReplayError, int | None, Any], ReplayError]
    replay_error: type[ReplayError]
    partition_change: PartitionChangeParts
    partition_record: PartitionRecordParts
    config: ConfigParts
    delta: type[MetadataDelta]  # the deltas whose topics and configs the compiled rules read at their slots
    image: type[MetadataImage]  # the images whose topics they read at their slot (a delta's image, any class)


@cache
def value_replay_parts() -> ValueReplayParts:
    """The parts, built once (the dispatch table imports every record class)."""
    change = PartitionChangeParts(
        rule=partition_change, record=message_class("PartitionChangeRecord"), topic_delta=TopicDelta,
        registration=PartitionRegistration, registration_fields=PartitionRegistration._fields,
        lists=PARTITION_CHANGE_LISTS, no_leader_change=NO_LEADER_CHANGE,
        no_recovery_change=LEADER_RECOVERY_NO_CHANGE, recovery_states=frozenset(LEADER_RECOVERY_STATES),
        migrating=MIGRATING)
    table = dispatch()
    entries = {key: entry for key, entry in metadata_entries().items() if key in table}
    return ValueReplayParts(dispatch=table, entries=entries, noop=NO_OP, frame_version=FRAME_VERSION,
                            misses=FAST_PATH_MISSES, located=located, replay_error=ReplayError, partition_change=change,
                            partition_record=PartitionRecordParts(partition_record, message_class("PartitionRecord"),
                                                                  PARTITION_RECORD_LISTS),
                            config=ConfigParts(config, message_class("ConfigRecord")), delta=MetadataDelta,
                            image=MetadataImage)
