"""The reference codec: Kafka's wire format as declarative construct objects, slow and obviously correct.

One construct tree per (message, version), built on first use from the schema model (never from the
generated code). Parsing yields instances of the generated classes, so ``decode(...) == Cls.decode(...)``
compares directly. Every failure is located: the field path (``PartitionRecord.Replicas[2]``) and the
byte offset where the bad value starts. The runtime asks ``find_decode_error``/``find_encode_error`` for
that diagnosis when the fast path fails; ``explain`` records rows while parsing through ``recorder``.
"""

from __future__ import annotations

import io
import re
from functools import cache
from typing import Any, NamedTuple

import construct as c

from metalog.codec.definitions import MESSAGES
from metalog.codec.runtime import KafkaStruct
from metalog.codec.schema import FIXED, INT_RANGES, F, Message
from metalog.codec.uuid import ZERO, Uuid
from metalog.errors import DecodeError, EncodeError

__all__ = ["Span", "construct_for", "decode", "default_value", "encode", "find_decode_error", "find_encode_error"]

MAX_STRING = 0x7FFF
MAX_UVARINT = 0xFFFFFFFF
_TYPE_DEFAULTS: dict[str, Any] = {"bool": False, "float64": 0.0, "uuid": ZERO, "string": "", "bytes": b"",
                                  "records": b""}


class Bad(c.ConstructError):
    """One value breaks a rule; the enclosing field adds where."""


class Located(c.ConstructError):
    """A failure with its field path and the byte offset where the bad value starts."""

    def __init__(self, reason: str, path: str, offset: int | None) -> None:
        super().__init__(reason)
        self.reason, self.path, self.offset = reason, path, offset


def _reason(e: c.ConstructError) -> str:
    text = str(e).splitlines()[-1] if str(e) else type(e).__name__
    m = re.search(r"expected (\d+), found (\d+)", text)
    if isinstance(e, c.StreamError) and m:
        return f"truncated: needs {m[1]} bytes, {m[2]} left"
    return text


def parse_at(sub: c.Construct, stream: Any, context: Any, path: str) -> Any:
    """Parse ``sub`` as the value at ``path``; an unlocated failure inside is pinned to its start."""
    start = stream.tell()
    try:
        return sub._parsereport(stream, context, path)
    except Located:
        raise
    except c.ConstructError as e:
        raise Located(_reason(e), path, start) from None


def build_at(sub: c.Construct, obj: Any, stream: Any, context: Any, path: str) -> None:
    try:
        sub._build(obj, stream, context, path)
    except Located:
        raise
    except c.ConstructError as e:
        raise Located(_reason(e), path, None) from None


def _remaining(stream: Any) -> int:
    pos = stream.tell()
    end = stream.seek(0, io.SEEK_END)
    stream.seek(pos)
    return end - pos


def _need(stream: Any, n: int, what: str) -> None:
    """Kafka compares a length with what remains before it allocates anything."""
    left = _remaining(stream)
    if n > left:
        raise Bad(f"{what} {n} exceeds the {left} bytes left")


class Span(NamedTuple):
    """A span of the bytes just parsed, as an attached recorder (``explain``) is told it: where it lies, at which
    field path, its Kafka type, its value, and its role (``value``, ``count``, ``tag``, ``size``, ``presence``,
    ``struct``: a group whose end is told later)."""

    start: int
    end: int
    path: str
    kind: str
    value: Any
    role: str = "value"


def _note(context: Any, span: Span) -> Any:
    """Tell an attached recorder (``explain``) about a span just parsed."""
    recorder = context._params.get("recorder")
    return None if recorder is None else recorder.row(span)


# ---- primitives ------------------------------------------------------------------------------------


class UVarInt(c.Construct):
    """Kafka's unsigned varint: 7 bits a byte, low group first, at most 5 bytes and 32 bits."""

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        value = 0
        for i in range(5):
            b = c.stream_read(stream, 1, path)[0]
            value |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                if value > MAX_UVARINT:
                    raise Bad(f"varint value {value} does not fit 32 bits")
                return value
        raise Bad("varint is longer than 5 bytes")

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        if not isinstance(obj, int) or not 0 <= obj <= MAX_UVARINT:
            raise Bad(f"{obj!r} does not fit an unsigned varint")
        out = bytearray()
        value = obj
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
        c.stream_write(stream, bytes(out), len(out), path)
        return obj


UVARINT = UVarInt()


