"""Range deltas: what a range of the log does to the state, computed without knowing the state it starts from.

An ``Overlay`` maps entity keys (a broker, a topic with its partitions, a quota entity, an ACL, ...: the
``entity`` and ``key`` of each record's row in ``metalog.state.rules``) to either a *full* value the range wrote
(None: removed, the tombstone) or the *partial* records that change a value the range did not know (a
PartitionChangeRecord on an older topic). Composition is per key: a later full value wins, later partial
records apply to an earlier full value (through the same rules, so the result is exactly what sequential
replay computes) or queue behind earlier partial records. That is function composition per key, hence
associative. Two kinds need care:
- configs: a RemoveTopicRecord clears its topic's configs, by name; a range that did not create the topic
  learns the name only when composed with a range that did. Config entries therefore keep their records
  with offsets and the offset of their last clear, and a late-learnt clear drops the records before it.
  Partial records that a later full value makes irrelevant to their entity (a topic removed, then its id
  created again) are not dropped: they wait as ``superseded`` until the value before them is known, for the
  configs they clear (and the errors sequential replay would raise on them).
- transactions: a ``RangeDelta`` is an overlay in normal form ``head [close mid] [begin tail]``: ``head``
  may belong to a transaction begun in an earlier range, ``close`` ends it (End or Abort), ``tail`` is a
  transaction still open at the range's end. Composition matches a range's open transaction with the next
  one's close: committed records join, aborted ones are dropped. The single values (metadata.version and the
  other features by name, the ZooKeeper migration state, the next producer id) are keys like any other.

``RangeBuilder`` makes a range's delta from its record values; ``start_state`` applies a composed prefix to
the state it starts from. Pure: the parallel replay (``metalog.analysis.engines.parallel``) reads the log.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from metalog.codec.framing import decode_metadata_record
from metalog.errors import DecodeError, ReplayError
from metalog.state.delta import MetadataDelta
from metalog.state.enums import METADATA_VERSION_FEATURE
from metalog.state.image import EMPTY, FeaturesImage, MetadataImage
from metalog.state.rules import RULES, TRANSACTION_MARKERS, entity_key
from metalog.state.value_replay import NO_OP

if TYPE_CHECKING:
    from metalog.codec.messages import (
        AccessControlEntryRecord,
        ConfigRecord,
        DelegationTokenRecord,
        RegisterControllerRecord,
        UserScramCredentialRecord,
    )
    from metalog.codec.runtime import ApiMessage
    from metalog.state.image import BrokerRegistration, TopicImage

# (entity, key): ("brokers", 1), ("features", "metadata.version"), ("next_producer_id", None)
Key = tuple[str, Hashable]
Records = list[tuple[int, "bytes | ApiMessage"]]  # (offset, the record: its bytes, or decoded)
ConfigSets = list[tuple[int, tuple[str, str | None]]]  # (offset, (config name, value; None deletes it))
Configs = dict[tuple[int, str], tuple[int | None, ConfigSets]]  # resource -> (cleared at, the sets after)
# an entity's value, by the image's map it lives in (None: not there); features and the next producer id: ints
EntityValue: TypeAlias = ("BrokerRegistration | TopicImage | RegisterControllerRecord | AccessControlEntryRecord"
                          " | UserScramCredentialRecord | DelegationTokenRecord | int | None")

_FEATURES, _ZK, _PRODUCER_ID, _CONFIGS = "features", "zk_migration_state", "next_producer_id", "configs"
_SINGLE_VALUES = (_FEATURES, _ZK, _PRODUCER_ID)
# the image's maps by key that records change (brokers, controllers, topics, ...), from the table
MAPS = tuple(sorted({r.entity for r in RULES.values() if r.entity is not None} - {*_SINGLE_VALUES, _CONFIGS}))


# ---- entities of an image ---------------------------------------------------------------------------------
def entity_value(image: MetadataImage, key: Key) -> EntityValue:
    """The value of one entity in ``image`` (None: not there)."""
    kind, ident = key
    if kind == _FEATURES:
        return image.features.metadata_version if ident == METADATA_VERSION_FEATURE else \
            image.features.finalized.get(ident)  # type: ignore[call-overload]
    if kind == _ZK:
        return image.features.zk_migration_state
    if kind == _PRODUCER_ID:
        return image.next_producer_id
    found: EntityValue = getattr(image, kind).get(ident)
    return found


def entity_values(image: MetadataImage) -> dict[Key, EntityValue]:
    """Every entity of ``image`` but its configs, by key."""
    values: dict[Key, EntityValue] = {(kind, ident): v for kind in MAPS for ident, v in getattr(image, kind).items()}
    features = image.features
    values[(_ZK, None)] = features.zk_migration_state
    values[(_PRODUCER_ID, None)] = image.next_producer_id
    values[(_FEATURES, METADATA_VERSION_FEATURE)] = features.metadata_version
    values.update({(_FEATURES, name): level for name, level in features.finalized.items()})
    return values


def image_of(values: dict[Key, EntityValue], configs: dict[tuple[int, str], dict[str, str]],
             offset: int) -> MetadataImage:
    """The image of these entities (None values left out) and configs, at ``offset``."""
    maps: dict[str, dict[Any, Any]] = {kind: {} for kind in MAPS}
    finalized: dict[str, int] = {}
    for (kind, ident), value in values.items():
        if value is None:
            continue
        if kind in maps:
            maps[kind][ident] = value
        elif kind == _FEATURES and ident != METADATA_VERSION_FEATURE:
            finalized[ident] = _level(value)  # type: ignore[index]  # a feature's key is its name
    features = FeaturesImage(_number(values.get((_FEATURES, METADATA_VERSION_FEATURE))), finalized,
                             _level(values.get((_ZK, None), 0)))
    topics = maps.pop("topics")
    return MetadataImage(offset=offset, features=features, topics=topics,
                         topics_by_name={t.name: t for t in topics.values()},
                         next_producer_id=_number(values.get((_PRODUCER_ID, None))), configs=configs, **maps)


def _number(value: EntityValue) -> int | None:
    """A single value's entity (a feature level, the ZK migration state, the next producer id): an int or None."""
    assert value is None or isinstance(value, int), value
    return value


