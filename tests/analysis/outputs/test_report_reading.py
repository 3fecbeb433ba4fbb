"""The report built from the tables' columns (``report.reading``) draws what the report built from every row drew
before it: for random tables read in random record-batch sizes, every lane, line, stripe, envelope and value after
the last batch equals what the old way made of the whole rows (that way lives only here: ``old_*``); the series
builders hold a bounded number of points however long the series, and equal the whole series' decimation."""

from __future__ import annotations

import bisect
import random
from array import array
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.schema import BROKERS, DIRECTORIES, TIMELINE
from metalog.analysis.outputs.report.data import BROKER_LINES, LANES, PICTURE_BUCKETS, cluster_charts, drawn, span_end
from metalog.analysis.outputs.report.series import EnvelopeBuilder, Steps, StepsBuilder, m4, steps
from metalog.analysis.outputs.report.summary import Latest, phase_since

pytest.importorskip("pyarrow")


# ---- the old way: the whole rows, as the report read them before (dicts, grouped by key, then each series) -----
def old_envelope(series: Steps, start: int, end: int, buckets: int, until: int | None = None,
                 ) -> tuple[list[Any], list[Any]]:
    times, values = series.times, series.values
    width = (end - start) / buckets
    lows: list[Any] = [None] * buckets
    highs: list[Any] = [None] * buckets
    i = bisect.bisect_left(times, start)
    current = values[i - 1] if i > 0 else None
    for k in range(buckets):
        slice_start = start + k * width
        if until is not None and slice_start > until:
            break
        slice_end = start + (k + 1) * width
        low = high = current if i == len(times) or times[i] > slice_start else None
        while i < len(times) and times[i] < slice_end:
            v = values[i]
            low = v if low is None or v < low else low
            high = v if high is None or v > high else high
            current = v
            i += 1
        lows[k], highs[k] = low, high
    return lows, highs


def old_broker_code(row: dict[str, Any]) -> str:
    return "controlled-shutdown" if row["state"] == "unfenced" and row["controlled_shutdown"] else str(row["state"])


def old_directory_code(row: dict[str, Any]) -> str:
    return "online" if row["online"] else "offline" if row["replicas"] else "gone"


def old_by_key(rows: list[dict[str, Any]], key: tuple[str, ...]) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(tuple(row[k] for k in key), []).append(row)
    return dict(sorted(out.items()))


