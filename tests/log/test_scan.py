"""The fast scan gives exactly what the general batch reader gives, and refuses what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.errors import CorruptBatchError, LogError
from metalog.log import MetadataLog, Record, build_batch, iter_batches
from metalog.log.scan import scan_values

TS = 1700000000000


def general(data: bytes) -> list[tuple[int, int, int, bool, list[bytes | None]]]:
    return [(b.base_offset, b.last_offset, b.max_timestamp, b.is_control, [r.value for r in b.records()])
            for b in iter_batches(data)]


record_values = st.one_of(st.none(), st.binary(max_size=300))
records = st.lists(st.tuples(record_values, st.one_of(st.none(), st.binary(max_size=4)),
                             st.lists(st.tuples(st.text(max_size=3), st.binary(max_size=3)), max_size=2),
                             st.integers(0, 5)), min_size=1, max_size=5)


@settings(max_examples=80, deadline=None)
@given(batches=st.lists(st.tuples(records, st.sampled_from(["none", "gzip"]), st.booleans()), min_size=1,
                        max_size=5))
def test_scan_equals_the_general_reader(batches: list) -> None:  # type: ignore[type-arg]
    data, offset = b"", 0
    for recs, compression, control in batches:
        built = [Record(offset + i, TS + ts, key, value, tuple(headers)) for i, (value, key, headers, ts) in
                 enumerate(recs)]
        data += build_batch(offset, built, compression=compression, is_control=control, partition_leader_epoch=1)
        offset += len(recs)
    assert list(scan_values(data, 0, len(data), "x")) == general(data)


def test_scan_of_kafkas_segment(jbod_dir: Path) -> None:
    with MetadataLog.open(jbod_dir, writable=False) as log:
        scanned = list(log.scan())
        expected = [(b.base_offset, b.last_offset, b.max_timestamp, b.is_control, [r.value for r in b.records()])
                    for b in log.batches()]
        assert scanned == expected
        assert [s[0] for s in log.scan(13)] == [13, 15, 17, 21]


def test_a_bad_crc_is_refused_with_its_position(jbod_dir: Path) -> None:
    data = bytearray((jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes())
    data[91 + 70] ^= 0x01  # inside the second batch's records
    with pytest.raises(CorruptBatchError, match="CRC-32C mismatch") as e:
        list(scan_values(bytes(data), 0, len(data), "seg.log"))
    assert e.value.position == 91 + 17 and e.value.file == "seg.log"


def test_a_batch_past_the_valid_end_is_refused(jbod_dir: Path) -> None:
    data = (jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    with pytest.raises(LogError, match="past the end"):
        list(scan_values(data, 0, 100, "seg.log"))  # the second batch starts at 91 and is 103 bytes
