"""A log's growth counted in ranges, each range's count a part, the parts joined (``growth_parts.joined``: what the
Spark engine's and the parallel engine's ranges count as they replay), is what one scan of the whole log counts
(``growth.read_growth``): a minute that straddles two ranges summed, each range's first batch marked only where it
is the log's, the log's time stepping back; on either twin of the count (and of the scan)."""

from __future__ import annotations

import sys
from array import array
from contextlib import ExitStack
from itertools import pairwise
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.analysis.engines.parallel import ParallelEngine, batch_offsets
from metalog.analysis.outputs.growth import (
    GROWTH_COUNT,
    MINUTE_MS,
    ClusterGrowth,
    count_for,
    part_growth,
    read_growth,
    type_order,
)
from metalog.analysis.outputs.growth_count import GrowthCount
from metalog.analysis.outputs.growth_parts import GrowthPart, joined, read_part, write_part
from metalog.codec import core
from metalog.errors import MetalogError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from tests.analysis.outputs.test_growth import INT64_MIN, histories, write_history
from tests.analysis.outputs.test_growth_count import batches

COUNTS = [GrowthCount] + ([GROWTH_COUNT.compiled] if GROWTH_COUNT.compiled is not None else [])
CORES = [(), ("log",), ("analysis",), ("log", "analysis")]  # the cores made pure: the scan and tee, the count


def fed(make: type[GrowthCount], shape: list[tuple[Any, ...]], start: int) -> GrowthPart:
    """A count of ``shape``'s batches (``test_growth_count.batches``), the first at base offset ``start``."""
    controls = {base: records for base, (_, _, records, _) in enumerate(shape, start) if records is not None}
    count = make(lambda base: controls[base], MINUTE_MS, type_order)
    for base, (values, timestamp, records, size) in enumerate(shape, start):
        for value in values:
            count(value, base)
        count.batch_end(base, base, timestamp, records is not None, size)
    return GrowthPart.of(count)


def in_ranges(shape: list[tuple[Any, ...]], cuts: list[int]) -> list[list[tuple[Any, ...]]]:
    ends = [0, *sorted({min(c, len(shape)) for c in cuts}), len(shape)]
    return [shape[a:b] for a, b in pairwise(ends)]


@pytest.mark.parametrize("make", COUNTS)
@settings(max_examples=200, deadline=None)
@given(shape=batches(), cuts=st.lists(st.integers(0, 30), max_size=5))
def test_where_minutes_come_in_order_the_parts_joined_are_the_one_counts_columns(
        make: type[GrowthCount], shape: list[tuple[Any, ...]], cuts: list[int]) -> None:
    """Ranges of any length (none too: a range may hold no batch), cut anywhere (inside a minute too): the very
    columns, so that ``counted_growth`` takes the rows as they are."""
    in_time = sorted(shape, key=itemgetter(1))
    parts, start = [], 0
    for batches_of_range in in_ranges(in_time, cuts):
        parts.append(fed(make, batches_of_range, start))
        start += len(batches_of_range)
    assert joined(parts, type_order) == fed(make, in_time, 0)


def test_a_minute_straddling_two_ranges_is_summed_its_types_in_the_counts_order() -> None:
    """A minute's types by name (``type_order``): PartitionChangeRecord (apiKey 5) after ... RegisterBrokerRecord
    (0) ... TopicRecord (2); the range's first batch (offset 2, data) is no mark of the log's."""
    m = 1_700_000_040_000 // MINUTE_MS * MINUTE_MS
    first = GrowthPart(array("q", [m - MINUTE_MS, m]), array("q", [1, 1]), array("q", [100, 70]),
                       array("q", [m - MINUTE_MS, m, m]), array("q", [2, 5, 0]), array("q", [1, 2, 1]),
                       array("q", [10, 20, 5]), [(0, m - 1, False), (1, m + 1, True)])
    second = GrowthPart(array("q", [m, m + MINUTE_MS]), array("q", [2, 1]), array("q", [90, 60]),
                        array("q", [m, m, m + MINUTE_MS]), array("q", [2, 5, 2]), array("q", [3, 1, 1]),
                        array("q", [30, 7, 9]), [(2, m + 2, False), (4, m + MINUTE_MS, True)])
    assert joined([first, GrowthPart(), second], type_order) == GrowthPart(
        array("q", [m - MINUTE_MS, m, m + MINUTE_MS]), array("q", [1, 3, 1]), array("q", [100, 160, 60]),
        array("q", [m - MINUTE_MS, m, m, m, m + MINUTE_MS]), array("q", [2, 5, 0, 2, 2]),
        array("q", [1, 3, 1, 3, 1]), array("q", [10, 27, 5, 30, 9]),
        [(0, m - 1, False), (1, m + 1, True), (4, m + MINUTE_MS, True)])
    assert sorted([0, 2, 5], key=type_order) == [5, 0, 2]  # (PartitionChange, RegisterBroker, Topic)


def pure(cores: tuple[str, ...]) -> ExitStack:
    stack = ExitStack()
    for name in cores:
        stack.enter_context(core.pure_twins(name))
    return stack


