"""Kafka snapshots: written byte-identical to Kafka's, read with header and footer checked."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.codec import Uuid, message_class
from metalog.codec.framing import decode_metadata_record
from metalog.errors import SnapshotError
from metalog.log import MetadataLog, Mode
from metalog.log.builder import build_control_batch, build_data_batch
from metalog.log.control import encode_control
from metalog.log.dump import kafka_type_name
from metalog.snapshots import (
    SnapshotHeader,
    SnapshotId,
    SnapshotReader,
    SnapshotWriter,
    list_snapshots,
    parse_name,
)

NAME = "00000000000000000025-0000000001.checkpoint"


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_written_exactly_as_kafka_writes(jbod_dir, tmp_path, kafka_vectors, kraft_version):
    kafka_file = jbod_dir / f"snapshot-kraft-v{kraft_version}" / NAME
    image = kafka_vectors["scenarioJbod"]["imageRecords"]
    records = [(message_class(_spec(r["type"])).from_json(r["data"], r["version"]), r["version"]) for r in image]
    header = SnapshotHeader(last_contained_log_timestamp=1700000008000, kraft_version=kraft_version)
    with SnapshotWriter(tmp_path, SnapshotId(25, 1), header, time_ms=1700000060000) as writer:
        writer.append(records)
        path = writer.freeze()
    assert path == tmp_path / NAME and not (tmp_path / (NAME + ".part")).exists()
    assert path.read_bytes() == kafka_file.read_bytes()


def _spec(kafka_type: str) -> str:
    from metalog.codec.definitions import METADATA_BY_API_KEY

    return next(m.name for m in METADATA_BY_API_KEY.values() if kafka_type_name(m.name) == kafka_type)


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_reads_kafkas_snapshot_data_records_equal_image_records(jbod_dir, kafka_vectors, kraft_version):
    reader = SnapshotReader(jbod_dir / f"snapshot-kraft-v{kraft_version}" / NAME)
    assert reader.snapshot_id == SnapshotId(25, 1)
    got = []
    for rec in reader.records():
        decoded = decode_metadata_record(rec.value)
        got.append({"type": kafka_type_name(decoded.message.NAME), "version": decoded.version,
                    "data": decoded.message.to_json(decoded.version)})
    assert got == kafka_vectors["scenarioJbod"]["imageRecords"]
    summary = reader.verify()
    assert (summary.kraft_version, summary.records, summary.batches, summary.epochs) == (kraft_version, 9, 3, {1})
    assert summary.header.last_contained_log_timestamp == 1700000008000 and summary.footer.version == 0


def test_voters_record_in_the_header_batch_at_kraft_version_1(tmp_path):
    voters = message_class("VotersRecord").from_json(
        {"version": 0, "voters": [{"voterId": 3000, "voterDirectoryId": "upjfkCrUR9GNn1i94ip1wg",
                                   "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                                   "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}, 0)
    header = SnapshotHeader(last_contained_log_timestamp=5, kraft_version=1, voters=voters)
    with SnapshotWriter(tmp_path, SnapshotId(7, 2), header, time_ms=9) as w:
        w.append([bytes.fromhex("01140000")] * 3)
        path = w.freeze()
    batches = list(SnapshotReader(path).batches())
    assert [c.type.name for c in batches[0][1]] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
    assert batches[0][1][2].message == voters
    assert [b.base_offset for b, _ in batches] == [0, 3, 6]
    assert all(b.partition_leader_epoch == 2 and b.max_timestamp == 9 for b, _ in batches)


def test_voters_at_kraft_version_0_are_refused_before_any_file_is_written(tmp_path):
    """A snapshot at kraft.version 0 has no VotersRecord: voters given for one are refused (Kafka's
    RecordsSnapshotWriter.Builder refuses them too), not dropped without a word."""
    voters = message_class("VotersRecord")(version=0, voters=[])
    with pytest.raises(SnapshotError, match="a snapshot at kraft.version 0 has no VotersRecord: voters need "
                                            "kraft.version 1"):
        SnapshotWriter(tmp_path, SnapshotId(7, 2), SnapshotHeader(last_contained_log_timestamp=5, voters=voters))
    assert list(tmp_path.iterdir()) == []


def _write_raw(path: Path, batches: list[bytes]) -> Path:
    path.write_bytes(b"".join(batches))
    return path


def _header(offset: int = 0) -> bytes:
    msg = message_class("SnapshotHeaderRecord")(version=0, last_contained_log_timestamp=1)
    return build_control_batch(offset, [encode_control(msg)], epoch=1, timestamp=1)


def _footer(offset: int) -> bytes:
    return build_control_batch(offset, [encode_control(message_class("SnapshotFooterRecord")(version=0))], epoch=1,
                               timestamp=1)


def test_reader_rejects_a_snapshot_without_footer_or_header(tmp_path):
    data = build_data_batch(1, [b"\x01\x14\x00\x00"], epoch=1, timestamp=1)
    no_footer = _write_raw(tmp_path / NAME, [_header(), data])
    with pytest.raises(SnapshotError, match="no SnapshotFooterRecord"):
        list(SnapshotReader(no_footer).records())
    no_header = _write_raw(tmp_path / "a.checkpoint", [build_data_batch(0, [b"\x01\x14\x00\x00"], epoch=1,
                                                                        timestamp=1), _footer(1)])
    with pytest.raises(SnapshotError, match="first batch must be a control batch"):
        SnapshotReader(no_header).verify()
    gap = _write_raw(tmp_path / "b.checkpoint", [_header(), build_data_batch(5, [b"x"], epoch=1, timestamp=1)])
    with pytest.raises(SnapshotError, match="baseOffset 5, expected 1"):
        SnapshotReader(gap).verify()
    empty = _write_raw(tmp_path / "c.checkpoint", [])
    with pytest.raises(SnapshotError, match="empty"):
        SnapshotReader(empty).verify()


def test_names_and_leftovers(tmp_path):
    assert SnapshotId(25, 1).file_name == NAME
    assert parse_name(NAME) == (SnapshotId(25, 1), "")
    assert parse_name(NAME + ".part") == (SnapshotId(25, 1), ".part")
    assert parse_name("0025-1.checkpoint") is None
    with MetadataLog.open(tmp_path, Mode.CREATE) as log:
        writer = SnapshotWriter(log.directory, SnapshotId(1, 1), SnapshotHeader(last_contained_log_timestamp=0))
        writer.append([b"\x01\x14\x00\x00"])  # never frozen: a crash leaves the .part behind
        assert list_snapshots(log.directory) == []
    with MetadataLog.open(tmp_path, Mode.WRITE) as log:
        assert any(c.endswith(".checkpoint.part") for c in log.recovery.cleaned)
        assert log.snapshot_ids() == []
    with pytest.raises(SnapshotError, match="already exists"):
        with SnapshotWriter(tmp_path, SnapshotId(2, 1), SnapshotHeader(last_contained_log_timestamp=0)) as w:
            w.freeze()
        SnapshotWriter(tmp_path, SnapshotId(2, 1), SnapshotHeader(last_contained_log_timestamp=0))


def test_batches_split_at_the_size_limit(tmp_path):
    values = [bytes([i]) * 1000 for i in range(50)]
    with SnapshotWriter(tmp_path, SnapshotId(50, 3), SnapshotHeader(last_contained_log_timestamp=1),
                        max_batch_bytes=8000) as w:
        w.append(values)
        path = w.freeze()
    batches = list(SnapshotReader(path).batches())
    data = [b for b, controls in batches if controls is None]
    assert len(data) > 5 and all(b.size_in_bytes <= 8000 + 61 for b in data)
    assert [r.value for r in SnapshotReader(path).records()] == values


@given(values=st.lists(st.binary(min_size=1, max_size=200), max_size=40), end=st.integers(0, 10**12),
       epoch=st.integers(0, 10**9), kraft_version=st.sampled_from([0, 1]), ts=st.integers(0, 2**40))
def test_snapshot_write_read_round_trip(values, end, epoch, kraft_version, ts):
    with tempfile.TemporaryDirectory() as d:
        sid = SnapshotId(end, epoch)
        with SnapshotWriter(d, sid, SnapshotHeader(last_contained_log_timestamp=ts, kraft_version=kraft_version),
                            max_batch_bytes=1000) as w:
            w.append(values)
            path = w.freeze()
        assert list_snapshots(Path(d)) == [sid]
        reader = SnapshotReader(path)
        assert [r.value for r in reader.records()] == values
        summary = reader.verify()
        assert summary.header.last_contained_log_timestamp == ts and summary.kraft_version == kraft_version
        assert summary.records == len(values) and summary.snapshot_id == sid


def test_uuid_helper_is_kafkas_metadata_topic_id():
    from metalog.log.files import METADATA_TOPIC_ID

    assert Uuid.of(0, 1) == METADATA_TOPIC_ID and str(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
