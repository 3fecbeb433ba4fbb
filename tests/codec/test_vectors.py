"""Kafka's own bytes, both ways: ``decode(hex).to_json() == json`` and ``from_json(json).encode() == hex``."""

from __future__ import annotations

from typing import Any

import pytest

from metalog.codec import message_class
from metalog.codec.framing import decode_metadata_record, decode_request, encode_metadata_record, encode_request
from tests.conftest import load_codec_random, load_vectors

VECTORS = load_vectors()


def _messages() -> list[tuple[str, str, int, dict[str, Any], str]]:
    rows = []
    for group in ("metadataRecords", "rpcs", "controlRecordValues"):
        for r in VECTORS[group]:
            if "hex" in r:
                rows.append((f"{group}:{r['name']}", r["message"], r["version"], r["json"], r["hex"]))
    for i, r in enumerate(load_codec_random()):
        rows.append((f"random:{i}:{r['name']}:v{r['version']}", r["name"], r["version"], r["data"], r["hex"]))
    return rows


MESSAGES = _messages()


def assert_both_ways(name: str, version: int, data: dict[str, Any], hex_: str) -> None:
    """The construct-style check: parse and build agree with the vector in both directions."""
    cls = message_class(name)
    raw = bytes.fromhex(hex_)
    assert cls.decode(raw, version).to_json(version) == data
    assert cls.from_json(data, version).encode(version) == raw
    # bytearray and memoryview inputs decode the same way
    assert cls.decode(bytearray(raw), version) == cls.decode(memoryview(raw), version) == cls.decode(raw, version)


@pytest.mark.parametrize(("case", "name", "version", "data", "hex_"), MESSAGES, ids=[m[0] for m in MESSAGES])
def test_kafka_vector(case: str, name: str, version: int, data: dict[str, Any], hex_: str) -> None:
    assert_both_ways(name, version, data, hex_)


def test_vectors_cover_every_message_at_every_version() -> None:
    from metalog.codec import message_names

    covered = {(name, version) for _, name, version, _, _ in MESSAGES}
    missing = [(n, v) for n in message_names() for v in message_class(n).VERSIONS if (n, v) not in covered]
    assert not missing


@pytest.mark.parametrize("r", VECTORS["metadataRecords"], ids=lambda r: r["name"])
def test_framed_metadata_record(r: dict[str, Any]) -> None:
    framed = bytes.fromhex(r["framedHex"])
    record = decode_metadata_record(framed)
    assert record.version == r["version"]
    assert r["apiKey"] == type(record.message).API_KEY
    assert record.message.to_json(record.version) == r["json"]
    assert encode_metadata_record(record.message, record.version) == framed


RPC_FRAMES = [r for r in VECTORS["rpcs"] if "frameHex" in r]


@pytest.mark.parametrize("r", RPC_FRAMES, ids=lambda r: r["name"])
def test_request_frame(r: dict[str, Any]) -> None:
    frame = bytes.fromhex(r["frameHex"])
    decoded = decode_request(frame)
    assert decoded.header_version == r["requestHeaderVersion"]
    assert decoded.header.encode(decoded.header_version).hex() == r["headerHex"]
    assert decoded.body.to_json(r["version"]) == r["json"]
    h = decoded.header
    assert encode_request(decoded.body, r["version"], h.correlation_id, h.client_id) == frame


def test_update_metadata_v1_decodes_rack_as_field_default() -> None:
    # Kafka: decoding v1, which has no Rack field, yields rack="" (the field default), not null.
    r = next(r for r in VECTORS["rpcs"] if r["name"] == "UpdateMetadataRequest-v1-rack-null")
    msg = message_class("UpdateMetadataRequest").decode(bytes.fromhex(r["hex"]), 1)
    assert [b.rack for b in msg.live_brokers] == [""] * len(msg.live_brokers)


def test_crc32c_check_value() -> None:
    import crc32c

    check = VECTORS["crc32cCheck"]
    assert crc32c.crc32c(check["input"].encode()) == check["crc32c"]


def test_uuid_text_forms() -> None:
    from metalog.codec import LOST, MIGRATING, UNASSIGNED, Uuid

    for name, u in VECTORS["uuids"].items():
        parsed = Uuid.parse(u["base64"])
        assert parsed.hex() == u["hex"], name
        assert str(parsed) == u["base64"], name
    assert str(MIGRATING) == VECTORS["uuids"]["DirectoryId.MIGRATING"]["base64"]
    assert str(UNASSIGNED) == VECTORS["uuids"]["DirectoryId.UNASSIGNED"]["base64"]
    assert str(LOST) == VECTORS["uuids"]["DirectoryId.LOST"]["base64"]
