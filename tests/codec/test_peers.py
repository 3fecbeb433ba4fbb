"""Differential tests: metalog's codec against independent implementations of Kafka's protocol.

Random messages are drawn from kio's own per-version schema classes (so which fields exist at a
version comes from kio, not from our definitions), converted to metalog objects, and both codecs must
write the same bytes and read each other's bytes back to the same values. kafka-python has no
UpdateMetadataRequest or AssignReplicasToDirs classes; it is compared where it has the message
(MetadataRequest). Kafka's own vectors stay the ground truth (tests/codec/test_vectors.py); the rack
rule below is also checked against them.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import MetadataRequest as KpMetadataRequest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)

from metalog.codec import Uuid, message_class, struct_class
from metalog.codec.schema import INT_RANGES, snake
from tests.conftest import load_vectors
from tests.quick import examples

UpdateMetadataRequest = message_class("UpdateMetadataRequest")
# 24 parametrized cases (every version of three messages), each building kio objects: 40 examples apiece
PEER_SETTINGS = settings(max_examples=examples(40))

# kio names that differ from ours beyond a trailing underscore (``id_``, ``type_``).
KIO_RENAMES = {"throttle_time": "throttle_time_ms"}


def kio_class(module: str, version: int, name: str) -> type:
    return getattr(importlib.import_module(f"kio.schema.{module}.v{version}.{name.split('.')[0]}"), name.split(".")[1])


# ---- random kio entities ----------------------------------------------------------------------
def kio_scalar(kafka_type: str, optional: bool) -> st.SearchStrategy[Any]:
    if kafka_type in INT_RANGES:
        lo, hi = INT_RANGES[kafka_type]
        s: st.SearchStrategy[Any] = st.integers(lo, hi)
    elif kafka_type == "bool":
        s = st.booleans()
    elif kafka_type == "string":
        s = st.text(max_size=12)
    elif kafka_type == "uuid":  # kio (like Kafka's JSON) reads the zero uuid as None
        return st.none() | st.uuids().filter(lambda u: u.int != 0)
    elif kafka_type == "error_code":
        s = st.sampled_from(list(ErrorCode))
    elif kafka_type == "timedelta_i32":
        s = st.integers(*INT_RANGES["int32"]).map(lambda ms: datetime.timedelta(milliseconds=ms))
    else:
        raise AssertionError(f"no strategy for kio type {kafka_type}")
    return st.none() | s if optional else s


def kio_entities(cls: type) -> st.SearchStrategy[Any]:
    """Random instances of a kio schema class; arrays short, strings null and non-null."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        optional = is_optional(f)
        if isinstance(kind, PrimitiveField):
            s = kio_scalar(get_schema_field_type(f), optional)
        elif isinstance(kind, PrimitiveTupleField):
            s = st.lists(kio_scalar(get_schema_field_type(f), False), max_size=4).map(tuple)
        elif isinstance(kind, EntityTupleField):
            s = st.lists(st.deferred(lambda t=kind.type_: kio_entities(t)), max_size=3).map(tuple)
        elif isinstance(kind, EntityField):
            s = kio_entities(kind.type_)
        else:
            raise AssertionError(f"unknown kio field kind {kind}")
        if optional and kind.is_array:
            s = st.none() | s
        kwargs[f.name] = s
    return st.builds(cls, **kwargs)


