"""The property "damage is never answered silently", over every batch of a small log with its indexes.

Each header field outside the CRC (baseOffset, batchLength, partitionLeaderEpoch, magic) and one byte inside
it, damaged one at a time in every batch: every reader either fails with a one-line error naming file and
byte or gives exactly the undamaged answer (the log's last batch may instead be cut as a torn tail on open,
which is reported, as Kafka's recovery does: LogSegment.recover); then ``log recover --repair`` and ``log
verify`` pass and the state at the end is the undamaged state before the damaged batch (LogLoader.recoverLog
cuts at the first invalid batch and drops what follows).

The same over every attribute bit of a batch, its CRC-32C made right again: the bits KRaft's reader reads (the
codec, the control bit) make the batch one it cannot read, an error for every reader that reaches it; the others
(timestamp type, transactional, delete horizon, the unused bits) change no answer but the dump of that batch's
header.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.errors import MetalogError
from metalog.log import MetadataLog
from metalog.log.batch import RecordBatch
from metalog.log.builder import build_data_batch
from metalog.log.chain import BatchChain
from metalog.log.header import HEADER_SIZE
from metalog.log.scan import Scan, scan_into, scan_values
from metalog.log.verify import verify_log
from metalog.replay.history import MetadataHistory
from metalog.state.image import EMPTY
from tests.analysis.oracle import analyze_log
from tests.log.damage import DAMAGES, PARTITION_DIR, BatchAt, build_log, damage
from tests.log.hostile import CODECS_HERE, compressed, flip_attribute, with_crc

# one line that names the segment and the byte: "[metalog: error: ]<...>.log, byte N: ..."
ONE_LINE = re.compile(r"^(metalog: (error|notice): )?\S+/\d{20}\.log, byte \d+: [^\n]+$")


def _scan_into(log: MetadataLog) -> list[tuple[int, bytes | None]]:
    got: list[tuple[int, bytes | None]] = []
    for _ in log.scan_into(log.log_start_offset, log.log_end_offset - 1, lambda v, o: got.append((o, v))):
        pass
    return got


LOG_READERS: dict[str, Callable[[MetadataLog], Any]] = {
    "batches": lambda log: [(b.base_offset, b.last_offset, b.partition_leader_epoch, b.max_timestamp, b.crc)
                            for b in log.batches()],
    "records": lambda log: [(r.offset, r.timestamp, r.value) for r in log.records()],
    "scan": lambda log: list(log.scan()),
    "scan_into": _scan_into,
}


def state(path: Path, offset: int | None = None) -> Any:
    """The state published at ``offset`` (default: the end); before the log's first batch, and in a log that
    repair emptied (damage in its first batch), that is the empty state."""
    with MetadataHistory(path) as history:
        if history.end_offset < 0 or (offset is not None and offset < 0):
            return EMPTY
        return history.state_at(offset).image


def analysis(path: Path) -> Any:
    result = analyze_log(path, "cluster")
    return result.rows, result.events, result.records


def dump(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["log", "dump", "--no-records", str(path)])
    return rc, out.getvalue(), err.getvalue()


def answers(path: Path) -> dict[str, Any]:
    """Every reader's answer, or the one-line error it failed with (as ``("error", message)``)."""
    got: dict[str, Any] = {}
    try:
        log = MetadataLog.open(path)
    except MetalogError as e:
        return {"open": ("error", str(e))}
    with log:
        got["recovery"] = log.recovery.damage_lines()
        for name, reader in LOG_READERS.items():
            got[name] = _answer(lambda reader=reader: reader(log))  # type: ignore[misc]
    got["state_at"] = _answer(lambda: state(path))
    got["analysis"] = _answer(lambda: analysis(path))
    rc, out, err = dump(path)
    got["dump"] = ("error", err.rstrip("\n")) if rc else out
    return got


def _answer(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except MetalogError as e:
        return "error", str(e)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BatchAt], dict[str, Any]]:
    path = tmp_path_factory.mktemp("pristine")
    batches = build_log(path, records=140, seed=11, segment_bytes=3500, index_interval_bytes=700,
                        batches_per_epoch=25)
    assert len({b.segment for b in batches}) >= 4 and len(batches) >= 100
    return path, batches, answers(path)


