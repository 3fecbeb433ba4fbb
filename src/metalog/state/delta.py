"""MetadataDelta: the changes records make to an image, kept apart from it until ``apply()``.

``replay(record, offset)`` applies one metadata record by its rule (``metalog.state.rules``, the one table of
record rules); ``apply()`` builds the new image, sharing everything unchanged with the old one. A record that
cannot apply raises ReplayError naming the offset and the record, and leaves the delta as it was.

``apply_to(working)`` makes the same changes in place, to a working image the caller alone holds (a
``MetadataLoader`` that keeps no image per publish: ``image.working_copy``), and ``clear()`` empties the delta
for the next changes over it: per batch, the cost is what the batch changed, not the size of the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from metalog.codec.uuid import Uuid
from metalog.errors import ReplayError
from metalog.state.enums import record_type_name
from metalog.state.image import (
    BrokerRegistration,
    FeaturesImage,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    set_working,
)
from metalog.state.rules import APPLY

if TYPE_CHECKING:
    from metalog.codec.messages import (
        AccessControlEntryRecord,
        DelegationTokenRecord,
        RegisterControllerRecord,
        UserScramCredentialRecord,
    )
    from metalog.codec.runtime import ApiMessage

K = TypeVar("K")
V = TypeVar("V")


class TopicDelta:
    """A topic that is new or has changed partitions."""

    __slots__ = ("name", "id", "base", "base_partitions", "partitions")

    def __init__(self, name: str, topic_id: Uuid, base: TopicImage | None) -> None:
        self.name = name
        self.id = topic_id
        self.base = base  # the image's topic, whose partitions this delta overlays; None for a new topic
        self.base_partitions: dict[int, PartitionRegistration] = {} if base is None else base.partitions
        self.partitions: dict[int, PartitionRegistration] = {}  # the changed ones

    def partition(self, pid: int) -> PartitionRegistration | None:
        return self.partitions.get(pid) or self.base_partitions.get(pid)

    def image(self) -> TopicImage:
        if self.base is None:
            return TopicImage(self.name, self.id, dict(self.partitions))
        if not self.partitions:
            return self.base
        return TopicImage(self.name, self.id, {**self.base.partitions, **self.partitions})


class MetadataDelta:
    """Changes over ``image``; cheap to replay into, ``apply()`` to get the resulting image. Slotted: the loader's
    compiled publish (``metalog.state.compiled.publish``) reads these fields at their slots."""

    __slots__ = ("image", "offset", "metadata_version", "features", "zk_migration_state", "brokers", "controllers",
                 "topics", "deleted_topics", "configs", "cleared_configs", "client_quotas", "next_producer_id", "acls",
                 "scram", "delegation_tokens")

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.offset = image.offset
        self.metadata_version: int | None = image.features.metadata_version
        self.features: dict[str, int | None] = {}
        self.zk_migration_state = image.features.zk_migration_state
        self.brokers: dict[int, BrokerRegistration | None] = {}
        self.controllers: dict[int, RegisterControllerRecord | None] = {}  # None: removed
        self.topics: dict[Uuid, TopicDelta] = {}
        self.deleted_topics: set[Uuid] = set()
        self.configs: dict[tuple[int, str], dict[str, str | None]] = {}
        self.cleared_configs: set[tuple[int, str]] = set()
        self.client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float | None]] = {}
        self.next_producer_id = image.next_producer_id
        self.acls: dict[Uuid, AccessControlEntryRecord | None] = {}
        self.scram: dict[tuple[str, int], UserScramCredentialRecord | None] = {}
        self.delegation_tokens: dict[str, DelegationTokenRecord | None] = {}

    # ---- the entry point ---------------------------------------------------------------------------
    def replay(self, record: ApiMessage, offset: int | None = None) -> None:
        rule = APPLY.get(record.NAME)
        if rule is None:
            raise ReplayError(f"{record.NAME} is not a metadata record this state applies", offset=offset,
                              record=record.NAME)
        try:
            rule(self, record)
        except ReplayError as e:
            raise located(e, offset, record) from None
        if offset is not None:
            self.offset = offset

    # ---- lookups through the overlay ---------------------------------------------------------------
    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.brokers:
            return self.brokers[broker_id]
        return self.image.brokers.get(broker_id)

    def broker_or_fail(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        """The broker registered at ``epoch``; else a ReplayError saying why it cannot be ``action``-ed."""
        broker = self.broker(broker_id)
        if broker is None:
            raise ReplayError(f"tried to {action} broker {broker_id}, but that broker was not registered")
        if broker.epoch != epoch:
            raise ReplayError(f"tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match "
                              f"the current broker epoch, {broker.epoch}")
        return broker

    def topic_delta(self, topic_id: Uuid) -> TopicDelta:
        """The topic's delta (made over the image's topic on first use); unknown topic ids are refused."""
        delta = self.topics.get(topic_id)
        if delta is None:
            base = None if topic_id in self.deleted_topics else self.image.topics.get(topic_id)
            if base is None:
                raise ReplayError(f"unknown topic id {topic_id}")
            delta = self.topics[topic_id] = TopicDelta(base.name, topic_id, base)
        return delta

    # ---- changes the rules make besides setting entries --------------------------------------------
    def start_topic(self, name: str, topic_id: Uuid) -> None:
        """A topic (re)starts with no partitions."""
        self.deleted_topics.discard(topic_id)
        self.topics[topic_id] = TopicDelta(name, topic_id, None)

    def remove_topic(self, topic_id: Uuid) -> str:
        """Remove a known topic; its name."""
        name = self.topic_delta(topic_id).name
        del self.topics[topic_id]
        self.deleted_topics.add(topic_id)
        return name

    def clear_config(self, resource: tuple[int, str]) -> None:
        """Every config of ``resource`` goes."""
        self.configs.pop(resource, None)
        self.cleared_configs.add(resource)

    # ---- the new image -----------------------------------------------------------------------------
    def apply(self) -> MetadataImage:
        img = self.image
        features = self._new_features()
        topics, by_name = img.topics, img.topics_by_name
        if self.topics or self.deleted_topics:
            topics = dict(img.topics)
            by_name = dict(img.topics_by_name)
            self._drop_deleted_topics(topics, by_name)
            for tid, delta in self.topics.items():
                old = topics.get(tid)
                if old is not None and by_name.get(old.name) is old:
                    del by_name[old.name]
                topics[tid] = by_name[delta.name] = delta.image()
        return MetadataImage(
            offset=self.offset, features=features, brokers=_overlay(img.brokers, self.brokers),
            controllers=_overlay(img.controllers, self.controllers), topics=topics, topics_by_name=by_name,
            configs=self._apply_configs(), client_quotas=self._apply_quotas(),
            next_producer_id=self.next_producer_id, acls=_overlay(img.acls, self.acls),
            scram=_overlay(img.scram, self.scram),
            delegation_tokens=_overlay(img.delegation_tokens, self.delegation_tokens))

    def _new_features(self) -> FeaturesImage:
        """The features after the delta (the image's own object when they did not change)."""
        features = self.image.features
        if (self.metadata_version, self.zk_migration_state) != (features.metadata_version,
                                                                features.zk_migration_state) or self.features:
            features = FeaturesImage(self.metadata_version, _overlay(features.finalized, self.features),
                                     self.zk_migration_state)
        return features

    def _apply_configs(self) -> dict[tuple[int, str], dict[str, str]]:
        if not self.configs and not self.cleared_configs:
            return self.image.configs
        configs = dict(self.image.configs)
        self._merge_configs(configs)
        return configs

    def _merge_configs(self, configs: dict[tuple[int, str], dict[str, str]]) -> None:
        for resource in self.cleared_configs:
            configs.pop(resource, None)
        for resource, changes in self.configs.items():
            merged = _overlay(configs.get(resource, {}), changes)  # a new dict: a config map is never changed
            if merged:
                configs[resource] = merged
            else:
                configs.pop(resource, None)

    def _apply_quotas(self) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        if not self.client_quotas:
            return self.image.client_quotas
        quotas = dict(self.image.client_quotas)
        self._merge_quotas(quotas)
        return quotas

    def _merge_quotas(self, quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]]) -> None:
        for entity, changes in self.client_quotas.items():
            merged = _overlay(quotas.get(entity, {}), changes)
            if merged:
                quotas[entity] = merged
            else:
                quotas.pop(entity, None)

    # ---- in place, for a loader that keeps no image per publish ---------------------------------------
    def apply_to(self, working: MetadataImage) -> None:
        """What ``apply()`` returns, made in place in ``working``: the delta's own image, a working copy
        (``image.working_copy``) that nothing else holds, since every container of it changes. Then ``clear()``
        starts the next changes over it."""
        if working is not self.image:
            raise ValueError("a delta applies in place only to the image it was made over")
        set_working(working, offset=self.offset, features=self._new_features(),
                    next_producer_id=self.next_producer_id)
        if self.brokers:
            _overlay_in_place(working.brokers, self.brokers)
        if self.controllers:
            _overlay_in_place(working.controllers, self.controllers)
        if self.topics or self.deleted_topics:
            self._merge_topics(working.topics, working.topics_by_name)
        if self.configs or self.cleared_configs:
            self._merge_configs(working.configs)
        if self.client_quotas:
            self._merge_quotas(working.client_quotas)
        if self.acls:
            _overlay_in_place(working.acls, self.acls)
        if self.scram:
            _overlay_in_place(working.scram, self.scram)
        if self.delegation_tokens:
            _overlay_in_place(working.delegation_tokens, self.delegation_tokens)

    def _drop_deleted_topics(self, topics: dict[Uuid, TopicImage], by_name: dict[str, TopicImage]) -> None:
        """The deleted topics out of ``topics`` and, where the name still names that topic, ``by_name``."""
        for tid in self.deleted_topics:
            gone = topics.pop(tid, None)
            if gone is not None and by_name.get(gone.name) is gone:
                del by_name[gone.name]

    def _merge_topics(self, topics: dict[Uuid, TopicImage], by_name: dict[str, TopicImage]) -> None:
        """``apply()``'s topics, in place: a changed topic's partitions are updated in its own TopicImage (the
        working copy's), a new or re-created topic gets a TopicImage of its own."""
        self._drop_deleted_topics(topics, by_name)
        for tid, delta in self.topics.items():
            old = topics.get(tid)
            if delta.base is not None and delta.base is old:
                old.partitions.update(delta.partitions)
                by_name[delta.name] = old  # (as apply() names the changed topic)
                continue
            if old is not None and by_name.get(old.name) is old:
                del by_name[old.name]
            topics[tid] = by_name[delta.name] = TopicImage(delta.name, tid, dict(delta.partitions))

    def changes_nothing(self) -> bool:
        """Nothing loaded into the delta changes its image (records such as NoOpRecord's): publishing it only moves
        the offset."""
        image = self.image
        return not (self.features or self.brokers or self.controllers or self.topics or self.deleted_topics
                    or self.configs or self.cleared_configs or self.client_quotas or self.acls or self.scram
                    or self.delegation_tokens) \
            and self.metadata_version == image.features.metadata_version \
            and self.zk_migration_state == image.features.zk_migration_state \
            and self.next_producer_id == image.next_producer_id

    def clear(self) -> None:
        """No changes, over the image as ``apply_to`` left it (its offset and single values are the delta's
        already)."""
        for changes in (self.features, self.brokers, self.controllers, self.topics, self.deleted_topics,
                        self.configs, self.cleared_configs, self.client_quotas, self.acls, self.scram,
                        self.delegation_tokens):
            if changes:
                changes.clear()


def located(error: ReplayError, offset: int | None, record: ApiMessage) -> ReplayError:
    """A rule's error with the offset and the record type named (a rule knows neither)."""
    if error.offset is None:
        return ReplayError(error.reason, offset=offset, record=record_type_name(record.NAME))
    return error


def _overlay(base: dict[K, V], changes: dict[K, V | None]) -> dict[K, V]:
    """``base`` with ``changes`` on top; a None change removes the key. Shares ``base`` when nothing changed."""
    if not changes:
        return base
    merged = dict(base)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _overlay_in_place(target: dict[K, V], changes: dict[K, V | None]) -> None:
    """``_overlay`` made in ``target`` itself."""
    for key, value in changes.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
