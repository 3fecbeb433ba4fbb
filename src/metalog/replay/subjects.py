"""What a question about history looks at: a topic, a partition, a broker, a config resource, the controllers,
the features or any node of the shell's tree.

A subject answers two things. ``key_of(value)``: whether a record (its value as the log stores it) may touch the
subject, and which part of it (a key); the hot loop asks it of every record whose apiKey is in ``api_keys``, so
it looks at bytes where it can (every metadata record starts with three one-byte varints, frame version, apiKey
and version, and most start with the fields they are about: PartitionRecord and PartitionChangeRecord with
PartitionId and TopicId, the broker records with the broker id) and decodes only rare records. It may answer yes
to a record that changes nothing (that costs a comparison), never no to one that changes something (that change
would be reported at a later published point). ``view(image, keys)``: the subject's entities in an image, each a
dict of fields, for the parts named by ``keys`` (``ALL``: everything).

Values in a view are compared for equality; a ``Shown`` compares by one value and is shown as another (a broker's
membership of a partition's ISR compares by membership and shows the ISR).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from metalog.codec.definitions import MESSAGES
from metalog.codec.framing import decode_metadata_record
from metalog.codec.uuid import Uuid
from metalog.errors import MetalogError
from metalog.secrets import KEPT, Secrets
from metalog.state import enums as V
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration
from metalog.state.jsonimage import controller_to_json

Key = tuple[Any, ...]
ALL: Key = ("*",)  # every part of the subject
View = dict[Key, dict[str, Any]]


def _key(name: str) -> int:
    return MESSAGES[name].api_key  # type: ignore[return-value]


REGISTER_BROKER, UNREGISTER_BROKER = _key("RegisterBrokerRecord"), _key("UnregisterBrokerRecord")
FENCE_BROKER, UNFENCE_BROKER = _key("FenceBrokerRecord"), _key("UnfenceBrokerRecord")
BROKER_CHANGE = _key("BrokerRegistrationChangeRecord")
TOPIC, PARTITION, PARTITION_CHANGE = _key("TopicRecord"), _key("PartitionRecord"), _key("PartitionChangeRecord")
REMOVE_TOPIC, CONFIG = _key("RemoveTopicRecord"), _key("ConfigRecord")
REGISTER_CONTROLLER = _key("RegisterControllerRecord")
FEATURE_LEVEL, ZK_MIGRATION = _key("FeatureLevelRecord"), _key("ZkMigrationStateRecord")
BROKER_RECORDS = frozenset({REGISTER_BROKER, UNREGISTER_BROKER, FENCE_BROKER, UNFENCE_BROKER, BROKER_CHANGE})
PARTITION_RECORDS = frozenset({PARTITION, PARTITION_CHANGE})
_BODY = 3  # frame version, apiKey and version: one byte each for every metadata record


class Shown:
    """A view value compared by ``key`` and shown as ``shown``."""

    __slots__ = ("key", "shown")

    def __init__(self, key: Any, shown: Any) -> None:
        self.key = key
        self.shown = shown

    def __repr__(self) -> str:
        return f"Shown({self.key!r}, {self.shown!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shown) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def shown(value: Any) -> Any:
    return value.shown if isinstance(value, Shown) else value


def _int32(value: bytes, at: int) -> int:
    return int.from_bytes(value[at:at + 4], "big", signed=True)


def _partition_of(value: bytes) -> tuple[bytes, int]:
    """(TopicId bytes, PartitionId) of a PartitionRecord or PartitionChangeRecord value."""
    return bytes(value[_BODY + 4:_BODY + 20]), _int32(value, _BODY)


def _partitions_named(image: MetadataImage, keys: Iterable[Key]) -> set[tuple[bytes, int]]:
    """(TopicId bytes, PartitionId) of every partition of ``image`` the keys name: a partition's own, each of a
    topic's, or every one (ALL)."""
    wanted: set[tuple[bytes, int]] = set()
    whole_topics: set[bytes] = set()
    for k in keys:
        if k == ALL:
            whole_topics.update(bytes(t) for t in image.topics)
        elif k[0] == "partition":
            wanted.add((k[1], k[2]))
        elif k[0] == "topic":
            whole_topics.add(k[1])
    for tid in whole_topics:
        topic = image.topics.get(Uuid(tid))
        if topic is not None:
            wanted.update((tid, pid) for pid in topic.partitions)
    return wanted


