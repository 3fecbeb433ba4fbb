"""Which records ``metalog log dump`` shows: by type, by offset and by time.

A record is shown when it matches every filter given: its type is one of ``types`` (Kafka's MetadataRecordType
name, ``PARTITION_CHANGE_RECORD``, or the message's name, ``PartitionChangeRecord``; for a control record
Kafka's ControlRecordType name, ``LEADER_CHANGE``, or its message's name, ``LeaderChangeMessage``), its offset
lies in [first, last] and its timestamp in [since, until]. A batch is shown when one of its records is (its
header only with ``--no-records``); without filters everything is. A record's type comes from its bytes (the
apiKey of a metadata record's value, the type in a control record's key): nothing is decoded to filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.schema import snake
from metalog.errors import MetalogError
from metalog.log.batch import Record, RecordBatch
from metalog.log.control import MESSAGES as CONTROL_MESSAGES
from metalog.log.control import ControlType

_CONTROL_KEY_TYPE = slice(2, 4)


@cache
def _type_names() -> dict[str, str]:
    """Every name a type may be given by -> Kafka's name of that type."""
    names: dict[str, str] = {}
    for spec in METADATA_BY_API_KEY.values():
        kafka = snake(spec.name).upper()
        names[kafka] = names[spec.name] = kafka
    for control in ControlType:
        names[control.name] = control.name
        if control in CONTROL_MESSAGES:
            names[CONTROL_MESSAGES[control]] = control.name
    return names


def record_type(name: str) -> str:
    """Kafka's name of the record type ``name`` names (either spelling, any case for Kafka's)."""
    names = _type_names()
    found = names.get(name) or names.get(name.upper())
    if found is None:
        raise MetalogError(f"unknown record type {name!r} (give Kafka's name, like PARTITION_CHANGE_RECORD or "
                           f"LEADER_CHANGE, or the message's, like PartitionChangeRecord)")
    return found


@cache
def _metadata_type(api_key: int) -> str | None:
    spec = METADATA_BY_API_KEY.get(api_key)
    return None if spec is None else snake(spec.name).upper()


def type_of(batch: RecordBatch, record: Record) -> str | None:
    """Kafka's name of a record's type from its bytes, or None when they do not say."""
    if batch.is_control:
        key = record.key
        if key is None or len(key) < 4:
            return None
        try:
            return ControlType(int.from_bytes(key[_CONTROL_KEY_TYPE], "big", signed=True)).name
        except ValueError:
            return None
    value = record.value
    return None if value is None or len(value) < 2 else _metadata_type(value[1])


@dataclass(frozen=True)
class RecordFilter:
    types: frozenset[str] | None = None  # Kafka's names
    first: int | None = None
    last: int | None = None
    since: int | None = None  # epoch milliseconds
    until: int | None = None

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.types, self.first, self.last, self.since, self.until))

    def may_match(self, batch: RecordBatch) -> bool:
        """Whether a record of the batch may match, from its header alone."""
        if self.first is not None and batch.last_offset < self.first:
            return False
        return self.last is None or batch.base_offset <= self.last

    def matches(self, batch: RecordBatch, record: Record) -> bool:
        if self.first is not None and record.offset < self.first:
            return False
        if self.last is not None and record.offset > self.last:
            return False
        if self.since is not None and record.timestamp < self.since:
            return False
        if self.until is not None and record.timestamp > self.until:
            return False
        return self.types is None or type_of(batch, record) in self.types
