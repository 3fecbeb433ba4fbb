"""Framing: metadata records as stored in the KRaft log, and size-prefixed request/response frames.

A metadata record value is ``uvarint frameVersion (1) | uvarint apiKey | uvarint version | body``
(Kafka's MetadataRecordSerde). A request frame is ``int32 size | RequestHeader | body`` and a
response frame ``int32 size | ResponseHeader | body``; the header version follows from whether
the api version is flexible, as Kafka's ApiMessageType decides.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from metalog.codec import core, message_class
from metalog.codec.definitions import MESSAGES, METADATA_BY_API_KEY
from metalog.codec.runtime import READER_ERRORS, ApiMessage, Malformed, Reader, read_uvarint, write_uvarint
from metalog.codec.schema import Message
from metalog.errors import DecodeError, EncodeError, UnknownMessageError

if TYPE_CHECKING:
    from metalog.codec.messages import RequestHeader, ResponseHeader

H = TypeVar("H", bound=ApiMessage)  # a header class
FRAME_VERSION = 1
_SIZE = struct.Struct(">i")
_REQUEST_BY_KEY = {m.api_key: m.name for m in MESSAGES.values() if m.kind == "request"}
_RESPONSE_BY_KEY = {m.api_key: m.name for m in MESSAGES.values() if m.kind == "response"}
# A hostile size prefix must not make a reader wait for (or allocate) gigabytes.
MAX_FRAME_SIZE = 100 * 1024 * 1024


class MetadataRecord(NamedTuple):
    """A decoded metadata-log record value: the message and the version it was written at."""

    message: ApiMessage
    version: int


class RequestFrame(NamedTuple):
    header: RequestHeader
    header_version: int
    body: ApiMessage


class ResponseFrame(NamedTuple):
    header: ResponseHeader
    header_version: int
    body: ApiMessage


# ---- metadata records ---------------------------------------------------------------------
def metadata_record_class(api_key: int) -> type[ApiMessage]:
    spec = METADATA_BY_API_KEY.get(api_key)
    if spec is None:
        raise UnknownMessageError(f"unknown metadata record type {api_key} (known api keys: "
                                  f"{_key_ranges(METADATA_BY_API_KEY)})")
    return message_class(spec.name)


def encode_metadata_record(message: ApiMessage, version: int) -> bytes:
    """The record value Kafka's MetadataRecordSerde writes for ``message`` at ``version``."""
    if message.API_KEY is None or MESSAGES[message.NAME].kind != "metadata":
        raise EncodeError("not a metadata record", message=message.NAME, version=version)
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, message.API_KEY)
    write_uvarint(out, version)
    out += message.encode(version)
    return bytes(out)


def decode_metadata_record(buf: bytes | bytearray | memoryview) -> MetadataRecord:
    """A record value from the metadata log; the frame must be consumed exactly."""
    # Fast path: frame version, apiKey and version are one byte each in every record Kafka writes.
    if len(buf) > 3 and buf[0] == FRAME_VERSION:
        reader = (_READERS or _fast_readers()).get(buf[1] << 8 | buf[2])
        if reader is not None:
            try:
                obj, end = reader(buf, 3)
                if end == len(buf):
                    return _new_tuple(MetadataRecord, (obj, buf[2]))
            except READER_ERRORS:  # the checked path below names what is wrong
                pass
    return _decode_checked(buf)


FAST_PATH_MISSES = (KeyError, DecodeError, *READER_ERRORS)
"""What a fast path that looks a record value's reader up by its bytes 1 and 2 (``metadata_readers``) raises
for a value it does not read: a type or version the table lacks (KeyError), a value too short (IndexError), bytes
the reader refuses, a DecodeError of its own. ``decode_metadata_record`` then reads the rare forms (varints of
more than one byte) or names the problem; anything else a fast path raises is a bug, and propagates."""


_new_tuple = tuple.__new__


def metadata_api_key(value: bytes | bytearray | memoryview | None) -> int | None:
    """The apiKey of a framed metadata record value, read from its frame without decoding the record (None when
    the value is not a frame version 1 record): what the log layer may know of a record, its type."""
    if value is None:
        return None
    if len(value) > 1 and value[0] == FRAME_VERSION and value[1] < 0x80:  # one-byte varints: every Kafka record
        return value[1]
    try:
        frame_version, pos = read_uvarint(value, 0)
        api_key, _ = read_uvarint(value, pos)
    except (Malformed, IndexError):
        return None
    return api_key if frame_version == FRAME_VERSION else None


