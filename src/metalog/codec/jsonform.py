"""Kafka's JsonConverter form of a message: what ``kafka-dump-log --cluster-metadata-decoder`` prints.

camelCase keys; uuids as 22-character url-safe base64; bytes as base64; a tagged field
at its default is left out; a field the version does not have is left out.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from functools import cache
from typing import Any

from metalog.codec import struct_class
from metalog.codec.definitions import MESSAGES
from metalog.codec.runtime import KafkaStruct
from metalog.codec.schema import INT_RANGES, F, Message
from metalog.codec.uuid import Uuid
from metalog.errors import DecodeError, EncodeError


@cache
def _fields(path: tuple[str, ...]) -> tuple[Message, tuple[F, ...]]:
    msg = MESSAGES[path[0]]
    return msg, (msg.fields if len(path) == 1 else msg.structs[path[1]].fields)


def _is_tagged(msg: Message, f: F, version: int) -> bool:
    return version in msg.flexible_versions and version in f.tagged_versions


def to_json(obj: KafkaStruct, version: int) -> dict[str, Any]:
    msg, fields = _fields(obj.STRUCT_PATH)
    if version not in msg.versions:
        raise EncodeError(f"unsupported version {version} (valid: {msg.valid})", message=msg.name, version=version)
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f.valid:
            continue
        value = getattr(obj, f.attr)
        if _is_tagged(msg, f, version) and value == _default(obj, f):
            continue
        out[f.json_key] = _value_to_json(f, value, version)
    return out


def _default(obj: KafkaStruct, f: F) -> Any:
    return getattr(_blank(type(obj)), f.attr)


def _blank(cls: type[KafkaStruct]) -> KafkaStruct:
    """An instance holding every default; only ever read."""
    blank = _BLANKS.get(cls)
    if blank is None:
        blank = _BLANKS[cls] = cls()
    return blank


_BLANKS: dict[type[KafkaStruct], KafkaStruct] = {}


def _value_to_json(f: F, value: Any, version: int) -> Any:
    if value is None:
        return None
    if f.is_array:
        return [_scalar_to_json(f, x, version) for x in value]
    return _scalar_to_json(f, value, version)


def _scalar_to_json(f: F, value: Any, version: int) -> Any:
    t = f.element
    if t == "uuid":
        return str(value)
    if t in ("bytes", "records"):
        return base64.b64encode(value).decode()
    if isinstance(value, KafkaStruct):
        return to_json(value, version)
    return value


def loads(text: str | bytes) -> Any:
    """JSON text as ``json.loads`` reads it, with every failure a ValueError naming what is wrong.

    ``json.loads`` raises RecursionError (a traceback, not a message) for arrays or objects nested deeper than
    Python's recursion limit, e.g. 100,000 ``[``; here that is malformed input like any other.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("arrays or objects nested too deeply to read") from None


def from_json(cls: type[KafkaStruct], data: Any, version: int, where: str = "") -> Any:
    msg, fields = _fields(cls.STRUCT_PATH)
    if version not in msg.versions:
        raise DecodeError(f"unsupported version {version} (valid: {msg.valid})", message=msg.name, version=version)
    if not isinstance(data, dict):
        raise _error(cls, version, where or "(message)", f"expected a JSON object, got {_kind(data)}")
    known = {f.json_key for f in fields}
    unknown = [k for k in data if k not in known]
    if unknown:
        raise _error(cls, version, where or "(message)", f"unknown field {unknown[0]!r}")
    obj = cls()
    for f in fields:
        path = f"{where}.{f.json_key}" if where else f.json_key
        if f.json_key in data:
            setattr(obj, f.attr, _value_from_json(cls, f, data[f.json_key], version, path))
        elif version in f.valid and not _is_tagged(msg, f, version):
            raise _error(cls, version, path, f"missing from the JSON; it is mandatory in version {version}")
    return obj


def _value_from_json(cls: type[KafkaStruct], f: F, value: Any, version: int, path: str) -> Any:
    if value is None:
        if version in f.nullable_versions or f.default_is_null:
            return None
        raise _error(cls, version, path, "is null but not nullable at this version")
    if f.is_array:
        if not isinstance(value, list):
            raise _error(cls, version, path, f"expected a JSON array, got {_kind(value)}")
        return [_scalar_from_json(cls, f, x, version, f"{path}[{i}]") for i, x in enumerate(value)]
    return _scalar_from_json(cls, f, value, version, path)


def _scalar_from_json(cls: type[KafkaStruct], f: F, value: Any, version: int, path: str) -> Any:
    t = f.element
    if t in INT_RANGES:
        return _int_from_json(cls, t, value, version, path)
    convert = _SCALARS_FROM_JSON.get(t)
    if convert is not None:
        return convert(cls, value, version, path)
    struct_cls = struct_class(cls.STRUCT_PATH[0], t)
    return from_json(struct_cls, value, version, path)


def _int_from_json(cls: type[KafkaStruct], t: str, value: Any, version: int, path: str) -> int:
    lo, hi = INT_RANGES[t]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _error(cls, version, path, f"expected an integer, got {_kind(value)}")
    if not lo <= value <= hi:
        raise _error(cls, version, path, f"{value} is out of range for {t}")
    return value


def _bool_from_json(cls: type[KafkaStruct], value: Any, version: int, path: str) -> bool:
    if not isinstance(value, bool):
        raise _error(cls, version, path, f"expected true or false, got {_kind(value)}")
    return value


def _float_from_json(cls: type[KafkaStruct], value: Any, version: int, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(cls, version, path, f"expected a number, got {_kind(value)}")
    return float(value)


def _string_from_json(cls: type[KafkaStruct], value: Any, version: int, path: str) -> str:
    if not isinstance(value, str):
        raise _error(cls, version, path, f"expected a string, got {_kind(value)}")
    return value


def _uuid_from_json(cls: type[KafkaStruct], value: Any, version: int, path: str) -> Uuid:
    try:
        return Uuid.parse(value)
    except ValueError as e:
        raise _error(cls, version, path, str(e)) from None


def _bytes_from_json(cls: type[KafkaStruct], value: Any, version: int, path: str) -> bytes:
    if not isinstance(value, str):
        raise _error(cls, version, path, f"expected base64 text, got {_kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _error(cls, version, path, "is not valid base64") from None


# a scalar type's JSON reader (the integers by INT_RANGES; a name not here is a struct's)
_SCALARS_FROM_JSON: dict[str, Callable[[type[KafkaStruct], Any, int, str], Any]] = {
    "bool": _bool_from_json, "float64": _float_from_json, "string": _string_from_json, "uuid": _uuid_from_json,
    "bytes": _bytes_from_json, "records": _bytes_from_json,
}


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


def _error(cls: type[KafkaStruct], version: int, path: str, reason: str) -> DecodeError:
    return DecodeError(reason, message=cls.STRUCT_PATH[0], version=version, field=path)
