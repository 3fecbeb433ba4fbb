"""Kafka's wire-format rules, one table row each: bad input is a DecodeError (bad values an EncodeError)
naming the field and, for input, the byte offset where the bad value starts, through ``Cls.decode``
(fast path, diagnosed by the reference) and through the reference itself.
"""

from __future__ import annotations

import tracemalloc
from typing import Any, NamedTuple

import pytest

from metalog.codec import Uuid, message_class, reference
from metalog.codec.definitions import MESSAGES
from metalog.errors import DecodeError, EncodeError

Z16 = bytes(16)  # a zero uuid


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def _partition_v0() -> bytes:
    """PartitionRecord v0: id 1, zero topic, replicas [1,2,3] at 20..32, isr [1,2], tagged count at 56."""
    return message_class("PartitionRecord")(partition_id=1, replicas=[1, 2, 3], isr=[1, 2]).encode(0)


class Bad(NamedTuple):
    id: str
    name: str
    version: int
    data: bytes
    field: str | None
    offset: int | None
    reason: str


P0 = _partition_v0()
DECODE = [
    # truncated input
    Bad("truncated-fixed", "PartitionRecord", 0, P0[:3], "PartitionRecord.PartitionId", 0, "truncated"),
    Bad("truncated-array-element", "PartitionRecord", 0, P0[:30], "PartitionRecord.Replicas[2]", 29, "truncated"),
    Bad("truncated-tagged-count", "PartitionRecord", 0, P0[:-1], "PartitionRecord.<tagged fields>", 56,
        "truncated"),
    Bad("truncated-string", "TopicRecord", 0, h("05 6162"), "TopicRecord.Name", 0, "string length 4 exceeds"),
    Bad("empty-input", "NoOpRecord", 0, b"", "NoOpRecord.<tagged fields>", 0, "truncated"),
    # null (negative length) where the version does not allow it
    Bad("null-compact-string", "TopicRecord", 0, h("00") + Z16 + h("00"), "TopicRecord.Name", 0, "null"),
    Bad("null-classic-array", "MetadataRequest", 0, h("ffffffff"), "MetadataRequest.Topics", 0, "null"),
    Bad("null-classic-string", "MetadataRequest", 1, h("00000001 ffff"), "MetadataRequest.Topics[0].Name", 4,
        "null"),
    # varints
    Bad("varint-6-bytes", "TopicRecord", 0, h("8080808080 01"), "TopicRecord.Name", 0, "longer than 5 bytes"),
    Bad("varint-6-bytes-tag-count", "NoOpRecord", 0, h("ffffffffff 01"), "NoOpRecord.<tagged fields>", 0,
        "longer than 5 bytes"),
    # hostile lengths in a tiny buffer
    Bad("hostile-compact-array", "PartitionRecord", 0, bytes(4) + Z16 + h("ffffffff07"),
        "PartitionRecord.Replicas", 20, "array count 2147483646 exceeds the 0 bytes left"),
    Bad("hostile-classic-array", "MetadataRequest", 0, h("7fffffff"), "MetadataRequest.Topics", 0,
        "array count 2147483647 exceeds"),
    Bad("hostile-classic-string", "MetadataRequest", 1, h("00000001 7fff 6162"), "MetadataRequest.Topics[0].Name", 4,
        "string length 32767 exceeds the 2 bytes left"),
    Bad("hostile-compact-string", "TopicRecord", 0, h("ffff01 6162"), "TopicRecord.Name", 0,
        "string length 32766 exceeds"),
    Bad("hostile-bytes", "UserScramCredentialRecord", 0, h("01 00 ffffffff07"), "UserScramCredentialRecord.Salt", 2,
        "bytes length 2147483646 exceeds"),
    Bad("hostile-tagged-size", "NoOpRecord", 0, h("01 05 ffffffff0f"), "NoOpRecord.<tag 5>", 2,
        "tagged field size 4294967295 exceeds"),
    Bad("hostile-tagged-count", "NoOpRecord", 0, h("ffffffff0f"), "NoOpRecord.<tagged fields>", 5, "truncated"),
    # a compact string longer than 0x7fff, even with all its bytes present
    Bad("string-over-0x7fff", "TopicRecord", 0, h("818002") + b"a" * 0x8000 + Z16 + h("00"), "TopicRecord.Name",
        0, "string length 32768 exceeds 32767"),
    # invalid UTF-8
    Bad("utf8-invalid", "TopicRecord", 0, h("04 fffefd") + Z16 + h("00"), "TopicRecord.Name", 0,
        "invalid UTF-8 at byte 1"),
    Bad("utf8-cut-character", "TopicRecord", 0, h("04 61e697") + Z16 + h("00"), "TopicRecord.Name", 0,
        "invalid UTF-8 at byte 2"),
    # trailing bytes
    Bad("trailing-bytes", "NoOpRecord", 0, h("00 00"), None, 1, "1 trailing bytes"),
    # a known tagged field must fill exactly its size
    Bad("tagged-size-too-big", "PartitionRecord", 0, P0[:-1] + h("01 00 02 0100"),
        "PartitionRecord.LeaderRecoveryState", 59, "takes 1 bytes but its size says 2"),
    Bad("tagged-size-too-small", "PartitionRecord", 0, P0[:-1] + h("01 00 00 01"),
        "PartitionRecord.LeaderRecoveryState", 59, "takes 1 bytes but its size says 0"),
    # unknown versions
    Bad("unknown-version", "PartitionRecord", 3, P0, None, 0, "unsupported version 3"),
    Bad("negative-version", "PartitionRecord", -1, P0, None, 0, "unsupported version -1"),
]