# ---- random tables ----------------------------------------------------------------------------------------
SMALL = st.integers(0, 3)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(timeline, broker_timeline, directory_timeline) rows of one cluster, "c": few values, so that runs of
    equal values and changes both happen; times never decrease and batches may share a millisecond."""
    n = draw(st.integers(1, 120))
    t, times = 1_700_000_000_000, []
    for _ in range(n):
        t += draw(st.sampled_from((0, 1, 7, 250)))
        times.append(t)
    texts = {"metadata_version": st.sampled_from(("", "3.7-IV2", "3.8-IV0")),
             "zk_migration_state": st.sampled_from(("NONE", "MIGRATION")),
             "phase": st.sampled_from(("native", "hybrid", "dual-write")),
             "dir_transition": st.sampled_from(("not-started", "complete"))}
    timeline = [{"cluster": "c", "last_offset": i, "timestamp": at,
                 **{col: draw(texts[col]) if col in texts else draw(SMALL) for col in TIMELINE.names[3:]}}
                for i, at in enumerate(times)]
    brokers = [{"cluster": "c", "last_offset": i, "timestamp": at, "broker": draw(st.integers(1, 3)),
                "state": draw(st.sampled_from(("fenced", "unfenced", "unregistered"))),
                **{col: draw(SMALL) for col in BROKERS.names[5:]}}
               for i, at in enumerate(sorted(draw(st.lists(st.sampled_from(times), max_size=80))))]
    directories = [{"cluster": "c", "last_offset": i, "timestamp": at, "broker": draw(st.integers(1, 2)),
                    "directory": draw(st.sampled_from(("AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"))),
                    **{col: draw(SMALL) for col in DIRECTORIES.names[5:]}}
                   for i, at in enumerate(sorted(draw(st.lists(st.sampled_from(times), max_size=60))))]
    return timeline, brokers, directories


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=tables(), fine=st.integers(1, 6), batch_rows=st.integers(1, 40), shift=st.sampled_from((0, 5_000)))
def test_the_report_from_columns_draws_what_the_rows_drew(tmp_path_factory: pytest.TempPathFactory,
                                                          data: Any, fine: int, batch_rows: int, shift: int) -> None:
    """Every series the page and the PNG draw, read from the Parquet tables in record batches of ``batch_rows``
    (lines decimated into ``fine`` buckets, so the builders decimate as they go), equals the old way's series of
    the whole rows; so do the values after the last batch and the summary's."""
    from metalog.analysis.outputs.report.reading import TableReading, read_cluster
    from tests.analysis.oracle import write_cluster

    timeline, brokers, directories = data
    out = tmp_path_factory.mktemp("tables")
    for table, rows in (("timeline_batches", timeline), ("broker_timeline", brokers),
                        ("directory_timeline", directories)):
        if rows:
            write_cluster(out, table, "c", rows)
    times = [r["timestamp"] for r in timeline]
    t0, t1 = times[0], span_end(times[0], times[-1])
    picture = (t0 - shift, t1 + shift)  # a fleet's axis, wider than the cluster's own
    cluster = read_cluster(out, "c", picture, reading=TableReading(fine=fine, batch_rows=batch_rows))
    assert cluster is not None and (cluster.start, cluster.end, cluster.batches) == (t0, t1, len(timeline))

    for column in LANES:
        assert cluster.lanes[column] == steps(times, [r[column] for r in timeline])
    for spec in cluster_charts(True):
        for s in spec.series:
            assert cluster.charts[s.column] == m4(steps(times, [r[s.column] for r in timeline]), t0, t1, fine)
    for column in drawn(cluster.columns):
        whole = steps(times, [r[column] for r in timeline])
        assert cluster.envelopes[(column, *picture)] == old_envelope(whole, *picture, PICTURE_BUCKETS, t1)

    by_broker = old_by_key(brokers, ("broker",))
    assert [b.broker for b in cluster.brokers] == [k for (k,) in by_broker]
    for now, view, rows in zip(cluster.brokers, cluster.broker_views, by_broker.values(), strict=True):
        at = [r["timestamp"] for r in rows]
        assert view.lane == steps(at, [old_broker_code(r) for r in rows])
        assert view.stripe == steps(at, [r["zk"] for r in rows])
        lines = {"leaders": [r["leaders"] for r in rows], "offline_replicas": [r["offline_replicas"] for r in rows],
                 "homeless": [r["replicas_migrating"] + r["replicas_unassigned"] for r in rows]}
        assert set(lines) == set(BROKER_LINES)
        for name, values in lines.items():
            assert view.lines[name] == m4(steps(at, values), t0, t1, fine)
        last = rows[-1]
        assert (now.state, now.zk, now.leaders, now.replicas_lost, now.timestamp) == \
            (old_broker_code(last), last["zk"], last["leaders"], last["replicas_lost"], last["timestamp"])

    by_dir = old_by_key(directories, ("broker", "directory"))
    assert [(d.broker, d.directory) for d in cluster.directories] == list(by_dir)
    for now_d, view, rows in zip(cluster.directories, cluster.directory_views, by_dir.values(), strict=True):
        at = [r["timestamp"] for r in rows]
        assert view.lane == steps(at, [old_directory_code(r) for r in rows])
        assert view.lines["replicas"] == m4(steps(at, [r["replicas"] for r in rows]), t0, t1, fine)
        assert (now_d.state, now_d.replicas, now_d.offline_partitions) == \
            (old_directory_code(rows[-1]), rows[-1]["replicas"], rows[-1]["offline_partitions"])

    assert cluster.latest == Latest.of_row(timeline[-1], phase_since(timeline))


