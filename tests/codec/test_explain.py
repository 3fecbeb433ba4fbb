"""``explain``: a byte-by-byte dissection whose rows account for every input byte, in order."""

from __future__ import annotations

from dataclasses import replace

import pytest

from metalog.codec import message_class
from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.explain import ExplainRow, explain, explain_framed, render_table
from metalog.codec.framing import encode_metadata_record
from tests.codec.test_reference import CASES
from tests.conftest import load_vectors

VECTORS = load_vectors()


def _vector(group: str, name: str) -> tuple[str, int, bytes]:
    r = next(r for r in VECTORS[group] if r["name"] == name)
    return r["message"], r["version"], bytes.fromhex(r["hex"])


def _owned(rows: list[ExplainRow]) -> list[ExplainRow]:
    return [r for r in rows if r.role != "struct"]


def assert_rows_cover(rows: list[ExplainRow], raw: bytes) -> None:
    """Byte-owning rows are contiguous from 0, their hex is their span, and together they are the input."""
    at = 0
    for r in _owned(rows):
        assert r.offset == at, r
        assert r.hex == raw[r.offset:r.offset + r.length].hex(), r
        at += r.length
    assert at == len(raw)
    assert "".join(r.hex for r in rows) == raw.hex()


@pytest.mark.parametrize(("case", "name", "version", "hex_"), CASES, ids=[c[0] for c in CASES])
def test_every_vector_is_fully_explained(case: str, name: str, version: int, hex_: str) -> None:
    raw = bytes.fromhex(hex_)
    rows = explain(name, version, raw)
    assert_rows_cover(rows, raw)
    assert all(r.role != "error" for r in rows)


def test_partition_record_rows() -> None:
    name, version, raw = _vector("metadataRecords", "Partition-v2-elr")
    rows = explain(name, version, raw)
    by = {(r.path, r.role): r for r in rows}
    expected = {
        ("PartitionRecord.PartitionId", "value"): (0, 4, "int32", "2"),
        ("PartitionRecord.TopicId", "value"): (4, 16, "uuid", "UXyU9i5ARn6W00ON2taeWA"),
        ("PartitionRecord.Replicas", "count"): (20, 1, "uvarint", "3"),
        ("PartitionRecord.Replicas[2]", "value"): (29, 4, "int32", "3"),
        ("PartitionRecord.Isr[0]", "value"): (34, 4, "int32", "1"),
        ("PartitionRecord.Leader", "value"): (40, 4, "int32", "1"),
        ("PartitionRecord.Directories[2]", "value"): (85, 16, "uuid", "bv9TEYi4TqOm52hLmrxT5w"),
        ("PartitionRecord.<tagged fields>", "count"): (101, 1, "uvarint", "2"),
        ("PartitionRecord.EligibleLeaderReplicas", "tag"): (102, 1, "uvarint", "1"),
        ("PartitionRecord.EligibleLeaderReplicas", "size"): (103, 1, "uvarint", "5"),
        ("PartitionRecord.LastKnownElr[0]", "value"): (112, 4, "int32", "3"),
    }
    for key, (offset, length, kind, value) in expected.items():
        r = by[key]
        assert (r.offset, r.length, r.type, r.value) == (offset, length, kind, value), key
    # every field present at v2 appears (LeaderRecoveryState is tagged and at its default here)
    fields = {r.path.split(".")[1].split("[")[0] for r in rows}
    assert fields == {"PartitionId", "TopicId", "Replicas", "Isr", "RemovingReplicas", "AddingReplicas", "Leader",
                      "LeaderEpoch", "PartitionEpoch", "Directories", "<tagged fields>", "EligibleLeaderReplicas",
                      "LastKnownElr"}
    assert by[("PartitionRecord.Replicas[2]", "value")].depth == 1
    assert_rows_cover(rows, raw)


def test_nested_structs_are_rows_with_their_span() -> None:
    name, version, raw = _vector("controlRecordValues", "VotersRecord-v0")
    rows = explain(name, version, raw)
    voter = next(r for r in rows if r.path == "VotersRecord.Voters[0]")
    assert (voter.role, voter.type, voter.hex, voter.depth) == ("struct", "Voter", "", 1)
    inside = [r for r in _owned(rows) if r.path.startswith("VotersRecord.Voters[0].")]
    assert voter.offset == inside[0].offset
    assert voter.offset + voter.length == inside[-1].offset + inside[-1].length
    host = next(r for r in rows if r.path == "VotersRecord.Voters[0].Endpoints[0].Host" and r.role == "value")
    assert (host.type, host.value, host.depth) == ("string", "'localhost'", 4)
    feature = next(r for r in rows if r.path == "VotersRecord.Voters[0].KRaftVersionFeature")
    assert (feature.role, feature.type, feature.length) == ("struct", "KRaftVersionFeature", 5)


