"""The segment indexes read as the plain entry-by-entry reading reads them (``metalog.log.index``).

Every opening reads the active segment's ``.index`` and ``.timeindex``: its own indexes in full (checked in C, a
chunk of time index entries at a time), and the evidence of lost offsets (``metalog.log.lost``) from the last entry
alone unless that entry names an offset at or past the log's end. For index files as an append writes them and as
damage leaves them (entries out of order, a torn last entry, a negative entry, the zero-filled tail of a file Kafka
preallocated), both must give the answer of the plain reading, modelled here: the same entries or the same
IndexProblem message; the same offset named past the end, or none.
"""

from __future__ import annotations

import struct
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.errors import IndexProblem
from metalog.log import index
from metalog.log.index import OFFSET_ENTRY, TIME_ENTRY, OffsetIndex, TimeIndex

BASE = 1000


def plain_offset_read(raw: bytes) -> tuple[list[int], list[int]] | str:
    """The offset index's entries (relative offsets, positions) read one by one, or the problem's message."""
    if len(raw) % OFFSET_ENTRY.size:
        return f"size {len(raw)} is not a multiple of {OFFSET_ENTRY.size}"
    pairs = list(OFFSET_ENTRY.iter_unpack(raw))
    for i in range(1, len(pairs)):
        (o0, p0), (o1, p1) = pairs[i - 1], pairs[i]
        if o1 <= o0 or p1 <= p0:
            return f"entry {i} ({o1}, {p1}) does not follow ({o0}, {p0})"
    if pairs and (pairs[0][0] < 0 or pairs[0][1] < 0):
        return "entries point outside the log"
    return [o for o, _ in pairs], [p for _, p in pairs]


def plain_time_read(raw: bytes) -> tuple[list[int], list[int]] | str:
    """The time index's entries (timestamps, relative offsets) read one by one, or the problem's message."""
    if len(raw) % TIME_ENTRY.size:
        return f"size {len(raw)} is not a multiple of {TIME_ENTRY.size}"
    timestamps: list[int] = []
    offsets: list[int] = []
    for ts, rel in TIME_ENTRY.iter_unpack(raw):
        if timestamps and (ts <= timestamps[-1] or rel < offsets[-1]):
            return f"entry ({ts}, {rel}) does not follow ({timestamps[-1]}, {offsets[-1]})"
        if rel < 0:
            return f"negative relative offset {rel}"
        timestamps.append(ts)
        offsets.append(rel)
    return timestamps, offsets


@st.composite
def entries(draw: st.DrawFn, key_bits: int) -> list[tuple[int, int]]:
    """Entries as an append writes them (keys rising; values rising, a time index's offsets perhaps repeated), then
    perhaps damaged: one entry replaced by any pair (out of order, negative, repeated), or a zero-filled tail."""
    n = draw(st.integers(0, 12))
    keys = sorted(draw(st.sets(st.integers(0, 1 << 20), min_size=n, max_size=n)))
    rising = st.sets(st.integers(0, 1 << 20), min_size=n, max_size=n) if key_bits == 32 or draw(st.booleans()) \
        else st.lists(st.integers(0, 1 << 20), min_size=n, max_size=n)
    pairs = [(k, v) for k, v in zip(keys, sorted(draw(rising)), strict=True)]
    if pairs and draw(st.integers(0, 2)) == 0:
        any_int = st.integers(-(1 << (key_bits - 1)), (1 << (key_bits - 1)) - 1) | st.integers(-3, 3)
        pairs[draw(st.integers(0, len(pairs) - 1))] = (draw(any_int), draw(st.integers(-(1 << 31), (1 << 31) - 1)))
    return pairs + [(0, 0)] * draw(st.sampled_from([0, 0, 0, 1, 3]))


def offset_file(pairs: list[tuple[int, int]], torn: bytes) -> bytes:
    """Offset index bytes: (relative offset, position) pairs, then ``torn`` (a last entry cut short)."""
    return b"".join(OFFSET_ENTRY.pack(k, v) for k, v in pairs) + torn


