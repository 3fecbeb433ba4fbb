"""Every Kafka-written vector through the construct reference: same object as the fast path, same bytes back."""

from __future__ import annotations

import pytest

from metalog.codec import message_class, reference
from tests.conftest import load_codec_random, load_vectors

VECTORS = load_vectors()


def _cases() -> list[tuple[str, str, int, str]]:
    rows = []
    for group in ("metadataRecords", "rpcs", "controlRecordValues"):
        for r in VECTORS[group]:
            if "hex" in r:
                rows.append((f"{group}:{r['name']}", r["message"], r["version"], r["hex"]))
            if "headerHex" in r:
                rows.append((f"{group}:{r['name']}:header", "RequestHeader", r["requestHeaderVersion"], r["headerHex"]))
    for i, r in enumerate(load_codec_random()):
        rows.append((f"random:{i}:{r['name']}:v{r['version']}", r["name"], r["version"], r["hex"]))
    return rows


CASES = _cases()


@pytest.mark.parametrize(("case", "name", "version", "hex_"), CASES, ids=[c[0] for c in CASES])
def test_reference_matches_kafka_and_fast_path(case: str, name: str, version: int, hex_: str) -> None:
    raw = bytes.fromhex(hex_)
    fast = message_class(name).decode(raw, version)
    ref = reference.decode(name, raw, version)
    assert type(ref) is type(fast)
    assert ref == fast
    assert reference.encode(ref, version) == raw
    assert reference.encode(fast, version) == raw
    assert reference.find_decode_error(name, raw, version) is None
    assert reference.find_encode_error(fast, version) is None


def test_vectors_cover_every_message_at_every_version() -> None:
    from tests.codec.strategies import all_message_versions

    covered = {(name, version) for _, name, version, _ in CASES}
    assert set(all_message_versions()) <= covered


def test_constructs_are_built_once_per_message_version() -> None:
    assert reference.construct_for("PartitionRecord", 1) is reference.construct_for("PartitionRecord", 1)
    assert reference.construct_for("PartitionRecord", 1) is not reference.construct_for("PartitionRecord", 2)


def test_decoded_nested_structs_are_the_generated_classes() -> None:
    r = next(r for r in VECTORS["controlRecordValues"] if r["message"] == "VotersRecord")
    voters = reference.decode("VotersRecord", bytes.fromhex(r["hex"]), r["version"])
    module = type(voters).__module__
    voter = voters.voters[0]
    assert type(voter).__module__ == module and type(voter).__name__ == "Voter"
    assert type(voter.endpoints[0]).__name__ == "Endpoint"
    assert type(voter.k_raft_version_feature).__name__ == "KRaftVersionFeature"


def test_fields_a_version_lacks_decode_to_fresh_defaults() -> None:
    # PartitionRecord v0 has no Directories: the default is an empty list, a new one per object
    raw = message_class("PartitionRecord")(partition_id=7).encode(0)
    a = reference.decode("PartitionRecord", raw, 0)
    b = reference.decode("PartitionRecord", raw, 0)
    assert a.directories == [] and a.directories is not b.directories
    assert a.eligible_leader_replicas is None  # Kafka's "default": "null"
    assert a.leader == -1 and a.partition_epoch == -1


def test_unknown_tagged_fields_merge_with_known_ones_in_tag_order() -> None:
    cls = message_class("PartitionChangeRecord")
    obj = cls(partition_id=1, leader=3, isr=[1], unknown_tagged_fields=[(9, b"\x01"), (0x7F, b"")])
    raw = reference.encode(obj, 0)
    assert raw == obj.encode(0)
    # after the fixed fields, 4 tagged fields as (tag, size, data): Isr 0, Leader 1, then unknown 9 and 127
    tail = raw[20:]
    assert tail == bytes.fromhex("04" "00" "05" "0200000001" "01" "04" "00000003" "09" "01" "01" "7f" "00")
    back = reference.decode("PartitionChangeRecord", raw, 0)
    assert back.unknown_tagged_fields == [(9, b"\x01"), (0x7F, b"")]
    assert back == obj
