"""A range's catch-up (``parallel.caught_up``) is the point-in-time replay's loader (``MetadataHistory``): from the
same first offset, on logs whose start lies inside a batch (a snapshot taken before a BeginTransactionRecord in the
middle of a batch, then retention) and with transactions open across the cut; and the state it gives is the one
the range deltas compose to (``start_states`` with ``catch_up=0``, code of its own)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.analysis.engines.parallel import batch_offsets, caught_up, start_points, start_states
from metalog.errors import PointError
from metalog.log import MetadataLog, Mode
from metalog.replay.history import MetadataHistory
from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
from metalog.state.records import image_records
from tests.analysis import crafted as c


def _step(draw: Any, state: dict[str, Any]) -> list[tuple[Any, int]] | c.Leader:
    """One batch of records valid where it stands (a Begin only outside a transaction, an End or Abort inside)."""
    if draw(st.integers(0, 7)) == 0:
        state["epoch"] += 1
        return c.Leader(3000, state["epoch"])
    batch: list[tuple[Any, int]] = []
    for _ in range(draw(st.integers(1, 4))):
        kinds = ["noop", "config", "topic", "end", "abort"] if state["open"] else ["noop", "config", "topic", "begin"]
        kind = draw(st.sampled_from(kinds))
        if kind == "noop":
            batch.append(c.rec("NoOpRecord"))
        elif kind == "config":
            batch.append(c.rec("ConfigRecord", resource_type=4, resource_name="1", name="x",
                               value=str(draw(st.integers(0, 9)))))
        elif kind == "topic":
            state["topics"] += 1
            batch += c.topic(state["topics"], [[1]])
        else:
            state["open"] = kind == "begin"
            batch.append({"begin": c.begin, "end": c.end, "abort": c.abort}[kind]())
    return batch


@st.composite
def histories(draw: Any) -> list[list[tuple[Any, int]] | c.Leader]:
    """A broker, then a batch publishing before a Begin in its middle (where a snapshot can start the log), then
    random batches, transactions open across any of them."""
    state = {"open": True, "topics": 1, "epoch": 1}
    steps: list[list[tuple[Any, int]] | c.Leader] = [
        [c.feature(17), c.broker(1, 10, dirs=[c.uuid(9)]), c.unfence(1, 10)],
        [*c.topic(1, [[1]]), c.begin(), c.rec("NoOpRecord")],
    ]
    steps += [_step(draw, state) for _ in range(draw(st.integers(1, 7)))]
    return steps


def _published_at(h: MetadataHistory, offset: int) -> bool:
    try:
        return h.state_at(offset).offset == offset
    except PointError:  # before the first state published
        return False


def _start_inside_a_batch(root: Path, which: int) -> int:
    """Snapshot a state published inside a batch (before a BeginTransactionRecord), then move the log's start to
    it, as Kafka's retention does; the new log start."""
    with MetadataHistory(root) as h:
        inside = [o for o in range(h.end_offset + 1) if not h.is_batch_end(o) and _published_at(h, o)]
        published = h.state_at(inside[which % len(inside)])
        with SnapshotWriter(root / "__cluster_metadata-0", SnapshotId(published.offset + 1, 1),
                            SnapshotHeader(last_contained_log_timestamp=c.T0), time_ms=c.T0) as writer:
            writer.append(image_records(published.image))
            writer.freeze()
    with MetadataLog.open(root, Mode.WRITE) as log:
        log.delete_segments_before(published.offset + 1)
        assert log.log_start_offset == published.offset + 1 and log.segments[0].base_offset <= published.offset
        return log.log_start_offset


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=histories(), which=st.integers(0, 10), images=st.sampled_from([0, 1, 3]))
def test_the_catch_up_starts_where_the_history_starts_and_gives_the_composed_state(
        tmp_path_factory: pytest.TempPathFactory, steps: list[Any], which: int, images: int) -> None:
    root = c.write(tmp_path_factory.mktemp("h") / "h", steps, segment_bytes=200)
    log_start = _start_inside_a_batch(root, which)
    if images:
        with MetadataHistory(root) as h:
            h.write_images(images)
    points = start_points(str(root))
    with MetadataHistory(root) as h, MetadataLog.open(root) as log:
        end = h.end_offset
        for lo in range(log_start + 1, end + 1):
            for point in [None, *(p for p in points if p.offset < lo)]:
                after = log_start if point is None else point.offset + 1  # where the history's replay starts
                first, last = batch_offsets(log, after, lo - 1)  # the batches the catch-up replays
                assert first > last or first == after, (lo, point)  # the same first offset
                caught = caught_up(str(root), point, lo)
                if first <= last:  # the state Kafka's loader published last at the end of the batch before lo's
                    expected = h.state_at(last)
                    assert caught.image == expected.image, (lo, point)
                    assert (caught.transaction is not None) == expected.open_transaction, (lo, point)
            ranges = [(log_start, lo - 1), (lo, end)]
            assert start_states(str(root), ranges, catch_up=math.inf) == start_states(str(root), ranges, catch_up=0)


def test_a_state_published_before_a_begin_right_after_an_end_is_at_the_end(tmp_path: Path) -> None:
    """An End then a Begin in one batch: Kafka's loader publishes at the End's offset, and so does a range's
    delta (it named the offset of the last record before the End: 7, not 8)."""
    root = c.write(tmp_path / "h", [
        [c.feature(17), c.broker(1, 10, dirs=[c.uuid(9)]), c.unfence(1, 10)],
        [*c.topic(1, [[1]]), c.begin(), *c.topic(2, [[1]])],  # Begin at 5, t2 at 6..7
        [c.end(), c.begin()],  # End at 8, Begin at 9: published at 8
        [c.rec("NoOpRecord")], [c.end()]])
    with MetadataHistory(root) as h:
        assert h.state_at(9).offset == 8
    for ranges in ([(0, 9), (10, 11)], [(0, 10), (11, 11)]):
        for catch_up in (0, math.inf):
            start = start_states(str(root), ranges, catch_up=catch_up)[1]
            assert start.image.offset == 8 and start.transaction is not None and start.transaction[0] == 9