def time_file(pairs: list[tuple[int, int]], torn: bytes) -> bytes:
    """Time index bytes: the pairs as (timestamp, relative offset) with offsets kept to int32, then ``torn``."""
    return b"".join(TIME_ENTRY.pack(k, max(-(1 << 31), min(v, (1 << 31) - 1))) for k, v in pairs) + torn


torn_tails = st.sampled_from([b""] * 5 + [b"\x00", b"\x00" * 7, b"\x01\x02\x03"])
# the log's end: anywhere, or next to the offset the file's last whole entry names (zeros: the segment's base)
ends = st.tuples(st.booleans(), st.integers(BASE - 3, BASE + (1 << 20) + 3), st.integers(-2, 2))


def end_near(raw: bytes, entry: struct.Struct, field: int, end: tuple[bool, int, int]) -> int:
    near, anywhere, shift = end
    whole = len(raw) - len(raw) % entry.size
    if not near or whole == 0:
        return anywhere
    return BASE + entry.unpack(raw[whole - entry.size:whole])[field] + shift


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each example writes its file (over the example before's)."""
    return tmp_path_factory.mktemp("index")


def write(tmp_path: Path, name: str, raw: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(raw)
    return path


@settings(max_examples=300, deadline=None)
@given(pairs=entries(32), torn=torn_tails)
def test_offset_index_loads_as_the_plain_reading(workdir: Path, pairs: list[tuple[int, int]],
                                                 torn: bytes) -> None:
    raw = offset_file(pairs, torn)
    idx = OffsetIndex(write(workdir, "i.index", raw), BASE)
    expected = plain_offset_read(raw)
    try:
        idx.load(1 << 40)
        got: tuple[list[int], list[int]] | str = list(idx.offsets), list(idx.positions)
    except IndexProblem as e:
        got = str(e)
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(pairs=entries(64), torn=torn_tails, chunk=st.sampled_from([1, 2, 3, 4096]))
def test_time_index_loads_as_the_plain_reading(workdir: Path, pairs: list[tuple[int, int]], torn: bytes,
                                               chunk: int) -> None:
    # chunks of 1-3 entries put every disorder on a boundary between chunks as well as inside one
    raw = time_file(pairs, torn)
    idx = TimeIndex(write(workdir, "i.timeindex", raw), BASE)
    expected = plain_time_read(raw)
    with mock.patch.object(index, "_TIME_ENTRIES", struct.Struct(">" + "qi" * chunk)):
        try:
            idx.load()
            got: tuple[list[int], list[int]] | str = list(idx.timestamps), list(idx.offsets)
        except IndexProblem as e:
            got = str(e)
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(pairs=entries(32), torn=torn_tails, near=ends)
def test_the_offset_index_names_what_past_the_end_as_its_plain_reading(
        workdir: Path, pairs: list[tuple[int, int]], torn: bytes, near: tuple[bool, int, int]) -> None:
    raw = offset_file(pairs, torn)
    end = end_near(raw, OFFSET_ENTRY, 0, near)
    read = plain_offset_read(raw)
    expected = None if isinstance(read, str) or not read[0] or BASE + read[0][-1] < end else \
        (BASE + read[0][-1], read[1][-1])
    assert OffsetIndex(write(workdir, "n.index", raw), BASE).last_named_from(end) == expected


@settings(max_examples=300, deadline=None)
@given(pairs=entries(64), torn=torn_tails, near=ends)
def test_the_time_index_names_what_past_the_end_as_its_plain_reading(
        workdir: Path, pairs: list[tuple[int, int]], torn: bytes, near: tuple[bool, int, int]) -> None:
    raw = time_file(pairs, torn)
    end = end_near(raw, TIME_ENTRY, 1, near)
    read = plain_time_read(raw)
    expected = None if isinstance(read, str) or not read[1] or BASE + read[1][-1] < end else BASE + read[1][-1]
    assert TimeIndex(write(workdir, "n.timeindex", raw), BASE).last_named_from(end) == expected


def test_no_index_file_names_nothing(tmp_path: Path) -> None:
    assert OffsetIndex(tmp_path / "none.index", BASE).last_named_from(0) is None
    assert TimeIndex(tmp_path / "none.timeindex", BASE).last_named_from(0) is None