class UuidAdapter(c.Adapter):
    """16 raw bytes as a Kafka Uuid."""

    def _decode(self, obj: bytes, context: Any, path: str) -> Uuid:
        return Uuid(obj)

    def _encode(self, obj: Any, context: Any, path: str) -> bytes:
        if not isinstance(obj, bytes | bytearray) or len(obj) != 16:
            raise Bad(f"a uuid is 16 bytes, not {obj!r}")
        return bytes(obj)


_WIRE: dict[str, c.Construct] = {
    "int8": c.Int8sb, "int16": c.Int16sb, "uint16": c.Int16ub, "int32": c.Int32sb, "uint32": c.Int32ub,
    "int64": c.Int64sb, "float64": c.Float64b, "bool": c.Flag, "uuid": UuidAdapter(c.Bytes(16)),
}


class Leaf(c.Subconstruct):
    """A fixed-width Kafka primitive; never null, ints checked against their range before packing."""

    def __init__(self, kafka_type: str) -> None:
        super().__init__(_WIRE[kafka_type])
        self.kafka_type = kafka_type

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream.tell()
        value = self.subcon._parsereport(stream, context, path)
        _note(context, Span(start, stream.tell(), path, self.kafka_type, value))
        return value

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        t = self.kafka_type
        if obj is None:
            raise Bad(f"null is not a valid {t} (the field is not nullable)")
        if t == "bool" and not isinstance(obj, bool):
            raise Bad(f"expected a bool, got {type(obj).__name__}")
        if t in INT_RANGES:
            lo, hi = INT_RANGES[t]
            if not isinstance(obj, int):
                raise Bad(f"expected an int for {t}, got {type(obj).__name__}")
            if not lo <= obj <= hi:
                raise Bad(f"{obj} is out of range for {t}")
        if t == "float64" and not isinstance(obj, int | float):
            raise Bad(f"expected a float, got {type(obj).__name__}")
        return self.subcon._build(obj, stream, context, path)


class Length(c.Construct):
    """A length or count prefix as an int, -1 for null: compact uvarint of n+1 (0 = null), or int16/int32."""

    def __init__(self, compact: bool, wide: bool) -> None:
        super().__init__()
        self.compact = compact
        self.classic = c.Int32sb if wide else c.Int16sb
        self.wire = "uvarint" if compact else ("int32" if wide else "int16")

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        if self.compact:
            return UVARINT._parsereport(stream, context, path) - 1
        return max(self.classic._parsereport(stream, context, path), -1)  # Kafka: any negative is null

    def _build(self, obj: int, stream: Any, context: Any, path: str) -> int:
        if self.compact:
            UVARINT._build(obj + 1, stream, context, path)
        else:
            self.classic._build(obj, stream, context, path)
        return obj


