"""How a metadata log is opened: ``MetadataLog.open(path, mode, check=..., config=...)``.

    >>> from metalog.log import Check, Durability, LogConfig, MetadataLog, Mode
    >>> MetadataLog.open("/var/lib/kafka/metadata")                       # doctest: +SKIP
    >>> MetadataLog.open(logdir, Mode.WRITE, check=Check.ALL)             # doctest: +SKIP
    >>> MetadataLog.open(logdir, Mode.CREATE, config=LogConfig(durability=Durability.NONE))  # doctest: +SKIP

``Mode`` says what the open may change, ``Check`` how much of the log is checked before it is used (see
``metalog.log.log_loader``), ``LogConfig`` how a writer writes and what a log it creates is stamped with.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from metalog.log.index import INDEX_INTERVAL_BYTES

DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # metadata.log.segment.bytes


class Mode(Enum):
    """What opening a log may change."""

    READ = "read"  # nothing in the directory is created, changed, locked or removed (the default)
    WRITE = "write"  # the one writer: the lock taken, an interrupted write's leftovers cleaned, a torn tail cut
    CREATE = "create"  # WRITE, making the log where there is none

    @property
    def writable(self) -> bool:
        return self is not Mode.READ


class Check(Enum):
    """How much of the log is checked when it opens."""

    TAIL = "tail"  # the tail, as Kafka's recovery checks what follows its recovery point (the default)
    ALL = "all"  # every segment from its first byte: damage anywhere is an error before anything is appended
    REPAIR = "repair"  # every segment, the log cut at the first damage (read-only: what would go is left out of reads)

    @property
    def every_segment(self) -> bool:
        return self is not Check.TAIL


class Durability(Enum):
    """When appended batches are fsynced (and so reported committed)."""

    BATCH = "batch"  # after every batch (default)
    APPEND = "append"  # once per append() call
    NONE = "none"  # only by flush() and close()


@dataclass(frozen=True)
class LogConfig:
    """A writer's settings, by Kafka's names where Kafka has one; a reader uses none of them."""

    segment_bytes: int = DEFAULT_SEGMENT_BYTES  # metadata.log.segment.bytes: a segment rolls past this size
    index_interval_bytes: int = INDEX_INTERVAL_BYTES  # index.interval.bytes: bytes between offset index entries
    durability: Durability = Durability.BATCH
    cluster_id: str | None = None  # meta.properties' cluster.id of a log Mode.CREATE makes (None: a random one)
    node_id: int = 1  # meta.properties' node.id of a log Mode.CREATE makes


DEFAULT_CONFIG = LogConfig()
