"""Range deltas: what a range of the log does to the state, computed without knowing the state it starts from.

An ``Overlay`` maps entity keys (a broker, a topic with its partitions, a quota entity, an ACL, ...) to
either a *full* value the range wrote (None: removed, the tombstone) or the *partial* records that change
a value the range did not know (a PartitionChangeRecord on an older topic). Composition is per key: a
later full value wins, later partial records apply to an earlier full value (through MetadataDelta's own
rules, so the result is exactly what sequential replay computes) or queue behind earlier partial records.
That is function composition per key, hence associative. Two kinds need care:
- configs: a RemoveTopicRecord clears its topic's configs, by name; a range that did not create the topic
  learns the name only when composed with a range that did. Config entries therefore keep their records
  with offsets and the offset of their last clear, and a late-learnt clear drops the records before it.
- transactions: a ``RangeDelta`` is an overlay in normal form ``head [close mid] [begin tail]``: ``head``
  may belong to a transaction begun in an earlier range, ``close`` ends it (End or Abort), ``tail`` is a
  transaction still open at the range's end. Composition matches a range's open transaction with the next
  one's close: committed records join, aborted ones are dropped. Global kinds (metadata.version, other
  features, the ZooKeeper migration state, the next producer id) are plain keys whose value is written whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from metalog.codec.framing import decode_metadata_record
from metalog.errors import ReplayError
from metalog.state.delta import MetadataDelta
from metalog.state.enums import METADATA_VERSION_FEATURE, TOPIC_RESOURCE
from metalog.state.image import FeaturesImage, MetadataImage

Key = tuple[Any, ...]
Records = list[tuple[int, Any]]  # (offset, record: its bytes, decoded or for configs (name, value))

# record name -> (entity kind, the attribute naming the entity, True when the record writes it whole)
_ENTITY: dict[str, tuple[str, str | None, bool]] = {
    "RegisterBrokerRecord": ("brokers", "broker_id", True),
    "UnregisterBrokerRecord": ("brokers", "broker_id", False),
    "FenceBrokerRecord": ("brokers", "id", False),
    "UnfenceBrokerRecord": ("brokers", "id", False),
    "BrokerRegistrationChangeRecord": ("brokers", "broker_id", False),
    "RegisterControllerRecord": ("controllers", "controller_id", True),
    "TopicRecord": ("topics", "topic_id", True),
    "PartitionRecord": ("topics", "topic_id", False),
    "PartitionChangeRecord": ("topics", "topic_id", False),
    "RemoveTopicRecord": ("topics", "topic_id", False),
    "ClientQuotaRecord": ("client_quotas", None, False),
    "AccessControlEntryRecord": ("acls", "id", True),
    "RemoveAccessControlEntryRecord": ("acls", "id", False),
    "UserScramCredentialRecord": ("scram", None, True),
    "RemoveUserScramCredentialRecord": ("scram", None, False),
    "DelegationTokenRecord": ("delegation_tokens", "token_id", True),
    "RemoveDelegationTokenRecord": ("delegation_tokens", "token_id", False),
    "FeatureLevelRecord": ("features", None, True),
    "ZkMigrationStateRecord": ("zk_migration_state", None, True),
    "ProducerIdsRecord": ("next_producer_id", None, True),  # monotonicity is checked within a range only
}
_GLOBAL = ("features", "zk_migration_state", "next_producer_id")


def entity_key(record: Any) -> tuple[Key, bool]:
    kind, attr, full = _ENTITY[record.NAME]
    if attr is not None:
        return (kind, getattr(record, attr)), full
    if kind == "client_quotas":
        return (kind, tuple(sorted(((e.entity_type, e.entity_name) for e in record.entity), key=lambda t: t[0]))), full
    if kind == "scram":
        return (kind, (record.name, record.mechanism)), full
    if kind == "features":
        return (kind, record.name), full
    return (kind,), full


@dataclass
class Overlay:
    full: dict[Key, Any] = field(default_factory=dict)  # key -> value (None: removed)
    partial: dict[Key, Records] = field(default_factory=dict)  # key -> records over an unknown value
    configs: dict[tuple[int, str], tuple[int | None, Records]] = field(default_factory=dict)  # (cleared at, sets)
    offset: int = -1  # the last record offset in the overlay (-1: none)

    def empty(self) -> bool:
        return not (self.full or self.partial or self.configs) and self.offset < 0


def resolve(key: Key, base: Any, records: Records) -> tuple[Any, list[tuple[tuple[int, str], int]]]:
    """``records`` applied to ``base`` by MetadataDelta's rules; also the topic configs they clear (by name)."""
    kind, ident = key
    img = MetadataImage(**{kind: {} if base is None else {ident: base}})
    if kind == "topics" and base is not None:
        img = replace(img, topics_by_name={base.name: base})
    delta = MetadataDelta(img)
    clears = []
    for offset, value in records:
        record = decode_metadata_record(value)[0] if isinstance(value, bytes) else value
        if record.NAME == "RemoveTopicRecord" and base is not None:
            clears.append(((TOPIC_RESOURCE, base.name), offset))
        delta.replay(record, offset)
    return getattr(delta.apply(), kind).get(ident), clears