class _Prefixed(c.Construct):
    """A length-prefixed value; subclasses say how to read and write what follows."""

    what = "value"
    role = "length"  # what explain calls the prefix

    def __init__(self, compact: bool, nullable: bool, wide: bool) -> None:
        super().__init__()
        self.length = Length(compact, wide)
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream.tell()
        n = self.length._parsereport(stream, context, path)
        _note(context, Span(start, stream.tell(), path, self.length.wire, "null" if n < 0 else n, self.role))
        if n < 0:
            if self.nullable:
                return None
            raise Bad(f"null (length {n}) for a non-nullable {self.what}")
        return self._body(n, stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            if not self.nullable:
                raise Bad(f"null is not allowed: this {self.what} is not nullable")
            return self.length._build(-1, stream, context, path)
        self._write(obj, stream, context, path)
        return obj

    def _body(self, n: int, stream: Any, context: Any, path: str) -> Any:
        raise NotImplementedError

    def _write(self, obj: Any, stream: Any, context: Any, path: str) -> None:
        raise NotImplementedError


class KString(_Prefixed):
    """A UTF-8 string of at most 0x7fff bytes: int16 length, or compact uvarint length+1."""

    what = "string"

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__(compact, nullable, wide=False)

    def _body(self, n: int, stream: Any, context: Any, path: str) -> str:
        if n > MAX_STRING:
            raise Bad(f"string length {n} exceeds {MAX_STRING}")
        _need(stream, n, "string length")
        start = stream.tell()
        raw = c.stream_read(stream, n, path)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Bad(f"invalid UTF-8 at byte {start + e.start}: {e.reason}") from None
        _note(context, Span(start, stream.tell(), path, "string", text))
        return text

    def _write(self, obj: Any, stream: Any, context: Any, path: str) -> None:
        if not isinstance(obj, str):
            raise Bad(f"expected a str, got {type(obj).__name__}")
        try:
            raw = obj.encode("utf-8")
        except UnicodeEncodeError as e:
            raise Bad(f"cannot be encoded as UTF-8: {e.reason}") from None
        if len(raw) > MAX_STRING:
            raise Bad(f"string of {len(raw)} bytes is longer than {MAX_STRING}")
        self.length._build(len(raw), stream, context, path)
        c.stream_write(stream, raw, len(raw), path)


class KBytes(_Prefixed):
    """Bytes (or records): int32 length, or compact uvarint length+1."""

    what = "bytes"

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__(compact, nullable, wide=True)

    def _body(self, n: int, stream: Any, context: Any, path: str) -> bytes:
        _need(stream, n, "bytes length")
        start = stream.tell()
        raw = c.stream_read(stream, n, path)
        _note(context, Span(start, stream.tell(), path, "bytes", raw))
        return raw

    def _write(self, obj: Any, stream: Any, context: Any, path: str) -> None:
        if not isinstance(obj, bytes | bytearray | memoryview):
            raise Bad(f"expected bytes, got {type(obj).__name__}")
        raw = bytes(obj)
        self.length._build(len(raw), stream, context, path)
        c.stream_write(stream, raw, len(raw), path)


class KArray(_Prefixed):
    """An array: int32 count, or compact uvarint count+1, then the elements (paths ``Field[i]``)."""

    what = "array"
    role = "count"

    def __init__(self, element: c.Construct, compact: bool, nullable: bool) -> None:
        super().__init__(compact, nullable, wide=True)
        self.element = element

    def _body(self, n: int, stream: Any, context: Any, path: str) -> list[Any]:
        _need(stream, n, "array count")
        return [parse_at(self.element, stream, context, f"{path}[{i}]") for i in range(n)]

    def _write(self, obj: Any, stream: Any, context: Any, path: str) -> None:
        if not isinstance(obj, list | tuple):
            raise Bad(f"expected a list, got {type(obj).__name__}")
        self.length._build(len(obj), stream, context, path)
        for i, item in enumerate(obj):
            build_at(self.element, item, stream, context, f"{path}[{i}]")


class Nullable(c.Subconstruct):
    """A nullable struct: an int8 marker first, negative for null, 1 (any other value on read) for present."""

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream.tell()
        marker = c.Int8sb._parsereport(stream, context, path)
        _note(context, Span(start, stream.tell(), path, "int8", "null" if marker < 0 else "present", "presence"))
        return None if marker < 0 else self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        c.Int8sb._build(-1 if obj is None else 1, stream, context, path)
        if obj is not None:
            self.subcon._build(obj, stream, context, path)
        return obj


# ---- structs and tagged fields ---------------------------------------------------------------------


class TaggedFields(c.Construct):
    """The tagged-field section of a flexible struct: uvarint count, then (uvarint tag, uvarint size, data).

    Parses to ``(known values by attribute, unknown (tag, bytes) in input order)``; builds from the
    struct, writing known fields not at their default merged with unknown ones in ascending tag order.
    """

    def __init__(self, msg: Message, known: dict[int, tuple[F, c.Construct]]) -> None:
        super().__init__()
        self.msg = msg
        self.known = known

    def _parse(self, stream: Any, context: Any, path: str) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        section = f"{path}.<tagged fields>"
        start = stream.tell()
        count = parse_at(UVARINT, stream, context, section)
        _note(context, Span(start, stream.tell(), section, "uvarint", count, "count"))
        values: dict[str, Any] = {}
        unknown: list[tuple[int, bytes]] = []
        for _ in range(count):
            at = stream.tell()
            tag = parse_at(UVARINT, stream, context, section)
            entry = self.known.get(tag)
            where = f"{path}.{entry[0].name}" if entry else f"{path}.<tag {tag}>"
            _note(context, Span(at, stream.tell(), where, "uvarint", tag, "tag"))
            at = stream.tell()
            size = parse_at(UVARINT, stream, context, where)
            _note(context, Span(at, stream.tell(), where, "uvarint", size, "size"))
            left = _remaining(stream)
            if size > left:
                raise Located(f"tagged field size {size} exceeds the {left} bytes left", where, at)
            begin = stream.tell()
            if entry is None:
                unknown.append((tag, c.stream_read(stream, size, where)))
                _note(context, Span(begin, stream.tell(), where, "unknown tagged field", unknown[-1][1]))
                continue
            f, sub = entry
            values[f.attr] = parse_at(sub, stream, context, where)
            used = stream.tell() - begin
            if used != size:
                raise Located(f"tagged field value takes {used} bytes but its size says {size}", where, begin)
        return values, unknown

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        fields: list[tuple[int, bytes]] = []
        for tag, (f, sub) in sorted(self.known.items()):
            value = getattr(obj, f.attr)
            if value != default_value(self.msg, f):
                out = io.BytesIO()
                build_at(sub, value, out, context, f"{path}.{f.name}")
                fields.append((tag, out.getvalue()))
        for i, item in enumerate(obj.unknown_tagged_fields or ()):
            where = f"{path}.unknown_tagged_fields[{i}]"
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], bytes | bytearray)):
                raise Located(f"expected a (tag, bytes) pair, got {item!r}", where, None)
            if not isinstance(item[0], int) or not 0 <= item[0] <= MAX_UVARINT:
                raise Located(f"tag {item[0]!r} does not fit an unsigned varint", where, None)
            fields.append((item[0], bytes(item[1])))
        fields.sort(key=lambda t: t[0])  # stable: a known field goes before an unknown one with its tag
        UVARINT._build(len(fields), stream, context, path)
        for tag, data in fields:
            UVARINT._build(tag, stream, context, path)
            UVARINT._build(len(data), stream, context, path)
            c.stream_write(stream, data, len(data), path)
        return obj


