"""Properties of every message at every version: the fast path round-trips, agrees with the construct
reference byte for byte and value for value, and meets hostile bytes with DecodeError only.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.codec import message_class, reference
from metalog.errors import DecodeError
from tests.codec.strategies import all_message_versions, is_edge_version, message_objects
from tests.quick import examples

PAIRS = all_message_versions()
IDS = [f"{name}-v{version}" for name, version in PAIRS]
# 121 (message, version) pairs: a modest budget each keeps the whole file well under a minute.
# the largest messages (nested arrays of structs) take long to draw: too_slow would fail them, not metalog
VALID = settings(max_examples=examples(25), suppress_health_check=[HealthCheck.too_slow])
HOSTILE = settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])
EDGE_VERSIONS = pytest.mark.subset(keep=is_edge_version)  # the quick loop: each message's first and last version


@EDGE_VERSIONS
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
def test_round_trip_and_reference_agree(name: str, version: int) -> None:
    cls = message_class(name)

    @VALID
    @given(message_objects(name, version))
    def check(obj: Any) -> None:
        raw = obj.encode(version)
        assert reference.encode(obj, version) == raw, "fast and reference bytes differ"
        decoded = cls.decode(raw, version)
        assert decoded == obj, "decode(encode(x)) != x"
        assert reference.decode(name, raw, version) == decoded, "reference decodes differently"

    check()


def _mutate(raw: bytes, data: st.DataObject) -> bytes:
    """One to three edits of the kinds that break Kafka framing: bit flips, cuts, insertions, deletions."""
    buf = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete", "poke"]), label="kind")
        at = data.draw(st.integers(0, len(buf)), label="at")
        if kind == "flip" and at < len(buf):
            buf[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif kind == "truncate":
            del buf[at:]
        elif kind == "insert":
            buf[at:at] = data.draw(st.binary(min_size=1, max_size=6), label="inserted")
        elif kind == "delete":
            del buf[at:at + data.draw(st.integers(1, 4), label="deleted")]
        elif kind == "poke" and at < len(buf):  # values that matter to lengths and varints
            buf[at] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]), label="byte")
    return bytes(buf)


def _outcome(decode: Any) -> tuple[str, Any]:
    try:
        return "ok", decode()
    except DecodeError as e:
        return "error", e


def check_hostile(name: str, version: int, raw: bytes) -> None:
    """``Cls.decode`` raises nothing but a located DecodeError, and agrees with the reference."""
    cls = message_class(name)
    fast = _outcome(lambda: cls.decode(raw, version))
    ref = _outcome(lambda: reference.decode(name, raw, version))
    assert fast[0] == ref[0], f"fast: {fast[1]!r}, reference: {ref[1]!r}, input {raw.hex()}"
    if fast[0] == "error":
        err = fast[1]
        assert err.field is not None or err.offset is not None, f"unlocated error {err}"
        return
    # repr, not ==, so that a NaN float64 decoded by both counts as equal
    assert repr(fast[1]) == repr(ref[1])
    again = fast[1].encode(version)  # whatever decodes must encode, and then round-trip exactly
    assert cls.decode(again, version).encode(version) == again


@EDGE_VERSIONS
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
def test_hostile_bytes_give_decode_error_only(name: str, version: int) -> None:
    @HOSTILE
    @given(st.data())
    def check(data: st.DataObject) -> None:
        if data.draw(st.integers(0, 3), label="source") == 0:
            raw = data.draw(st.binary(max_size=64), label="random")
        else:
            valid = data.draw(message_objects(name, version), label="valid").encode(version)
            raw = _mutate(valid, data)
        check_hostile(name, version, raw)

    check()
