"""Which batch times are a series' samples in controller_metrics.om: the rule of ``metalog.analysis.outputs.sampling``,
checked against a literal reading of it, whatever chunks the columns come in."""

from __future__ import annotations

from array import array
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.columns import Ints
from metalog.analysis.outputs.sampling import (
    HEARTBEAT_MS,
    HEARTBEATS,
    SERIES_SAMPLES,
    Decided,
    Sampler,
    Samples,
    same_heartbeat,
    select,
    series_samples,
)
from tests.quick import examples


def batch_times(times: list[int], values: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """The batch times (each millisecond's last row, rows in time order then log order) and each series' value
    at them."""
    last = {t: i for i, t in enumerate(times)}
    order = sorted(last)
    return order, [[column[last[t]] for t in order] for column in values]


def rule(times: list[int], values: list[int]) -> list[int]:
    """The module's rule as written: the indices of the batch times that are samples."""
    picked: list[int] = []
    for i in range(len(times)):
        after = times[i + 1] if i + 1 < len(times) else None
        if i == 0 or values[i] != values[i - 1] or after is None or after > times[picked[-1]] + HEARTBEAT_MS:
            picked.append(i)
    return picked


def fed(sampler: Sampler, times: list[int], values: list[list[int]], cuts: list[int]) -> list[Samples]:
    """Everything ``sampler`` gives for the columns cut at ``cuts``, then closed, joined per series."""
    got = [Samples([], []) for _ in values]
    bounds = [0, *sorted(cuts), len(times)]
    calls = [sampler.add(times[lo:hi], [column[lo:hi] for column in values])
             for lo, hi in zip(bounds, bounds[1:], strict=False)]
    for call in [*calls, sampler.close()]:
        for mine, part in zip(got, call, strict=True):
            mine.times.extend(part.times)
            mine.values.extend(part.values)
    return got


@st.composite
def timelines(draw: st.DrawFn) -> tuple[list[int], list[list[int]]]:
    """Rows in time order then log order: steps from ties to minutes, a few series that change now and then."""
    n = draw(st.integers(0, 60))
    steps = st.sampled_from([0, 0, 1, 500, 500, 500, 59_999, 60_000, 60_001]) | st.integers(0, 150_000)
    times, t = [], draw(st.integers(-200_000, 200_000))
    for _ in range(n):
        t += draw(steps)
        times.append(t)
    series = draw(st.integers(1, 3))
    values = [[draw(st.sampled_from([0, 0, 0, 0, 1, 7, 2**40])) for _ in range(n)] for _ in range(series)]
    return times, values


@settings(max_examples=examples(200))
@given(timeline=timelines(), data=st.data())
def test_the_samples_are_the_rules_whatever_the_chunks(timeline: tuple[list[int], list[list[int]]],
                                                        data: st.DataObject) -> None:
    times, values = timeline
    cuts = data.draw(st.lists(st.integers(0, len(times)), max_size=8), label="cuts")
    expected_times, expected_values = batch_times(times, values)
    sampler = Sampler(len(values))
    got = fed(sampler, times, values, cuts)
    for series, column in zip(got, expected_values, strict=True):
        picked = rule(expected_times, column)
        assert series == Samples([expected_times[i] for i in picked], [column[i] for i in picked])
    assert sampler.batch_times == len(expected_times)
    every = fed(Sampler(len(values), every_batch=True), times, values, cuts)
    assert every == [Samples(expected_times, column) for column in expected_values]


def test_a_steady_series_has_a_sample_a_minute_and_one_at_its_end() -> None:
    times = list(range(0, 600_001, 500))  # ten minutes of batches every 500 ms, nothing changes
    (got,) = fed(Sampler(1), times, [[3] * len(times)], [7, 1000])
    assert got == Samples(list(range(0, 600_001, 60_000)), [3] * 11)
    times.append(600_250)
    (got,) = fed(Sampler(1), times, [[3] * len(times)], [])
    assert got.times == [*range(0, 600_001, 60_000), 600_250]


def test_a_heartbeat_is_the_last_batch_time_within_a_minute_or_the_next_one() -> None:
    seconds = [0, 50, 59, 61, 119, 125, 300, 301]
    (got,) = fed(Sampler(1), [s * 1000 for s in seconds], [[0] * len(seconds)], [])
    # 59 s is the last within a minute of 0; 119 s of 59; nothing within a minute of 125 s: the next, 300 s
    assert got.times == [s * 1000 for s in (0, 59, 119, 125, 300, 301)]


def test_a_change_at_a_cut_and_a_millisecond_across_a_cut() -> None:
    sampler = Sampler(2)
    assert sampler.add([0, 500], [[1, 1], [5, 5]]) == [Samples([0], [1]), Samples([0], [5])]
    # 500 goes on in this chunk: its last row (value 2) is the value at 500; 1000 waits for the next chunk
    assert sampler.add([500, 1000], [[2, 2], [5, 6]]) == [Samples([500], [2]), Samples([], [])]
    assert sampler.add([], [[], []]) == [Samples([], []), Samples([], [])]
    assert sampler.close() == [Samples([1000], [2]), Samples([1000], [6])]
    assert sampler.close() == [Samples([], []), Samples([], [])]


def test_out_of_order_times_and_missing_columns_are_refused() -> None:
    sampler = Sampler(1)
    with pytest.raises(ValueError, match="out of order"):
        sampler.add([2, 1], [[0, 0]])
    sampler.add([5], [[0]])
    with pytest.raises(ValueError, match="out of order"):
        sampler.add([4], [[0]])  # before the row it keeps from the last chunk
    with pytest.raises(ValueError, match="1 columns of 2 values"):
        sampler.add([6, 7], [[0]])
    with pytest.raises(ValueError, match="1 columns"):
        sampler.add([6], [[0], [0]])


INT64 = st.integers(-(2**63), 2**63 - 1)
SELECTS = [pytest.param(select, id="pure")] + ([] if HEARTBEATS.loaded is None else [
    pytest.param(HEARTBEATS.loaded.select, id="compiled")])


@st.composite
def walks(draw: st.DrawFn) -> tuple[Ints, Ints, bool, Ints, int | None, int]:
    """``select``'s arguments: batch times in order (near int64's ends too), the time after each, the changes."""
    near = draw(st.sampled_from([0, 2**63 - 1 - 10**6, -(2**63) + 10**6]))
    steps = st.sampled_from([1, 500, 59_999, 60_000, 60_001]) | st.integers(1, 150_000)
    times = array("q")
    t = near
    for _ in range(draw(st.integers(0, 40))):
        t = min(t + draw(steps), 2**63 - 2)
        if times and t <= times[-1]:
            break
        times.append(t)
    open_end = bool(times) and draw(st.booleans())
    nexts = times[1:]
    if times:
        nexts.append(0 if open_end else draw(st.integers(times[-1] + 1, 2**63 - 1)))
    changes = array("q", sorted(draw(st.sets(st.integers(0, len(times) - 1))) if times else []))
    last = draw(st.none() | st.just(times[0] - 60_000 if times and times[0] > -(2**63) + 60_000 else 0) | INT64)
    return times, nexts, open_end, changes, last, draw(st.sampled_from([HEARTBEAT_MS, 0, 1]) | st.integers(0, 2**62))


@pytest.mark.parametrize("twin", SELECTS)
@settings(max_examples=examples(300))
@given(walk=walks())
def test_the_heartbeats_twins_pick_the_pure_ones_samples(twin: Any, walk: tuple[Any, ...]) -> None:
    """Both twins of ``select`` against its rule read batch time by batch time (``walked``), for any int64 batch
    times: a heartbeat past int64's top finds no batch time after it but the open end."""
    times, nexts, open_end, changes, last, heartbeat = walk
    picked, after = twin(times, nexts, open_end, changes, last, heartbeat)
    expected = walked([*times], [*nexts[:-1], float("inf")] if open_end else [*nexts], [*changes], last, heartbeat)
    assert ([*picked], after) == expected


def walked(times: list[int], nexts: list[float], changes: list[int], last: int | None,
           heartbeat: int) -> tuple[list[int], int | None]:
    """The rule read batch time by batch time, without the twins' search (the open end an infinity): a sample at
    each change, at the series' first batch time, and at each batch time whose next one is more than ``heartbeat``
    after the previous sample (the latest before that gap)."""
    picked, wanted = [], set(changes)
    for i, (time, after) in enumerate(zip(times, nexts, strict=True)):
        if i in wanted or last is None or after > last + heartbeat:
            picked.append(i)
            last = time
    return picked, last


SERIES = [pytest.param(series_samples, id="pure")] + ([] if SERIES_SAMPLES.loaded is None else [
    pytest.param(SERIES_SAMPLES.loaded.series_samples, id="compiled")])


@st.composite
def series_chunks(draw: st.DrawFn) -> tuple[Decided, Ints, int | None, int | None, int | None, bool]:
    """``series_samples``' arguments: a walk's batch times and the rows they were decided at (the row kept from
    the chunk before first, where there is one), a column of any int64s, the value before, the last sample."""
    times, nexts, open_end, _, last, _ = draw(walks().filter(lambda walk: len(walk[0]) > 0))
    values = st.sampled_from([0, 0, 1, 2**63 - 1, -(2**63)]) | INT64
    head = draw(st.none() | values)
    column = array("q", draw(st.lists(values, min_size=len(times) + 2, max_size=len(times) + 6)))
    places = range(len(column) + (head is not None))
    rows = array("q", sorted(draw(st.sets(st.sampled_from(places), min_size=len(times), max_size=len(times)))))
    before = draw(st.none() | values)
    return Decided(times, rows, nexts, open_end), column, head, before, last, draw(st.booleans())


def read_rule(decided: Decided, column: Ints, head: int | None, before: int | None, last: int | None,
              every_batch: bool) -> tuple[list[int], list[int], int, int | None]:
    """``series_samples`` read as its docstring says: the series' value at each row, a change wherever it differs
    from the one before (or every batch time), picked by the (tested) pure ``select``."""
    rows = [*column] if head is None else [head, *column]
    at = [rows[r] for r in decided.rows]
    changes = [i for i, v in enumerate(at) if every_batch or (i == 0 and before is None)
               or v != (at[i - 1] if i else before)]
    picked, after = select(decided.times, decided.nexts, decided.open_end, array("q", changes), last, HEARTBEAT_MS)
    return [decided.times[j] for j in picked], [at[j] for j in picked], at[-1], after


@pytest.mark.parametrize("twin", SERIES)
@settings(max_examples=examples(300))
@given(chunk=series_chunks())
def test_a_series_samples_are_its_changes_and_heartbeats_at_the_rows_decided(twin: Any,
                                                                             chunk: tuple[Any, ...]) -> None:
    """Both twins of ``series_samples`` against their rule, for any int64 values, with and without the row kept
    from the chunk before."""
    times, values, before, after = twin(*chunk)
    assert ([*times], [*values], before, after) == read_rule(*chunk)


def test_a_build_with_another_heartbeat_does_not_run() -> None:
    class Stale:
        HEARTBEAT = HEARTBEAT_MS + 1

    assert "stale build" in (same_heartbeat(Stale()) or "")
    assert SERIES_SAMPLES.loaded is None or same_heartbeat(SERIES_SAMPLES.loaded) is None