class Layout(NamedTuple):
    """A struct's wire layout at one version: its fields in order, the construct of each field the version writes
    in order (by attribute), and its tagged-field section (flexible versions; else None)."""

    fields: tuple[F, ...]
    present: dict[str, c.Construct]
    tagged: TaggedFields | None


class Record(c.Construct):
    """A Kafka struct (or the message itself) at one version: its fields in order, then its tagged fields.

    Fields the version lacks (and tagged fields not present) hold their defaults; writing a non-default
    value for a field the version lacks is an error unless the field is ignorable.
    """

    def __init__(self, msg: Message, cls: type[KafkaStruct], version: int, layout: Layout, top: bool) -> None:
        super().__init__()
        self.msg, self.cls, self.version, self.fields = msg, cls, version, layout.fields
        self.present = layout.present  # attribute -> construct, for fields written in order
        self.tagged = layout.tagged
        self.top = top

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        path = self.msg.name if self.top else path
        start = stream.tell()
        group = None if self.top else _note(context, Span(start, start, path, self.cls.__name__, "", "struct"))
        obj: Any = object.__new__(self.cls)  # its fields set one by one below
        obj.unknown_tagged_fields = None
        try:
            for f in self.fields:
                sub = self.present.get(f.attr)
                value = default_value(self.msg, f) if sub is None else parse_at(sub, stream, context,
                                                                                 f"{path}.{f.name}")
                setattr(obj, f.attr, value)
            if self.tagged is not None:
                values, unknown = parse_at(self.tagged, stream, context, path)
                for attr, value in values.items():
                    setattr(obj, attr, value)
                obj.unknown_tagged_fields = unknown or None
        finally:
            if group is not None:
                context._params.recorder.close(group, stream.tell())
        return obj

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        path = self.msg.name if self.top else path
        if not isinstance(obj, self.cls):
            raise Bad(f"expected {self.cls.__name__}, got {type(obj).__name__}")
        for f in self.fields:
            where = f"{path}.{f.name}"
            try:
                value = getattr(obj, f.attr)
            except AttributeError:
                raise Located(f"{f.attr} is not set", where, None) from None
            sub = self.present.get(f.attr)
            if sub is not None:
                build_at(sub, value, stream, context, where)
            elif self.version not in f.valid and not f.ignorable and value != default_value(self.msg, f):
                raise Located(f"attempted to write a non-default {f.name} at version {self.version}", where, None)
        if self.tagged is not None:
            build_at(self.tagged, obj, stream, context, path)
        # refused as Kafka's writers refuse them (unknown_tagged_fields: a slot of every generated class)
        elif obj.unknown_tagged_fields:  # type: ignore[attr-defined]
            raise Located(f"tagged fields were set, but version {self.version} does not support them",
                          f"{path}.unknown_tagged_fields", None)
        return obj


# ---- the schema as constructs ----------------------------------------------------------------------


def struct_class(msg: Message, struct: str) -> type[KafkaStruct]:
    """The generated class of a message or of one of its structs."""
    from metalog.codec import struct_class as by_name

    return by_name(msg.name, struct)


