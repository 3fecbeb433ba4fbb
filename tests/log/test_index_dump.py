"""``.index`` and ``.timeindex`` dumps as Kafka's DumpLogSegments prints them (dumpIndex, dumpTimeIndex), with
the mismatches it reports against the segment. No Kafka-written index ships with the vectors (Kafka's files
there are a segment and snapshots): the files here are metalog's, written as Kafka writes them, and copies
damaged as a crash or a bug would leave them, and padded with zeros as Kafka's preallocated files are."""

from __future__ import annotations

import io
import struct
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from metalog.cli.main import main
from metalog.codec import Uuid, message_class
from metalog.log import LogConfig, MetadataLog, Mode
from metalog.log.index import OFFSET_ENTRY, TIME_ENTRY

TS = 1_700_000_000_000


def dump(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["log", "dump", *argv])
    return code, out.getvalue(), err.getvalue()


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    """A metalog-written segment whose indexes have several entries (an entry every 100 bytes)."""
    t = Uuid.of(1, 1)
    with MetadataLog.open(tmp_path / "log", Mode.CREATE, config=LogConfig(index_interval_bytes=100)) as log:
        for i in range(30):
            log.append([(rec("ConfigRecord", resource_type=2, resource_name="t", name="k", value=str(i)), 0),
                        (rec("TopicRecord", name=f"t{i}", topic_id=t), 0)][:1 + i % 2], timestamp=TS + i * 1000)
    return tmp_path / "log" / "__cluster_metadata-0" / "00000000000000000000.log"


def entries(path: Path, entry: struct.Struct) -> list[tuple[int, int]]:
    return list(entry.iter_unpack(path.read_bytes()))


def test_offset_index_entries_and_no_mismatch(segment: Path) -> None:
    index = segment.with_suffix(".index")
    expected = entries(index, OFFSET_ENTRY)
    assert len(expected) > 5
    code, out, err = dump(str(index))
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"Dumping {index}"] + [f"offset: {o} position: {p}" for o, p in expected]


def test_time_index_entries_and_no_mismatch(segment: Path) -> None:
    index = segment.with_suffix(".timeindex")
    expected = entries(index, TIME_ENTRY)
    assert len(expected) > 5
    code, out, err = dump(str(index))
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"Dumping {index}"] + [f"timestamp: {t} offset: {o}" for t, o in expected]


def test_an_offset_index_entry_that_names_the_wrong_batch_is_a_mismatch(segment: Path) -> None:
    index = segment.with_suffix(".index")
    raw = bytearray(index.read_bytes())
    offset, position = OFFSET_ENTRY.unpack_from(raw, 16)
    OFFSET_ENTRY.pack_into(raw, 16, offset + 1, position)  # the batch at that position ends at ``offset``
    index.write_bytes(bytes(raw))
    code, out, err = dump(str(index))
    assert code == 1 and f"offset: {offset + 1} position: {position}" in out
    assert err.splitlines() == [f"Mismatches in :{index.resolve()}",
                                f"  Index offset: {offset + 1}, log offset: {offset}"]
    code, out, err = dump("--verify-index-only", str(index))
    assert code == 1 and out == f"Dumping {index}\n" and err.count("Index offset") == 1


def test_time_index_mismatch_out_of_order_and_not_found(segment: Path) -> None:
    index = segment.with_suffix(".timeindex")
    raw = bytearray(index.read_bytes())
    t1, o1 = TIME_ENTRY.unpack_from(raw, 12)
    TIME_ENTRY.pack_into(raw, 12, t1 + 7, o1)  # not the batch's largest timestamp
    t2, o2 = TIME_ENTRY.unpack_from(raw, 24)
    TIME_ENTRY.pack_into(raw, 24, t2, o2 + 1)  # an offset that does not end a batch
    t3, o3 = TIME_ENTRY.unpack_from(raw, 36)
    TIME_ENTRY.pack_into(raw, 36, t1, o3)  # a timestamp that does not grow (and is not its batch's)
    index.write_bytes(bytes(raw))
    code, _, err = dump(str(index))
    where = index.resolve()
    assert code == 1 and err.splitlines() == [
        f"Found timestamp mismatch in :{where}",
        f"  Index timestamp: {t1 + 7}, log timestamp: {t1}",
        f"  Index timestamp: {t1}, log timestamp: {t3}",
        f"Found out of order timestamp in :{where}",
        f"  Index timestamp: {t1}, Previously indexed timestamp: {t2}",  # (every entry is "previous")
        "The following indexed offsets are not found in the log.",
        f"Indexed offset: {o2 + 1}, found log offset: {o2 + 1 + _batch_rest(segment, o2 + 1)}",
    ]


def _batch_rest(segment: Path, offset: int) -> int:
    """How far the batch holding ``offset`` ends after it."""
    from metalog.log.reader import read_file_batches

    batch = next(b for b in read_file_batches(segment) if b.base_offset <= offset <= b.last_offset)
    return batch.last_offset - offset


def test_a_preallocated_index_stops_at_its_zeros(segment: Path) -> None:
    # Kafka preallocates index files and trims them on close; after a crash the rest is zeros: an entry with
    # the segment's base offset after the first ends the dump
    for suffix in (".index", ".timeindex"):
        index = segment.with_suffix(suffix)
        _, trimmed, _ = dump(str(index))
        index.write_bytes(index.read_bytes() + bytes(120))
        assert dump(str(index)) == (0, trimmed, "")


def test_an_empty_offset_index(segment: Path, tmp_path: Path) -> None:
    index = segment.with_suffix(".index")
    index.write_bytes(b"")
    assert dump(str(index)) == (0, f"Dumping {index}\n{index} is empty.\n", "")


def test_sanity_check(segment: Path) -> None:
    index = segment.with_suffix(".index")
    code, out, err = dump("--index-sanity-check", str(index), str(segment.with_suffix(".timeindex")))
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"Dumping {index}", f"{index} passed sanity check.",
                                f"Dumping {segment.with_suffix('.timeindex')}",
                                f"{segment.with_suffix('.timeindex')} passed sanity check."]
    index.write_bytes(index.read_bytes()[:-3])
    code, out, err = dump("--index-sanity-check", str(index))
    assert code == 1 and err == f"metalog: error: {index}: size {index.stat().st_size} is not a multiple of 8\n"


def test_an_index_without_its_segment(segment: Path, tmp_path: Path) -> None:
    lonely = tmp_path / "00000000000000000042.index"
    lonely.write_bytes(bytes(8))
    code, out, err = dump(str(lonely))
    assert code == 1 and err == (f"metalog: error: {lonely}: no segment 00000000000000000042.log beside it to check "
                                 "it against\n")


def test_json_entries(segment: Path) -> None:
    import json

    index = segment.with_suffix(".timeindex")
    code, out, _ = dump("--json", str(index))
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == [
        {"file": str(index), "timestamp": t, "offset": o} for t, o in entries(index, TIME_ENTRY)]
