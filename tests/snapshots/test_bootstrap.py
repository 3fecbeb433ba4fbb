"""bootstrap.checkpoint as kafka-storage format writes it (BootstrapDirectory.writeBinaryFile, BatchFileWriter)
and as Kafka reads it (BatchFileReader). No Kafka-written bootstrap.checkpoint is among the vectors: the file is
checked against Kafka's snapshot vector, whose format BatchFileWriter shares but for the leader epoch (0) and the
header's lastContainedLogTimestamp (0)."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from metalog.errors import LogError, SnapshotError
from metalog.log.reader import read_file_batches
from metalog.log.snapshot_files import SnapshotId
from metalog.snapshots import SnapshotReader
from metalog.snapshots.bootstrap import BOOTSTRAP_FILE, read_bootstrap, write_bootstrap
from metalog.snapshots.writer import SnapshotHeader, SnapshotWriter
from metalog.state.features import bootstrap_records

KAFKA_SNAPSHOT = "snapshot-kraft-v0/00000000000000000025-0000000001.checkpoint"
_EPOCH, _CRC, _CRC_FROM = 12, 17, 21  # partitionLeaderEpoch and crc in a RecordBatch header; the CRC covers 21..


def as_batch_file_writer_writes_it(snapshot: bytes, last_contained: int) -> bytes:
    """Kafka's snapshot made into what BatchFileWriter writes for the same records at the same time: every batch's
    partitionLeaderEpoch 0, the header's lastContainedLogTimestamp 0, each CRC-32C computed again."""
    out = bytearray()
    for batch in read_file_batches_bytes(snapshot):
        b = bytearray(batch)
        b[_EPOCH:_EPOCH + 4] = struct.pack(">i", 0)
        stamp = struct.pack(">q", last_contained)
        if stamp in b:  # the SnapshotHeaderRecord's value
            b[b.index(stamp):b.index(stamp) + 8] = struct.pack(">q", 0)
        b[_CRC:_CRC + 4] = struct.pack(">I", crc32c.crc32c(bytes(b[_CRC_FROM:])))
        out += b
    return bytes(out)


def read_file_batches_bytes(data: bytes) -> list[bytes]:
    batches, at = [], 0
    while at < len(data):
        size = 12 + struct.unpack_from(">i", data, at + 8)[0]
        batches.append(data[at:at + size])
        at += size
    return batches


def test_the_file_is_kafkas_snapshot_format_with_epoch_0_and_no_timestamp(tmp_path: Path, jbod_dir: Path) -> None:
    kafka = (jbod_dir / KAFKA_SNAPSHOT).read_bytes()
    reader = SnapshotReader(jbod_dir / KAFKA_SNAPSHOT)
    header = reader.verify().header
    assert header is not None
    values = [r.value for r in SnapshotReader(jbod_dir / KAFKA_SNAPSHOT).records()]
    path = write_bootstrap(tmp_path, values, time_ms=1700000060000)  # type: ignore[arg-type]
    assert path == tmp_path / BOOTSTRAP_FILE
    assert path.read_bytes() == as_batch_file_writer_writes_it(kafka, header.last_contained_log_timestamp)
    assert not (tmp_path / (BOOTSTRAP_FILE + ".tmp")).exists()


def test_a_release_bootstrap_reads_back_as_kafka_reads_it(tmp_path: Path) -> None:
    path = write_bootstrap(tmp_path, bootstrap_records(25), time_ms=5)
    batches = list(read_file_batches(path))
    assert [(b.base_offset, b.last_offset, b.is_control, b.partition_leader_epoch, b.max_timestamp)
            for b in batches] == [(0, 0, True, 0, 5), (1, 3, False, 0, 5), (4, 4, True, 0, 5)]
    assert [(r.name, r.feature_level) for r in read_bootstrap(path)] == [
        ("metadata.version", 25), ("group.version", 1), ("transaction.version", 2)]
    summary = SnapshotReader(path).verify()
    assert summary.header is not None and summary.header.last_contained_log_timestamp == 0
    assert summary.footer is not None and summary.kraft_version == 0 and summary.voters is None


def test_an_existing_file_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / BOOTSTRAP_FILE).write_bytes(b"someone else's")
    with pytest.raises(SnapshotError, match="already exists"):
        write_bootstrap(tmp_path, bootstrap_records(21))
    assert (tmp_path / BOOTSTRAP_FILE).read_bytes() == b"someone else's"


def test_kafkas_reader_refuses_control_records_other_than_header_footer_and_leader_change(tmp_path: Path) -> None:
    """BatchFileReader.nextControlBatch: "Unsupported control record type" for anything else."""
    with SnapshotWriter(tmp_path, SnapshotId(0, 0), SnapshotHeader(last_contained_log_timestamp=0, kraft_version=1),
                        file_name=BOOTSTRAP_FILE) as w:
        w.append(bootstrap_records(21))
        w.freeze()
    with pytest.raises(SnapshotError, match="control record KRAFT_VERSION in batch 0: Kafka reads none"):
        read_bootstrap(tmp_path / BOOTSTRAP_FILE)


def test_a_torn_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write_bootstrap(tmp_path, bootstrap_records(21), time_ms=5)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(LogError) as e:
        read_bootstrap(path)
    assert str(path) in str(e.value) and "truncated" in str(e.value)
