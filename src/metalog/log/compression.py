"""Record-batch compression: the codec id in a batch's attributes and the bytes after its header.

Writing: none and gzip (stdlib; what Kafka's GZIPOutputStream writes at its default level).
Reading: none and gzip always; snappy (xerial framing or raw), lz4 (frame format) and zstd when
the optional packages (``pip install metalog[compression]``) are present. Every decoder stops once its output
passes the ``limit`` it is given (the batch reader gives KRaft's largest batch), having allocated at most about a
MiB more, so a hostile batch cannot make us allocate gigabytes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from enum import IntEnum

from metalog.errors import CorruptBatchError, LogError

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_BLOCK = struct.Struct(">i")
# compressed bytes fed to zstd at a time: a block holds at most 128 KiB and takes at least 4 bytes (an RLE block),
# so one feed makes at most 16 blocks (2 MiB) and the total is checked as it grows
_ZSTD_FEED = 64
class Compression(IntEnum):
    """Kafka's CompressionType ids (attributes bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka prints (``compresscodec: gzip``)."""
        return self.name.lower()

    @classmethod
    def parse(cls, name: str | int | Compression) -> Compression:
        if isinstance(name, int):
            return cls(name)
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(f"unknown compression {name!r}; known: none, gzip, snappy, lz4, zstd") from None


def compress(codec: Compression, data: bytes | bytearray) -> bytes:
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        return _gzip(data)
    raise LogError(f"writing {codec.kafka_name} batches is not supported (KRaft writes none; metalog writes "
                   "none or gzip)")


def decompress(codec: int, data: bytes, *, limit: int) -> bytes:
    """The uncompressed records of a batch, at most ``limit`` bytes of them. Damage raises CorruptBatchError, a codec
    whose optional package is missing LogError; the caller says which batch."""
    try:
        decoder = _DECODERS[codec]
    except KeyError:
        raise CorruptBatchError(f"unknown compression codec id {codec} in the batch attributes") from None
    try:
        return decoder(data, limit)
    except ImportError as e:
        raise LogError(f"reading {Compression(codec).kafka_name} batches needs the optional package {e.name!r} "
                       "(pip install 'metalog[compression]')") from None


def _damaged(codec: Compression, e: Exception) -> CorruptBatchError:
    """The error of a payload ``codec``'s library refused (each library raises its own type for damaged input)."""
    return CorruptBatchError(f"{codec.kafka_name} data does not decompress: {e}")


# ---- gzip ---------------------------------------------------------------------------------
def _gzip(data: bytes | bytearray) -> bytes:
    """A gzip member as Java's GZIPOutputStream writes it: mtime 0, XFL 0, OS 255, level 6."""
    body = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = body.compress(bytes(data)) + body.flush()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return header + deflated + trailer


def _gunzip(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as e:
        raise _damaged(Compression.GZIP, e) from None
    _bounded(len(out), limit)
    if not d.eof:
        raise CorruptBatchError("gzip data is truncated")
    return out


# ---- snappy -------------------------------------------------------------------------------
def _unsnappy(data: bytes, limit: int) -> bytes:
    import snappy

    if data[:8] != _XERIAL_MAGIC:
        return _snappy_block(snappy, data, limit)
    # xerial framing (what Kafka's snappy-java writes): magic, version, compat, then [int32 size, block]*
    pos, out = 16, bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptBatchError("snappy (xerial) block size is truncated")
        (size,) = _XERIAL_BLOCK.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CorruptBatchError(f"snappy (xerial) block of {size} bytes runs past the batch end")
        out += _snappy_block(snappy, data[pos:pos + size], limit - len(out))
        pos += size
    return bytes(out)


def _snappy_block(snappy: object, block: bytes, limit: int) -> bytes:
    # A raw snappy block starts with its uncompressed length: check it before anything is allocated.
    length, shift, i = 0, 0, 0
    while True:
        if i >= len(block) or i > 4:
            raise CorruptBatchError("snappy block length preamble is malformed")
        b = block[i]
        length |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if b < 0x80:
            break
    _bounded(length, limit)
    try:
        return bytes(snappy.uncompress(block))  # type: ignore[attr-defined]
    except snappy.UncompressError as e:  # type: ignore[attr-defined]
        raise _damaged(Compression.SNAPPY, e) from None


# ---- lz4 and zstd -------------------------------------------------------------------------
def _unlz4(data: bytes, limit: int) -> bytes:
    import lz4.frame

    d = lz4.frame.LZ4FrameDecompressor()
    try:
        out: bytes = d.decompress(data, max_length=limit + 1)
    except RuntimeError as e:  # lz4's error for a damaged frame
        raise _damaged(Compression.LZ4, e) from None
    _bounded(len(out), limit)
    if not d.eof:
        raise CorruptBatchError("lz4 frame is truncated")
    return out


def _unzstd(data: bytes, limit: int) -> bytes:
    import zstandard

    d = zstandard.ZstdDecompressor().decompressobj()
    out = bytearray()
    try:
        for start in range(0, len(data), _ZSTD_FEED):
            out += d.decompress(data[start:start + _ZSTD_FEED])
            _bounded(len(out), limit)
    except zstandard.ZstdError as e:
        raise _damaged(Compression.ZSTD, e) from None
    if not d.eof:
        raise CorruptBatchError("zstd frame is truncated")
    return bytes(out)


def _bounded(size: int, limit: int) -> None:
    if size > limit:
        raise CorruptBatchError(f"records decompress to more than {limit} bytes, more than KRaft's largest batch "
                                "holds (KafkaRaftClient.MAX_BATCH_SIZE_BYTES, 8 MiB with the batch header)")


def _uncompressed(data: bytes, limit: int) -> bytes:
    return data


_DECODERS: dict[int, Callable[[bytes, int], bytes]] = {
    Compression.NONE: _uncompressed,
    Compression.GZIP: _gunzip,
    Compression.SNAPPY: _unsnappy,
    Compression.LZ4: _unlz4,
    Compression.ZSTD: _unzstd,
}