def _level(value: EntityValue) -> int:
    """A finalized feature's level, or the ZK migration state."""
    assert isinstance(value, int), value
    return value


# ---- overlays ---------------------------------------------------------------------------------------------
@dataclass
class Overlay:
    full: dict[Key, EntityValue] = field(default_factory=dict)  # key -> value (None: removed)
    partial: dict[Key, Records] = field(default_factory=dict)  # key -> records over an unknown value
    configs: Configs = field(default_factory=dict)  # resource -> (cleared at, the sets after)
    offset: int = -1  # the last record offset in the overlay (-1: none)
    # key -> partial records over an unknown value that a later full value of the key replaced: resolved
    # only for the configs they clear, once the value before them is known
    superseded: dict[Key, Records] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.full or self.partial or self.configs or self.superseded) and self.offset < 0


class _ClearsSeen(MetadataDelta):
    """A MetadataDelta that also lists the config resources its rules clear (a RemoveTopicRecord clears its
    topic's: ``metalog.state.rules``), so an overlay learns them from the rule itself."""

    def __init__(self, image: MetadataImage) -> None:
        super().__init__(image)
        self.clears: list[tuple[int, str]] = []

    def clear_config(self, resource: tuple[int, str]) -> None:
        super().clear_config(resource)
        self.clears.append(resource)


def resolve(key: Key, base: EntityValue, records: Records
            ) -> tuple[EntityValue, list[tuple[tuple[int, str], int]]]:
    """``records`` applied to ``base`` by the rules; also the configs they clear, with the offset of each clear."""
    delta = _ClearsSeen(image_of({key: base}, {}, -1))
    clears = []
    for offset, value in records:
        record = decode_metadata_record(value).message if isinstance(value, bytes) else value
        delta.replay(record, offset)
        if delta.clears:
            clears += [(resource, offset) for resource in delta.clears]
            delta.clears.clear()
    return entity_value(delta.apply(), key), clears


def _clear(configs: Configs, resource: tuple[int, str], at: int) -> None:
    cleared, records = configs.get(resource, (None, []))
    if cleared is None or cleared < at:
        configs[resource] = (at, [r for r in records if r[0] > at])