def _decode(value: bytes) -> Any:
    return decode_metadata_record(value).message


def partition_fields(p: PartitionRegistration) -> dict[str, Any]:
    """A partition as the JSON image writes it, less offlineReplicas (which follows from the brokers)."""
    return {
        "replicas": list(p.replicas), "directories": [str(d) for d in p.directories], "isr": list(p.isr),
        "removingReplicas": list(p.removing_replicas), "addingReplicas": list(p.adding_replicas),
        "elr": list(p.elr), "lastKnownElr": list(p.last_known_elr), "leader": p.leader,
        "leaderRecoveryState": V.LEADER_RECOVERY_STATES[p.leader_recovery_state],
        "leaderEpoch": p.leader_epoch, "partitionEpoch": p.partition_epoch,
    }


def broker_fields(b: BrokerRegistration) -> dict[str, Any]:
    return {
        "epoch": b.epoch, "incarnationId": str(b.incarnation_id), "rack": b.rack, "fenced": b.fenced,
        "inControlledShutdown": b.in_controlled_shutdown, "isMigratingZkBroker": b.is_migrating_zk_broker,
        "directories": [str(d) for d in b.directories],
        "listeners": [f"{n}://{h}:{p} ({V.SECURITY_PROTOCOLS.get(s, s)})" for n, h, p, s in sorted(b.listeners)],
        "supportedFeatures": {n: [lo, hi] for n, lo, hi in sorted(b.features)},
    }


class Subject:
    """What one question looks at (see the module's doc)."""

    api_keys: frozenset[int] = frozenset()
    control_records = False  # wants the control records of the log (LeaderChange)
    secrets: Secrets = KEPT  # how a secret in a view is shown (compared as it is)

    def start(self, image: MetadataImage) -> None:
        """The state the scan starts from."""

    def key_of(self, value: bytes) -> Key | None:
        raise NotImplementedError

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        raise NotImplementedError

    def whole(self, entity: Key) -> bool:
        """An entity that appears or goes is one row (created, removed); False: a row per field."""
        return True

    def absent(self, entity: Key) -> dict[str, Any]:
        """The fields of an entity that is not there (compared field by field when not ``whole``)."""
        return {}

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        raise NotImplementedError

    def record_keys(self, entity: Key) -> tuple[Key, ...]:
        """The keys of the records that may have changed ``entity`` (to name the records of a change)."""
        return (entity, ALL)

    def published(self, image: MetadataImage, keys: Iterable[Key]) -> None:
        """A state was published after records touched ``keys``."""


class TopicSubject(Subject):
    """A topic by name (or by id): its id, each partition (or one), and its configs. The topic a name means may
    change: deleted and created again, the name's partitions are those of the new topic."""

    api_keys = frozenset({TOPIC, PARTITION, PARTITION_CHANGE, REMOVE_TOPIC, CONFIG})

    def __init__(self, name: str | None = None, topic_id: Uuid | None = None, partition: int | None = None,
                 secrets: Secrets = KEPT) -> None:
        if (name is None) == (topic_id is None):
            raise ValueError("a topic by name or by id")
        self.name, self.topic_id, self.partition, self.secrets = name, topic_id, partition, secrets
        self.ids: set[bytes] = set() if topic_id is None else {bytes(topic_id)}
        self._name_bytes = None if name is None else name.encode()

    def start(self, image: MetadataImage) -> None:
        topic = self._topic(image)
        if topic is not None:
            self.ids.add(bytes(topic.id))

    def _topic(self, image: MetadataImage) -> Any:
        if self.name is not None:
            return image.topics_by_name.get(self.name)
        return None if self.topic_id is None else image.topics.get(self.topic_id)

    def key_of(self, value: bytes) -> Key | None:
        kind = value[1]
        if kind in PARTITION_RECORDS:
            tid, pid = _partition_of(value)
            if tid in self.ids and (self.partition is None or pid == self.partition):
                return ("partition", pid)
            return None
        if kind == TOPIC:
            r = _decode(value)
            if r.name == self.name or bytes(r.topic_id) in self.ids:
                self.ids.add(bytes(r.topic_id))
                return ("topic",)
            return None
        if kind == REMOVE_TOPIC:
            return ("topic",) if bytes(value[_BODY:_BODY + 16]) in self.ids else None
        if kind == CONFIG and self._name_bytes is not None and self.partition is None and self._name_bytes in value:
            r = _decode(value)
            return ("config",) if (r.resource_type, r.resource_name) == (V.TOPIC_RESOURCE, self.name) else None
        return None

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        keys = set(keys)
        out: View = {}
        topic = self._topic(image)
        whole = ALL in keys or ("topic",) in keys
        if topic is not None:
            if self.partition is None and whole:
                out[("topic",)] = {"name": topic.name, "id": str(topic.id)}
            for pid, p in topic.partitions.items():
                if (self.partition is None or pid == self.partition) and (whole or ("partition", pid) in keys):
                    out[("partition", pid)] = partition_fields(p)
        name = self.name if self.name is not None else None if topic is None else topic.name
        if name is not None and self.partition is None and (whole or ("config",) in keys):
            config = image.configs.get((V.TOPIC_RESOURCE, name))
            if config:
                out[("config",)] = config_view(config, self.secrets)
        return out

    def whole(self, entity: Key) -> bool:
        return bool(entity[0] != "config")

    def record_keys(self, entity: Key) -> tuple[Key, ...]:
        return (entity, ("topic",))  # TopicRecord and RemoveTopicRecord touch the whole topic

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        name = self.name
        if name is None:
            topic = self._topic(after) or self._topic(before)
            name = str(self.topic_id) if topic is None else topic.name
        if key[0] == "partition":
            return f"{name}-{key[1]}"
        return f"TOPIC/{name}" if key[0] == "config" else name


