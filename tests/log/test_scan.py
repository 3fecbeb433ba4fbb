"""The fast scans give exactly what the general batch reader gives (RecordBatch.records, KRaft's rules for records
included), and refuse what it refuses, with the same error."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.errors import CorruptBatchError, LogError
from metalog.log import BatchFields, MetadataLog, Record, build_batch, iter_batches
from metalog.log.chain import BatchChain
from metalog.log.control import encode_control
from metalog.log.scan import SCAN_INTO, Scan, ScannedBatch, scan_into, scan_values
from tests.log.damage import leader_change

TS = 1700000000000
LEADER_CHANGE = encode_control(*leader_change(1))


def general(data: bytes) -> tuple[list[ScannedBatch], tuple[int, str] | None]:
    """Each batch as the general reader reads it, up to the first whose records it refuses, and (that batch's base
    offset, the error)."""
    out: list[ScannedBatch] = []
    for b in iter_batches(data, source="x"):
        try:
            values = [r.value for r in b.records()]
        except CorruptBatchError as e:
            return out, (b.base_offset, str(e))
        out.append((b.base_offset, b.last_offset, b.max_timestamp, b.is_control, values))
    return out, None


# records as KRaft writes them (a value, no key, no headers, the batch's timestamp), or in any form Kafka's clients
# write (which KRaft's reader refuses, whatever the scan), or a control record KRaft writes
kraft_record = st.tuples(st.binary(min_size=1, max_size=300), st.none(), st.just([]), st.just(0))
any_record = st.tuples(st.one_of(st.none(), st.binary(max_size=300)), st.one_of(st.none(), st.binary(max_size=4)),
                       st.lists(st.tuples(st.text(max_size=3), st.binary(max_size=3)), max_size=2),
                       st.integers(0, 5))
control_record = st.just((LEADER_CHANGE[1], LEADER_CHANGE[0], [], 0))
records = st.one_of(st.lists(kraft_record, min_size=1, max_size=5), st.lists(kraft_record, min_size=1, max_size=5),
                    st.lists(any_record, min_size=1, max_size=5), st.lists(control_record, min_size=1, max_size=2))


def build(batches: list) -> bytes:  # type: ignore[type-arg]
    data, offset = b"", 0
    for recs, compression, control in batches:
        built = [Record(offset + i, TS + ts, key, value, tuple(headers)) for i, (value, key, headers, ts) in
                 enumerate(recs)]
        data += build_batch(offset, built, BatchFields(compression=compression, is_control=control,
                                                       partition_leader_epoch=1, base_timestamp=TS))
        offset += len(recs)
    return data


def scanned(data: bytes) -> tuple[list[ScannedBatch], str | None]:
    got: list[ScannedBatch] = []
    try:
        for batch in scan_values(data, 0, len(data), "x", BatchChain(0)):
            got.append(batch)
    except CorruptBatchError as e:
        return got, str(e)
    return got, None


batch_lists = st.lists(st.tuples(records, st.sampled_from(["none", "none", "gzip"]), st.booleans()), min_size=1,
                       max_size=6)


@given(batches=batch_lists)
def test_scan_equals_the_general_reader(batches: list) -> None:  # type: ignore[type-arg]
    data = build(batches)
    expected, refused = general(data)
    assert scanned(data) == (expected, None if refused is None else refused[1])


def scanned_into(data: bytes, first: int, last: int, chunk: int) -> tuple[list[tuple[bytes | None, int]], int | None,
                                                                         str | None]:
    """What scan_into passes to its sink over the whole of ``data``, the last timestamp it reports, and its error."""
    got: list[tuple[bytes | None, int]] = []
    pos, timestamp = 0, None
    scan = Scan(data, len(data), "x", BatchChain(0), first, last, lambda v, o: got.append((v, o)))
    try:
        while pos < len(data):
            pos, count, ts, done = scan_into(scan, pos, chunk)
            timestamp = timestamp if ts is None else ts
            if done:
                break
    except CorruptBatchError as e:
        return got, timestamp, str(e)
    return got, timestamp, None


@given(batches=batch_lists, first=st.integers(-1, 32), span=st.integers(0, 32),
       chunk=st.sampled_from([1, 90, 500, 1 << 20]))
def test_scan_into_passes_what_the_general_reader_reads(batches: list, first: int, span: int,  # type: ignore[type-arg]
                                                        chunk: int) -> None:
    data = build(batches)
    read, refused = general(data)
    expected, timestamp = [], None
    for base, _, max_ts, control, values in read:
        if base > first + span:
            break
        if not control:
            timestamp = max_ts
            expected += [(v, base + i) for i, v in enumerate(values) if first <= base + i <= first + span]
    error = None if refused is None or refused[0] > first + span else refused[1]
    got, got_timestamp, got_error = scanned_into(data, first, first + span, chunk)
    assert (got, got_error) == (expected, error)
    if error is None:
        assert got_timestamp == timestamp


def ended_into(data: bytes, first: int, last: int, chunk: int) -> tuple[list[tuple[object, ...]], str | None]:
    """What scan_into tells its sink and its batch-end hook over the whole of ``data``, in the order told, and its
    error."""
    told: list[tuple[object, ...]] = []
    scan = Scan(data, len(data), "x", BatchChain(0), first, last, lambda v, o: told.append(("value", o, v)),
                lambda *end: told.append(("end", *end)))
    try:
        scan_all(scan, len(data), chunk)
    except CorruptBatchError as e:
        return told, str(e)
    return told, None


def scan_all(scan: Scan, size: int, chunk: int) -> None:
    """``scan`` driven by scan_into over ``size`` bytes of its data, ``chunk`` bytes a call, until it is done."""
    pos = 0
    while pos < size:
        pos, _, _, done = scan_into(scan, pos, chunk)
        if done:
            return


@given(batches=batch_lists, first=st.integers(-1, 32), span=st.integers(0, 32),
       chunk=st.sampled_from([1, 90, 500, 1 << 20]))
def test_scan_into_ends_each_batch_after_its_values(batches: list, first: int, span: int,  # type: ignore[type-arg]
                                                    chunk: int) -> None:
    """The batch-end hook (the analysis' per-batch loop) is told of every batch, data or control, that ends at
    ``first`` or later, up to the one holding ``last``, right after its values: (base offset, last offset, max
    timestamp, is control, size in bytes), as the general reader reads the batch."""
    data = build(batches)
    last = first + span
    expected: list[tuple[object, ...]] = []
    error = None
    for b in iter_batches(data, source="x"):
        if b.base_offset > last:
            break
        try:
            values = [r.value for r in b.records()]
        except CorruptBatchError as e:
            error = str(e)
            break
        if not b.is_control:
            expected += [("value", o, v) for o, v in enumerate(values, b.base_offset) if first <= o <= last]
        if b.last_offset >= first:
            expected.append(("end", b.base_offset, b.last_offset, b.max_timestamp, b.is_control, b.size_in_bytes))
    assert ended_into(data, first, last, chunk) == (expected, error)


def test_scan_into_single_record_batches_of_every_small_size() -> None:
    """The inline path for one-record batches against the general reader, around the one-byte varint limits; an empty
    or a null value is refused, as KRaft's reader refuses it (RecordsIterator.decodeDataRecord)."""
    values = [bytes(range(n)) for n in range(1, 140)]
    data = build([([(v, None, [], 0)], "none", False) for v in values])
    assert scanned_into(data, 0, 10**6, 1 << 20) == ([(v, i) for i, v in enumerate(values)], TS, None)
    for value in (None, b""):
        data = build([([(v, None, [], 0)], "none", False) for v in values[:2] + [value]])
        refused = "x, byte 139: batch 2..2: record at offset 2 has no value"
        assert scanned_into(data, 0, 10**6, 1 << 20) == ([(v, i) for i, v in enumerate(values[:2])], None, refused)


def test_scan_into_batches_of_more_records_than_its_local_room() -> None:
    """Batches of more than 64 records (the compiled loop's room on its stack for their values' places), a larger one
    after a smaller and a smaller after a larger, then a small one: every value to the sink as the general reader
    reads it."""
    sizes = [65, 300, 70, 3, 129]
    batches = [([(bytes([n % 251 + 1]) * (1 + i % 7), None, [], 0) for i in range(n)], "none", False) for n in sizes]
    data = build(batches)
    expected = [(v, base + i) for base, _, _, _, values in general(data)[0] for i, v in enumerate(values)]
    assert len(expected) == sum(sizes)
    assert scanned_into(data, 0, 10**6, 1 << 20) == (expected, TS, None)


@pytest.mark.parametrize("kinds", [["none", "none", "none"], ["none", "gzip"], ["gzip", "none", "none"],
                                   ["none", "none", "control"], ["none", "control", "gzip", "control"]])
def test_scan_into_reports_the_max_timestamp_of_the_last_data_batch(kinds: list[str]) -> None:
    """Batches each with a timestamp of its own, in KRaft's form (which the compiled loop reads itself where it runs),
    compressed (which it hands to the pure loop) or control batches (whose timestamps are not reported): one call
    reports the last data batch's timestamp, whichever loop read it."""
    data, expected = b"", None
    for i, kind in enumerate(kinds):
        ts = TS + 1000 * (i + 1)
        if kind == "control":
            value, key = LEADER_CHANGE[1], LEADER_CHANGE[0]
        else:
            value, key, expected = bytes([i + 1]), None, ts
        data += build_batch(i, [Record(i, ts, key, value, ())],
                            BatchFields(compression="gzip" if kind == "gzip" else "none", is_control=kind == "control",
                                        partition_leader_epoch=1, base_timestamp=ts))
    scan = Scan(data, len(data), "x", BatchChain(0), 0, 10**6, lambda v, o: None)
    assert scan_into(scan, 0, 1 << 20)[2] == expected


def test_scan_of_kafkas_segment(jbod_dir: Path) -> None:
    with MetadataLog.open(jbod_dir) as log:
        scanned = list(log.scan())
        expected = [(b.base_offset, b.last_offset, b.max_timestamp, b.is_control, [r.value for r in b.records()])
                    for b in log.batches()]
        assert scanned == expected
        assert [s[0] for s in log.scan(13)] == [13, 15, 17, 21]


def test_a_bad_crc_is_refused_with_its_position(jbod_dir: Path) -> None:
    data = bytearray((jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes())
    data[91 + 70] ^= 0x01  # inside the second batch's records
    with pytest.raises(CorruptBatchError, match="CRC-32C mismatch") as e:
        list(scan_values(bytes(data), 0, len(data), "seg.log", BatchChain(0)))
    assert e.value.position == 91 and e.value.file == "seg.log"  # the batch's start


def test_a_batch_past_the_valid_end_is_refused(jbod_dir: Path) -> None:
    data = (jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    with pytest.raises(LogError, match="past the end"):
        list(scan_values(data, 0, 100, "seg.log", BatchChain(0)))  # the second batch starts at 91 and is 103 bytes


def test_scan_into_names_the_offset_of_a_value_its_sink_cannot_decode(jbod_dir: Path) -> None:
    from metalog.errors import DecodeError

    def sink(value: bytes | None, offset: int) -> None:
        if offset == 3:
            raise DecodeError("bad")

    data = (jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    with pytest.raises(LogError, match="offset 3: bad") as e:
        scan_into(Scan(data, len(data), "seg.log", BatchChain(0), 0, 100, sink), 0)
    assert e.value.file == "seg.log"


@pytest.mark.skipif(SCAN_INTO.compiled is None, reason="the compiled read loop's (the pure loop names it offset -1)")
def test_scan_into_names_by_offset_only_what_its_sink_cannot_decode(jbod_dir: Path) -> None:
    """A DecodeError from the batch-end hook is the hook's own, not a record's: the compiled loop lets it reach the
    caller as it was raised (one from the sink names the record's offset: the test above). The pure loop wraps it
    in a LogError naming the last single-record batch's offset, or -1: a difference left as it was (no hook of
    metalog raises DecodeError)."""
    from metalog.errors import DecodeError

    def batch_end(base: int, last: int, timestamp: int, control: bool, size: int) -> None:
        if last >= 3:
            raise DecodeError("the hook's own")

    data = (jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    with pytest.raises(DecodeError, match="^the hook's own$") as e:
        scan_into(Scan(data, len(data), "seg.log", BatchChain(0), 0, 100, lambda v, o: None, batch_end), 0)
    assert not isinstance(e.value, LogError)


def test_scan_into_refuses_what_scan_values_refuses(jbod_dir: Path) -> None:
    data = bytearray((jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes())
    with pytest.raises(LogError, match="past the end"):
        scan_into(Scan(bytes(data), 100, "seg.log", BatchChain(0), 0, 100, lambda v, o: None), 0)
    data[91 + 70] ^= 0x01
    with pytest.raises(CorruptBatchError, match="CRC-32C mismatch") as e:
        scan_into(Scan(bytes(data), len(data), "seg.log", BatchChain(0), 0, 100, lambda v, o: None), 0)
    assert e.value.position == 91  # the batch's start


def test_scan_yields_every_batch_before_a_damaged_one_then_refuses_it(jbod_dir: Path) -> None:
    """scan_values runs scan_into's loop a chunk at a time: a damaged batch inside a chunk still comes after
    the batches before it, as from a reader of one batch at a time."""
    data = bytearray((jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes())
    intact, _ = general(bytes(data))
    data[91 + 70] ^= 0x01  # the second batch
    got = []
    with pytest.raises(CorruptBatchError, match="CRC-32C mismatch"):
        for batch in scan_values(bytes(data), 0, len(data), "seg.log", BatchChain(0)):
            got.append(batch)
    assert got == intact[:1]
