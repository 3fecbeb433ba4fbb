"""What the generated message classes share: primitives, base classes, error translation.

The generated fast path does only the checks that keep memory bounded (a length is
compared with what remains before anything is allocated). Every other failure
(truncation, bad UTF-8, a varint too long, an int out of range) surfaces as a plain
Python exception and is turned into a precise DecodeError/EncodeError by running
the construct reference over the same input, which names the field and offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self

from metalog.codec.uuid import ZERO, Uuid
from metalog.errors import CodecError, DecodeError, EncodeError, Malformed

__all__ = [
    "ZERO", "Uuid", "Struct", "KafkaStruct", "ApiMessage", "Malformed", "READER_ERRORS", "UNSET", "H", "I",
    "read_uvarint", "read_unknown_tags", "write_uvarint", "write_tagged", "new", "bytes_new", "array_struct",
    "non_default", "seen_uuid", "uuid_of",
]
Struct = struct.Struct

new = object.__new__
# ``bytes_new(Uuid, raw)`` makes a Uuid without Uuid.__new__'s length check: for 16 bytes from a struct.
bytes_new = bytes.__new__
# Ids repeat from record to record (topics, directories, incarnations): readers share one Uuid per id,
# ``seen_uuid(raw) or uuid_of(raw)``, which is several times cheaper than making one, and the shared
# object keeps its hash for the dict lookups replay does with it. Bounded, so hostile input cannot grow it.
_UUIDS: dict[bytes, Uuid] = {}
_UUIDS_MAX = 1 << 16
seen_uuid = _UUIDS.get


def uuid_of(raw: bytes) -> Uuid:
    """A Uuid of 16 raw bytes from a struct, kept for ``seen_uuid`` while there is room."""
    u = bytes_new(Uuid, raw)
    if len(_UUIDS) < _UUIDS_MAX:
        _UUIDS[raw] = u
    return u
UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()
H = struct.Struct(">h")  # int16 length of a classic string
I = struct.Struct(">i")  # noqa: E741  int32 length of classic bytes and arrays


READER_ERRORS = (Malformed, struct.error, IndexError, ValueError, OverflowError)
"""What a generated reader raises, pure or compiled (ValueError), on bytes it cannot read: the fast paths catch
these, and only these, before the checked path names the problem (a bug in a reader raises anything else)."""


class _ArrayStructs(dict[int, struct.Struct]):
    """``S[n]`` is the Struct that packs n items of one format; small sizes are cached."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code

    def __missing__(self, n: int) -> struct.Struct:
        if n < 0:  # the generated readers leave a non-nullable array's null count (-1) to this check
            raise Malformed("null array count")
        code = self.code
        s = struct.Struct(f">{code * n}" if len(code) > 1 else f">{n}{code}")
        if n <= 4096:
            self[n] = s
        return s


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's ``readUnsignedVarint``)."""
    value = 0
    for shift in (0, 7, 14, 21, 28):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                raise Malformed("varint does not fit 32 bits")
            return value, pos
    raise Malformed("varint is longer than 5 bytes")


def read_unknown_tags(o: Any, buf: Any, pos: int) -> int:
    """A tagged-field section of tags the struct does not know at this version: kept as raw bytes."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        stop = pos + size
        if stop > len(buf):
            raise Malformed("tagged field size exceeds the input")
        if o.unknown_tagged_fields is None:
            o.unknown_tagged_fields = []
        o.unknown_tagged_fields.append((tag, bytes(buf[pos:stop])))
        pos = stop
    return pos


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise Malformed(f"{value} does not fit an unsigned varint")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_tagged(
    out: bytearray, known: Sequence[tuple[int, bytes | bytearray]], unknown: list[tuple[int, bytes]] | None
) -> None:
    """A tagged-field section: count, then (tag, size, data) in ascending tag order."""
    fields = sorted([*known, *unknown], key=lambda t: t[0]) if unknown else known
    write_uvarint(out, len(fields))
    for tag, data in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


# a generated reader: (buffer, position) -> (the object read, the position after it); a writer appends
Reader = Callable[[Any, int], tuple[Any, int]]
Writer = Callable[[Any, bytearray], None]


class KafkaStruct:
    """Base of every generated struct: equality, repr and JSON by field, nothing else."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()  # attribute names, in schema order
    STRUCT_PATH: ClassVar[tuple[str, ...]] = ()  # (message, struct) for schema lookups
    READERS: ClassVar[dict[int, Reader]]  # version -> reader, set by the generated module (and core)
    WRITERS: ClassVar[dict[int, Writer]]

    if TYPE_CHECKING:
        # every generated class takes its fields by keyword (each declares its own typed __init__); this is
        # what a class known only as a KafkaStruct or ApiMessage (message_class's result) accepts
        def __init__(self, **fields: Any) -> None: ...

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        slots: tuple[str, ...] = self.__slots__  # a generated class's: a tuple
        return all(getattr(self, f) == getattr(other, f) for f in slots)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        parts = [f"{f}={getattr(self, f)!r}" for f in self.FIELDS]
        if getattr(self, "unknown_tagged_fields", None):
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")  # type: ignore[attr-defined]
        return f"{type(self).__name__}({', '.join(parts)})"


