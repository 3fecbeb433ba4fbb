"""Kafka's on-disk metadata log: RecordBatch v2, segments with their indexes, recovery, MetadataLog.

    >>> from metalog.log import MetadataLog
    >>> with MetadataLog.open("/var/lib/kafka/metadata") as log:   # doctest: +SKIP
    ...     for record in log.records():
    ...         ...

Opening reads and changes nothing; ``MetadataLog.open(path, Mode.WRITE)`` is the one writer's (``metalog.log.config``).
"""

from metalog.log.batch import Record, RecordBatch
from metalog.log.builder import BatchFields, build_batch, build_control_batch, build_data_batch
from metalog.log.compression import Compression
from metalog.log.config import Check, Durability, LogConfig, Mode
from metalog.log.control import ControlRecord, ControlType, decode_control, encode_control
from metalog.log.metadata_log import AppendedBatch, MetadataLog
from metalog.log.reader import iter_batches

__all__ = [
    "AppendedBatch", "BatchFields", "Check", "Compression", "ControlRecord", "ControlType", "Durability", "LogConfig",
    "MetadataLog", "Mode", "Record", "RecordBatch", "build_batch", "build_control_batch", "build_data_batch",
    "decode_control", "encode_control", "iter_batches",
]