class ConfigSubject(TopicSubject):
    """One config resource (``TOPIC/foo``, ``BROKER/1``, ``BROKER/`` for the cluster default)."""

    api_keys = frozenset({CONFIG, REMOVE_TOPIC})

    def __init__(self, resource_type: int, resource_name: str, key: str | None = None,
                 secrets: Secrets = KEPT) -> None:
        self.resource = (resource_type, resource_name)
        self.config_key = key
        self.secrets = secrets
        self._name_bytes = resource_name.encode()
        self.topic_ids: set[bytes] = set()

    def start(self, image: MetadataImage) -> None:
        if self.resource[0] == V.TOPIC_RESOURCE:
            topic = image.topics_by_name.get(self.resource[1])
            if topic is not None:
                self.topic_ids.add(bytes(topic.id))

    def key_of(self, value: bytes) -> Key | None:
        kind = value[1]
        if kind == CONFIG:
            if self._name_bytes is None or self._name_bytes not in value:
                return None
            r = _decode(value)
            if (r.resource_type, r.resource_name) != self.resource:
                return None
            return ("config",) if self.config_key is None or r.name == self.config_key else None
        if kind == REMOVE_TOPIC and self.resource[0] == V.TOPIC_RESOURCE:
            return ("config",)  # RemoveTopicRecord clears the topic's configs
        return None

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        config = image.configs.get(self.resource, {})
        if self.config_key is not None:
            config = {k: v for k, v in config.items() if k == self.config_key}
        return {("config",): config_view(config, self.secrets)} if config else {}

    def whole(self, entity: Key) -> bool:
        return False

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        return resource_text(*self.resource)


