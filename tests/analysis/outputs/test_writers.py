"""The python engine writing its tables as it goes: the same tables, CSV and controller_metrics.om as the rows
kept whole and written at the end (``tests.analysis.oracle.write_outputs``), in any chunking and row-group size."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.engines import replay
from metalog.analysis.engines.python import PythonEngine
from metalog.analysis.engines.request import AnalysisRequest
from metalog.analysis.outputs import writers
from metalog.analysis.outputs.layout import TABLES
from metalog.analysis.outputs.tables import read_table
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from tests.analysis import crafted as c
from tests.analysis.oracle import analyze_python, write_outputs
from tests.analysis.test_timeline import jbod_transition, zk_migration

pytest.importorskip("pyarrow")


def times_step_back(root: Path) -> Path:
    """Batch times that go back and repeat (a controller's clock stepped back): samples need a sort."""
    path = c.write(root, [[c.feature(17), c.broker(1, 10), c.unfence(1, 10)], [c.zk_state(c.NONE)],
                          [c.zk_state(c.NONE)], [c.broker(2, 20)], [c.unfence(2, 20)]], every_ms=-700)
    return path


def same_outputs(logs: list[str], root: Path, width: int, every_batch: bool = False) -> None:
    whole = write_outputs(root / "whole", analyze_python(logs), width, csv=True, metrics_every_batch=every_batch)
    done = PythonEngine().analyze(AnalysisRequest.of(logs, root / "streamed", bucket_ms=width, csv=True,
                                                      metrics_every_batch=every_batch))
    streamed = [p.relative_to(root / "streamed") for p in done.paths]
    assert streamed[:len(whole)] == [p.relative_to(root / "whole") for p in whole]  # (the growth tables follow)
    for table in TABLES:
        assert read_table(root / "streamed" / table) == read_table(root / "whole" / table), table
        assert (root / "streamed" / f"{table}.csv").read_bytes() == (root / "whole" / f"{table}.csv").read_bytes()
    om = "controller_metrics.om"
    assert (root / "streamed" / om).read_bytes() == (root / "whole" / om).read_bytes()
    assert not list((root / "streamed").glob(".controller_metrics-*"))  # its scratch is gone


@settings(max_examples=5, deadline=None)  # each example generates a fleet and writes it twice
@given(logs=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["mixed", "zk-migration", "jbod-transition"]),
                               st.integers(20, 1200)), min_size=1, max_size=3),
       chunk=st.integers(1, 300), group=st.integers(1, 500), width=st.sampled_from([1, 1000, 60_000]),
       every_batch=st.booleans())
def test_streamed_tables_equal_the_tables_written_whole(tmp_path_factory: pytest.TempPathFactory,
                                                        logs: list[tuple[int, str, int]], chunk: int, group: int,
                                                        width: int, every_batch: bool) -> None:
    root = tmp_path_factory.mktemp("streamed")
    named = []
    for n, (seed, scenario, records) in enumerate(logs):
        write_history(root / f"log{n}", seed, HistorySettings(brokers=3, topics=3, partitions=2, records=records,
                                                              scenario=scenario), snapshot_every=10**9)
        named.append(f"c{n}={root / f'log{n}'}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay, "CHUNK_BATCHES", chunk)
        patch.setattr(writers, "ROWS_PER_GROUP", group)
        same_outputs(named, root, width, every_batch)


@pytest.mark.parametrize("every_batch", [False, True])
def test_crafted_histories_and_times_that_step_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    every_batch: bool) -> None:
    monkeypatch.setattr(replay, "CHUNK_BATCHES", 2)
    monkeypatch.setattr(writers, "ROWS_PER_GROUP", 3)
    logs = [str(zk_migration(tmp_path / "zk")), str(times_step_back(tmp_path / "back")),
            str(jbod_transition(tmp_path / "jbod"))]
    same_outputs(logs, tmp_path, 1000, every_batch)


@pytest.mark.parametrize("kept", [0, 1, 3])
def test_buckets_written_out_as_the_log_moves_on_are_the_buckets_kept_whole(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         kept: int) -> None:
    """A bucket the log's time has left ``BUCKETS_KEPT`` behind is written out as the log goes (memory flat in the
    log's time span); where the time steps back into a bucket written out, the buckets are made again from the
    timeline written: the same files either way."""
    monkeypatch.setattr(replay, "CHUNK_BATCHES", 1)
    monkeypatch.setattr(writers, "ROWS_PER_GROUP", 2)
    monkeypatch.setattr(writers, "BUCKETS_KEPT", kept)
    back = c.write(tmp_path / "back", [[c.feature(17), c.broker(1, 10)], [c.unfence(1, 10)], [c.zk_state(c.NONE)],
                                       [c.broker(2, 20)], [c.unfence(2, 20)], [c.zk_state(c.NONE)]],
                   every_ms=-1500)  # steps back a bucket, once a bucket is written out
    logs = [str(zk_migration(tmp_path / "zk")), str(back), str(jbod_transition(tmp_path / "jbod"))]
    same_outputs(logs, tmp_path, 1000)


def test_a_cluster_with_several_row_groups_is_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    monkeypatch.setattr(writers, "ROWS_PER_GROUP", 3)
    PythonEngine().analyze(AnalysisRequest.of([str(zk_migration(tmp_path / "zk"))], tmp_path / "out"))
    files = list((tmp_path / "out" / "timeline_batches").rglob("*.parquet"))
    assert [p.name for p in files] == ["part-00000.parquet"]
    assert pq.ParquetFile(files[0]).metadata.num_row_groups == 3  # 8 rows: 3, 3, 2


@settings(max_examples=200, deadline=None)
@given(times=st.lists(st.integers(-(1 << 63), (1 << 63) - 1) | st.integers(-(1 << 63), -(1 << 63) + 5000) |
                      st.integers(-5000, 5000), max_size=40),
       in_order=st.booleans(), width=st.sampled_from([1, 7, 1000, 60_000, 1 << 62]))
def test_each_buckets_last_row_whether_the_times_step_back_or_not(times: list[int], in_order: bool,
                                                                   width: int) -> None:
    """The last row of each bucket of a chunk's times (found by bisection where they never step back) is the last
    row with that ``bucket_start``, near the ends of the int64s too."""
    from array import array

    from metalog.analysis.outputs.tables import bucket_starts

    if in_order:
        times.sort()
    expected = dict(zip(bucket_starts(times, width), range(len(times)), strict=True))
    assert writers.BucketRows(Path("unused"), "c", width).last_rows(array("q", times)) == expected


def test_the_buckets_hold_no_chunk_whose_rows_are_all_written_out(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk's bucket rows (a piece) are held only while a bucket kept is in them: what ``BucketRows`` holds
    stays flat however many chunks the log makes (one bucket per chunk here, 3 kept)."""
    from array import array

    from metalog.analysis.domain.columns import Chunk, Coded
    from metalog.analysis.domain.schema import TIMELINE, Kind

    monkeypatch.setattr(writers, "BUCKETS_KEPT", 2)
    buckets = writers.BucketRows(tmp_path, "c", 1000)
    for n in range(50):
        buckets.add(Chunk(TIMELINE, "c", tuple(array("q", [n * 1000]) if c.kind is not Kind.TEXT
                                               else Coded(array("q", [0]), ["x"]) for c in TIMELINE.values)))
        assert len(buckets._pieces) <= 3, n
    buckets.close()
    assert [row["bucket_start"] for row in read_table(tmp_path / "timeline_buckets")] == [n * 1000 for n in range(50)]
