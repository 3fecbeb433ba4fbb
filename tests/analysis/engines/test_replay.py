"""The loop every engine runs over a cluster's batches (``engines.replay.TimelineReplay``): what it says of a value it
cannot read, how it reports progress, and the ranges the parallel replay gives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalog.analysis.domain.schema import TIMELINE
from metalog.analysis.engines import replay
from metalog.analysis.engines.parallel import batch_offsets
from metalog.analysis.engines.python import replay_cluster
from metalog.errors import LogError
from metalog.log import MetadataLog, Mode
from metalog.log.builder import build_data_batch
from tests.analysis import crafted as c


def _log(root: Path) -> Path:
    """Batches 0..2, 3, a control batch at 4, 5..6."""
    return c.write(root, [
        [c.feature(17), c.broker(1, 10), c.unfence(1, 10)],
        [c.rec("NoOpRecord")],
        c.Leader(3000, 2),
        [*c.topic(1, [[1]])],
    ], segment_bytes=300)


def test_a_value_the_loader_cannot_read_is_named_by_its_segment_and_offset(tmp_path: Path) -> None:
    root = _log(tmp_path / "h")
    with MetadataLog.open(root, Mode.WRITE) as log:
        log.append_batch(build_data_batch(0, [b"\x00\xff\x7f\x01"], epoch=2, timestamp=c.T0))  # no such apiKey
        segment = log.segments[-1].source
    with pytest.raises(LogError) as e:
        replay_cluster(root, "c", lambda chunk: None)
    assert e.value.file == segment and e.value.reason.startswith("offset 7: "), str(e.value)


def test_progress_counts_the_records_replayed_up_to_all_of_them(tmp_path: Path) -> None:
    root = _log(tmp_path / "h")
    told: list[int] = []
    assert replay_cluster(root, "c", lambda chunk: None, told.append) == 6  # the control batch's record is not data
    assert told and told == sorted(told) and told[-1] == 6


@pytest.mark.parametrize(("lo", "hi", "offsets"), [
    (0, 6, (0, 6)),  # the whole log
    (0, 0, (0, 2)),  # a range ends with the batch holding its last offset
    (1, 3, (3, 3)),  # and starts at the first batch starting in it: 0..2 is the range's before
    (1, 2, (3, 2)),  # no batch starts in it
    (4, 9, (4, 6)),  # past the end: to the log's end
    (7, 9, (7, 6)),  # past the log
])
def test_a_range_replays_the_batches_whose_base_offset_it_holds(tmp_path: Path, lo: int, hi: int,
                                                                 offsets: tuple[int, int]) -> None:
    with MetadataLog.open(_log(tmp_path / "h")) as log:
        assert batch_offsets(log, lo, hi) == offsets


@pytest.mark.parametrize("chunk", [1, 2, 4096])
def test_the_rows_come_in_chunks_of_the_module_s_chunk_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               chunk: int) -> None:
    """``CHUNK_BATCHES`` as it is when a replay is made (what the tests that vary it set): a timeline chunk per
    that many batches, the last one shorter."""
    monkeypatch.setattr(replay, "CHUNK_BATCHES", chunk)
    sizes: list[int] = []
    replay_cluster(_log(tmp_path / "h"), "c", lambda got: sizes.append(len(got)) if got.table is TIMELINE else None)
    batches = 4
    assert sizes == [chunk] * (batches // chunk) + ([batches % chunk] if batches % chunk else [])