def compose(o1: Overlay, o2: Overlay) -> Overlay:
    """``o1`` then ``o2``."""
    full, partial, superseded = dict(o1.full), dict(o1.partial), dict(o1.superseded)
    clears: list[tuple[tuple[int, str], int]] = []
    for key, records in o2.superseded.items():  # the value before them is o1's, if o1 knows it
        if key in o1.full:
            clears += resolve(key, o1.full[key], records)[1]
        else:
            superseded[key] = partial.pop(key, []) + records
    for key, value in o2.full.items():
        full[key] = value
        dropped = partial.pop(key, None)
        if dropped:  # partial over a value o1 did not know either: their clears wait for it
            superseded[key] = dropped
    for key, records in o2.partial.items():
        if key in full:
            full[key], more = resolve(key, full[key], records)
            clears += more
        else:
            partial[key] = partial.get(key, []) + records
    configs = dict(o1.configs)
    for resource, (cleared, sets) in o2.configs.items():
        if cleared is not None or resource not in configs:
            configs[resource] = (cleared, sets)
        else:
            configs[resource] = (configs[resource][0], configs[resource][1] + sets)
    for resource, at in clears:
        _clear(configs, resource, at)
    return Overlay(full, partial, configs, max(o1.offset, o2.offset), superseded)


def apply(image: MetadataImage, o: Overlay) -> MetadataImage:
    """The image ``o`` makes of ``image`` (every partial record resolved against it)."""
    if not (o.full or o.partial or o.configs or o.superseded):  # nothing but offsets (control batches, NoOpRecords)
        return image if o.offset <= image.offset else replace(image, offset=o.offset)
    as_overlay = Overlay(entity_values(image),
                         configs={r: (-1, [(-1, (n, v)) for n, v in c.items()]) for r, c in image.configs.items()})
    for key in (*o.partial, *o.superseded):  # a key the image lacks resolves against None (and fails as
        as_overlay.full.setdefault(key, None)  # sequential replay would)
    merged = compose(as_overlay, o)
    return image_of(merged.full, _configs(merged.configs), max(image.offset, o.offset))


def _configs(configs: Configs) -> dict[tuple[int, str], dict[str, str]]:
    out = {}
    for resource, (_, records) in configs.items():
        values: dict[str, str] = {}
        for _, (name, value) in records:
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value
        if values:
            out[resource] = values
    return out


# ---- transactions -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RangeDelta:
    """A range's effect in normal form: ``head``, then maybe ``close`` (End/Abort of a transaction begun
    before the range) and ``mid``, then maybe an open transaction ``(begin offset, tail)``."""

    head: Overlay = field(default_factory=Overlay)
    close: tuple[str, int] | None = None  # ("end" | "abort", offset)
    mid: Overlay = field(default_factory=Overlay)
    open: tuple[int, Overlay] | None = None
    begun: bool = False  # a Begin appears (so ``head`` is outside any transaction)


def then(d1: RangeDelta, d2: RangeDelta) -> RangeDelta:
    """``d1`` followed by ``d2``; associative."""
    if d1.open is not None:
        begin, tail = d1.open
        if d2.close is None:
            if d2.begun:
                raise ReplayError(f"a transaction is already open (since offset {begin})", record="BEGIN_TRANSACTION")
            return RangeDelta(d1.head, d1.close, d1.mid, (begin, compose(tail, d2.head)), True)
        if d2.close[0] == "end":
            mid = compose(compose(compose(d1.mid, tail), d2.head), d2.mid)
        else:
            mid = compose(d1.mid, d2.mid)
        if d1.close is None:  # d1's head came before its Begin: outside any transaction, like mid
            return RangeDelta(compose(d1.head, mid), None, Overlay(), d2.open, True)
        return RangeDelta(d1.head, d1.close, mid, d2.open, True)
    if d1.close is None and not d1.begun:  # d1 has no markers: it may lie inside d2's closing transaction
        return RangeDelta(compose(d1.head, d2.head), d2.close, d2.mid, d2.open, d2.begun)
    if d2.close is not None:
        raise ReplayError("no transaction is open", offset=d2.close[1], record=d2.close[0].upper() + "_TRANSACTION")
    outside = compose(d1.mid, d2.head) if d1.close is not None else compose(d1.head, d2.head)
    if d1.close is not None:
        return RangeDelta(d1.head, d1.close, outside, d2.open, True)
    return RangeDelta(outside, None, Overlay(), d2.open, True)


