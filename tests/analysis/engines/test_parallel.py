"""Parallel replay equals sequential replay: for random histories and any partitioning into ranges, the state
at every range's start and every batch's timeline row and events."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.engines.parallel import (
    LogOutline,
    catch_up_ranges,
    log_bounds,
    log_outline,
    plan,
    split_ranges,
    start_points,
    start_states,
)
from metalog.errors import ReplayError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.log import MetadataLog, Mode
from metalog.replay.history import MetadataHistory
from metalog.replay.images import IMAGE_DIR
from metalog.state.image import EMPTY
from metalog.state.overlay import Overlay, RangeDelta, StartState, compose, fold, then
from metalog.state.serde import image_to_bytes
from tests.analysis import crafted as c
from tests.analysis.oracle import analyze_log, analyze_parallel
from tests.analysis.test_timeline import jbod_transition, zk_migration

SCENARIOS = ["native", "zk-migration", "jbod-transition", "mixed"]


def batch_bases(root: Path) -> list[int]:
    """Every batch's base offset, control batches' too (they get rows)."""
    with MetadataLog.open(root) as log:
        return [b[0] for b in log.scan(0)]


def ranges_from(bases: list[int], last: int, picks: list[int]) -> list[tuple[int, int]]:
    """Ranges cut at the batch bases ``picks`` index (batch-aligned, so range starts are replay points)."""
    cuts = sorted({bases[i % len(bases)] for i in picks} - {bases[0]})
    starts = [bases[0], *cuts]
    return [(lo, hi - 1) for lo, hi in zip(starts, [*cuts, last + 1], strict=True)]


def check(root: Path, ranges: list[tuple[int, int]], *, points: bool = True) -> None:
    sequential = analyze_log(root, "c")
    starts = start_states(root, ranges, points=points, catch_up=0)  # every range from its pieces' deltas
    # every range caught up from its origin by the loader alone: the same states, an open transaction's included
    assert start_states(root, ranges, points=points, catch_up=math.inf) == starts
    with MetadataLog.open(root) as log:
        bases = [b[0] for b in log.scan(0)] + [log.log_end_offset]
    with MetadataHistory(root) as h:
        for (lo, _), start in zip(ranges, starts, strict=True):
            # a range starts at a batch boundary; replayed from the log's start (not from points)
            before = min(b for b in bases if b >= lo) - 1
            if before < 0:  # the state before the log: nothing was published yet
                assert start == StartState(EMPTY, None)
                continue
            expected = h.state_at(before, use_snapshots=False)
            assert start.image == expected.image, f"state before offset {lo}"
            assert (start.transaction is not None) == expected.open_transaction
    parallel = analyze_parallel(root, ranges, "c", points=points)
    assert parallel.rows == sequential.rows
    assert parallel.events == sequential.events
    assert parallel.by_broker == sequential.by_broker  # broker_timeline, directory_timeline, directory_failures
    assert parallel.records == sequential.records  # data records replayed, not offsets (a control batch has some)


@settings(max_examples=10)  # each example generates a 2,500-record log and replays it every way: ~0.2 s
@given(seed=st.integers(0, 2**16), scenario=st.sampled_from(SCENARIOS),
       picks=st.lists(st.integers(0, 10_000), max_size=12))
@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
def test_parallel_equals_sequential_on_generated_histories(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                                           scenario: str, picks: list[int]) -> None:
    root = tmp_path_factory.mktemp("gen")
    write_history(root, seed, HistorySettings(brokers=4, topics=4, partitions=3, records=2500, scenario=scenario),
                  snapshot_every=100_000)
    check(root, ranges_from(batch_bases(root), log_bounds(root)[1], picks))


@settings(max_examples=6)  # as above, with snapshots and images, each range set checked twice: ~0.5 s
@given(seed=st.integers(0, 2**16), scenario=st.sampled_from(SCENARIOS), every=st.integers(150, 700),
       image_every=st.integers(200, 900), picks=st.lists(st.integers(0, 10_000), max_size=10),
       equal=st.integers(1, 9))
@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
def test_ranges_start_from_snapshots_and_images(tmp_path_factory: pytest.TempPathFactory, seed: int, scenario: str,
                                                every: int, image_every: int, picks: list[int], equal: int) -> None:
    """With snapshots and state images in the log dir, a range starts from the last one before it and composes
    only the deltas after it; the result is the same as without them and as sequential replay."""
    root = tmp_path_factory.mktemp("points")
    log = write_history(root, seed, HistorySettings(brokers=4, topics=4, partitions=3, records=2500,
                                                    scenario=scenario), snapshot_every=every)
    with MetadataHistory(root) as h:
        h.write_images(image_every)
    points = start_points(root)
    assert {p.kind for p in points} == {"checkpoint", "image"} and len(points) >= len(log.snapshots)
    first, last = log_bounds(root)
    assert log_outline(root) == LogOutline(first, last, points)  # (one opening of the log for both)
    assert log_outline(root, points=False) == LogOutline(first, last, [])
    for ranges in (ranges_from(batch_bases(root), last, picks), split_ranges(first, last, equal)):
        origins = plan(ranges, first, points)
        for (lo, _), origin in zip(ranges, origins, strict=True):
            before = [p for p in points if p.offset < lo]
            assert origin.point == (before[-1] if before else None)
            begin = first if origin.point is None else origin.point.offset + 1
            assert [a for a, _ in origin.pieces] == [begin, *(s for s, _ in ranges if begin < s < lo)][
                :len(origin.pieces)] and (not origin.pieces or origin.pieces[-1][1] == lo - 1)
        check(root, ranges, points=True)
        check(root, ranges, points=False)


def test_points_inside_a_batch_are_not_used(tmp_path: Path) -> None:
    root = transactions_and_topic_configs(tmp_path / "h")
    with MetadataHistory(root) as h:
        assert batch_bases(root)[:2] == [0, 8]
        at_7 = h.state_at(7)
        h.save_image(at_7)  # the first batch's last offset: the next batch starts at 8
        # an image inside the first batch, as older metalog wrote them (save_image refuses: none was published)
        (root / IMAGE_DIR / f"{2:020d}.image").write_bytes(image_to_bytes(replace(at_7.image, offset=2)))
    assert [p.offset for p in start_points(root)] == [7]
    assert [p.offset for p in log_outline(root).points] == [7]
    check(root, [(0, 3), (4, 8), (9, 30)])


def transactions_and_topic_configs(root: Path) -> Path:
    """A transaction over three batches that removes a topic created long before and re-creates its name
    with new configs, an aborted one that touches brokers, configs cleared by name across ranges."""
    return c.write(root, [
        [c.feature(17), c.broker(1, 10, dirs=[c.uuid(9)]), c.unfence(1, 10), *c.topic(1, [[1], [1]]),
         c.rec("ConfigRecord", resource_type=2, resource_name="t1", name="retention.ms", value="1000"),
         c.rec("ConfigRecord", resource_type=2, resource_name="t1", name="cleanup.policy", value="compact")],
        [c.rec("PartitionChangeRecord", 1, partition_id=0, topic_id=c.uuid(1), isr=[1], leader=1)],
        [c.begin(), c.rec("RemoveTopicRecord", topic_id=c.uuid(1))],
        [c.rec("ConfigRecord", resource_type=2, resource_name="t1", name="retention.ms", value="5")],
        [*c.topic(2, [[1]]), c.rec("ConfigRecord", resource_type=2, resource_name="t1", name="segment.ms",
                                  value="7"), c.end()],
        [c.rec("TopicRecord", name="t1", topic_id=c.uuid(3)),
         c.rec("PartitionRecord", 1, partition_id=0, topic_id=c.uuid(3), replicas=[1], isr=[1], leader=1,
               leader_epoch=0, partition_epoch=0, directories=[c.uuid(9)])],
        [c.begin(), c.rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=1)],
        [c.rec("ClientQuotaRecord", entity=[_quota_entity()], key="producer_byte_rate", value=1024.0)],
        [c.abort(), c.rec("NoOpRecord")],
        [c.rec("BrokerRegistrationChangeRecord", 1, broker_id=1, broker_epoch=10, in_controlled_shutdown=1)],
        [c.rec("ConfigRecord", resource_type=2, resource_name="t1", name="retention.ms", value=None)],
    ])


def controls_and_aborts_inside_batches(root: Path) -> Path:
    """Batches Kafka's loader treats specially: control batches (inside a transaction too), a transaction begun
    inside a batch, records after an abort in the same batch (kept; the aborted ones dropped), an abort and a
    begin in one batch."""
    return c.write(root, [
        c.Leader(3000, 1),
        [c.feature(17), c.broker(1, 10, dirs=[c.uuid(9)]), c.unfence(1, 10), c.begin(), *c.topic(1, [[1]])],
        c.Leader(3001, 2),
        [c.rec("PartitionChangeRecord", 1, partition_id=0, topic_id=c.uuid(1), leader=-1, isr=[1]), c.abort(),
         c.broker(2, 20), c.begin(), *c.topic(2, [[1, 2]])],
        [c.end(), c.unfence(2, 20)],
        [c.begin(), c.rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=1), c.abort(),
         c.rec("NoOpRecord"), c.begin(), c.rec("PartitionChangeRecord", 1, partition_id=0, topic_id=c.uuid(2),
                                                leader=2, isr=[2, 1])],
        c.Leader(3000, 3),
        [c.end()],
    ])


def _quota_entity() -> object:
    cls = c.message_class("ClientQuotaRecord")
    mod = __import__(cls.__module__, fromlist=["x"])
    return mod.EntityData(entity_type="user", entity_name="alice")


@pytest.mark.subset(keep=lambda history: history is controls_and_aborts_inside_batches)  # each about 2 s
@pytest.mark.parametrize("history", [zk_migration, jbod_transition,
                                     pytest.param(transactions_and_topic_configs, marks=pytest.mark.slow),
                                     controls_and_aborts_inside_batches])
def test_every_partitioning_of_crafted_histories(tmp_path: Path, history: object) -> None:
    root = history(tmp_path / "h")  # type: ignore[operator]
    bases, last = batch_bases(root), log_bounds(root)[1]
    for mask in range(2 ** (len(bases) - 1)):  # every set of up to three cuts between batches
        if bin(mask).count("1") > 3:
            continue
        cuts = [b for i, b in enumerate(bases[1:]) if mask >> i & 1]
        starts = [bases[0], *cuts]
        check(root, [(lo, hi - 1) for lo, hi in zip(starts, [*cuts, last + 1], strict=True)])


@pytest.mark.parametrize("history", [transactions_and_topic_configs, controls_and_aborts_inside_batches])
def test_equal_ranges_need_not_align_with_batches(tmp_path: Path, history: object) -> None:
    root = history(tmp_path / "h")  # type: ignore[operator]
    sequential = analyze_log(root, "c")
    for n in (1, 2, 3, 5, 40):
        parallel = analyze_parallel(root, n, "c")
        assert (parallel.rows, parallel.events) == (sequential.rows, sequential.events)


def test_the_special_batches_analysed(tmp_path: Path) -> None:
    """What the crafted history above must give, so the engines agree on the right answer."""
    a = analyze_log(controls_and_aborts_inside_batches(tmp_path / "h"), "c")
    assert [r["last_offset"] for r in a.rows] == [0, 6, 7, 13, 15, 21, 22, 23]
    assert [r["open_transaction"] for r in a.rows] == [0, 1, 1, 1, 0, 1, 1, 0]
    assert [r["topics"] for r in a.rows] == [0, 0, 0, 0, 1, 1, 1, 1]  # topic 1 aborted; topic 2 at 15
    # broker 2, registered after the abort at 9 in the same batch, is published (at 10, before the Begin at 11)
    assert [r["brokers_fenced"] for r in a.rows] == [0, 0, 0, 1, 0, 0, 0, 0]  # the fence at 17 is aborted
    assert a.rows[-1]["preferred_replica_imbalance"] == 1  # t2-0 led by 2, not by its first replica 1
    assert [(e["offset"], e["event"]) for e in a.events if e["event"] in ("controller-leader",
                                                                          "aborted-transaction")] == [
        (0, "controller-leader"), (7, "controller-leader"), (9, "aborted-transaction"),
        (18, "aborted-transaction"), (22, "controller-leader")]


@given(first=st.integers(0, 10**6), size=st.integers(0, 10**7), n=st.integers(1, 12),
       ratio=st.sampled_from([0.0, 0.1, 0.32, 0.5, 0.9]))
def test_catch_up_ranges_cover_the_log_and_end_together(first: int, size: int, n: int, ratio: float) -> None:
    ranges = catch_up_ranges(first, first + size - 1, n, ratio)
    if size == 0:
        assert ranges == []
        return
    assert len(ranges) == min(n, size) and ranges[0][0] == first and ranges[-1][1] == first + size - 1
    assert all(lo <= hi for lo, hi in ranges) and all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    if ratio == 0:
        assert ranges == split_ranges(first, first + size - 1, n)
    if size >= 1000 * n:  # (rounding aside) each range's own records plus its catch-up's share: the same work
        costs = [hi - lo + 1 + ratio * (lo - first) for lo, hi in ranges]
        assert max(costs) - min(costs) <= 2 + ratio * n, costs


def test_split_ranges() -> None:
    assert split_ranges(0, 9, 3) == [(0, 2), (3, 5), (6, 9)]
    assert split_ranges(5, 6, 4) == [(5, 5), (6, 6)]
    assert split_ranges(0, -1, 2) == []


def test_composition_is_associative_and_transactions_match() -> None:
    def o(offset: int) -> Overlay:
        return Overlay(full={("zk_migration_state", None): offset}, offset=offset)

    begin, end, abort = (RangeDelta(open=(1, Overlay()), begun=True), RangeDelta(close=("end", 9)),
                         RangeDelta(close=("abort", 9)))
    pieces = [RangeDelta(head=o(0)), begin, RangeDelta(head=o(2)), end, RangeDelta(head=o(3))]
    left = then(then(then(then(pieces[0], pieces[1]), pieces[2]), pieces[3]), pieces[4])
    right = then(pieces[0], then(pieces[1], then(pieces[2], then(pieces[3], pieces[4]))))
    assert fold(pieces) == left and fold([]) == RangeDelta()
    assert left == right
    assert compose(left.head, left.mid).full == {("zk_migration_state", None): 3} and left.open is None
    aborted = then(then(then(RangeDelta(head=o(0)), begin), RangeDelta(head=o(2))), abort)
    assert aborted.head.full == {("zk_migration_state", None): 0}
    with pytest.raises(ReplayError):
        then(then(begin, RangeDelta(head=o(2))), begin)
    with pytest.raises(ReplayError):
        then(then(begin, end), end)


def test_a_log_starting_inside_a_batch_after_a_snapshot(tmp_path: Path) -> None:
    """Kafka may snapshot the state published before a BeginTransactionRecord inside a batch, and its retention
    then starts the log there: both engines replay that batch from the log's start only."""
    from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
    from metalog.state.records import image_records

    root = c.write(tmp_path / "h", [
        [c.feature(17), c.broker(1, 10, dirs=[c.uuid(9)]), c.unfence(1, 10)],
        [*c.topic(1, [[1]]), c.begin(), *c.topic(2, [[1]])],  # published at 4, before the Begin at 5
        [c.end()],
        [c.rec("PartitionChangeRecord", 1, partition_id=0, topic_id=c.uuid(1), isr=[1], leader=1)],
    ], segment_bytes=200)
    with MetadataHistory(root) as h:
        inside = h.state_at(4)
        assert (inside.offset, str(inside.batch)) == (4, "3..7")
        with SnapshotWriter(root / "__cluster_metadata-0", SnapshotId(5, 1),
                            SnapshotHeader(last_contained_log_timestamp=c.T0), time_ms=c.T0) as writer:
            writer.append(image_records(inside.image))
            writer.freeze()
        expected = list(h.states(5))
    with MetadataLog.open(root, Mode.WRITE) as log:
        log.delete_segments_before(5)
        assert log.log_start_offset == 5 and log.segments[0].base_offset == 3
    sequential = analyze_log(root, "c")
    assert [(r["last_offset"], r["topics"], r["open_transaction"]) for r in sequential.rows] == [
        (7, 1, 1), (8, 2, 0), (9, 2, 0)]
    assert [r["last_offset"] for r in sequential.rows if not r["open_transaction"]] == [s.offset for s in expected]
    for n in (1, 2, 3):
        for points in (True, False):
            parallel = analyze_parallel(root, n, "c", points=points)
            assert (parallel.rows, parallel.events) == (sequential.rows, sequential.events), (n, points)
    with MetadataHistory(root) as h:
        assert [s.offset for s in h.states()] == [s.offset for s in expected]
        assert h.state_at(6).offset == 4 and h.state_at(4).start.kind == "checkpoint"


