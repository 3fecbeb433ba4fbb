"""The growth pass' counting: its compiled twin (``outputs.compiled.growth_count``) against the pure one
(``outputs.growth_count``), fed the same values and batch ends (any apiKey, frames the fast path does not read,
values that are no frame, times that step back and int64's ends), and over random logs read by the log's scan, where
the compiled scan hands it values and batch ends in C."""

from __future__ import annotations

from contextlib import nullcontext
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.analysis.outputs.growth import GROWTH_COUNT, MINUTE_MS, read_growth, type_order
from metalog.analysis.outputs.growth_count import NOT_A_FRAME, GrowthCount, TypeOrder
from metalog.codec import core
from metalog.codec.runtime import write_uvarint
from metalog.errors import DecodeError, MetalogError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from tests.analysis.outputs.test_growth import INT64_MIN, histories, write_history

compiled = GROWTH_COUNT.compiled
pytestmark = pytest.mark.skipif(compiled is None, reason=f"the compiled growth count is not built or not asked for "
                                                         f"({GROWTH_COUNT.why_not or 'METALOG_PURE'})")
INT64_MAX = (1 << 63) - 1


def frame(api_key: int, body: bytes = b"\x00") -> bytes:
    """A metadata record frame: frame version 1, the apiKey and a version as unsigned varints, then ``body``."""
    out = bytearray()
    write_uvarint(out, 1)
    write_uvarint(out, api_key)
    write_uvarint(out, 0)
    return bytes(out) + body


VALUES = st.one_of(
    st.builds(frame, st.integers(0, 127), st.binary(max_size=6)),  # every Kafka record: the fast path
    st.builds(frame, st.integers(128, 70_000), st.binary(max_size=3)),  # a two- or three-byte apiKey
    st.just(b"\x01\x05"), st.just(b"\x01\x85\x01"),  # a frame cut after its apiKey (5, and 133)
)
NOT_FRAMES = st.sampled_from([b"", b"\x01", b"\x00\x03\x00", b"\x02\x03\x00", b"\x81", b"\x01\xff"])
TIMES = st.one_of(st.integers(-3 * MINUTE_MS, 5 * MINUTE_MS).map(lambda t: 1_700_000_000_000 + t),
                  st.integers(INT64_MIN, INT64_MIN + 3 * MINUTE_MS), st.integers(INT64_MAX - 3 * MINUTE_MS, INT64_MAX))
CONTROL = st.lists(st.tuples(st.integers(1 << 16, (1 << 16) + 6), st.integers(0, 90)), max_size=3)


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """(values, time, control records or None, size) per batch."""
    out: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(0, 30))):
        if draw(st.integers(0, 6)) == 0:
            out.append(([], draw(TIMES), draw(CONTROL), draw(st.integers(61, 500))))
        else:
            out.append((draw(st.lists(VALUES, max_size=5)), draw(TIMES), None, draw(st.integers(61, 9000))))
    return out


def fed(make: type[GrowthCount], shape: list[tuple[Any, ...]], order: TypeOrder | None = None) -> tuple[Any, ...]:
    controls = {base: records for base, (_, _, records, _) in enumerate(shape) if records is not None}
    count = make(lambda base: controls[base], MINUTE_MS, order)
    for base, (values, timestamp, records, size) in enumerate(shape):
        for value in values:
            count(value, base)
        count.batch_end(base, base, timestamp, records is not None, size)
    count.close()
    return (count.minutes, count.minute_batches, count.minute_bytes, count.type_minutes, count.type_keys,
            count.type_records, count.type_bytes, count.marks)


@pytest.mark.parametrize("order", [None, type_order, lambda key: -key])
@settings(max_examples=300, deadline=None)
@given(shape=batches())
def test_the_compiled_count_keeps_the_pure_counts_columns(order: TypeOrder | None,
                                                          shape: list[tuple[Any, ...]]) -> None:
    """Each minute's types in ``order`` (the key's, growth's by name, any), small apiKeys and others mixed."""
    assert compiled is not None
    assert fed(compiled, shape, order) == fed(GrowthCount, shape, order)


@settings(max_examples=100, deadline=None)
@given(shape=batches())
def test_each_minutes_rows_come_in_type_order(shape: list[tuple[Any, ...]]) -> None:
    """What lets ``growth`` take the rows of a log whose minutes come once, in order, as they are counted: in
    (minute, type's name) order, each (minute, type) once."""
    assert compiled is not None
    in_time = sorted(shape, key=itemgetter(1))  # (the batches' times never step back)
    for make in (compiled, GrowthCount):
        _, _, _, minutes, keys, _, _, _ = fed(make, in_time, type_order)
        rows = list(zip(minutes, keys, strict=True))
        assert rows == sorted(set(rows), key=lambda row: (row[0], type_order(row[1])))


@settings(max_examples=60, deadline=None)
@given(shape=batches(), value=NOT_FRAMES, at=st.integers(0, 30))
def test_a_value_that_is_no_frame_is_the_same_error_in_both(shape: list[tuple[Any, ...]], value: bytes,
                                                            at: int) -> None:
    assert compiled is not None
    shape = [*shape[:at], ([value], 1_700_000_000_000, None, 70), *shape[at:]]
    for make in (GrowthCount, compiled):
        with pytest.raises(DecodeError) as raised:
            fed(make, shape)
        assert str(raised.value) == NOT_A_FRAME


def growth_of(path: Path) -> tuple[Any, ...]:
    found = read_growth(path, "g")
    return found.growth, found.log_size, found.leadership, found.snapshots


@pytest.mark.slow  # about 3 s of CPU
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), small_segments=st.booleans(), early=st.booleans(), cut=st.integers(0, 40))
def test_the_growth_tables_are_the_same_on_either_core(tmp_path_factory: pytest.TempPathFactory,
                                                       history: list[tuple[str, int, list[int]]],
                                                       small_segments: bool, early: bool, cut: int) -> None:
    """The compiled scan hands the compiled count its values and batch ends in C; a log that starts inside a
    batch (retention: ``cut``) counts only that batch's records from its start offset, and all its bytes."""
    path = write_history(tmp_path_factory.mktemp("core") / "g", history, 600 if small_segments else 1 << 30,
                         INT64_MIN + 30_000 if early else 1_700_000_000_000)
    with MetadataLog.open(path, Mode.WRITE, config=LogConfig(durability=Durability.NONE)) as log:
        log.delete_segments_before(cut)  # the log starts at ``cut``, maybe inside a batch, as retention leaves it
    assert GROWTH_COUNT.compiled is not None
    on_compiled = growth_of(path)
    with core.pure_twins("analysis"):
        assert GROWTH_COUNT.compiled is None
        on_pure = growth_of(path)
    assert on_compiled == on_pure


def test_damage_is_the_scans_error_naming_the_segment_and_the_offset(tmp_path: Path) -> None:
    """A data record whose value is no metadata record frame: the error names the offset and the segment, on
    either core."""
    path = tmp_path / "g"
    with MetadataLog.open(path, Mode.CREATE, config=LogConfig(durability=Durability.NONE, cluster_id="g")) as log:
        log.append([frame(3)], epoch=1, timestamp=1_700_000_000_000)
        log.append([frame(3), b"\x02\x03\x00"], epoch=1, timestamp=1_700_000_000_000)
    for pure in (False, True):
        with core.pure_twins("analysis") if pure else nullcontext(), pytest.raises(
                MetalogError, match=r"00000000000000000000\.log.*offset 2: the record's value is not a metadata "
                                    r"record frame"):
            read_growth(path, "g")