@pytest.mark.slow
def test_every_damage_to_every_batch_is_an_error_or_the_undamaged_answer(pristine, tmp_path):
    path, batches, undamaged = pristine
    assert all(not (isinstance(v, tuple) and v[:1] == ("error",)) for v in undamaged.values()), undamaged
    state_before = cache(lambda offset: state(path, offset))
    cases = 0
    for n, at in enumerate(batches):
        for field, byte in DAMAGES.items():
            work = tmp_path / f"{n}-{field}"
            shutil.copytree(path, work)
            target = BatchAt(work / PARTITION_DIR / at.segment.name, at.position, at.base_offset, at.last_offset,
                             at.is_control)
            damage(target, byte)
            where = f"batch {n} at {at.segment.name}:{at.position}, {field}"
            got = answers(work)
            torn = n == len(batches) - 1 and got.get("recovery")
            if torn:  # the log's last batch: cut on open as a torn write, and said so
                assert got["recovery"] == [f"truncated (read-only, the file is unchanged) {target.segment} at "
                                           f"byte {at.position}, {target.segment.stat().st_size - at.position} bytes "
                                           f"(offsets from {at.base_offset} on): " + got["recovery"][0].split(
                                               " on): ", 1)[1]], where
            caught = 0
            for reader, answer in got.items():
                if reader == "recovery":
                    continue
                if isinstance(answer, tuple) and answer[:1] == ("error",):
                    caught += 1
                    assert ONE_LINE.match(answer[1]) and f"/{at.segment.name}, byte " in answer[1], \
                        (where, reader, answer)
                elif not torn:
                    assert answer == undamaged[reader], (where, reader)
            # not only "an error or the undamaged answer": every read that reaches the damage finds it
            assert torn or caught == len(got) - ("recovery" in got), (where, got.keys(), caught)
            assert main(["log", "recover", "--repair", str(work)]) == 0, where
            verified = verify_log(work)
            assert verified.ok, (where, verified.problems)
            assert state(work) == state_before(at.base_offset - 1), where
            shutil.rmtree(work)
            cases += 1
    assert cases == len(DAMAGES) * len(batches)


# Kafka's attribute bits (DefaultRecordBatch): 0-2 the codec, 3 the timestamp type, 4 transactional, 5 control,
# 6 the delete horizon, 7-15 unused. RecordsIterator reads the codec and the control bit, and no record's timestamp
# (KRaft publishes the batch's maxTimestamp); 7 and 15 stand for the unused ones.
BITS = [0, 1, 2, 3, 4, 5, 6, 7, 15]
KRAFT_READS = {0, 1, 2, 5}


def attribute_case(pristine: tuple[Path, list[BatchAt], dict[str, Any]], state_before: Callable[[int], Any],
                   tmp_path: Path, n: int, bit: int) -> None:
    """One attribute bit of batch ``n`` flipped: the readers' answers, then a repair."""
    path, batches, undamaged = pristine
    at = batches[n]
    work = tmp_path / f"{n}-{bit}"
    shutil.copytree(path, work)
    target = BatchAt(work / PARTITION_DIR / at.segment.name, at.position, at.base_offset, at.last_offset,
                     at.is_control)
    flip_attribute(target, bit)
    where = f"batch {n} at {at.segment.name}:{at.position}, attribute bit {bit}"
    got = answers(work)
    got.pop("batches", None)  # batch headers alone (the CRC among them): their records are read by the others
    if bit not in KRAFT_READS:
        assert {k: v for k, v in got.items() if k != "dump"} == \
            {k: v for k, v in undamaged.items() if k not in ("dump", "batches")}, where
        dumped = got["dump"].replace(str(work), str(path)).splitlines()
        changed = [(a, b) for a, b in zip(dumped, undamaged["dump"].splitlines(), strict=True) if a != b]
        assert len(changed) <= 1 and all(a.startswith(f"baseOffset: {at.base_offset} ") for a, _ in changed), where
        return
    names = f"/{at.segment.name}, byte {at.position}: batch {at.base_offset}..{at.last_offset}: "
    for reader, answer in got.items():
        if reader == "recovery":
            assert answer == [], (where, answer)  # a whole batch: never cut as a torn write
            continue
        assert isinstance(answer, tuple) and answer[:1] == ("error",), (where, reader, answer)
        assert ONE_LINE.match(answer[1]) and names in answer[1], (where, reader, answer)
    assert main(["log", "recover", "--repair", str(work)]) == 0, where
    verified = verify_log(work)
    assert verified.ok, (where, verified.problems)
    assert state(work) == state_before(at.base_offset - 1), where
    shutil.rmtree(work)


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_an_attribute_bit_kraft_reads_makes_a_batch_it_cannot_read_for_every_reader(pristine, tmp_path_factory,
                                                                                    data):
    _, batches, _ = pristine
    n = data.draw(st.integers(0, len(batches) - 1), label="batch")
    bit = data.draw(st.sampled_from(BITS), label="bit")
    attribute_case(pristine, cache(lambda offset: state(pristine[0], offset)), tmp_path_factory.mktemp("bit"), n,
                   bit)