class ApiMessage(KafkaStruct):
    """Base of every top-level message class."""

    __slots__ = ()
    NAME: ClassVar[str]
    API_KEY: ClassVar[int | None]
    VERSIONS: ClassVar[range]

    @classmethod
    def decode(cls, buf: bytes | bytearray | memoryview, version: int) -> Self:
        """Decode ``buf``, which must hold exactly one message at ``version``."""
        read = cls.READERS.get(version)
        if read is None:
            raise DecodeError(_no_version(cls, version), message=cls.NAME, version=version, offset=0)
        if type(buf) is memoryview and (buf.format != "B" or buf.ndim != 1):  # memoryview is final
            buf = buf.cast("B")
        obj: Self
        pos: int
        try:
            obj, pos = read(buf, 0)
        except CodecError:
            raise
        except READER_ERRORS as e:
            raise _diagnose_decode(cls, buf, version, e) from None
        if pos != len(buf):
            raise DecodeError(f"{len(buf) - pos} trailing bytes after the message",
                              message=cls.NAME, version=version, offset=pos)
        return obj  # READERS[version] of cls make instances of cls

    def encode(self, version: int) -> bytes:
        """The message at ``version``; values a version cannot hold are an EncodeError."""
        write = self.WRITERS.get(version)
        if write is None:
            raise EncodeError(_no_version(type(self), version), message=self.NAME, version=version)
        out = bytearray()
        try:
            write(self, out)
        except CodecError:
            raise
        except (Malformed, struct.error, AttributeError, TypeError, ValueError, OverflowError,
                UnicodeEncodeError) as e:
            raise _diagnose_encode(self, version, e) from None
        return bytes(out)

    def to_json(self, version: int) -> dict[str, Any]:
        """Kafka's JsonConverter form of this message at ``version``."""
        from metalog.codec import jsonform

        return jsonform.to_json(self, version)

    @classmethod
    def from_json(cls, data: dict[str, Any], version: int) -> Self:
        """The message from Kafka's JsonConverter form."""
        from metalog.codec import jsonform

        message: Self = jsonform.from_json(cls, data, version)
        return message


def _no_version(cls: type[ApiMessage], version: int) -> str:
    v = cls.VERSIONS
    return f"unsupported version {version} (valid: {v.start}-{v.stop - 1})"


def _diagnose_decode(cls: type[ApiMessage], buf: Any, version: int, cause: Exception) -> DecodeError:
    from metalog.codec import reference

    found = reference.find_decode_error(cls.NAME, bytes(buf), version)
    if found is not None:
        return found
    return DecodeError(f"malformed input ({type(cause).__name__}: {cause})", message=cls.NAME, version=version)


def _diagnose_encode(obj: ApiMessage, version: int, cause: Exception) -> EncodeError:
    from metalog.codec import reference

    found = reference.find_encode_error(obj, version)
    if found is not None:
        return found
    return EncodeError(f"cannot encode ({type(cause).__name__}: {cause})", message=obj.NAME, version=version)


def array_struct(code: str) -> _ArrayStructs:
    """The cache of Structs for arrays of one element format (``array_struct('i')[3]`` packs 3 int32)."""
    return _ARRAYS.setdefault(code, _ArrayStructs(code))


_ARRAYS: dict[str, _ArrayStructs] = {}


def non_default(message: str, version: int, path: str) -> EncodeError:
    """Kafka refuses to drop a non-ignorable field that a version cannot carry."""
    name = path.rsplit(".", 1)[-1]
    return EncodeError(f"attempted to write a non-default {name} at version {version}",
                       message=message, version=version, field=path)