@pytest.mark.parametrize("ranges", [1, 3, 8])
def test_the_parallel_engine_writes_the_python_engines_files(tmp_path: Path, ranges: int) -> None:
    """The ranges' chunks go to the writers range after range, as they are: every file the python engine writes,
    byte for byte (tables, CSV, controller_metrics.om, growth tables), for a fleet with snapshots."""
    from metalog.analysis.engines.parallel import ParallelEngine
    from metalog.analysis.engines.python import PythonEngine
    from metalog.analysis.engines.request import AnalysisRequest

    logs = [str(zk_migration(tmp_path / "zk")), str(jbod_transition(tmp_path / "jbod"))]
    write_history(tmp_path / "gen", 5, HistorySettings(brokers=3, topics=3, partitions=2, records=1500,
                                                       scenario="mixed"), snapshot_every=400)
    logs.append(f"gen={tmp_path / 'gen'}")
    found = {}
    for engine in (PythonEngine(), ParallelEngine(ranges)):
        summary = engine.analyze(AnalysisRequest.of(logs, tmp_path / engine.name, bucket_ms=1000, csv=True))
        out = tmp_path / engine.name
        found[engine.name] = (summary.records, summary.batches, summary.events,
                              {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert found["parallel"] == found["python"]
    assert any(name.startswith("timeline_batches/cluster=gen/") for name in found["python"][3])