@pytest.mark.slow
def test_every_attribute_bit_of_batches_across_the_log(pristine, tmp_path):
    """Every bit, for every control batch, every segment's first and last batch and every third batch between."""
    path, batches, _ = pristine
    state_before = cache(lambda offset: state(path, offset))
    edges = {i for i, b in enumerate(batches) if b.is_control or b.position == 0 or i + 1 == len(batches)
             or batches[i + 1].segment != b.segment}
    chosen = sorted(edges | set(range(0, len(batches), 3)))
    for n in chosen:
        for bit in BITS:
            attribute_case(pristine, state_before, tmp_path, n, bit)


@st.composite
def damaged_compressed(draw: st.DrawFn) -> tuple[int, bytes, bytes]:
    """(the codec, a compressed batch as KRaft's records make it, the same with its compressed payload damaged: a
    byte changed, bytes cut from its end or added after it), both with a sound frame and CRC-32C."""
    codec = draw(st.sampled_from(CODECS_HERE), label="codec")
    values = draw(st.lists(st.binary(min_size=1, max_size=80), min_size=1, max_size=12), label="values")
    good = compressed(build_data_batch(0, values, epoch=1, timestamp=1_700_000_000_000), codec)
    raw = bytearray(good)
    how = draw(st.sampled_from(["byte", "cut", "append"]), label="how")
    if how == "byte":
        at = draw(st.integers(HEADER_SIZE, len(raw) - 1), label="at")
        raw[at] ^= draw(st.integers(1, 255), label="xor")
    elif how == "cut":
        del raw[len(raw) - draw(st.integers(1, len(raw) - HEADER_SIZE), label="cut"):]
    else:
        raw += draw(st.binary(min_size=1, max_size=8), label="appended")
    return codec, good, with_crc(raw)


def _read_every_way(data: bytes) -> list[Any]:
    """The batch through each reader: its records, scan_values, scan_into; each an answer or ("error", text)."""
    def records() -> Any:
        return [(r.offset, r.value) for r in RecordBatch(data, 0, source="seg.log").records()]

    def scanned() -> Any:
        return [(base, values) for base, _, _, _, values in scan_values(data, 0, len(data), "seg.log", BatchChain(0))]

    def scanned_into() -> Any:
        got: list[tuple[int, bytes | None]] = []
        scan_into(Scan(data, len(data), "seg.log", BatchChain(0), 0, 1 << 40, lambda v, o: got.append((o, v))), 0)
        return got

    return [_answer(read) for read in (records, scanned, scanned_into)]


@settings(max_examples=150, deadline=None)
@given(case=damaged_compressed())
def test_a_damaged_compressed_payload_reads_the_same_everywhere_or_is_one_line(case):
    """Every reader gives the same records or the same one-line error naming the batch. A crafted payload (its CRC
    made right) may decode to other records where the codec keeps no checksum of its own (zstd, lz4 and snappy as
    written by default): they are then what every reader reads. gzip's trailer holds a CRC-32 of the data: there
    the answer is the undamaged records or an error."""
    codec, good, bad = case
    expected = [(r.offset, r.value) for r in RecordBatch(good).records()]
    records, scanned, scanned_into = _read_every_way(bad)
    if records[:1] == ("error",):
        assert records == scanned == scanned_into
        assert re.fullmatch(rf"seg\.log, byte 0: batch 0\.\.{len(expected) - 1}: [^\n]+", records[1]), records[1]
        return
    assert scanned == [(0, [v for _, v in records])] and scanned_into == records
    if codec == 1:
        assert records == expected
