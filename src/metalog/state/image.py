"""The immutable image of controller state, in the shape of Kafka's MetadataImage.

Images are never mutated once built: a MetadataDelta builds a new image that shares every
unchanged object with the old one. Registrations are plain slotted objects whose lists are
tuples, so sharing them is safe.

The one exception is a *working copy* (``working_copy``): an image whose containers nothing else holds, which a
``MetadataLoader`` that keeps no image per publish changes in place (``MetadataDelta.apply_to``, ``set_working``)
and copies again (``working_copy``) where an image is asked for.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid

if TYPE_CHECKING:
    from metalog.codec.messages import (
        AccessControlEntryRecord,
        DelegationTokenRecord,
        RegisterControllerRecord,
        UserScramCredentialRecord,
    )

_HALVES = struct.Struct(">qq")


def uuid_order(u: Uuid) -> tuple[int, int]:
    """Kafka's Uuid.compareTo: signed high half, then signed low half."""
    return _HALVES.unpack(u)


class BrokerRegistration:
    """A registered broker (Kafka's BrokerRegistration); ``directories`` are kept in Kafka's uuid order."""

    __slots__ = ("id", "epoch", "incarnation_id", "listeners", "features", "rack", "fenced",
                 "in_controlled_shutdown", "is_migrating_zk_broker", "directories")

    def __init__(self, *, id: int, epoch: int, incarnation_id: Uuid, listeners: tuple[tuple[str, str, int, int], ...],
                 features: tuple[tuple[str, int, int], ...], rack: str | None, fenced: bool,
                 in_controlled_shutdown: bool, is_migrating_zk_broker: bool, directories: tuple[Uuid, ...]) -> None:
        """Every field named (as Kafka's BrokerRegistration.Builder sets them): three flags in a row read as
        nothing positionally."""
        self.id = id
        self.epoch = epoch
        self.incarnation_id = incarnation_id
        self.listeners = listeners  # (name, host, port, security protocol)
        self.features = features  # (name, min supported, max supported)
        self.rack = rack
        self.fenced = fenced
        self.in_controlled_shutdown = in_controlled_shutdown
        self.is_migrating_zk_broker = is_migrating_zk_broker
        self.directories = tuple(sorted(directories, key=uuid_order))

    def clone_with(self, fenced: bool | None = None, in_controlled_shutdown: bool | None = None,
                   directories: tuple[Uuid, ...] | None = None) -> BrokerRegistration:
        return BrokerRegistration(
            id=self.id, epoch=self.epoch, incarnation_id=self.incarnation_id, listeners=self.listeners,
            features=self.features, rack=self.rack, fenced=self.fenced if fenced is None else fenced,
            in_controlled_shutdown=self.in_controlled_shutdown if in_controlled_shutdown is None
            else in_controlled_shutdown,
            is_migrating_zk_broker=self.is_migrating_zk_broker,
            directories=self.directories if directories is None else directories)

    def has_online_dir(self, directory: Uuid) -> bool:
        """Kafka's DirectoryId.isOnline: reserved placeholders count as online, LOST never does, and a
        broker that registered no directories (metadata.version before 3.7-IV2) is assumed online."""
        if directory in (UNASSIGNED, MIGRATING):
            return True
        if directory == LOST:
            return False
        return not self.directories or directory in self.directories

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, s) for s in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BrokerRegistration) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"BrokerRegistration(id={self.id}, epoch={self.epoch}, fenced={self.fenced}, rack={self.rack!r})"


