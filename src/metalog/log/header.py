"""The header of a RecordBatch v2 (magic 2): where each field lies, in Kafka's names (DefaultRecordBatch's
``*_OFFSET`` constants, Records' ``LOG_OVERHEAD`` and ``HEADER_SIZE_UP_TO_MAGIC``). Every reader of a batch's bytes
takes its offsets from here: ``RecordBatch``, the frame check, the chain's checks, the scan, and the compiled
twins, whose own constants are checked against these when they load (``check_layout``). Big-endian throughout::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 |
    attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
    producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32 | records...

``batchLength`` counts the bytes after itself; the CRC-32C covers attributes to the end.
"""

from __future__ import annotations

import struct
from types import ModuleType
from typing import Final

HEADER: Final = struct.Struct(">qiibIhiqqqhii")  # the fields below, in order

BASE_OFFSET_OFFSET: Final = 0
LENGTH_OFFSET: Final = 8  # batchLength
PARTITION_LEADER_EPOCH_OFFSET: Final = 12
MAGIC_OFFSET: Final = 16
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21  # where the CRC-32C starts
LAST_OFFSET_DELTA_OFFSET: Final = 23
BASE_TIMESTAMP_OFFSET: Final = 27
MAX_TIMESTAMP_OFFSET: Final = 35
PRODUCER_ID_OFFSET: Final = 43
PRODUCER_EPOCH_OFFSET: Final = 51
BASE_SEQUENCE_OFFSET: Final = 53
RECORDS_COUNT_OFFSET: Final = 57
RECORDS_OFFSET: Final = 61  # the first record
HEADER_SIZE: Final = RECORDS_OFFSET

LOG_OVERHEAD: Final = 12  # baseOffset and batchLength: the part batchLength does not count
HEADER_SIZE_UP_TO_MAGIC: Final = 17  # enough to size a batch and check its magic (``check_frame``)
MIN_BATCH_LENGTH: Final = HEADER_SIZE - LOG_OVERHEAD
MAGIC: Final = 2  # the magic byte's value: record batch v2, the only form KRaft writes

# every constant above that a compiled twin may mirror, by name
LAYOUT: Final = {
    "BASE_OFFSET_OFFSET": BASE_OFFSET_OFFSET, "LENGTH_OFFSET": LENGTH_OFFSET,
    "PARTITION_LEADER_EPOCH_OFFSET": PARTITION_LEADER_EPOCH_OFFSET, "MAGIC_OFFSET": MAGIC_OFFSET,
    "CRC_OFFSET": CRC_OFFSET, "ATTRIBUTES_OFFSET": ATTRIBUTES_OFFSET,
    "LAST_OFFSET_DELTA_OFFSET": LAST_OFFSET_DELTA_OFFSET,
    "BASE_TIMESTAMP_OFFSET": BASE_TIMESTAMP_OFFSET, "MAX_TIMESTAMP_OFFSET": MAX_TIMESTAMP_OFFSET,
    "PRODUCER_ID_OFFSET": PRODUCER_ID_OFFSET, "PRODUCER_EPOCH_OFFSET": PRODUCER_EPOCH_OFFSET,
    "BASE_SEQUENCE_OFFSET": BASE_SEQUENCE_OFFSET, "RECORDS_COUNT_OFFSET": RECORDS_COUNT_OFFSET,
    "RECORDS_OFFSET": RECORDS_OFFSET, "LOG_OVERHEAD": LOG_OVERHEAD, "MIN_BATCH_LENGTH": MIN_BATCH_LENGTH,
    "MAGIC": MAGIC,
}


def field_offsets() -> list[int]:
    """The offset of each of HEADER's fields, in order, from its format: what the named offsets above must be."""
    offsets, at = [], 0
    for code in HEADER.format.lstrip(">"):
        offsets.append(at)
        at += struct.calcsize(f">{code}")
    return offsets


def check_layout(module: ModuleType) -> str | None:
    """Why the compiled ``module`` is not to run: its ``LAYOUT`` (the header constants it was built with) names one
    this module does not, or gives one another value (a stale build); None when every one agrees."""
    theirs = getattr(module, "LAYOUT", None)
    if not isinstance(theirs, dict) or not theirs:
        return f"{module.__name__} has no LAYOUT (built before metalog.log.header)"
    wrong = sorted(name for name, value in theirs.items() if LAYOUT.get(name) != value)
    if wrong:
        return f"{module.__name__} was built with another batch header layout ({', '.join(wrong)})"
    return None