def metadata_readers() -> dict[int, Reader]:
    """apiKey << 8 | version -> the generated reader ``(buf, pos) -> (message, end)``, for one-byte apiKeys
    and versions: a record value's bytes 1 and 2 pick its reader and the body starts at 3. The readers
    check less than ``decode_metadata_record``: on any failure, call that for the precise error."""
    return _READERS or _fast_readers()


def _fast_readers() -> dict[int, Reader]:
    """apiKey << 8 | version -> the generated reader, for one-byte apiKeys and versions."""
    out = _READERS
    for api_key, spec in METADATA_BY_API_KEY.items():
        cls = message_class(spec.name)
        for version in cls.VERSIONS:
            if api_key < 0x80 and version < 0x80:
                out[api_key << 8 | version] = cls.READERS[version]
    return out


def metadata_entries() -> dict[int, object]:
    """apiKey << 8 | version -> the C entry point of ``metadata_readers()``' reader (``core.compiled_entry``), for
    the readers that are compiled ones: what a compiled replay calls without a Python call per record."""
    out = {}
    for key, reader in metadata_readers().items():
        entry = core.compiled_entry(message_class(METADATA_BY_API_KEY[key >> 8].name), key & 0xFF, reader)
        if entry is not None:
            out[key] = entry
    return out


def _decode_checked(buf: bytes | bytearray | memoryview) -> MetadataRecord:
    pos = 0
    frame_version, pos = _frame_uvarint(buf, pos, "frame version")
    if frame_version == 0:
        raise DecodeError("could not deserialize metadata record with frame version 0 (KRaft preview "
                          "release 2.8 records are not supported)", field="frame version", offset=0)
    if frame_version != FRAME_VERSION:
        raise DecodeError(f"unknown frame version {frame_version} (only frame version {FRAME_VERSION} "
                          "is supported)", field="frame version", offset=0)
    at = pos
    api_key, pos = _frame_uvarint(buf, pos, "type")
    spec = METADATA_BY_API_KEY.get(api_key)
    if spec is None:
        raise DecodeError(f"unknown metadata record type (apiKey) {api_key}", field="type", offset=at)
    at = pos
    version, pos = _frame_uvarint(buf, pos, "version")
    cls = message_class(spec.name)
    if version not in cls.VERSIONS:
        raise DecodeError(f"unsupported version {version} of {spec.name}", message=spec.name, field="version",
                          offset=at)
    body = memoryview(buf)[pos:]
    try:
        return MetadataRecord(cls.decode(body, version), version)
    except DecodeError as e:
        # Offsets inside the body, shifted to offsets inside the whole record value.
        raise DecodeError(e.reason, message=e.message, version=e.version, field=e.field,
                          offset=None if e.offset is None else e.offset + pos) from None


def _frame_uvarint(buf: Any, pos: int, what: str) -> tuple[int, int]:
    try:
        value, end = read_uvarint(buf, pos)
    except (Malformed, IndexError):
        raise DecodeError(f"truncated or malformed varint for the {what}", field=what, offset=pos) from None
    if value > 0x7FFF:
        raise DecodeError(f"value for the {what} is too large ({value})", field=what, offset=pos)
    return value, end


_READERS: dict[int, Reader] = {}  # filled on first use: importing every record class takes time


# ---- request and response frames ----------------------------------------------------------
def request_header_version(api_key: int, api_version: int) -> int:
    """RequestHeader v2 for a flexible api version, v1 otherwise."""
    return 2 if api_version in _spec(_REQUEST_BY_KEY, api_key, "request").flexible_versions else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """ResponseHeader v1 for a flexible api version, v0 otherwise."""
    return 1 if api_version in _spec(_RESPONSE_BY_KEY, api_key, "response").flexible_versions else 0


def _spec(table: dict[int | None, str], api_key: int, kind: str) -> Message:
    name = table.get(api_key)
    if name is None:
        known = ", ".join(f"{k} {table[k]}" for k in sorted(k for k in table if k is not None))
        raise UnknownMessageError(f"no {kind} with api key {api_key} is defined (known: {known})")
    return MESSAGES[name]


