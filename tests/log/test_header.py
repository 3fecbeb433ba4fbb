"""The batch header's layout has one home, ``metalog.log.header``: its named offsets are where Kafka's
DefaultRecordBatch puts each field, every reader takes them from there, and a compiled twin built with other
offsets is refused when it loads (it runs its pure twin, and the status line names it)."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from types import ModuleType

import pytest

from metalog.codec import core
from metalog.log import header, reader, scan
from metalog.log.batch import Record, RecordBatch
from metalog.log.builder import BatchFields, build_batch

COMPILED = Path(header.__file__).parent / "compiled"
KAFKA = {  # DefaultRecordBatch's *_OFFSET constants and Records.LOG_OVERHEAD, as Kafka defines them
    "BASE_OFFSET_OFFSET": 0, "LENGTH_OFFSET": 8, "PARTITION_LEADER_EPOCH_OFFSET": 12, "MAGIC_OFFSET": 16,
    "CRC_OFFSET": 17, "ATTRIBUTES_OFFSET": 21, "LAST_OFFSET_DELTA_OFFSET": 23, "BASE_TIMESTAMP_OFFSET": 27,
    "MAX_TIMESTAMP_OFFSET": 35, "PRODUCER_ID_OFFSET": 43, "PRODUCER_EPOCH_OFFSET": 51, "BASE_SEQUENCE_OFFSET": 53,
    "RECORDS_COUNT_OFFSET": 57, "RECORDS_OFFSET": 61, "LOG_OVERHEAD": 12, "MIN_BATCH_LENGTH": 49, "MAGIC": 2,
}


def test_the_layout_is_kafkas_and_the_header_struct_agrees() -> None:
    assert header.LAYOUT == KAFKA
    named = [header.BASE_OFFSET_OFFSET, header.LENGTH_OFFSET, header.PARTITION_LEADER_EPOCH_OFFSET, header.MAGIC_OFFSET,
             header.CRC_OFFSET, header.ATTRIBUTES_OFFSET, header.LAST_OFFSET_DELTA_OFFSET, header.BASE_TIMESTAMP_OFFSET,
             header.MAX_TIMESTAMP_OFFSET, header.PRODUCER_ID_OFFSET, header.PRODUCER_EPOCH_OFFSET,
             header.BASE_SEQUENCE_OFFSET, header.RECORDS_COUNT_OFFSET]
    assert header.field_offsets() == named
    assert header.HEADER.size == header.HEADER_SIZE == header.RECORDS_OFFSET
    assert header.HEADER_SIZE_UP_TO_MAGIC == header.MAGIC_OFFSET + 1


def test_a_batch_reads_its_fields_at_the_named_offsets() -> None:
    data = build_batch(1234, [Record(1234, 99, None, b"v"), Record(1235, 99, None, b"w")],
                       BatchFields(partition_leader_epoch=7, producer_id=5, producer_epoch=3, base_sequence=11))
    batch = RecordBatch(data)

    def at(offset: int, fmt: str) -> int:
        value: int = struct.unpack_from(f">{fmt}", data, offset)[0]
        return value

    assert batch.base_offset == at(header.BASE_OFFSET_OFFSET, "q")
    assert batch.batch_length == at(header.LENGTH_OFFSET, "i") == len(data) - header.LOG_OVERHEAD
    assert batch.partition_leader_epoch == at(header.PARTITION_LEADER_EPOCH_OFFSET, "i") == 7
    assert batch.magic == at(header.MAGIC_OFFSET, "b") == header.MAGIC
    assert batch.crc == at(header.CRC_OFFSET, "I")
    assert batch.last_offset_delta == at(header.LAST_OFFSET_DELTA_OFFSET, "i") == 1
    assert batch.producer_id == at(header.PRODUCER_ID_OFFSET, "q") == 5
    assert batch.producer_epoch == at(header.PRODUCER_EPOCH_OFFSET, "h") == 3
    assert batch.base_sequence == at(header.BASE_SEQUENCE_OFFSET, "i") == 11
    assert batch.records_count == at(header.RECORDS_COUNT_OFFSET, "i") == 2


def test_the_scans_own_struct_reads_the_header_at_the_named_offsets() -> None:
    """scan.py's ``_HEAD_AND_RECORD`` skips the fields it does not read: what it reads lies where the layout says."""
    fmt = scan._HEAD_AND_RECORD.format.lstrip(">")
    offsets, at = [], 0
    for code in re.findall(r"\d*[a-zA-Z]", fmt):
        if not code.endswith("x"):
            offsets.append(at)
        at += struct.calcsize(f">{code}")
    assert offsets[:8] == [header.BASE_OFFSET_OFFSET, header.LENGTH_OFFSET, header.PARTITION_LEADER_EPOCH_OFFSET,
                           header.MAGIC_OFFSET, header.CRC_OFFSET, header.ATTRIBUTES_OFFSET,
                           header.LAST_OFFSET_DELTA_OFFSET, header.MAX_TIMESTAMP_OFFSET]
    assert offsets[8] == header.RECORDS_COUNT_OFFSET and offsets[9] == header.HEADER_SIZE


@pytest.mark.parametrize("pyx", ["reader.pyx", "scan.pyx"])
def test_the_compiled_twins_name_every_header_offset(pyx: str) -> None:
    """No header offset is a bare number in a compiled twin: each is one of the named constants it exports as LAYOUT
    (``p + off + 23`` was ``LAST_OFFSET_DELTA_OFFSET``), so the check at load covers every one it reads."""
    source = (COMPILED / pyx).read_text()
    body = source[source.index('include "_header.pxi"'):]  # the constants come from the one layout file
    assert not re.findall(r"\b(?:p|h) \+ (?:pos \+ |off \+ )?\d+\b|\bh\[\d+\]|\bpos \+ (?:12|21)\b", body)
    layout = (COMPILED / "_header.pxi").read_text()
    named = set(re.findall(r"^    ([A-Z_]+) = ", layout[:layout.index("LAYOUT = {")], re.M))
    assert named and named <= set(KAFKA), named - set(KAFKA)


@pytest.mark.skipif(reader.NEXT_BATCHES.loaded is None or scan.SCAN_INTO.loaded is None,
                    reason="the compiled log core does not run here")
def test_the_built_twins_were_built_with_this_layout() -> None:
    for twin in (reader.NEXT_BATCHES, scan.SCAN_INTO):
        assert twin.loaded is not None
        assert header.check_layout(twin.loaded) is None
        assert twin.loaded.LAYOUT.items() <= header.LAYOUT.items()


def test_a_build_with_another_layout_or_none_is_refused() -> None:
    stale = ModuleType("metalog.log.compiled.stale")
    assert header.check_layout(stale) == "metalog.log.compiled.stale has no LAYOUT (built before metalog.log.header)"
    stale.LAYOUT = {**KAFKA, "RECORDS_COUNT_OFFSET": 53, "CRC_OFFSET": 17}  # type: ignore[attr-defined]
    assert header.check_layout(stale) == ("metalog.log.compiled.stale was built with another batch header layout "
                                          "(RECORDS_COUNT_OFFSET)")
    stale.LAYOUT = {"CRC_OFFSET": 17}  # type: ignore[attr-defined]
    assert header.check_layout(stale) is None
    assert core.pure_requested() or header.check_layout(scan.SCAN_INTO.loaded or stale) is None
