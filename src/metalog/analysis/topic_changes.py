"""Which topics changed from one published image to the next, for the counters that recount only those.

Images share every unchanged TopicImage, so a topic changed when its object did. Comparing every topic of
two images costs a dictionary lookup per topic per batch: most of a counter's time on a cluster of a few
hundred topics, where a batch changes one or two. Kafka hands each publisher the delta with the image it
made; ``TopicChanges`` listens to the loader the same way (``MetadataLoader.on_publish``) and collects the
ids the deltas named, and ``changed_topics`` looks at those ids only, or at every topic when they are not
known.
"""

from __future__ import annotations

from typing import NamedTuple

from metalog.codec.uuid import Uuid
from metalog.state.delta import MetadataDelta
from metalog.state.image import MetadataImage, TopicImage

Topics = dict[Uuid, TopicImage]


class TopicIds(NamedTuple):
    """The ids of every topic that may differ between ``base`` and the topics of the image taken after it
    (``ids`` None: not known, compare every topic)."""

    base: Topics
    ids: set[Uuid] | None


class TopicChanges:
    """The topic ids of the deltas a loader published, between one ``take`` and the next.

    Each delta must start from the image published before it; a delta that does not (a loader started inside
    a transaction applies its records over the pending state) or a snapshot makes the ids unknown until the
    next ``take``."""

    def __init__(self, topics: Topics) -> None:
        self._base = self._last = topics
        self._ids: set[Uuid] | None = set()

    def published(self, delta: MetadataDelta | None, image: MetadataImage) -> None:
        """``MetadataLoader.on_publish``."""
        ids = self._ids
        if ids is not None:
            if delta is None or delta.image.topics is not self._last:
                self._ids = None
            else:
                ids.update(delta.topics)
                ids.update(delta.deleted_topics)
        self._last = image.topics

    def take(self, topics: Topics) -> TopicIds:
        """The ids since the last ``take`` (or the start), for ``topics``, the latest published image's; the
        next ids start from ``topics``."""
        taken = TopicIds(self._base, self._ids if topics is self._last else None)
        self._base = self._last = topics
        self._ids = set()
        return taken


def changed_topics(before: Topics, after: Topics,
                   hint: TopicIds | None = None) -> tuple[list[tuple[Uuid, TopicImage]], list[Uuid]]:
    """The topics of ``after`` that are not the same object in ``before`` (added or changed), and the ids in
    ``before`` that ``after`` has not (removed). A ``hint`` whose ``base`` is ``before`` and whose ids are
    known limits the search to its ids."""
    if hint is not None and hint.base is before and hint.ids is not None:
        ids = hint.ids
        changed = [(tid, t) for tid in ids if (t := after.get(tid)) is not None and before.get(tid) is not t]
        return changed, [tid for tid in ids if tid in before and tid not in after]
    get = before.get
    changed = [(tid, t) for tid, t in after.items() if get(tid) is not t]  # a plain loop: fastest
    if len(before) + sum(tid not in before for tid, _ in changed) == len(after):  # nothing was removed
        return changed, []
    return changed, [tid for tid in before if tid not in after]
