"""Two clusters side by side: what differs between the states of two metadata logs, compared by name.

Two clusters share no ids: a topic's id, an ACL's id and a broker's directories are drawn at random by each
cluster, so the comparison is by what a person names: topics by name (present on one side only, their partition
counts and replication factors), configs by resource and key (``TOPIC/orders``, ``BROKER/1``, ``BROKER/`` for the
cluster default; a sensitive value as ``secrets`` shows it), ACLs by their binding (resource, pattern, principal,
host, operation, permission), client quotas by entity and key, SCRAM users by mechanism (names only), the
finalized features (metadata.version and the rest) and the ZooKeeper migration state. Brokers are counted, not
compared: two clusters' brokers are different machines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from metalog.secrets import KEPT, Secrets
from metalog.state import enums as V
from metalog.state.image import MetadataImage, TopicImage
from metalog.state.jsonimage import acl_to_json, quota_entity_name, scram_users

Value = Any


@dataclass(frozen=True)
class Difference:
    """One thing that differs: ``what`` (``topic orders``, ``TOPIC/orders retention.ms``, ...), ``field`` and the
    value on each side (None: absent there)."""

    kind: str  # "feature", "topic", "config", "acl", "quota", "scram"
    what: str
    field: str | None
    a: Value
    b: Value

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "what": self.what, "field": self.field, "a": self.a, "b": self.b}


@dataclass
class ClusterDiff:
    """What differs between cluster A's state (at ``a_offset`` of its log) and cluster B's."""

    a_offset: int
    b_offset: int
    a_brokers: int
    b_brokers: int
    differences: list[Difference] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences

    def of(self, kind: str) -> list[Difference]:
        return [d for d in self.differences if d.kind == kind]

    def to_json(self) -> dict[str, Any]:
        return {"a": {"offset": self.a_offset, "brokers": self.a_brokers},
                "b": {"offset": self.b_offset, "brokers": self.b_brokers},
                "identical": self.identical, "differences": [d.to_json() for d in self.differences]}


def compare_images(a: MetadataImage, b: MetadataImage, secrets: Secrets = KEPT) -> ClusterDiff:
    """What differs between two clusters' states, by name (see the module's doc)."""
    d = ClusterDiff(a.offset, b.offset, len(a.brokers), len(b.brokers))
    d.differences += _features(a, b)
    d.differences += _topics(a, b)
    d.differences += _configs(a, b, secrets)
    d.differences += _sets("acl", _acls(a), _acls(b))
    d.differences += _quotas(a, b)
    d.differences += _sets("scram", _scram(a), _scram(b))
    return d


def _pairs(kind: str, what: str, a: dict[str, Value], b: dict[str, Value]) -> Iterable[Difference]:
    """A difference for each key whose value differs (absent: None), in key order."""
    for key in sorted(a.keys() | b.keys()):
        if a.get(key) != b.get(key):
            yield Difference(kind, what, key, a.get(key), b.get(key))


def _features(a: MetadataImage, b: MetadataImage) -> Iterable[Difference]:
    return _pairs("feature", "features", _feature_levels(a), _feature_levels(b))


def _feature_levels(image: MetadataImage) -> dict[str, Value]:
    f = image.features
    out: dict[str, Value] = {"metadata.version": V.metadata_version_name(f.metadata_version),
                             "zk migration": V.ZK_MIGRATION_STATES.get(f.zk_migration_state, f.zk_migration_state)}
    out.update(f.finalized)
    return out


def _topics(a: MetadataImage, b: MetadataImage) -> Iterable[Difference]:
    for name in sorted(a.topics_by_name.keys() | b.topics_by_name.keys()):
        ta, tb = a.topics_by_name.get(name), b.topics_by_name.get(name)
        if ta is None or tb is None:
            yield Difference("topic", name, None, _shape(ta), _shape(tb))
            continue
        yield from _pairs("topic", name, _shape(ta) or {}, _shape(tb) or {})


def _shape(topic: TopicImage | None) -> dict[str, Value] | None:
    """A topic as a person sizes it: its partition count and replication factor (``2-3`` when its partitions
    differ)."""
    if topic is None:
        return None
    factors = sorted({len(p.replicas) for p in topic.partitions.values()})
    rf: Value = factors[0] if len(factors) == 1 else (f"{factors[0]}-{factors[-1]}" if factors else None)
    return {"partitions": len(topic.partitions), "replicationFactor": rf}


def _configs(a: MetadataImage, b: MetadataImage, secrets: Secrets) -> Iterable[Difference]:
    for resource in sorted(a.configs.keys() | b.configs.keys()):
        what = f"{V.CONFIG_RESOURCE_TYPES.get(resource[0], resource[0])}/{resource[1]}"
        for diff in _pairs("config", what, a.configs.get(resource, {}), b.configs.get(resource, {})):
            assert diff.field is not None
            yield Difference("config", what, diff.field, secrets.config(diff.field, diff.a),
                             secrets.config(diff.field, diff.b))


def _acls(image: MetadataImage) -> set[str]:
    """Each ACL as its binding (Kafka's StandardAcl without the id a cluster gave it)."""
    out = set()
    for r in image.acls.values():
        j = acl_to_json(r)
        out.add(f"{j['permissionType']} {j['principal']} from {j['host']} {j['operation']} "
                f"{j['resourceType']}:{j['patternType']}:{j['resourceName']}")
    return out


def _scram(image: MetadataImage) -> set[str]:
    return {f"{m} {u}" for m, users in scram_users(image).items() for u in users}


def _sets(kind: str, a: set[str], b: set[str]) -> Iterable[Difference]:
    """What one side has and the other has not: ``a`` is the thing (or None), ``b`` the same."""
    for item in sorted(a ^ b):
        yield Difference(kind, item, None, item if item in a else None, item if item in b else None)


def _quotas(a: MetadataImage, b: MetadataImage) -> Iterable[Difference]:
    qa = {quota_entity_name(e): q for e, q in a.client_quotas.items()}
    qb = {quota_entity_name(e): q for e, q in b.client_quotas.items()}
    for entity in sorted(qa.keys() | qb.keys()):
        yield from _pairs("quota", entity, qa.get(entity, {}), qb.get(entity, {}))


_TITLES = (("feature", "features"), ("topic", "topics"), ("config", "configs"), ("acl", "ACLs"),
           ("quota", "client quotas"), ("scram", "SCRAM users"))


def render_compare(d: ClusterDiff, a_name: str, b_name: str) -> list[str]:
    """The differences as text: a section per kind, a row per difference, A's value then B's."""
    from metalog.replay.diff import point_name, table

    lines = [f"A: {a_name} at {point_name(d.a_offset)}, {d.a_brokers} brokers",
             f"B: {b_name} at {point_name(d.b_offset)}, {d.b_brokers} brokers"]
    if d.identical:
        return [*lines, "no differences in features, topics, configs, ACLs, client quotas or SCRAM users"]
    for kind, title in _TITLES:
        found = d.of(kind)
        if not found:
            continue
        lines.append(f"{title}: {len(found)} differ")
        rows: list[Sequence[str]]
        if kind in ("acl", "scram"):
            rows = [("A", "B"), *((_side(x.a), _side(x.b)) for x in found)]
        else:
            rows = [("NAME" if kind != "config" else "RESOURCE", "FIELD" if kind != "config" else "KEY", "A", "B")]
            rows += [(x.what, x.field or "-", _cell(x.a), _cell(x.b)) for x in found]
        lines += ["  " + line for line in table(rows)]
    return lines


def _side(value: str | None) -> str:
    return "-" if value is None else value


def _cell(value: Value) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return " ".join(f"{k}={_cell(v)}" for k, v in value.items())
    return str(value)