def _check_decode_error(e: DecodeError, case: Bad) -> None:
    assert (e.message, e.version) == (case.name, case.version)
    assert e.field == case.field
    assert e.offset == case.offset
    assert case.reason in e.reason


@pytest.mark.parametrize("case", DECODE, ids=[c.id for c in DECODE])
def test_bad_input_is_a_located_decode_error(case: Bad) -> None:
    with pytest.raises(DecodeError) as info:
        message_class(case.name).decode(case.data, case.version)
    _check_decode_error(info.value, case)
    with pytest.raises(DecodeError) as info:
        reference.decode(case.name, case.data, case.version)
    _check_decode_error(info.value, case)
    found = reference.find_decode_error(case.name, case.data, case.version)
    assert found is not None
    _check_decode_error(found, case)


HOSTILE = [c for c in DECODE if c.id.startswith("hostile-")]


@pytest.mark.parametrize("case", HOSTILE, ids=[c.id for c in HOSTILE])
def test_hostile_length_allocates_nothing_big(case: Bad) -> None:
    cls = message_class(case.name)
    with pytest.raises(DecodeError):
        cls.decode(case.data, case.version)  # warm the caches (construct trees) first
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            cls.decode(case.data, case.version)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024, f"peak {peak} bytes while rejecting a {len(case.data)}-byte input"


def test_varint_wider_than_32_bits_is_rejected() -> None:
    # A 5-byte varint can carry 35 bits; a tag of 2**35-1 could be decoded but never written back.
    raw = h("01 ffffffff7f 00")
    case = Bad("varint-35-bits", "NoOpRecord", 0, raw, "NoOpRecord.<tagged fields>", 1, "does not fit 32 bits")
    test_bad_input_is_a_located_decode_error(case)


def test_a_32_bit_tag_is_fine() -> None:
    raw = h("01 ffffffff0f 00")
    obj = message_class("NoOpRecord").decode(raw, 0)
    assert obj.unknown_tagged_fields == [(0xFFFFFFFF, b"")]
    assert reference.decode("NoOpRecord", raw, 0) == obj
    assert obj.encode(0) == reference.encode(obj, 0) == raw


# ---- encoding -------------------------------------------------------------------------------------


def _struct(message: str, struct: str, **kwargs: Any) -> Any:
    return reference.struct_class(MESSAGES[message], struct)(**kwargs)


class BadValue(NamedTuple):
    id: str
    make: Any  # () -> message object
    version: int
    field: str | None
    reason: str