def kio_write(entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def kio_read(cls: type, data: bytes) -> Any:
    entity, size = entity_reader(cls)(data, 0)
    assert size == len(data), "kio did not consume the whole message"
    return entity


# ---- kio -> metalog ---------------------------------------------------------------------------
def metalog_value(value: Any, message: str) -> Any:
    if dataclasses.is_dataclass(value):
        return to_metalog(value, struct_class(message, type(value).__name__))
    if isinstance(value, tuple):
        return [metalog_value(v, message) for v in value]
    if isinstance(value, uuid.UUID):
        return Uuid(value.bytes)
    if isinstance(value, ErrorCode):
        return value.value
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return value


def to_metalog(entity: Any, cls: type) -> Any:
    """The metalog object holding the same values; fields kio's version lacks keep our defaults."""
    message = cls.STRUCT_PATH[0]
    kwargs = {}
    for f in dataclasses.fields(entity):
        name = KIO_RENAMES.get(f.name, f.name.rstrip("_"))
        value = getattr(entity, f.name)
        if value is None and f.metadata.get("kafka_type") == "uuid":
            value = Uuid()
        kwargs[name] = metalog_value(value, message)
    return cls(**kwargs)


def assert_same_as_kio(entity: Any, name: str, version: int) -> None:
    cls = message_class(name)
    theirs = kio_write(entity)
    obj = to_metalog(entity, cls)
    ours = obj.encode(version)
    assert ours == theirs
    assert cls.decode(theirs, version) == obj
    assert kio_read(type(entity), ours) == entity


# ---- UpdateMetadataRequest and AssignReplicasToDirs against kio -------------------------------
@pytest.mark.parametrize("version", range(9))
@PEER_SETTINGS
@given(data=st.data())
def test_update_metadata_request_matches_kio(version: int, data: st.DataObject) -> None:
    entity = data.draw(kio_entities(kio_class("update_metadata", version, "request.UpdateMetadataRequest")))
    assert_same_as_kio(entity, "UpdateMetadataRequest", version)


@pytest.mark.parametrize("name", ["AssignReplicasToDirsRequest", "AssignReplicasToDirsResponse"])
@PEER_SETTINGS
@given(data=st.data())
def test_assign_replicas_to_dirs_matches_kio(name: str, data: st.DataObject) -> None:
    module = "request" if name.endswith("Request") else "response"
    entity = data.draw(kio_entities(kio_class("assign_replicas_to_dirs", 0, f"{module}.{name}")))
    assert_same_as_kio(entity, name, 0)


def test_kio_strategies_draw_null_and_present_racks() -> None:
    """The UpdateMetadataRequest property above must see both kinds of rack at v2..v8."""
    broker = kio_class("update_metadata", 6, "request.UpdateMetadataBroker")
    seen: set[bool] = set()

    @given(kio_entities(broker))
    def collect(b: Any) -> None:
        seen.add(b.rack is None)

    collect()
    assert seen == {True, False}


# ---- MetadataRequest against kio and kafka-python ---------------------------------------------
def to_kafka_python(obj: Any, struct: Any, cls: Any, version: int) -> Any:
    """kafka-python's generic message object for a metalog object (its fields by Kafka name)."""
    kwargs = {}
    for f in struct._fields:
        if not f.for_version_q(version):
            continue
        value = getattr(obj, snake(f._name))
        if f.is_struct_array() and value is not None:
            value = [to_kafka_python(v, f, f.data_class, version) for v in value]
        elif isinstance(value, Uuid):
            value = None if value == Uuid() else uuid.UUID(bytes=bytes(value))
        kwargs[f.name] = value
    return cls(version=version, **kwargs)


@pytest.mark.parametrize("version", range(13))
@PEER_SETTINGS
@given(data=st.data())
def test_metadata_request_matches_kio_and_kafka_python(version: int, data: st.DataObject) -> None:
    entity = data.draw(kio_entities(kio_class("metadata", version, "request.MetadataRequest")))
    assert_same_as_kio(entity, "MetadataRequest", version)
    cls = message_class("MetadataRequest")
    obj = to_metalog(entity, cls)
    ours = obj.encode(version)
    theirs = to_kafka_python(obj, KpMetadataRequest._struct, KpMetadataRequest, version)
    assert theirs.encode(version) == ours
    assert KpMetadataRequest.decode(ours, version=version) == theirs


# ---- the rack rule ----------------------------------------------------------------------------
def one_broker_request(version: int, rack: str | None) -> Any:
    endpoint_cls, broker_cls = (struct_class("UpdateMetadataRequest", s)
                                for s in ("UpdateMetadataEndpoint", "UpdateMetadataBroker"))
    endpoint = endpoint_cls(port=9092, host="h", listener="PLAINTEXT", security_protocol=0)
    broker = broker_cls(id=1, v0_host="h", v0_port=9092, endpoints=[endpoint], rack=rack)
    return UpdateMetadataRequest(controller_id=1, controller_epoch=2, live_brokers=[broker])


def rack_bytes(version: int, rack: str | None) -> bytes:
    """Rack as Kafka writes it: a classic nullable string (int16 length, -1 = null) in v2..v5,
    a compact nullable string (uvarint length + 1, 0 = null) from v6."""
    raw = b"" if rack is None else rack.encode()
    if version >= 6:
        return bytes([0 if rack is None else len(raw) + 1]) + raw
    return (-1 if rack is None else len(raw)).to_bytes(2, "big", signed=True) + raw


def rack_tail(version: int, rack: str | None, request_type: int = 0) -> bytes:
    # The broker is the message's last struct: after its rack come only the broker's (empty) and the
    # request's tagged-field sections (flexible versions); the request's holds Type (tag 0) if set.
    if version < 6:
        return rack_bytes(version, rack)
    request_tags = bytes([1, 0, 1, request_type & 0xFF]) if request_type else b"\x00"
    return rack_bytes(version, rack) + b"\x00" + request_tags


@pytest.mark.parametrize("version", range(2, 9))
@pytest.mark.parametrize("rack", [None, "r1", ""])
def test_rack_is_written_at_its_position(version: int, rack: str | None) -> None:
    data = one_broker_request(version, rack).encode(version)
    other = one_broker_request(version, "rack-b").encode(version)
    tail, other_tail = rack_tail(version, rack), rack_tail(version, "rack-b")
    assert data.endswith(tail)
    assert other.endswith(other_tail)
    assert data[: -len(tail)] == other[: -len(other_tail)]  # nothing else moved
    assert UpdateMetadataRequest.decode(data, version).live_brokers[0].rack == rack


@pytest.mark.parametrize("version", [0, 1])
def test_rack_is_absent_before_v2(version: int) -> None:
    encoded = {rack: one_broker_request(version, rack).encode(version) for rack in (None, "r1", "")}
    assert len(set(encoded.values())) == 1
    data = encoded[None]
    # v0 ends with the broker's v0 port, v1 with its endpoint's security protocol
    assert data.endswith((9092).to_bytes(4, "big") if version == 0 else b"\x00\x00")
    assert UpdateMetadataRequest.decode(data, version).live_brokers[0].rack == ""


RACK_VECTORS = [r for r in load_vectors()["rpcs"]
                if r.get("message") == "UpdateMetadataRequest" and r["version"] >= 2 and "-rack-" in r["name"]]


@pytest.mark.parametrize("vector", RACK_VECTORS, ids=lambda r: r["name"])
def test_rack_rule_matches_kafka_vectors(vector: dict[str, Any]) -> None:
    version = vector["version"]
    data = bytes.fromhex(vector["hex"])
    racks = [b["rack"] for b in vector["json"]["liveBrokers"]]
    assert data.endswith(rack_tail(version, racks[-1], vector["json"].get("type", 0)))
    assert [b.rack for b in UpdateMetadataRequest.decode(data, version).live_brokers] == racks


def test_rack_vectors_cover_null_and_present_at_every_version() -> None:
    kinds = {(r["version"], r["json"]["liveBrokers"][-1]["rack"] is None) for r in RACK_VECTORS}
    assert kinds == {(v, null) for v in range(2, 9) for null in (True, False)}
