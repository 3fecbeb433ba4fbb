"""Metadata-record framing and request/response frames, with Kafka's errors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from metalog.codec import DecodeError, EncodeError, message_class
from metalog.codec.framing import (
    decode_metadata_record,
    decode_request,
    decode_response,
    encode_metadata_record,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)

TOPIC = message_class("TopicRecord")


@pytest.mark.parametrize(("value", "field", "offset", "reason"), [
    ("00", "frame version", 0, "frame version 0"),
    ("02", "frame version", 0, "unknown frame version 2"),
    ("01ff", "type", 1, "truncated"),
    ("0163", "type", 1, "unknown metadata record type (apiKey) 99"),
    ("01020a", "version", 2, "unsupported version 10"),
    ("0181808080808001", "type", 1, "malformed varint"),
], ids=["frame-v0", "frame-v2", "truncated-type", "unknown-api-key", "unknown-version", "long-varint"])
def test_bad_frames_are_named(value: str, field: str, offset: int, reason: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(reason)) as e:
        decode_metadata_record(bytes.fromhex(value))
    assert (e.value.field, e.value.offset) == (field, offset)


def test_trailing_bytes_after_a_record_are_an_error() -> None:
    framed = encode_metadata_record(TOPIC(name="foo"), 0) + b"\x00"
    with pytest.raises(DecodeError, match="1 trailing bytes") as e:
        decode_metadata_record(framed)
    assert e.value.offset == len(framed) - 1


def test_errors_inside_the_body_carry_offsets_in_the_whole_value() -> None:
    framed = encode_metadata_record(TOPIC(name="foo"), 0)
    with pytest.raises(DecodeError) as e:
        decode_metadata_record(framed[:-3])  # cut inside the topic id
    assert e.value.message == "TopicRecord"
    assert e.value.offset is not None and e.value.offset >= 3


def test_non_metadata_messages_are_not_framed_as_records() -> None:
    with pytest.raises(Exception, match="not a metadata record"):
        encode_metadata_record(message_class("SnapshotHeaderRecord")(), 0)


# Kafka frames requests and responses by ApiKeys (clients/src/main/java/org/apache/kafka/common/protocol/ApiKeys.java);
# a metadata record's api key is MetadataRecordType's, another numbering (PartitionRecord's 3 is Metadata's there)
@pytest.mark.parametrize(("name", "encode"), [
    ("PartitionRecord", lambda m: encode_request(m, 0, 1)),
    ("MetadataResponse", lambda m: encode_request(m, 0, 1)),
    ("PartitionRecord", lambda m: encode_response(m, 0, 1)),
    ("MetadataRequest", lambda m: encode_response(m, 0, 1)),
])
def test_only_requests_and_responses_are_framed_as_them(name: str, encode: Any) -> None:
    with pytest.raises(EncodeError, match="not a re"):
        encode(message_class(name)())


@pytest.mark.parametrize(("api_key", "version", "request_v", "response_v"), [
    (6, 0, 1, 0), (6, 5, 1, 0), (6, 6, 2, 1), (6, 8, 2, 1), (73, 0, 2, 1), (4, 3, 1, 0), (4, 4, 2, 1),
    (3, 8, 1, 0), (3, 9, 2, 1), (62, 0, 2, 1),
])
def test_header_versions_follow_flexibility(api_key: int, version: int, request_v: int, response_v: int) -> None:
    assert request_header_version(api_key, version) == request_v
    assert response_header_version(api_key, version) == response_v


def test_response_frame_round_trip() -> None:
    body = message_class("UpdateMetadataResponse")(error_code=0)
    for version in (0, 8):
        frame = encode_response(body, version, correlation_id=7)
        decoded = decode_response(frame, 6, version)
        assert decoded.header.correlation_id == 7
        assert decoded.header_version == (1 if version == 8 else 0)
        assert decoded.body == body


@pytest.mark.parametrize("frame", ["", "000000", "7fffffff00", "ffffffff", "0000000a0006"],
                         ids=["empty", "short-size", "hostile-size", "negative-size", "size-mismatch"])
def test_bad_request_frames(frame: str) -> None:
    with pytest.raises(DecodeError):
        decode_request(bytes.fromhex(frame))


def test_unknown_request_api_key() -> None:
    frame = encode_request(message_class("UpdateMetadataRequest")(), 0, 1, "c")
    bad = frame[:4] + b"\x03\xe7" + frame[6:]
    with pytest.raises(DecodeError, match="unknown request api key 999"):
        decode_request(bad)