# ---- the builders -----------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(0, 4), max_size=400), seed=st.integers(0, 10**6), buckets=st.integers(1, 6),
       changes=st.booleans())
def test_a_series_built_in_chunks_is_the_whole_series_decimated(values: list[int], seed: int, buckets: int,
                                                                changes: bool) -> None:
    """However a series arrives in chunks, the builder's series is m4 of its every change (decimating its head
    as it grows changes nothing), and its envelope is the old way's of the whole series; whether a chunk comes
    whole (``extend``) or as its change points in ``array('q')`` (``extend_changes``, as the report reads an int
    column)."""
    rng = random.Random(seed)
    times = sorted(rng.randrange(0, 2000) for _ in values)
    span, picture = (0, 1000), (rng.randrange(-100, 500), rng.randrange(600, 2100))
    series, envelope = StepsBuilder(span, buckets), EnvelopeBuilder(*picture, rng.randrange(1, 40))
    i = 0
    while i < len(values):
        j = rng.randrange(i, len(values) + 1)
        if changes:  # the chunk's first value, and each that differs from the one before it
            keep = [k for k in range(i, j) if k == i or values[k] != values[k - 1]]
            kept = series.extend_changes(array("q", [times[k] for k in keep]), array("q", [values[k] for k in keep]))
        else:
            kept = series.extend(times[i:j], values[i:j])
        envelope.extend(*kept)  # the changes, as the report feeds it
        i = j
    whole = steps(times, values)
    assert series.result() == m4(whole, *span, buckets)
    until = rng.choice((None, rng.randrange(-100, 2200)))
    assert envelope.result(until) == old_envelope(whole, *picture, envelope.buckets, until)


def test_a_repeated_value_at_a_pixels_start_is_no_change() -> None:
    """Batches sharing a millisecond at a pixel's very start, the first repeating the value before: the value in
    force there is the change's, as the whole series in change form says (hypothesis found it, the envelope fed
    every batch rather than the changes)."""
    t0 = 1_700_000_000_000
    times, values = [t0] * 8 + [t0 + 250] * 2, [0] * 9 + [1]
    series, envelope = StepsBuilder((t0, t0 + 1000), 1), EnvelopeBuilder(t0, t0 + 1000, PICTURE_BUCKETS)
    for i in range(len(times)):  # a batch at a time
        envelope.extend(*series.extend(times[i:i + 1], values[i:i + 1]))
    assert envelope.result(t0 + 1000) == old_envelope(steps(times, values), t0, t0 + 1000, PICTURE_BUCKETS, t0 + 1000)


def test_a_series_builder_holds_a_bounded_number_of_points() -> None:
    """A line of a long log: the builder never holds more than HELD times its drawing's points (plus a chunk)."""
    rng = random.Random(3)
    builder, most = StepsBuilder((0, 10**6), buckets=8), 0
    for start in range(0, 10**6, 1000):
        builder.extend(list(range(start, start + 1000)), [rng.randrange(0, 100) for _ in range(1000)])
        most = max(most, len(builder))
    assert most <= StepsBuilder.HELD * 4 * 8 + 1000
    assert len(builder.result()) <= 4 * 8


@given(values=st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=1, max_size=30))
def test_a_change_point_is_each_value_that_differs_from_the_one_before(values: list[int | None]) -> None:
    """The first value, and each that differs from the one before it: a null differs from a value, not from
    another null (with nulls in the column or none)."""
    import pyarrow as pa

    from metalog.analysis.outputs.report.reading import change_points

    got = change_points(pa.array(values, pa.int64())).to_pylist()
    assert got == [True] + [a != b for a, b in zip(values[1:], values[:-1], strict=True)]


