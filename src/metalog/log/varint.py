"""Zigzag varints as in Kafka's ByteUtils (``readVarint``/``readVarlong`` and the writers).

The record decoder inlines the one-byte case; these functions take the rest.
"""

from __future__ import annotations

from typing import Any

from metalog.errors import VarintError


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    """A zigzag int32 (at most 5 bytes) at ``pos``: (value, position after it)."""
    return _read(buf, pos, 28)


def read_varlong(buf: Any, pos: int) -> tuple[int, int]:
    """A zigzag int64 (at most 10 bytes) at ``pos``."""
    return _read(buf, pos, 63)


def _read(buf: Any, pos: int, max_shift: int) -> tuple[int, int]:
    raw = shift = 0
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise VarintError("varint runs past the end of its data") from None
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > max_shift:
            raise VarintError("varint is longer than its type allows")


def write_varint(out: bytearray, value: int) -> None:
    """Zigzag-encode ``value`` (an int32 or int64) onto ``out``."""
    raw = (value << 1) ^ (value >> 63)
    raw &= 0xFFFFFFFFFFFFFFFF
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def varint_size(value: int) -> int:
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while raw >= 0x80:
        raw >>= 7
        n += 1
    return n
