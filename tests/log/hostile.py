"""Batches whose frame, CRC-32C and chain are sound but whose records KRaft's reader refuses (Kafka's
RecordsIterator and ControlRecord.of: see ``metalog.log.kraft_records``), and a log to put them in.

Each crafted batch is whole: a reader cannot take it for a torn write, and a reader that skips it (a control batch,
say) answers with a state Kafka never published. ``CRAFTED`` names each kind; ``write_after`` appends them to a copy
of a log as a controller would have (the offsets and epoch running on), so that every read that reaches them meets
them: the active segment's tail, which every open checks.
"""

from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import crc32c

from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.log.batch import CONTROL_FLAG, Record
from metalog.log.builder import BatchFields, build_batch, build_control_batch, build_data_batch
from metalog.log.control import control_key, encode_control
from metalog.log.header import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE
from tests.log.damage import BatchAt, leader_change

TS = 1_700_000_999_000


def topic_record() -> bytes:
    return encode_metadata_record(message_class("TopicRecord")(name="crafted", topic_id=Uuid.of(7, 7)), 0)


def with_crc(data: bytearray) -> bytes:
    """The batch with its CRC-32C made right again (and its batchLength, after a change of size)."""
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    data[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc32c.crc32c(bytes(data[ATTRIBUTES_OFFSET:])).to_bytes(4, "big")
    return bytes(data)


def attributes(data: bytes, *, set_bits: int = 0, clear_bits: int = 0) -> bytes:
    raw = bytearray(data)
    value = (int.from_bytes(raw[21:23], "big") | set_bits) & ~clear_bits
    raw[21:23] = value.to_bytes(2, "big")
    return with_crc(raw)


def _compressor(codec: int) -> Callable[[bytes], bytes] | None:
    if codec == 1:
        return lambda b: zlib.compress(b, wbits=16 + zlib.MAX_WBITS)
    module = {2: "snappy", 3: "lz4", 4: "zstandard"}[codec]
    if importlib.util.find_spec(module) is None:
        return None
    if codec == 2:
        import snappy
        return snappy.compress  # type: ignore[no-any-return]
    if codec == 3:
        import lz4.frame
        return lz4.frame.compress  # type: ignore[no-any-return]
    import zstandard
    return zstandard.ZstdCompressor().compress


CODEC_NAMES = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CODECS_HERE = [c for c in CODEC_NAMES if _compressor(c) is not None]


def compressed(data: bytes, codec: int, *, records: bytes | None = None, cut: int = 0) -> bytes:
    """The batch with its records compressed by ``codec`` (``records``: other bytes in their place), the compressed
    bytes ``cut`` short."""
    compress = _compressor(codec)
    assert compress is not None
    body = compress(data[HEADER_SIZE:] if records is None else records)
    raw = bytearray(data[:HEADER_SIZE] + body[:len(body) - cut])
    raw[21:23] = (int.from_bytes(raw[21:23], "big") | codec).to_bytes(2, "big")
    return with_crc(raw)


def _data(values: list[bytes] | None = None) -> bytes:
    return build_data_batch(0, values or [topic_record()], epoch=1, timestamp=TS)


def _records(*records: Record) -> bytes:
    return build_batch(0, list(records), BatchFields(partition_leader_epoch=1, base_timestamp=TS, max_timestamp=TS))


def _control(key: bytes, value: bytes) -> bytes:
    return build_control_batch(0, [(key, value)], epoch=1, timestamp=TS)


def _huge_count(data: bytes) -> bytes:
    raw = bytearray(data)
    raw[23:27] = (2**31 - 2).to_bytes(4, "big")  # lastOffsetDelta
    raw[57:61] = (2**31 - 1).to_bytes(4, "big")  # recordsCount: the offsets it spans, but no bytes for its records
    return with_crc(raw)


_LEADER_CHANGE_KEY, _LEADER_CHANGE_VALUE = encode_control(*leader_change(1))

CRAFTED: dict[str, Callable[[], bytes]] = {
    "a data batch with the control bit": lambda: attributes(_data(), set_bits=CONTROL_FLAG),
    "a control batch without the control bit": lambda: attributes(
        _control(_LEADER_CHANGE_KEY, _LEADER_CHANGE_VALUE), clear_bits=CONTROL_FLAG),
    "a control record of type ABORT": lambda: _control(control_key(0), b"\x00\x00\x00\x00\x00\x00"),
    "a control record of an unknown type": lambda: _control(b"\x00\x00\x00\x63", _LEADER_CHANGE_VALUE),
    "a control record that does not decode": lambda: _control(_LEADER_CHANGE_KEY, b"\x00\x00\xff"),
    "a data record with a key": lambda: _records(Record(0, TS, b"key", topic_record())),
    "a data record with headers": lambda: _records(Record(0, TS, None, topic_record(), (("h", b"v"),))),
    "a data record with a timestamp delta": lambda: _records(Record(0, TS, None, topic_record()),
                                                             Record(1, TS + 5, None, topic_record())),
    "a data record without a value": lambda: _records(Record(0, TS, None, None)),
    "a data record with an empty value": lambda: _records(Record(0, TS, None, b"")),
    "codec id 5": lambda: attributes(_data(), set_bits=5),
    "codec id 6": lambda: attributes(_data(), set_bits=6),
    "codec id 7": lambda: attributes(_data(), set_bits=7),
    "uncompressed records marked gzip": lambda: attributes(_data(), set_bits=1),
    "recordsCount 2^31-1": lambda: _huge_count(_data()),
    **{f"a truncated {CODEC_NAMES[c]} payload": (lambda c=c: compressed(_data([topic_record()] * 3), c, cut=5))
       for c in CODECS_HERE},
    **{f"{CODEC_NAMES[c]} records past KRaft's largest batch": (
        lambda c=c: compressed(_data(), c, records=bytes(9 * 1024 * 1024))) for c in CODECS_HERE},
}


@dataclass(frozen=True)
class Crafted:
    """Where the crafted batch went in the log."""

    at: BatchAt
    size: int


def write_after(segment: Path, next_offset: int, epoch: int, batch: bytes) -> Crafted:
    """Append ``batch`` at the end of ``segment``, the log's last, as the batch that follows offset
    ``next_offset - 1`` at ``epoch``."""
    position = segment.stat().st_size
    crafted = _placed(batch, next_offset, epoch)
    with open(segment, "ab") as f:
        f.write(crafted)
    last = next_offset + int.from_bytes(crafted[23:27], "big")
    control = bool(int.from_bytes(crafted[21:23], "big") & CONTROL_FLAG)
    return Crafted(BatchAt(segment, position, next_offset, last, control), len(crafted))


def roll(directory: Path, next_offset: int, epoch: int, batch: bytes) -> Path:
    """A new active segment at ``next_offset`` holding ``batch``, as a log rolls: the one before is sealed, and a
    read that does not start in it meets what it holds only when it reaches it."""
    segment = directory / f"{next_offset:020d}.log"
    segment.write_bytes(_placed(batch, next_offset, epoch))
    segment.with_suffix(".index").write_bytes(b"")
    segment.with_suffix(".timeindex").write_bytes(b"")
    return segment


def _placed(batch: bytes, base_offset: int, epoch: int) -> bytes:
    """baseOffset and partitionLeaderEpoch lie outside the CRC: the batch moved to where it goes."""
    raw = bytearray(batch)
    raw[0:8] = base_offset.to_bytes(8, "big", signed=True)
    raw[12:16] = epoch.to_bytes(4, "big", signed=True)
    return bytes(raw)


def sound_batch() -> bytes:
    return build_data_batch(0, [encode_metadata_record(message_class("NoOpRecord")(), 0)], epoch=1, timestamp=TS)


def flip_attribute(at: BatchAt, bit: int) -> None:
    """Flip one bit of the batch's attributes where it lies, its CRC-32C made right again: the batch stays whole and
    sound to every check but what its attributes mean."""
    with open(at.segment, "r+b") as f:
        f.seek(at.position)
        head = f.read(12)
        data = bytearray(head + f.read(int.from_bytes(head[8:12], "big")))
        data[21:23] = (int.from_bytes(data[21:23], "big") ^ (1 << bit)).to_bytes(2, "big")
        f.seek(at.position)
        f.write(with_crc(data))