def default_value(msg: Message, f: F) -> Any:
    """A field's default, fresh each time: ``F.default`` (NULL is None), else the type's own zero value."""
    if f.default_is_null:
        return None
    if f.is_array:
        return []
    if f.is_struct:
        obj: Any = object.__new__(struct_class(msg, f.element))
        for g in msg.structs[f.element].fields:
            setattr(obj, g.attr, default_value(msg, g))
        obj.unknown_tagged_fields = None
        return obj
    if f.default is not None:
        return f.default
    return _TYPE_DEFAULTS.get(f.type, 0)


def _record(msg: Message, struct: str, version: int, top: bool = False) -> Record:
    fields = msg.fields if struct == msg.name else msg.structs[struct].fields
    flexible = version in msg.flexible_versions
    present: dict[str, c.Construct] = {}
    tagged: dict[int, tuple[F, c.Construct]] = {}
    for f in fields:
        if version not in f.valid:
            continue
        if flexible and version in f.tagged_versions:
            assert f.tag is not None
            tagged[f.tag] = (f, _field(msg, f, version))
        else:
            present[f.attr] = _field(msg, f, version)
    section = TaggedFields(msg, tagged) if flexible else None
    return Record(msg, struct_class(msg, struct), version, Layout(fields, present, section), top)


def _field(msg: Message, f: F, version: int) -> c.Construct:
    compact = msg.field_is_flexible(f, version)
    nullable = version in f.nullable_versions
    if f.is_array:
        return KArray(_single(msg, f.element, version, compact, False), compact, nullable)
    return _single(msg, f.type, version, compact, nullable)


def _single(msg: Message, typ: str, version: int, compact: bool, nullable: bool) -> c.Construct:
    if typ in FIXED:
        return Leaf(typ)
    if typ == "string":
        return KString(compact, nullable)
    if typ in ("bytes", "records"):
        return KBytes(compact, nullable)
    record = _record(msg, typ, version)
    return Nullable(record) if nullable else record


@cache
def construct_for(name: str, version: int) -> Record:
    """The construct of message ``name`` at ``version`` (built once, then cached)."""
    msg = MESSAGES[name]
    if version not in msg.versions:
        raise ValueError(f"{name} has no version {version}")
    return _record(msg, name, version, top=True)


# ---- the API ---------------------------------------------------------------------------------------


def _unsupported(msg: Message, version: int) -> str:
    return f"unsupported version {version} (valid: {msg.valid_versions})"


def decode(name: str, data: bytes | bytearray | memoryview, version: int, recorder: Any = None) -> Any:
    """Decode one whole message; any malformed input is a located DecodeError."""
    msg = MESSAGES[name]
    raw = bytes(data)
    if version not in msg.versions:
        raise DecodeError(_unsupported(msg, version), message=name, version=version, offset=0)
    stream = io.BytesIO(raw)
    try:
        obj = construct_for(name, version).parse_stream(stream, recorder=recorder)
    except Located as e:
        raise DecodeError(e.reason, message=name, version=version, field=e.path, offset=e.offset) from None
    except c.ConstructError as e:
        raise DecodeError(_reason(e), message=name, version=version) from None
    end = stream.tell()
    if end != len(raw):
        raise DecodeError(f"{len(raw) - end} trailing bytes after the message",
                          message=name, version=version, offset=end)
    return obj


def encode(obj: Any, version: int) -> bytes:
    """Encode a message object; a value the version cannot carry is a located EncodeError."""
    name = getattr(type(obj), "NAME", None)
    if name not in MESSAGES:
        raise EncodeError(f"not a message object: {type(obj).__name__}", version=version)
    msg = MESSAGES[name]
    if version not in msg.versions:
        raise EncodeError(_unsupported(msg, version), message=name, version=version)
    try:
        return construct_for(name, version).build(obj)
    except Located as e:
        raise EncodeError(e.reason, message=name, version=version, field=e.path) from None
    except c.ConstructError as e:
        raise EncodeError(_reason(e), message=name, version=version) from None


def find_decode_error(name: str, data: bytes, version: int) -> DecodeError | None:
    """The reference's precise DecodeError for ``data``, or None if the reference accepts it."""
    try:
        decode(name, data, version)
    except DecodeError as e:
        return e
    return None


def find_encode_error(obj: Any, version: int) -> EncodeError | None:
    """The reference's precise EncodeError for ``obj``, or None if the reference can encode it."""
    try:
        encode(obj, version)
    except EncodeError as e:
        return e
    return None