@given(codes=st.lists(st.integers(0, 3), min_size=1, max_size=30))
def test_a_dictionary_column_changes_where_its_code_does_and_its_lane_is_the_strings_lane(codes: list[int]) -> None:
    """The report reads text columns as the files' dictionaries: a change point where the code changes, so a
    value under two codes (["a", "a", ...]) gives a point more, which the lane drops: the lane of the strings."""
    import pyarrow as pa

    from metalog.analysis.outputs.report.reading import change_points

    values = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(["a", "a", "b", "=c"]))
    times = pa.array(range(len(codes)), pa.int64())
    changed = change_points(values)
    assert changed.to_pylist() == [True] + [a != b for a, b in zip(codes[1:], codes[:-1], strict=True)]
    lane = StepsBuilder()
    lane.extend(times.filter(changed).to_pylist(), values.filter(changed).to_pylist())
    assert lane.result() == steps(times.to_pylist(), values.to_pylist())


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-2, 2), st.integers(0, 4)), max_size=60))
def test_a_batch_split_by_key_gives_each_keys_rows_in_order(rows: list[tuple[int, int]]) -> None:
    """``split_by_key``: a per-key table's batch cut by (broker, directory), the directory a dictionary column
    whose dictionary holds a value twice (one text, two codes): the keys in sorted order, and each key's rows, its
    parts joined, are its rows in the batch's order (a key may come in consecutive parts, never interleaved)."""
    import pyarrow as pa

    from metalog.analysis.outputs.report.reading import split_by_key

    texts = ["b", "a", "b", "c", "a"]  # codes 0 and 2 are "b", 1 and 4 "a"
    batch = pa.RecordBatch.from_arrays(
        [pa.array([b for b, _ in rows], pa.int64()),
         pa.DictionaryArray.from_arrays(pa.array([c for _, c in rows], pa.int32()), pa.array(texts)),
         pa.array(range(len(rows)), pa.int64())], names=["broker", "directory", "row"])
    wanted: dict[tuple[int, str], list[int]] = {}
    for n, (broker, code) in enumerate(rows):
        wanted.setdefault((broker, texts[code]), []).append(n)
    got: dict[tuple[int, str], list[int]] = {}
    order: list[tuple[int, str]] = []
    for key, part in split_by_key(batch, ("broker", "directory")):
        assert part.num_rows and part.schema == batch.schema
        assert not order or order[-1] <= key
        if not order or order[-1] != key:
            order.append(key)
        got.setdefault(key, []).extend(part.column("row").to_pylist())
    assert order == sorted(wanted) and got == wanted
    by_broker = {key: parts.column("row").to_pylist() for key, parts in split_by_key(batch, ("broker",))}
    assert by_broker == {(b,): [n for n, (b2, _) in enumerate(rows) if b2 == b] for b, _ in rows}


@settings(max_examples=200, deadline=None)
@given(gaps=st.lists(st.sampled_from((0, 1, 3, 40)), min_size=1, max_size=120),
       values=st.lists(st.integers(-3, 3), min_size=120, max_size=120), first=st.integers(-60, 60),
       buckets=st.integers(1, 12), cuts=st.lists(st.integers(0, 120), max_size=4), ints=st.booleans())
def test_an_envelope_made_a_slice_at_a_time_is_the_one_made_a_point_at_a_time(
        gaps: list[int], values: list[int], first: int, buckets: int, cuts: list[int], ints: bool) -> None:
    """``EnvelopeBuilder.extend`` (each slice's points by bisection, their lowest and highest at once) holds what
    ``extend_each`` (a point at a time) holds, for points before, inside and after its span, in any chunks, as
    lists or int64 arrays, and carries the same value into the next chunk."""
    times = [first + sum(gaps[:n + 1]) for n in range(len(gaps))]
    points = values[:len(times)]
    sliced, each = EnvelopeBuilder(0, 100, buckets), EnvelopeBuilder(0, 100, buckets)
    bounds = sorted({0, len(times), *(c for c in cuts if c < len(times))})
    for a, b in zip(bounds, bounds[1:], strict=False):
        part_t, part_v = times[a:b], points[a:b]
        sliced.extend(array("q", part_t) if ints else part_t, array("q", part_v) if ints else part_v)
        each.extend_each(part_t, part_v)
        assert (sliced.slice, sliced.opened, sliced.current) == (each.slice, each.opened, each.current)
    assert sliced.result(times[-1]) == each.result(times[-1]) and sliced.result() == each.result()