def _clear(configs: dict[tuple[int, str], tuple[int | None, Records]], resource: tuple[int, str], at: int) -> None:
    cleared, records = configs.get(resource, (None, []))
    if cleared is None or cleared < at:
        configs[resource] = (at, [r for r in records if r[0] > at])


def compose(o1: Overlay, o2: Overlay) -> Overlay:
    """``o1`` then ``o2``."""
    full, partial = dict(o1.full), dict(o1.partial)
    clears: list[tuple[tuple[int, str], int]] = []
    for key, value in o2.full.items():
        full[key] = value
        partial.pop(key, None)
    for key, records in o2.partial.items():
        if key in full:
            full[key], more = resolve(key, full[key], records)
            clears += more
        else:
            partial[key] = partial.get(key, []) + records
    configs = dict(o1.configs)
    for resource, (cleared, records) in o2.configs.items():
        if cleared is not None or resource not in configs:
            configs[resource] = (cleared, records)
        else:
            configs[resource] = (configs[resource][0], configs[resource][1] + records)
    for resource, at in clears:
        _clear(configs, resource, at)
    return Overlay(full, partial, configs, max(o1.offset, o2.offset))


def apply(image: MetadataImage, o: Overlay) -> MetadataImage:
    """The image ``o`` makes of ``image`` (every partial record resolved against it)."""
    if not (o.full or o.partial or o.configs):  # nothing but offsets (control batches, NoOpRecords)
        return image if o.offset <= image.offset else replace(image, offset=o.offset)
    as_overlay = Overlay({(k, i): v for k in ("brokers", "controllers", "topics", "client_quotas", "acls", "scram",
                                              "delegation_tokens") for i, v in getattr(image, k).items()},
                         configs={r: (-1, [(-1, (n, v)) for n, v in c.items()]) for r, c in image.configs.items()})
    features = image.features
    as_overlay.full[("zk_migration_state",)] = features.zk_migration_state
    as_overlay.full[("next_producer_id",)] = image.next_producer_id
    as_overlay.full[("features", METADATA_VERSION_FEATURE)] = features.metadata_version
    as_overlay.full.update({("features", n): v for n, v in features.finalized.items()})
    for key in o.partial:  # a key the image lacks resolves against None (and fails as sequential replay would)
        as_overlay.full.setdefault(key, None)
    merged = compose(as_overlay, o)
    return _image(merged, max(image.offset, o.offset))


def _image(o: Overlay, offset: int) -> MetadataImage:
    kinds: dict[str, dict[Any, Any]] = {k: {} for k in ("brokers", "controllers", "topics", "client_quotas", "acls",
                                                        "scram", "delegation_tokens")}
    finalized: dict[str, int] = {}
    for key, value in o.full.items():
        if value is None:
            continue
        if key[0] in kinds:
            kinds[key[0]][key[1]] = value
        elif key[0] == "features" and key[1] != METADATA_VERSION_FEATURE:
            finalized[key[1]] = value
    configs = {}
    for resource, (_, records) in o.configs.items():
        values: dict[str, str] = {}
        for _, rec in records:
            name, value = rec
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value
        if values:
            configs[resource] = values
    features = FeaturesImage(o.full.get(("features", METADATA_VERSION_FEATURE)), finalized,
                             o.full.get(("zk_migration_state",), 0))
    topics = kinds.pop("topics")
    return MetadataImage(offset=offset, features=features, topics=topics,
                         topics_by_name={t.name: t for t in topics.values()},
                         next_producer_id=o.full.get(("next_producer_id",)), configs=configs, **kinds)


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


def published(d: RangeDelta) -> tuple[Overlay, tuple[int, Overlay] | None]:
    """From the start of a log: the visible overlay, and the open transaction (begin offset, its records)."""
    if d.close is not None:
        raise ReplayError("no transaction is open", offset=d.close[1], record=d.close[0].upper() + "_TRANSACTION")
    return compose(d.head, d.mid), d.open