def _key_ranges(keys: Iterable[int]) -> str:
    """``0-3, 5, 7-9``: sorted integer keys as runs."""
    runs: list[list[int]] = []
    for k in sorted(keys):
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def encode_request(body: ApiMessage, api_version: int, correlation_id: int, client_id: str | None = None) -> bytes:
    """A whole size-prefixed request frame."""
    header_cls = message_class("RequestHeader")
    hv = request_header_version(_api_key(body, "request", api_version), api_version)
    header = header_cls(request_api_key=body.API_KEY, request_api_version=api_version,
                        correlation_id=correlation_id, client_id=client_id)
    payload = header.encode(hv) + body.encode(api_version)
    return _SIZE.pack(len(payload)) + payload


def decode_request(frame: bytes | bytearray | memoryview) -> RequestFrame:
    """A size-prefixed request frame: the header says which body follows."""
    view = _unframe(frame)
    # The first four bytes of every header version are apiKey and apiVersion.
    if len(view) < 4:
        raise DecodeError("request header truncated", message="RequestHeader", offset=4)
    api_key, api_version = struct.unpack_from(">hh", view, 0)
    name = _REQUEST_BY_KEY.get(api_key)
    if name is None:
        raise DecodeError(f"unknown request api key {api_key}", message="RequestHeader", field="RequestApiKey",
                          offset=4)
    hv = request_header_version(api_key, api_version)
    from metalog.codec.messages import RequestHeader

    header, pos = _decode_prefix(RequestHeader, view, hv)
    body = _decode_at(message_class(name), view, pos, api_version)
    return RequestFrame(header, hv, body)


def encode_response(body: ApiMessage, api_version: int, correlation_id: int) -> bytes:
    hv = response_header_version(_api_key(body, "response", api_version), api_version)
    header = message_class("ResponseHeader")(correlation_id=correlation_id)
    payload = header.encode(hv) + body.encode(api_version)
    return _SIZE.pack(len(payload)) + payload


def decode_response(frame: bytes | bytearray | memoryview, api_key: int, api_version: int) -> ResponseFrame:
    """A size-prefixed response frame; which api it answers comes from the request it answers."""
    view = _unframe(frame)
    name = _RESPONSE_BY_KEY.get(api_key)
    if name is None:
        raise DecodeError(f"unknown response api key {api_key}", message="ResponseHeader")
    hv = response_header_version(api_key, api_version)
    from metalog.codec.messages import ResponseHeader

    header, pos = _decode_prefix(ResponseHeader, view, hv)
    return ResponseFrame(header, hv, _decode_at(message_class(name), view, pos, api_version))


def _api_key(body: ApiMessage, kind: str, api_version: int) -> int:
    """The api key of a request or response body; any other message is refused (a record's api key is another
    numbering: PartitionRecord's 3 would frame as a MetadataRequest)."""
    if body.API_KEY is None or MESSAGES[body.NAME].kind != kind:
        raise EncodeError(f"not a {kind}", message=body.NAME, version=api_version)
    return body.API_KEY


def _unframe(frame: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(frame).cast("B") if not isinstance(frame, memoryview) else frame.cast("B")
    if len(view) < 4:
        raise DecodeError("frame shorter than its 4-byte size prefix", field="size", offset=0)
    (size,) = _SIZE.unpack_from(view, 0)
    if size < 0 or size > MAX_FRAME_SIZE:
        raise DecodeError(f"frame size {size} is out of range (0..{MAX_FRAME_SIZE})", field="size", offset=0)
    if size != len(view) - 4:
        raise DecodeError(f"frame size says {size} bytes but {len(view) - 4} follow", field="size", offset=0)
    return view[4:]


def _decode_prefix(cls: type[H], view: memoryview, version: int) -> tuple[H, int]:
    """Decode a header at the front of ``view``: the header's own reader tells where it ends."""
    try:
        return cls.READERS[version](view, 0)
    except READER_ERRORS:
        # Let the checked path produce the precise error (on the header bytes alone).
        cls.decode(view, version)
        raise


def _decode_at(cls: type[ApiMessage], view: memoryview, pos: int, version: int) -> ApiMessage:
    try:
        return cls.decode(view[pos:], version)
    except DecodeError as e:
        raise DecodeError(e.reason, message=e.message, version=e.version, field=e.field,
                          offset=None if e.offset is None else e.offset + pos + 4) from None
