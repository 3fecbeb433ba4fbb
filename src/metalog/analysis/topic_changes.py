"""Which topics changed from one published image to the next, for the counters that recount only those.

Images share every unchanged TopicImage, so a topic changed when its object did. Comparing every topic of
two images costs a dictionary lookup per topic per batch: most of a counter's time on a cluster of a few
hundred topics, where a batch changes one or two. Kafka hands each publisher the delta with the image it
made; ``TopicChanges`` listens to the loader the same way (``MetadataLoader.on_publish``) and collects the
topic and partition ids the deltas named, and ``changed_topics`` looks at those only, or at every topic
when they are not known. Inside a changed topic the same holds for its partitions (a topic of a thousand
partitions, one of which moved).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Generic, NamedTuple, TypeVar

from metalog.codec.uuid import Uuid
from metalog.state.delta import MetadataDelta
from metalog.state.image import MetadataImage, PartitionRegistration, TopicImage

Topics = dict[Uuid, TopicImage]
K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class TopicIds(NamedTuple):
    """What may differ between ``base`` and the topics of the image taken after it: topic id -> the ids of
    the partitions that may differ (None: any, the topic is new, gone or made anew). ``ids`` None: not known,
    compare every topic."""

    base: Topics
    ids: dict[Uuid, set[int] | None] | None


class TopicChanges:
    """The topics and partitions named by the deltas a loader published, between one ``take`` and the next.

    Each delta must start from the image published before it; a delta that does not (a loader started inside
    a transaction applies its records over the pending state) or a snapshot makes the ids unknown until the
    next ``take``."""

    def __init__(self, topics: Topics) -> None:
        self._base = self._last = topics
        self._ids: dict[Uuid, set[int] | None] | None = {}

    def published(self, delta: MetadataDelta | None, image: MetadataImage | None) -> None:
        """``MetadataLoader.on_publish`` (of a loader that builds its images: ``image`` is never None)."""
        assert image is not None
        ids = self._ids
        if ids is not None:
            if delta is None or delta.image.topics is not self._last:
                self._ids = None
            else:
                for tid, topic in delta.topics.items():
                    if topic.base is None:  # new, or removed and created again
                        ids[tid] = None
                    elif tid not in ids:
                        ids[tid] = set(topic.partitions)
                    else:
                        pids = ids[tid]
                        if pids is not None:
                            pids.update(topic.partitions)
                for tid in delta.deleted_topics:
                    ids[tid] = None
        self._last = image.topics

    def take(self, topics: Topics) -> TopicIds:
        """The ids since the last ``take`` (or the start), for ``topics``, the latest published image's; the
        next ids start from ``topics``."""
        taken = TopicIds(self._base, self._ids if topics is self._last else None)
        self._base = self._last = topics
        self._ids = {}
        return taken


def changed_entries(before: Mapping[K, V], after: Mapping[K, V],
                    keys: Iterable[K] | None = None) -> tuple[list[tuple[K, V]], list[K]]:
    """The entries of ``after`` whose value is not the same object in ``before`` (added or changed), and the
    keys only ``before`` has (removed). ``keys``: every key that may differ (None: look at every entry)."""
    if keys is not None:
        changed = [(k, v) for k in keys if (v := after.get(k)) is not None and before.get(k) is not v]
        return changed, [k for k in keys if k in before and k not in after]
    get = before.get
    changed = [(k, v) for k, v in after.items() if get(k) is not v]  # a plain loop: fastest
    if len(before) + sum(k not in before for k, _ in changed) == len(after):  # nothing was removed
        return changed, []
    return changed, [k for k in before if k not in after]


def changed_topics(before: Topics, after: Topics, hint: TopicIds | None = None,
                   ) -> tuple[list[tuple[Uuid, TopicImage, set[int] | None]], list[Uuid]]:
    """``changed_entries`` of two images' topics, each changed topic with the ids of its partitions that may
    differ (None: compare them all). A ``hint`` whose ``base`` is ``before`` and whose ids are known limits
    the search to its ids."""
    if hint is None or hint.base is not before or hint.ids is None:
        changed, removed = changed_entries(before, after)
        return [(tid, t, None) for tid, t in changed], removed
    ids = hint.ids
    changed, removed = changed_entries(before, after, ids)
    return [(tid, t, ids[tid] if tid in before else None) for tid, t in changed], removed


class PartitionCache(Generic[T]):
    """What a counter made of each partition it counted (``T``), kept per topic with the TopicImage counted:
    ``update`` says what to take out of the counts and which partitions to count anew."""

    def __init__(self) -> None:
        self.topics: dict[Uuid, tuple[TopicImage, dict[int, tuple[PartitionRegistration, T]]]] = {}
        self._counted: Topics = {}  # the image's topics that ``topics`` holds

    def clear(self) -> None:
        """Forget everything: the next ``update`` counts every partition anew."""
        self.topics.clear()
        self._counted = {}

    def update(self, after: Topics, hint: TopicIds | None,
               ) -> tuple[list[T], list[tuple[dict[int, tuple[PartitionRegistration, T]], int, PartitionRegistration,
                                              tuple[PartitionRegistration, T] | None]]]:
        """From the topics counted last to ``after``: the values of the partitions gone (removed topics,
        dropped partitions), taken out of the cache; and each partition that changed or is new, as (its topic's
        entries, its id, its registration, its entry before or None), for the caller to store
        ``entries[pid] = (registration, value)``."""
        cache = self.topics
        changed, removed = changed_topics(self._counted, after, hint)
        self._counted = after
        gone = [value for tid in removed for _, value in cache.pop(tid)[1].values()]
        moved = []
        for tid, topic, pids in changed:
            cached = cache.get(tid)
            parts = cached[1] if cached is not None else {}
            found, dropped = changed_entries(cached[0].partitions if cached is not None else {}, topic.partitions,
                                             pids)
            gone += [parts.pop(pid)[1] for pid in dropped]
            moved += [(parts, pid, part, parts.get(pid)) for pid, part in found]
            cache[tid] = (topic, parts)
        return gone, moved
