"""Record-batch compression: the codec id in a batch's attributes and the bytes after its header.

Writing: none and gzip (stdlib; what Kafka's GZIPOutputStream writes at its default level).
Reading: none and gzip always; snappy (xerial framing or raw), lz4 (frame format) and zstd when
the optional packages (``pip install metalog[compression]``) are present. Every decoder stops at
``MAX_UNCOMPRESSED_BYTES`` so a hostile batch cannot make us allocate gigabytes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from enum import IntEnum

from metalog.errors import CorruptBatchError, LogError

MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_BLOCK = struct.Struct(">i")


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


def decompress(codec: int, data: memoryview, *, where: str | None = None, position: int | None = None) -> bytes:
    """The uncompressed records of a batch; errors name ``where`` and ``position`` (the batch's)."""
    try:
        decoder = _DECODERS[codec]
    except KeyError:
        raise CorruptBatchError(f"unknown compression codec id {codec} in the batch attributes",
                                file=where, position=position) from None
    try:
        return decoder(data)
    except CorruptBatchError as e:
        raise CorruptBatchError(e.reason, file=where, position=position) from None
    except ImportError as e:
        raise LogError(f"reading {Compression(codec).kafka_name} batches needs the optional package {e.name!r} "
                       "(pip install 'metalog[compression]')", file=where, position=position) from None
    except Exception as e:  # each library raises its own error type for damaged input
        raise CorruptBatchError(f"{Compression(codec).kafka_name} data does not decompress: {e}",
                                file=where, position=position) from None


# ---- gzip ---------------------------------------------------------------------------------
def _gzip(data: bytes | bytearray) -> bytes:
    """A gzip member as Java's GZIPOutputStream writes it: mtime 0, XFL 0, OS 255, level 6."""
    body = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = body.compress(bytes(data)) + body.flush()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return header + deflated + trailer


def _gunzip(data: memoryview) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(data, MAX_UNCOMPRESSED_BYTES + 1)
    _bounded(out)
    if not d.eof:
        raise CorruptBatchError("gzip data is truncated")
    return out


# ---- snappy -------------------------------------------------------------------------------
def _unsnappy(data: memoryview) -> bytes:
    import snappy

    if bytes(data[:8]) != _XERIAL_MAGIC:
        return _snappy_block(snappy, data)
    # xerial framing (what Kafka's snappy-java writes): magic, version, compat, then [int32 size, block]*
    pos, out = 16, bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptBatchError("snappy (xerial) block size is truncated")
        (size,) = _XERIAL_BLOCK.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CorruptBatchError(f"snappy (xerial) block of {size} bytes runs past the batch end")
        out += _snappy_block(snappy, data[pos:pos + size])
        _bounded(out)
        pos += size
    return bytes(out)


def _snappy_block(snappy: object, block: memoryview) -> bytes:
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
    if length > MAX_UNCOMPRESSED_BYTES:
        _bounded(b"", length)
    return bytes(snappy.uncompress(bytes(block)))  # type: ignore[attr-defined]


# ---- lz4 and zstd -------------------------------------------------------------------------
def _unlz4(data: memoryview) -> bytes:
    import lz4.frame

    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(bytes(data), max_length=MAX_UNCOMPRESSED_BYTES + 1)
    _bounded(out)
    if not d.eof:
        raise CorruptBatchError("lz4 frame is truncated")
    return out


def _unzstd(data: memoryview) -> bytes:
    import zstandard

    d = zstandard.ZstdDecompressor().decompressobj()
    out = bytearray()
    # A zstd block holds at most 128 KiB, so feeding 512 bytes at a time bounds what one call can
    # produce (to 16 MiB) and lets the total be checked as it grows.
    for start in range(0, len(data), 512):
        out += d.decompress(bytes(data[start:start + 512]))
        _bounded(out)
    if not d.eof:
        raise CorruptBatchError("zstd frame is truncated")
    return bytes(out)


def _bounded(out: bytes | bytearray, size: int | None = None) -> None:
    n = len(out) if size is None else size
    if n > MAX_UNCOMPRESSED_BYTES:
        raise CorruptBatchError(f"batch decompresses to more than {MAX_UNCOMPRESSED_BYTES} bytes")


_DECODERS: dict[int, Callable[[memoryview], bytes]] = {
    Compression.NONE: bytes,
    Compression.GZIP: _gunzip,
    Compression.SNAPPY: _unsnappy,
    Compression.LZ4: _unlz4,
    Compression.ZSTD: _unzstd,
}
