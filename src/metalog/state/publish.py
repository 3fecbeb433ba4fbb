"""What ``MetadataLoader.end_batch``'s compiled twin (``metalog.state.compiled.publish.BatchPublish``) is given: one
typed object, ``BatchPublishParts``, built by the loader from the definitions the twin mirrors, so that the twin
holds no copy of a constant or a private name.

The twin reads and writes its loader through public names only: ``marker_state``, ``offset``, ``clean_offset``,
``delta``, ``images``, ``published_state``, ``published_image`` and ``on_publish``. It reads a ``MetadataDelta``'s
fields at their slots and changes the working copy (``image.working_copy``), at its slots, as
``MetadataDelta.apply_to`` does; whatever it does not do itself (a loader that builds images, the features changed,
a delta over another image, a working copy of another class) it hands to the pure methods (``end_batch``,
``MetadataDelta.apply_to``). ``tests/state/test_publish.py`` holds it equal to them over random histories in random
batch shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from metalog.state.delta import MetadataDelta, TopicDelta
from metalog.state.image import MetadataImage, PartitionRegistration, TopicImage


@dataclass(frozen=True)
class BatchPublishParts:
    """Everything ``BatchPublish`` needs besides its loader and the pure method."""

    started: object  # the loader's marker_state while a transaction is open (TransactionState.STARTED_TRANSACTION)
    no_transaction: object  # its marker_state after a publish (TransactionState.NO_TRANSACTION)
    delta: type[MetadataDelta]  # the deltas whose slots the twin reads (any other class: the pure method)
    topic_delta: type[TopicDelta]
    topic_image: type[TopicImage]  # a new or re-created topic's image in the working copy (and its slots read)
    image: type[MetadataImage]  # the working copies whose slots the twin reads and changes (any other: the pure method)
    registration: type[PartitionRegistration]  # the registrations a publish may keep spare (the loader's)