def scanned_in_ranges(path: Path, cuts: list[int]) -> ClusterGrowth:
    """The growth tables of the log at ``path`` from its ranges' counts, each range's batches (those whose base
    offsets it holds) read by a scan of its own, as a range's replay reads them."""
    with MetadataLog.open(path) as log:
        first, end = log.log_start_offset, log.log_end_offset
        ends = [first, *sorted({c for c in cuts if first < c < end}), end]
        parts = []
        for lo, hi in pairwise(ends):
            count = count_for(log)
            for _ in log.scan_into(*batch_offsets(log, lo, hi - 1), count, count.batch_end):
                pass
            parts.append(GrowthPart.of(count))
        return part_growth(log, "g", joined(parts, type_order))


def retained(path: Path, cut: int) -> Path:
    with MetadataLog.open(path, Mode.WRITE, config=LogConfig(durability=Durability.NONE)) as log:
        log.delete_segments_before(cut)  # the log starts at ``cut``, maybe inside a batch, as retention leaves it
    return path


@pytest.mark.parametrize("cores", CORES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), small_segments=st.booleans(), early=st.booleans(), cut=st.integers(0, 40),
       cuts=st.lists(st.integers(0, 150), max_size=6))
def test_a_logs_ranges_count_what_one_scan_of_it_counts(
        tmp_path_factory: pytest.TempPathFactory, cores: tuple[str, ...], history: list[tuple[str, int, list[int]]],
        small_segments: bool, early: bool, cut: int, cuts: list[int]) -> None:
    """Random logs (time stepping back, elections, int64's first minute), started where retention cut them
    (inside a batch too), cut in random ranges (inside a batch, inside a minute)."""
    path = retained(write_history(tmp_path_factory.mktemp("parts") / "g", history, 600 if small_segments else 1 << 30,
                                  INT64_MIN + 30_000 if early else 1_700_000_000_000), cut)
    with pure(cores):
        assert scanned_in_ranges(path, cuts) == read_growth(path, "g")


def outcome(read: Any) -> Any:
    try:
        return read()
    except MetalogError as e:
        return "error", str(e)


@pytest.mark.slow  # about 5 s of CPU
@pytest.mark.parametrize("cores", CORES)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), early=st.booleans(), cut=st.integers(0, 40), ranges=st.integers(1, 5),
       catch_up=st.sampled_from([0, 3]))
def test_the_parallel_engines_ranges_count_as_they_replay_what_one_scan_counts(
        tmp_path_factory: pytest.TempPathFactory, cores: tuple[str, ...], history: list[tuple[str, int, list[int]]],
        early: bool, cut: int, ranges: int, catch_up: float) -> None:
    """The ranges' own replays (``parallel.replay_range``, the Spark engine's range tasks' code), each counting
    through a tee of its scan, from deltas or caught up; a log cut after no snapshot is refused by the replay, as
    the python engine's replay refuses it."""
    path = retained(write_history(tmp_path_factory.mktemp("ranges") / "g", history, 600,
                                  INT64_MIN + 30_000 if early else 1_700_000_000_000), cut)
    with pure(cores):
        grown: list[ClusterGrowth] = []
        engine = ParallelEngine(ranges, catch_up=catch_up)
        done = outcome(lambda: engine.replay_cluster(path, "g", lambda chunk: None, growth=grown.append))
        if isinstance(done, tuple):
            assert done == outcome(lambda: ParallelEngine(1).replay_cluster(path, "g", lambda chunk: None))
        else:
            assert grown == [read_growth(path, "g")]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=batches(), start=st.integers(0, 1 << 40))
def test_a_part_read_back_from_its_file_is_the_part_written(tmp_path: Path, shape: list[tuple[Any, ...]],
                                                            start: int) -> None:
    """What a cut cluster's range hands its cluster's growth task through the scratch directory (``write_part``):
    every column, the marks (as their three columns) and the empty part alike; a file with more is refused."""
    for part in (fed(GrowthCount, shape, start), GrowthPart()):
        write_part(tmp_path / "part", part)
        assert read_part(tmp_path / "part") == part
    with open(tmp_path / "part", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ValueError, match="not a growth part"):
        read_part(tmp_path / "part")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=batches(), cut=st.integers(0, 1 << 20), claimed=st.integers(-(1 << 62), 1 << 62))
def test_a_growth_part_file_cut_short_or_claiming_other_lengths_is_refused(tmp_path: Path, shape: list[tuple[Any, ...]],
                                                                           cut: int, claimed: int) -> None:
    """A part's file cut anywhere, or with a column's length not what follows it (huge, negative), is refused with
    its name, before its lengths are believed (no allocation they ask for)."""
    path = tmp_path / "part"
    write_part(path, fed(GrowthCount, shape, 0))
    whole = path.read_bytes()
    if cut < len(whole):
        path.write_bytes(whole[:cut])
        with pytest.raises(ValueError, match="not a growth part"):
            read_part(path)
    first = int.from_bytes(whole[:8], sys.byteorder, signed=True)
    if claimed != first:
        path.write_bytes(claimed.to_bytes(8, sys.byteorder, signed=True) + whole[8:])
        with pytest.raises(ValueError, match="not a growth part"):
            read_part(path)