def config_view(config: dict[str, str], secrets: Secrets) -> dict[str, Any]:
    """A resource's configs as a view: a value ``secrets`` hides compares as itself and is shown redacted."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        shown_as = secrets.config(k, v)
        out[k] = v if shown_as == v else Shown(v, shown_as)
    return out


def resource_text(resource_type: int, resource_name: str) -> str:
    return f"{V.CONFIG_RESOURCE_TYPES.get(resource_type, resource_type)}/{resource_name}"


def parse_resource(text: str) -> tuple[int, str]:
    """``TOPIC/foo``, ``BROKER/1``, ``BROKER/`` (the cluster default) or the shell's ``BROKER:1``; the type's
    name in any case, or its id."""
    sep = "/" if "/" in text else ":" if ":" in text else None
    type_text, name = (text.split(sep, 1) if sep else (text, ""))
    type_id = int(type_text) if type_text.isdigit() else V.CONFIG_RESOURCE_IDS.get(type_text.upper())
    if type_id is None:
        known = ", ".join(n for n in V.CONFIG_RESOURCE_IDS if n != "UNKNOWN")
        raise MetalogError(f"not a config resource: {text!r} (give TYPE/name, TYPE one of {known})")
    return type_id, name


class BrokerSubject(Subject):
    """A broker: its registration (registered, fenced, controlled shutdown, directories, ...) and, with
    ``partitions``, each partition where it is a replica, in the ISR, ELR or last known ELR, being added or
    removed, or the leader: a change of any of these memberships (or of its replica's directory) is a change."""

    def __init__(self, broker_id: int, *, partitions: bool = True) -> None:
        self.broker_id = broker_id
        self.partitions = partitions
        self.api_keys = BROKER_RECORDS | (PARTITION_RECORDS | {TOPIC, REMOVE_TOPIC} if partitions else frozenset())
        self._id_bytes = broker_id.to_bytes(4, "big", signed=True)
        self.involved: set[tuple[bytes, int]] = set()  # partitions with a role for the broker, at the last publish
        self.involved_topics: set[bytes] = set()
        # the roles of the partition registrations looked at since the publish before last (images share them)
        self._seen: dict[int, tuple[PartitionRegistration, dict[str, Any] | None]] = {}
        self._seen_before: dict[int, tuple[PartitionRegistration, dict[str, Any] | None]] = {}

    def start(self, image: MetadataImage) -> None:
        if self.partitions:
            for topic in image.topics.values():
                for pid, p in topic.partitions.items():
                    if self._roles(p) is not None:
                        self.involved.add((bytes(topic.id), pid))
                        self.involved_topics.add(bytes(topic.id))

    def key_of(self, value: bytes) -> Key | None:
        kind = value[1]
        if kind in PARTITION_RECORDS:
            where = _partition_of(value)
            if where in self.involved or self._id_bytes in value:
                self.involved.add(where)
                self.involved_topics.add(where[0])
                return ("partition", *where)
            return None
        if kind in BROKER_RECORDS:
            return ("broker",) if _int32(value, _BODY) == self.broker_id else None
        if kind == REMOVE_TOPIC:
            tid = bytes(value[_BODY:_BODY + 16])
            return ("topic", tid) if tid in self.involved_topics else None
        if kind == TOPIC:  # a TopicRecord for an id that exists replaces the topic, partitions and all
            tid = bytes(_decode(value).topic_id)
            return ("topic", tid) if tid in self.involved_topics else None
        return None

    def _roles(self, p: PartitionRegistration) -> dict[str, Any] | None:
        """The broker's part in a partition, or None when it has none: each list compared by whether the broker
        is in it (and shown whole), the leadership by whether it leads, and its replica's directory."""
        n = self.broker_id
        lists = (("replicas", p.replicas), ("isr", p.isr), ("elr", p.elr), ("lastKnownElr", p.last_known_elr),
                 ("addingReplicas", p.adding_replicas), ("removingReplicas", p.removing_replicas))
        if p.leader != n and not any(n in members for _, members in lists):
            return None
        roles: dict[str, Any] = {name: Shown(n in members, list(members)) for name, members in lists}
        roles["leader"] = Shown(p.leader == n, p.leader)
        roles["directory"] = str(p.directory(n)) if n in p.replicas else None
        return roles

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        out: View = {}
        keys = set(keys)
        if ALL in keys or ("broker",) in keys:
            b = image.brokers.get(self.broker_id)
            if b is not None:
                out[("broker",)] = broker_fields(b)
        if not self.partitions:
            return out
        for tid, pid in _partitions_named(image, keys):
            topic = image.topics.get(Uuid(tid))
            p = None if topic is None else topic.partitions.get(pid)
            roles = None if p is None else self._roles_of(p)
            if roles is not None:
                out[("partition", tid, pid)] = roles
        return out

    def _roles_of(self, p: PartitionRegistration) -> dict[str, Any] | None:
        seen = self._seen.get(id(p)) or self._seen_before.get(id(p))
        if seen is None or seen[0] is not p:
            seen = self._seen[id(p)] = (p, self._roles(p))
        return seen[1]

    def published(self, image: MetadataImage, keys: Iterable[Key]) -> None:
        """Partitions whose records were touched keep being watched only while the broker has a role there."""
        self._seen_before, self._seen = self._seen, {}
        if not self.partitions:
            return
        for k in keys:
            if k[0] == "partition":
                where = (k[1], k[2])
                topic = image.topics.get(Uuid(k[1]))
                p = None if topic is None else topic.partitions.get(k[2])
                if p is None or self._roles_of(p) is None:
                    self.involved.discard(where)

    def record_keys(self, entity: Key) -> tuple[Key, ...]:
        return (entity, ("topic", entity[1])) if entity[0] == "partition" else (entity,)

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        if key[0] == "broker":
            return f"broker {self.broker_id}"
        tid = Uuid(key[1])
        topic = after.topics.get(tid) or before.topics.get(tid)
        return f"{tid if topic is None else topic.name}-{key[2]}"

    def whole(self, entity: Key) -> bool:
        return bool(entity[0] == "broker")

    def absent(self, entity: Key) -> dict[str, Any]:
        return _NO_ROLE


_NO_ROLE = {name: Shown(False, None) for name in ("replicas", "isr", "elr", "lastKnownElr", "addingReplicas",
                                                  "removingReplicas", "leader")}


class BrokersSubject(Subject):
    """Every broker's registration (registered, fenced, controlled shutdown, directories, ...), each its own
    entity: what a question about the brokers of a partition or a directory follows."""

    api_keys = BROKER_RECORDS

    def key_of(self, value: bytes) -> Key | None:
        return ("broker", _int32(value, _BODY))

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        keys = set(keys)
        ids = image.brokers.keys() if ALL in keys else {k[1] for k in keys if len(k) == 2}
        return {("broker", i): broker_fields(image.brokers[i]) for i in ids if i in image.brokers}

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        return f"broker {key[1]}"


class Watch(Subject):
    """Several subjects followed in one pass, each under a name: every key is ``(name, *the subject's key)``. A
    record that touches two of them is keyed ``ALL`` (rare: a RemoveTopicRecord touches a topic and its
    configs), which looks at all of them."""

    def __init__(self, parts: dict[str, Subject]) -> None:
        self.parts = parts
        self.api_keys = frozenset().union(*(p.api_keys for p in parts.values()))
        self.control_records = False

    def start(self, image: MetadataImage) -> None:
        for part in self.parts.values():
            part.start(image)

    def key_of(self, value: bytes) -> Key | None:
        kind, found = value[1], None
        for name, part in self.parts.items():  # every part is asked: some note what they see
            if kind in part.api_keys and (key := part.key_of(value)) is not None:
                found = (name, *key) if found is None else ALL
        return found

    def _by_part(self, keys: Iterable[Key]) -> dict[str, list[Key]]:
        out: dict[str, list[Key]] = {}
        for k in keys:
            if k == ALL:
                for name in self.parts:
                    out.setdefault(name, []).append(ALL)
            else:
                out.setdefault(k[0], []).append(tuple(k[1:]))
        return out

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        out: View = {}
        for name, part_keys in self._by_part(keys).items():
            for key, fields in self.parts[name].view(image, part_keys).items():
                out[(name, *key)] = fields
        return out

    def whole(self, entity: Key) -> bool:
        return self.parts[entity[0]].whole(tuple(entity[1:]))

    def absent(self, entity: Key) -> dict[str, Any]:
        return self.parts[entity[0]].absent(tuple(entity[1:]))

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        return self.parts[key[0]].label(tuple(key[1:]), before, after)

    def record_keys(self, entity: Key) -> tuple[Key, ...]:
        name = entity[0]
        return (*((name, *k) for k in self.parts[name].record_keys(tuple(entity[1:]))), ALL)

    def published(self, image: MetadataImage, keys: Iterable[Key]) -> None:
        by_part = self._by_part(keys)
        for name, part in self.parts.items():
            part.published(image, by_part.get(name, []))


class ControllerSubject(Subject):
    """The controllers: their registrations, and (``quorum``) the quorum's leader changes from the log's
    LeaderChange control records."""

    api_keys = frozenset({REGISTER_CONTROLLER})

    def __init__(self, controller_id: int | None = None, *, quorum: bool = True) -> None:
        self.controller_id = controller_id
        self.control_records = quorum

    def key_of(self, value: bytes) -> Key | None:
        cid = _decode(value).controller_id
        return ("controller", cid) if self.controller_id is None or cid == self.controller_id else None

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        return {("controller", c): _flat_controller(r) for c, r in image.controllers.items()
                if self.controller_id is None or c == self.controller_id}

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        return "quorum" if key[0] == "quorum" else f"controller {key[1]}"


def _flat_controller(r: Any) -> dict[str, Any]:
    j = controller_to_json(r)
    return {"incarnationId": j["incarnationId"], "zkMigrationReady": j["zkMigrationReady"],
            "listeners": [f"{n}://{e['host']}:{e['port']} ({e['securityProtocol']})"
                          for n, e in j["listeners"].items()],
            "supportedFeatures": j["supportedFeatures"]}


class FeaturesSubject(Subject):
    """metadata.version, the ZooKeeper migration state and every other finalized feature."""

    api_keys = frozenset({FEATURE_LEVEL, ZK_MIGRATION})

    def key_of(self, value: bytes) -> Key | None:
        return ("features",)

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        f = image.features
        out: dict[str, Any] = {"metadataVersion": V.metadata_version_name(f.metadata_version),
               "zkMigrationState": V.ZK_MIGRATION_STATES.get(f.zk_migration_state, str(f.zk_migration_state))}
        out.update({f"finalized_{k}": v for k, v in sorted(f.finalized.items())})
        return {("features",): out}

    def whole(self, entity: Key) -> bool:
        return False

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        return "features"


# every metadata record that changes a state (the transaction markers are the loader's, NoOpRecord changes nothing)
ALL_RECORDS = frozenset(m.api_key for m in MESSAGES.values() if m.api_key is not None and m.kind == "metadata"
                        and m.name not in ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord",
                                           "NoOpRecord"))
