"""The report's series' twins (``report.series``: ``m4_kept``, ``int_list_text``; compiled in
``analysis/outputs/compiled/report_series.pyx``): each equal to the rule it follows, and the compiled to the pure,
for any int64s; and the series' callers take the compiled twin only where it gives the pure one's answer."""

from __future__ import annotations

import json
from array import array
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.analysis.outputs.report.reading import CHANGE_INTS, change_ints
from metalog.analysis.outputs.report.series import (
    INT_LIST_TEXT,
    M4_KEPT,
    Ints,
    Steps,
    decimated,
    int_list_text,
    m4_kept,
)

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT64 = st.integers(INT64_MIN, INT64_MAX) | st.sampled_from([INT64_MIN, INT64_MAX, 0, -1, 1])
SMALL = st.integers(-3, 3)

TEXT = [pytest.param(int_list_text, id="pure")] + ([] if INT_LIST_TEXT.loaded is None else [
    pytest.param(INT_LIST_TEXT.loaded.int_list_text, id="compiled")])
KEPT = [pytest.param(m4_kept, id="pure")] + ([] if M4_KEPT.loaded is None else [
    pytest.param(M4_KEPT.loaded.m4_kept, id="compiled")])


@pytest.mark.parametrize("text", TEXT)
@given(values=st.lists(INT64, max_size=40), start=st.none() | INT64)
def test_an_int_list_is_json_of_the_values_or_of_their_differences(text: Any, values: list[int],
                                                                   start: int | None) -> None:
    """Either twin: the JSON array of the values, or (``start``) of their differences, the first from ``start``
    (a difference of two int64s can pass int64's range: it is written whole)."""
    expected = values if start is None else [v - before for v, before in zip(values, [start, *values], strict=False)]
    assert text(array("q", values), start) == json.dumps(expected, separators=(",", ":"))


def _whole_m4(times: list[int], values: list[int], t0: int, t1: int, buckets: int) -> list[int]:
    """The rule: per bucket of [t0, t1] (a point's is min((t - t0) * buckets // span, buckets - 1), points in a
    row sharing one form a run), the run's first, lowest, highest and last point (the first of equal ones)."""
    span = max(t1 - t0, 1)
    which = [min((t - t0) * buckets // span, buckets - 1) for t in times]
    kept: list[int] = []
    start = 0
    for i in range(1, len(times) + 1):
        if i == len(times) or which[i] != which[start]:
            run = range(start, i)
            lowest = min(run, key=lambda k: (values[k], k))
            highest = min(run, key=lambda k: (-values[k], k))
            kept += sorted({start, lowest, highest, i - 1})
            start = i
    return kept


# times anywhere, or all about a small axis (where a bucket's floor below zero matters)
POINTS = st.sampled_from([INT64, st.integers(-20, 20)]).flatmap(
    lambda times: st.lists(st.tuples(times, INT64 | SMALL), max_size=60))


@pytest.mark.parametrize("kept", KEPT)
@given(points=POINTS, t0=INT64 | SMALL, t1=INT64 | st.integers(0, 40),
       buckets=st.integers(1, 9) | st.integers(1, 1 << 40))
def test_m4_keeps_each_buckets_first_lowest_highest_and_last(kept: Any, points: list[tuple[int, int]], t0: int,
                                                              t1: int, buckets: int) -> None:
    """Either twin, any int64 times (sorted) and values, any time axis and buckets: the rule's indices."""
    times = sorted(t for t, _ in points)
    values = [v for _, v in points]
    assert list(kept(array("q", times), array("q", values), t0, t1, buckets)) == _whole_m4(times, values, t0, t1,
                                                                                           buckets)


@given(points=st.lists(st.tuples(st.integers(0, 10_000), SMALL), max_size=200), buckets=st.integers(1, 20),
       t0=st.integers(-(1 << 70), 5_000), t1=st.integers(5_000, 1 << 70))
def test_decimated_is_the_same_for_lists_arrays_and_axes_beyond_int64(points: list[tuple[int, int]], buckets: int,
                                                                       t0: int, t1: int) -> None:
    """The callers' choice: int64 arrays go to the compiled twin where it runs, anything else (lists, an axis
    beyond int64: OverflowError) to the pure one; the same points whichever."""
    times, values = sorted(t for t, _ in points), [v for _, v in points]
    got = decimated(Steps(array("q", times), array("q", values)), t0, t1, buckets)
    assert got == decimated(Steps(times, values), t0, t1, buckets)
    assert got.times == [times[k] for k in _whole_m4(times, values, t0, t1, buckets)]


@given(values=st.lists(INT64, max_size=30), start=st.none() | INT64 | st.sampled_from([1 << 63, -(1 << 70)]))
def test_ints_are_written_as_json_from_an_array_or_any_iterable(values: list[int], start: int | None) -> None:
    expected = int_list_text(values, start)
    assert Ints(array("q", values), start).text() == expected
    assert Ints(iter(values), start).text() == expected


CHANGES = [pytest.param(change_ints, id="pure")] + ([] if CHANGE_INTS.loaded is None else [
    pytest.param(CHANGE_INTS.loaded.change_ints, id="compiled")])


@pytest.mark.parametrize("changes", CHANGES)
@given(rows=st.lists(st.tuples(INT64, SMALL | INT64), max_size=40), cut=st.integers(0, 5))
def test_a_columns_change_points_are_its_first_value_and_each_that_differs(changes: Any,
                                                                          rows: list[tuple[int, int]],
                                                                          cut: int) -> None:
    """Either twin of ``reading.change_ints``, for any int64s, of whole arrays and of slices (an offset into
    their buffers): the first value and each that differs from the one before it, with their times."""
    import pyarrow as pa

    times = pa.array([-1] * cut + [t for t, _ in rows], pa.int64()).slice(cut)
    values = pa.array([7] * cut + [v for _, v in rows], pa.int64()).slice(cut)
    kept = [i for i, (_, v) in enumerate(rows) if i == 0 or v != rows[i - 1][1]]
    at, found = changes(times, values)
    assert (type(at), type(found)) == (array, array)
    assert ([*at], [*found]) == ([rows[i][0] for i in kept], [rows[i][1] for i in kept])


@pytest.mark.parametrize("changes", CHANGES)
def test_change_points_of_columns_of_two_lengths_are_refused(changes: Any) -> None:
    import pyarrow as pa

    with pytest.raises(ValueError, match="2 times for 1 values"):
        changes(pa.array([1, 2], pa.int64()), pa.array([1], pa.int64()))
