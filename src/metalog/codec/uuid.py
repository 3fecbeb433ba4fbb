"""Kafka's Uuid: 16 bytes, shown as 22 characters of url-safe base64 without padding."""

from __future__ import annotations

import base64
import binascii
import os
import struct

_HALVES = struct.Struct(">qq")


class Uuid(bytes):
    """A Kafka Uuid. It *is* its 16 big-endian bytes, so decoding one costs a single allocation."""

    __slots__ = ()

    def __new__(cls, raw: bytes | bytearray | memoryview = b"\0" * 16) -> Uuid:
        if len(raw) != 16:
            raise ValueError(f"a Uuid is 16 bytes, not {len(raw)}")
        return super().__new__(cls, raw)

    @classmethod
    def of(cls, most: int, least: int) -> Uuid:
        """From Kafka's two signed 64-bit halves (``new Uuid(most, least)``)."""
        return cls(_HALVES.pack(_signed(most), _signed(least)))

    @classmethod
    def parse(cls, text: str) -> Uuid:
        """From Kafka's text form (``Uuid.fromString``)."""
        if not isinstance(text, str) or len(text) != 22:
            raise ValueError(f"a Uuid is 22 characters of url-safe base64, not {text!r}")
        try:
            raw = base64.urlsafe_b64decode(text + "==")
        except (binascii.Error, ValueError) as e:
            raise ValueError(f"not a Uuid: {text!r}") from e
        if base64.urlsafe_b64encode(raw)[:22].decode() != text:
            raise ValueError(f"not a Uuid in canonical form: {text!r}")
        return cls(raw)

    @classmethod
    def random(cls) -> Uuid:
        """A random Uuid that is not reserved (``Uuid.randomUuid``)."""
        while True:
            u = cls(os.urandom(16))
            if not u.is_reserved and "-" not in str(u)[:1]:
                return u

    @property
    def most_significant_bits(self) -> int:
        most: int = _HALVES.unpack(self)[0]
        return most

    @property
    def least_significant_bits(self) -> int:
        least: int = _HALVES.unpack(self)[1]
        return least

    @property
    def is_reserved(self) -> bool:
        """Kafka reserves ids whose high half is 0 and low half is below 100."""
        most: int
        least: int
        most, least = _HALVES.unpack(self)
        return most == 0 and 0 <= least < 100

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self)[:22].decode()

    def __repr__(self) -> str:
        return f"Uuid('{self}')"


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


ZERO = Uuid()
# Kafka's reserved log-directory ids (DirectoryId).
MIGRATING = Uuid.of(0, 0)
UNASSIGNED = Uuid.of(0, 1)
LOST = Uuid.of(0, 2)
# The topic id of __cluster_metadata (Uuid.METADATA_TOPIC_ID).
METADATA_TOPIC_ID = Uuid.of(0, 1)