class PartitionRegistration(NamedTuple):
    """One partition's replicas, directories, ISR, ELR and leadership (Kafka's PartitionRegistration).

    A tuple: immutable, compared and hashed in C, and built in one call on replay's hot path: the rules build one
    with ``tuple.__new__`` from its fields in this order (``rules.partition_record`` and ``partition_change``,
    from locals named as the fields), which costs a third of the NamedTuple's own constructor per record.
    """

    replicas: tuple[int, ...]
    directories: tuple[Uuid, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int

    def directory(self, replica: int) -> Uuid:
        return self.directories[self.replicas.index(replica)]

    def __repr__(self) -> str:
        return (f"PartitionRegistration(replicas={list(self.replicas)}, isr={list(self.isr)}, leader={self.leader}, "
                f"leader_epoch={self.leader_epoch}, partition_epoch={self.partition_epoch})")


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: its name, id and partitions. Slotted, as ``MetadataImage`` is."""

    name: str
    id: Uuid
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    metadata_version: int | None = None  # the metadata.version feature level
    finalized: dict[str, int] = field(default_factory=dict)  # every other finalized feature
    zk_migration_state: int = 0


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The whole controller state after ``offset`` (-1: nothing replayed yet).

    Record-valued domains keep the (never mutated) record that defines each entry, so a
    snapshot writes them back exactly: controllers, ACLs, SCRAM credentials, delegation tokens.

    Slotted (as ``TopicImage`` is): the loader's compiled twins read and write a working copy's fields at their
    slots (``metalog.state.compiled.publish``), with no dictionary lookup per batch.
    """

    offset: int = -1
    features: FeaturesImage = FeaturesImage()
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    controllers: dict[int, RegisterControllerRecord] = field(default_factory=dict)  # by controller id
    topics: dict[Uuid, TopicImage] = field(default_factory=dict)
    topics_by_name: dict[str, TopicImage] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    next_producer_id: int | None = None
    acls: dict[Uuid, AccessControlEntryRecord] = field(default_factory=dict)  # by id
    scram: dict[tuple[str, int], UserScramCredentialRecord] = field(default_factory=dict)  # by (user, mechanism)
    delegation_tokens: dict[str, DelegationTokenRecord] = field(default_factory=dict)  # by token id

    def topic(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def offline_replicas(self, partition: PartitionRegistration) -> list[int]:
        """Replicas whose broker is missing or fenced, or whose directory is not online on that broker."""
        return offline_replicas(partition, self.brokers)


def offline_replicas(partition: PartitionRegistration, brokers: dict[int, BrokerRegistration]) -> list[int]:
    """``MetadataImage.offline_replicas`` given only the brokers (what the analysis keeps between images)."""
    offline = []
    for replica, directory in zip(partition.replicas, partition.directories, strict=True):
        broker = brokers.get(replica)
        if broker is None or broker.fenced or not broker.has_online_dir(directory):
            offline.append(replica)
    return offline


EMPTY = MetadataImage()


def working_copy(image: MetadataImage) -> MetadataImage:
    """``image`` with a container of its own for everything a delta changes (its maps, each topic's partitions):
    equal to it, sharing only the immutable values (registrations, records, features, config maps)."""
    topics = {tid: TopicImage(t.name, t.id, dict(t.partitions)) for tid, t in image.topics.items()}
    same = {id(old): topics[tid] for tid, old in image.topics.items()}
    by_name = {name: same.get(id(t)) or TopicImage(t.name, t.id, dict(t.partitions))
               for name, t in image.topics_by_name.items()}
    return MetadataImage(offset=image.offset, features=image.features, brokers=dict(image.brokers),
                         controllers=dict(image.controllers), topics=topics, topics_by_name=by_name,
                         configs=dict(image.configs), client_quotas=dict(image.client_quotas),
                         next_producer_id=image.next_producer_id, acls=dict(image.acls), scram=dict(image.scram),
                         delegation_tokens=dict(image.delegation_tokens))


def set_working(working: MetadataImage, *, offset: int, features: FeaturesImage,
                next_producer_id: int | None) -> None:
    """The single values of a working copy (``working_copy``), set in place: only ``MetadataDelta.apply_to``
    and the loader that owns the copy call this."""
    # the frozen dataclass's own slots, set past its refusing __setattr__ (once per batch)
    _SET_OFFSET(working, offset)
    _SET_FEATURES(working, features)
    _SET_NEXT_PRODUCER_ID(working, next_producer_id)


def _slot_setter(name: str) -> Callable[[MetadataImage, object], None]:
    """The setter of ``MetadataImage``'s slot ``name`` (its member descriptor's), which the frozen dataclass's
    refusing ``__setattr__`` does not stand in front of."""
    setter: Callable[[MetadataImage, object], None] = MetadataImage.__dict__[name].__set__
    return setter


_SET_OFFSET = _slot_setter("offset")
_SET_FEATURES = _slot_setter("features")
_SET_NEXT_PRODUCER_ID = _slot_setter("next_producer_id")
