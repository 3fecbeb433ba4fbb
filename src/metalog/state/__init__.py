"""Controller state: an immutable MetadataImage and the MetadataDelta records apply to.

Pure: records in, state out; no I/O. ``MetadataLoader`` adds Kafka's loader rules
(transactions, snapshots replacing the image) on top of the delta.
"""

from metalog.state.delta import MetadataDelta
from metalog.state.image import (
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from metalog.state.loader import MetadataLoader

__all__ = [
    "BrokerRegistration", "MetadataDelta", "MetadataImage", "MetadataLoader", "PartitionRegistration", "TopicImage",
]