def test_unknown_tagged_field_rows() -> None:
    obj = message_class("NoOpRecord")(unknown_tagged_fields=[(7, b"\xaa\xbb")])
    raw = obj.encode(0)
    rows = explain("NoOpRecord", 0, raw)
    assert [(r.path, r.role, r.hex, r.value) for r in rows] == [
        ("NoOpRecord.<tagged fields>", "count", "01", "1"),
        ("NoOpRecord.<tag 7>", "tag", "07", "7"),
        ("NoOpRecord.<tag 7>", "size", "02", "2"),
        ("NoOpRecord.<tag 7>", "value", "aabb", "2 bytes"),
    ]


def test_bad_input_shows_decoded_rows_then_the_error() -> None:
    name, version, raw = _vector("metadataRecords", "Partition-v2-elr")
    cut = raw[:31]  # inside Replicas[2]
    rows = explain(name, version, cut)
    assert_rows_cover(rows, cut)
    error = rows[-1]
    assert (error.role, error.path, error.offset, error.hex) == ("error", "PartitionRecord.Replicas[2]", 29, "0000")
    assert "truncated" in error.value and "at byte 29" in error.value
    assert [r.path for r in rows[:-1]][-1] == "PartitionRecord.Replicas[1]"


def test_unknown_version_is_one_error_row() -> None:
    rows = explain("NoOpRecord", 5, b"\x00")
    assert [(r.role, r.offset, r.length, r.hex) for r in rows] == [("error", 0, 1, "00")]
    assert "unsupported version 5" in rows[0].value


def test_trailing_bytes_are_the_error_row() -> None:
    rows = explain("NoOpRecord", 0, b"\x00\x01\x02")
    assert rows[-1].role == "error" and (rows[-1].offset, rows[-1].hex) == (1, "0102")
    assert "2 trailing bytes" in rows[-1].value


def test_render_table_aligns_and_elides() -> None:
    name, version, raw = _vector("metadataRecords", "Partition-v2-elr")
    obj = message_class(name).decode(raw, version)
    obj.unknown_tagged_fields = [(40, bytes(range(40)))]
    rows = explain(name, version, obj.encode(version))
    lines = render_table(rows).splitlines()
    assert len(lines) == len(rows) + 1
    assert lines[0].split() == ["offset", "len", "field", "type", "hex", "value"]
    type_column = lines[0].index("type")
    assert all(line[type_column - 2:type_column] == "  " for line in lines)  # columns line up
    replicas = next(line for line in lines if "Replicas[2]" in line)
    assert replicas.split() == ["29", "4", "Replicas[2]", "int32", "00000003", "3"]
    assert replicas.index("Replicas[2]") == lines[0].index("field") + 2  # indented one level
    long = next(line for line in lines if "<tag 40>" in line and "40 bytes" in line)
    data = bytes(range(40)).hex()
    assert f"{data[:14]}...{data[-14:]}" in long and data not in long


# ---- --framed: a record value as the metadata log stores it -------------------------------------------------------
@pytest.mark.parametrize(("case", "name", "version", "hex_"), [c for c in CASES if c[1] in {
    spec.name for spec in METADATA_BY_API_KEY.values()}], ids=lambda v: v if isinstance(v, str) else "")
def test_a_framed_record_is_its_frame_then_its_body(case: str, name: str, version: int, hex_: str) -> None:
    body = bytes.fromhex(hex_)
    value = encode_metadata_record(message_class(name).decode(body, version), version)
    rows = explain_framed(value)
    assert_rows_cover(rows, value)
    frame = [(r.path, r.value) for r in rows[:3]]
    api_key = message_class(name).API_KEY
    assert frame == [("frame version", "1"), ("apiKey", f"{api_key} ({name})"), ("version", str(version))]
    shift = len(value) - len(body)
    assert rows[3:] == [replace(r, offset=r.offset + shift) for r in explain(name, version, body)]


@pytest.mark.parametrize(("hex_", "where", "reason"), [
    ("0205", "frame version", "unknown frame version 2 (only frame version 1 is supported)"),
    ("01ff0100", "apiKey", "unknown metadata record type (apiKey) 255"),
    ("010563", "version", "unsupported version 99 of PartitionChangeRecord (valid versions: 0-2)"),
    ("0105", "version", "truncated or malformed unsigned varint"),
])
def test_a_bad_frame_is_an_error_row(hex_: str, where: str, reason: str) -> None:
    rows = explain_framed(bytes.fromhex(hex_))
    assert_rows_cover(rows, bytes.fromhex(hex_))
    assert (rows[-1].role, rows[-1].path, rows[-1].value) == ("error", where, reason)