def fold(deltas: Sequence[RangeDelta]) -> RangeDelta:
    """``then`` over ``deltas``, pairwise (associativity): each key is copied log(n) times, not n times."""
    level = list(deltas) or [RangeDelta()]
    while len(level) > 1:
        level = [then(level[i], level[i + 1]) if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return level[0]


def published(d: RangeDelta) -> tuple[Overlay, tuple[int, Overlay] | None]:
    """From the start of a log: the visible overlay, and the open transaction (begin offset, its records)."""
    if d.close is not None:
        raise ReplayError("no transaction is open", offset=d.close[1], record=d.close[0].upper() + "_TRANSACTION")
    return compose(d.head, d.mid), d.open


def _marker(name: str, offset: int) -> RangeDelta:
    if name == "BeginTransactionRecord":
        return RangeDelta(open=(offset, Overlay()), begun=True)
    return RangeDelta(close=("end" if name == "EndTransactionRecord" else "abort", offset))


# ---- a range's delta from its records ---------------------------------------------------------------------
class _Block:
    """An overlay built from consecutive records between transaction markers.

    Keys the block wrote whole live in a real MetadataDelta (so partition changes to a topic created here
    cost what they cost in sequential replay); records on keys it never wrote whole wait in ``partial``.
    """

    def __init__(self) -> None:
        self.live = _ClearsSeen(EMPTY)
        self.known: set[Key] = set()
        self.overlay = Overlay()

    def add(self, offset: int, record: ApiMessage, value: bytes) -> None:
        """``record`` decoded from ``value``: partial records wait as their bytes (cheap to send; decoded again
        only when composition resolves them)."""
        o = self.overlay
        o.offset = offset
        key, full = entity_key(record)
        if key[0] == _CONFIGS:
            resource: tuple[int, str] = key[1]  # type: ignore[assignment]
            config: ConfigRecord = record  # type: ignore[assignment]  # the configs entity: a ConfigRecord
            cleared, sets = o.configs.get(resource, (None, []))
            o.configs[resource] = (cleared, [*sets, (offset, (config.name, config.value))])
        elif full or key in self.known:
            live = self.live
            live.replay(record, offset)
            if live.clears:  # a RemoveTopicRecord of a topic this block knows: its configs go now
                for resource in live.clears:
                    o.configs[resource] = (offset, [])
                live.clears.clear()
            self.known.add(key)
            dropped = o.partial.pop(key, None)
            if dropped:  # a full write after records over an unknown value: their config clears still count
                o.superseded[key] = dropped
        else:
            o.partial.setdefault(key, []).append((offset, value))

    def finish(self) -> Overlay:
        image = self.live.apply()
        for key in self.known:
            self.overlay.full[key] = entity_value(image, key)
        return self.overlay


class RangeBuilder:
    """A range's RangeDelta from its record values in log order (``add``), knowing nothing of the state before
    it; ``end_batch`` at every batch end (a control batch's too), ``finish`` after the last."""

    def __init__(self) -> None:
        self._parts: list[RangeDelta] = []
        self._block = _Block()

    def add(self, value: bytes | None, offset: int) -> None:
        """One record value at ``offset``; a value that does not decode raises DecodeError."""
        if value == NO_OP:  # much of a quiet cluster's log: it only moves the offset
            self._block.overlay.offset = offset
            return
        if value is None:
            raise DecodeError("the record has no value")
        record = decode_metadata_record(value).message
        name = record.NAME
        if name in TRANSACTION_MARKERS:
            self._parts += [RangeDelta(head=self._block.finish()), _marker(name, offset)]
            self._block = _Block()
            # the marker moves the offset: a state published next (before a Begin in the same batch) is at or
            # after it, as Kafka's loader publishes it, even when no record follows it before that Begin
            self._block.overlay.offset = offset
        elif RULES[name].entity is not None:
            self._block.add(offset, record, value)
        else:  # a record that changes no entity
            self._block.overlay.offset = offset

    def end_batch(self, last_offset: int) -> None:
        """A batch ends at ``last_offset``: where a state is published."""
        self._block.overlay.offset = last_offset

    def finish(self) -> RangeDelta:
        return fold([*self._parts, RangeDelta(head=self._block.finish())])


# ---- start states -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StartState:
    image: MetadataImage  # published
    transaction: tuple[int, MetadataImage] | None  # (begin offset, the image with the open transaction's records)


def start_state(image: MetadataImage, prefix: RangeDelta) -> StartState:
    """The state after ``prefix`` over ``image``: published, and the open transaction's pending image."""
    visible, open_tx = published(prefix)
    image = apply(image, visible)
    return StartState(image, None if open_tx is None else (open_tx[0], apply(image, open_tx[1])))