_DOMAINS = {
    "features": frozenset({FEATURE_LEVEL, ZK_MIGRATION}),
    "cluster": BROKER_RECORDS | {REGISTER_CONTROLLER},
    "topics": PARTITION_RECORDS | {TOPIC, REMOVE_TOPIC},
    "configs": frozenset({CONFIG, REMOVE_TOPIC}),
    "clientQuotas": frozenset({_key("ClientQuotaRecord")}),
    "producerIds": frozenset({_key("ProducerIdsRecord")}),
    "acls": frozenset({_key("AccessControlEntryRecord"), _key("RemoveAccessControlEntryRecord")}),
    "scram": frozenset({_key("UserScramCredentialRecord"), _key("RemoveUserScramCredentialRecord")}),
    "delegationToken": frozenset({_key("DelegationTokenRecord"), _key("RemoveDelegationTokenRecord")}),
}


class NodeSubject(Subject):
    """Any node of the shell's tree (``metalog.replay.shell_tree``): each leaf below it, by its path, compared by
    its text. The records that may touch it are those of its domain (all of them for ``/image`` itself)."""

    def __init__(self, path: list[str], secrets: Secrets = KEPT) -> None:
        self.path = list(path)
        self.secrets = secrets
        domain = self.path[1] if len(self.path) > 1 and self.path[0] == "image" else None
        self.api_keys = _DOMAINS.get(domain, ALL_RECORDS) if domain is not None else ALL_RECORDS

    def key_of(self, value: bytes) -> Key | None:
        return ALL

    def view(self, image: MetadataImage, keys: Iterable[Key]) -> View:
        """Each leaf's text, compared with its secrets in it and shown as ``secrets`` shows it."""
        from metalog.secrets import SHOWN

        compared = self._leaves(image, SHOWN)
        shown_as = compared if self.secrets.shown else self._leaves(image, self.secrets)
        return {(path,): {"": text if shown_as[path] == text else Shown(text, shown_as[path])}
                for path, text in compared.items()}

    def _leaves(self, image: MetadataImage, secrets: Secrets) -> dict[str, str]:
        from metalog.replay.shell_tree import Node, Provenance, root

        node: Node | None = root(image, Provenance(image.offset, -1, -1), secrets)
        for part in self.path:
            node = node.child(part) if node is not None and node.is_directory else None
        return {} if node is None else dict(_leaves(node, "/" + "/".join(self.path)))

    def whole(self, entity: Key) -> bool:
        return False

    def label(self, key: Key, before: MetadataImage, after: MetadataImage) -> str:
        return str(key[0])


def _leaves(node: Any, path: str) -> Iterable[tuple[str, str]]:
    if not node.is_directory:
        yield path, "\n".join(node.lines())
        return
    for name in sorted(node.child_names()):
        child = node.child(name)
        if child is not None:
            yield from _leaves(child, f"{path}/{name}" if path != "/" else f"/{name}")