ENCODE = [
    BadValue("non-default-missing-field", lambda: message_class("PartitionChangeRecord")(directories=[Uuid.random()]),
             0, "PartitionChangeRecord.Directories", "non-default Directories at version 0"),
    BadValue("non-default-tagged-elsewhere", lambda: message_class("PartitionRecord")(eligible_leader_replicas=[1]), 1,
             "PartitionRecord.EligibleLeaderReplicas", "non-default EligibleLeaderReplicas at version 1"),
    BadValue("null-string", lambda: message_class("TopicRecord")(name=None), 0, "TopicRecord.Name", "not nullable"),
    BadValue("null-array", lambda: message_class("PartitionRecord")(replicas=None), 0, "PartitionRecord.Replicas",
             "not nullable"),
    BadValue("null-array-element", lambda: message_class("PartitionRecord")(replicas=[1, None]), 0,
             "PartitionRecord.Replicas[1]", "null"),
    BadValue("null-int", lambda: message_class("PartitionRecord")(leader=None), 0, "PartitionRecord.Leader", "null"),
    BadValue("null-struct-element", lambda: message_class("VotersRecord")(voters=[None]), 0, "VotersRecord.Voters[0]",
             "expected Voter"),
    BadValue("null-tagged-array", lambda: message_class("BrokerHeartbeatRequest")(offline_log_dirs=None), 1,
             "BrokerHeartbeatRequest.OfflineLogDirs", "not nullable"),
    BadValue("string-over-0x7fff", lambda: message_class("TopicRecord")(name="é" * 0x4000), 0, "TopicRecord.Name",
             "32768 bytes is longer than 32767"),
    BadValue("int-out-of-range", lambda: message_class("PartitionRecord")(leader=2**31), 0, "PartitionRecord.Leader",
             "out of range for int32"),
    BadValue("unknown-tag-negative", lambda: message_class("NoOpRecord")(unknown_tagged_fields=[(-1, b"")]), 0,
             "NoOpRecord.unknown_tagged_fields[0]", "does not fit an unsigned varint"),
    BadValue("unknown-version", lambda: message_class("PartitionRecord")(), 3, None, "unsupported version 3"),
]


def _check_encode_error(e: EncodeError, case: BadValue, message: str) -> None:
    assert (e.message, e.version) == (message, case.version)
    assert e.field == case.field
    assert case.reason in e.reason


@pytest.mark.parametrize("case", ENCODE, ids=[c.id for c in ENCODE])
def test_bad_value_is_an_encode_error_naming_the_field(case: BadValue) -> None:
    obj = case.make()
    with pytest.raises(EncodeError) as info:
        obj.encode(case.version)
    _check_encode_error(info.value, case, obj.NAME)
    with pytest.raises(EncodeError) as info:
        reference.encode(obj, case.version)
    _check_encode_error(info.value, case, obj.NAME)


def test_non_default_nested_field_names_its_path() -> None:
    state = _struct("LeaderAndIsrRequest", "LeaderAndIsrPartitionState", leader_recovery_state=1)
    topic = _struct("LeaderAndIsrRequest", "LeaderAndIsrTopicState", topic_name="t", partition_states=[state])
    obj = message_class("LeaderAndIsrRequest")(topic_states=[topic])
    assert reference.decode("LeaderAndIsrRequest", obj.encode(6), 6) == obj  # v6 has LeaderRecoveryState
    with pytest.raises(EncodeError) as info:
        obj.encode(5)
    assert info.value.field == "LeaderAndIsrPartitionState.LeaderRecoveryState"  # the fast path names the struct
    with pytest.raises(EncodeError) as info:
        reference.encode(obj, 5)
    assert info.value.field == "LeaderAndIsrRequest.TopicStates[0].PartitionStates[0].LeaderRecoveryState"


def test_non_default_ignorable_field_is_dropped() -> None:
    cls = message_class("MetadataResponse")
    # v0 has neither ThrottleTimeMs, ClusterId nor ControllerId; all three are ignorable
    obj = cls(throttle_time_ms=5, cluster_id="c", controller_id=3)
    assert obj.encode(0) == reference.encode(obj, 0) == cls().encode(0)
    back = cls.decode(obj.encode(0), 0)
    assert (back.throttle_time_ms, back.cluster_id, back.controller_id) == (0, None, -1)


# Values struct.pack would let through silently (the fast path once did); Kafka refuses them.


def test_null_bool_is_an_encode_error() -> None:
    # struct packs None as a false '?'
    case = BadValue("null-bool", lambda: message_class("BrokerHeartbeatRequest")(want_fence=None), 0,
                    "BrokerHeartbeatRequest.WantFence", "null")
    test_bad_value_is_an_encode_error_naming_the_field(case)


def test_uuid_of_wrong_length_is_an_encode_error() -> None:
    # struct's '16s' pads b"abc" with zeros (and cuts longer values)
    case = BadValue("short-uuid", lambda: message_class("TopicRecord")(name="t", topic_id=b"abc"), 0,
                    "TopicRecord.TopicId", "a uuid is 16 bytes")
    test_bad_value_is_an_encode_error_naming_the_field(case)


def test_unknown_tagged_fields_at_a_version_without_tags_are_an_encode_error() -> None:
    # Kafka throws "Tagged fields were set, but version 1 of this message does not support them".
    case = BadValue("tags-not-flexible", lambda: message_class("RequestHeader")(unknown_tagged_fields=[(1, b"x")]),
                    1, "RequestHeader.unknown_tagged_fields", "does not support them")
    test_bad_value_is_an_encode_error_naming_the_field(case)
