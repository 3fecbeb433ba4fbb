"""A cluster cut in ranges written as the Spark engine's third stage writes it, in this process: each group of its
outputs alone (``spark_tables.write_outputs``), from its ranges' Arrow streams, is the python engine's file byte
for byte, where the log's time steps back too (its buckets and series are then made again from the streams, not
from a timeline_batches file that another task may not have written yet)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.columns import Chunk
from metalog.analysis.engines import replay, spark_tables
from metalog.analysis.engines.parallel import log_bounds, plan, split_ranges
from metalog.analysis.engines.python import PythonEngine
from metalog.analysis.engines.request import AnalysisRequest
from metalog.analysis.engines.spark import OUTPUT_TASKS
from metalog.analysis.engines.spark_tables import (
    Output,
    RangeTask,
    TableTask,
    gathered,
    replay_task,
    series_dir,
    write_outputs,
)
from metalog.analysis.outputs import openmetrics as om
from metalog.analysis.outputs import writers
from metalog.analysis.outputs.growth_tables import GROWTH_TABLES, fresh_growth_tables
from metalog.analysis.outputs.layout import partition_dir, read_tables
from metalog.analysis.outputs.writers import OUTPUTS, SERIES, fresh_tables
from metalog.state.overlay import RangeDelta
from tests.analysis import crafted as c
from tests.analysis.test_timeline import jbod_transition, zk_migration

pytest.importorskip("pyarrow")


def logs(root: Path) -> dict[str, Path]:
    back = c.write(root / "back", [[c.feature(17), c.broker(1, 10)], [c.unfence(1, 10)], [c.zk_state(c.NONE)],
                                   [c.broker(2, 20)], [c.unfence(2, 20)], [c.zk_state(c.NONE)]],
                   every_ms=-1500)  # time steps back: the series and (once written out) a bucket are made again
    return {"zk": zk_migration(root / "zk"), "back": back, "jbod": jbod_transition(root / "jbod")}


@pytest.mark.parametrize("width", [1, 1000, 60_000])
@pytest.mark.parametrize(("ranges", "gather"), [(2, 65_536), (3, 1), (3, 5)])
def test_each_group_of_a_cut_clusters_outputs_alone_is_the_python_engines(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          width: int, ranges: int,
                                                                          gather: int) -> None:
    """``gather``: the rows the streams' batches are joined into (``GATHER_ROWS``)."""
    monkeypatch.setattr(spark_tables, "GATHER_ROWS", gather)
    monkeypatch.setattr(replay, "CHUNK_BATCHES", 2)
    monkeypatch.setattr(writers, "ROWS_PER_GROUP", 3)
    monkeypatch.setattr(writers, "BUCKETS_KEPT", 0)
    assert sorted(o for outputs, _ in OUTPUT_TASKS for o in outputs) == sorted(OUTPUTS)  # each once
    for name, log in logs(tmp_path).items():
        expected = tmp_path / "python" / name
        PythonEngine().analyze(AnalysisRequest.of([f"{name}={log}"], expected, bucket_ms=width))
        first, last = log_bounds(log)
        bounds = split_ranges(first, last, ranges)
        scratch = tmp_path / "scratch" / name
        for number, ((lo, hi), origin) in enumerate(zip(bounds, plan(bounds, first, (), 10**9), strict=True)):
            replay_task(RangeTask(str(log), name, 0, number, len(bounds), lo, hi, origin, RangeDelta(),
                                  Output(str(tmp_path / "unused"), str(scratch), width, False)))
        for outputs, _ in OUTPUT_TASKS:  # each group in an output directory of its own
            out = tmp_path / "spark" / name / "-".join(outputs)
            out.mkdir(parents=True)
            fresh_tables(out)
            written = write_outputs(TableTask(name, 0, len(bounds), outputs, Output(str(out), str(scratch), width,
                                                                                      False)))
            for output in outputs:
                if output == SERIES:
                    blocks = [series_dir(str(scratch)) / f"0-{family}.om" for family in range(len(om.FAMILIES))]
                    om.concatenate(out / om.FILE, partial(block_of, blocks), [name])
                    assert (out / om.FILE).read_bytes() == (expected / om.FILE).read_bytes(), name
                    continue
                file = Path(output) / partition_dir(name) / "part-00000.parquet"
                assert (out / file).exists() == (expected / file).exists(), (name, file)
                if (expected / file).exists():
                    assert (out / file).read_bytes() == (expected / file).read_bytes(), (name, file)
            assert written.batches == (sum(1 for _ in replay_rows(expected, "timeline_batches"))
                                       if "timeline_batches" in outputs else 0)


def block_of(blocks: list[Path], family: int, _: str) -> list[Path]:
    return [blocks[family]]


def replay_rows(out: Path, table: str) -> list[dict[str, object]]:
    return read_tables(out / table)


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(0, 9), max_size=12), rows=st.integers(1, 20))
def test_batches_are_gathered_in_order_into_at_least_rows_rows(sizes: list[int], rows: int) -> None:
    import pyarrow as pa

    values = iter(range(sum(sizes)))
    batches = [pa.record_batch([pa.array([next(values) for _ in range(n)], pa.int64())], names=["v"])
               for n in sizes]
    got = list(gathered(batches, rows))
    assert [v for b in got for v in b.column(0).to_pylist()] == list(range(sum(sizes)))
    assert all(b.num_rows >= rows for b in got[:-1]) and all(b.num_rows for b in got)


def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every replay's chunks of 2 log batches' rows (its default, where it is bound when the module loads, too)."""
    monkeypatch.setattr(replay, "CHUNK_BATCHES", 2)
    defaults = replay.TimelineReplay.__init__.__kwdefaults__
    assert defaults is not None
    monkeypatch.setitem(defaults, "chunk_batches", 2)


def test_a_whole_clusters_task_hands_its_writers_the_python_engines_chunks(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster replayed whole on an executor gives its writers its rows joined into chunks of ``ROWS_PER_GROUP``
    rows or more, the chunks the python engine's writers take (their cost is partly per chunk): the same tables and
    lengths in the same order."""
    from metalog.analysis.engines import python

    small_chunks(monkeypatch)
    monkeypatch.setattr(python, "ROWS_PER_GROUP", 3)
    monkeypatch.setattr(spark_tables, "ROWS_PER_GROUP", 3, raising=False)  # (the assertion, not this, fails without it)
    handed: list[tuple[str, int]] = []
    add = writers.ClusterTables.add

    def recorded(self: writers.ClusterTables, chunk: Chunk) -> None:
        handed.append((chunk.table.name, len(chunk)))
        add(self, chunk)

    monkeypatch.setattr(writers.ClusterTables, "add", recorded)
    for name, log in logs(tmp_path).items():
        PythonEngine().analyze(AnalysisRequest.of([f"{name}={log}"], tmp_path / "python" / name))
        expected, handed[:] = list(handed), []
        first, last = log_bounds(log)
        out = tmp_path / "spark" / name
        out.mkdir(parents=True)
        fresh_tables(out)
        fresh_growth_tables(out)
        origin = plan([(first, last)], first)[0]
        replay_task(RangeTask(str(log), name, 0, 0, 1, first, last, origin, RangeDelta(),
                              Output(str(out), str(tmp_path / "scratch" / name), 60_000, False)))
        assert handed == expected, name
        for table in GROWTH_TABLES:  # (and its growth tables, counted as it replayed)
            assert read_tables(out / table) == read_tables(tmp_path / "python" / name / table), (name, table)
        assert any(n > 2 for _, n in expected), name  # chunks were joined (a chunk holds 2 batches' rows)
        handed[:] = []


def test_a_range_task_opens_its_log_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A range's task reads its start state and replays its batches from one opening of the log (each opening
    reads the active segment's index files), whether it starts at the log's start or catches up to its range."""
    from metalog.log import metadata_log

    opened: list[str] = []
    open_log = metadata_log.MetadataLog.open

    def counted(path: str, *args: Any, **kwargs: Any) -> metadata_log.MetadataLog:
        opened.append(str(path))
        return open_log(path, *args, **kwargs)

    monkeypatch.setattr(metadata_log.MetadataLog, "open", staticmethod(counted))
    log = logs(tmp_path)["zk"]
    first, last = log_bounds(log)
    bounds = split_ranges(first, last, 2)
    origins = plan(bounds, first, (), 10**9)
    assert [o.catch_up for o in origins] == [False, True]
    for number, ((lo, hi), origin) in enumerate(zip(bounds, origins, strict=True)):
        opened[:] = []
        replay_task(RangeTask(str(log), "zk", 0, number, len(bounds), lo, hi, origin, RangeDelta(),
                              Output(str(tmp_path / "out"), str(tmp_path / "scratch"), 60_000, False)))
        assert opened == [str(log)], number


def test_a_ranges_streams_hold_its_rows_joined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A range of a cut cluster writes its chunks to its Arrow streams joined into batches of ``ROWS_PER_GROUP``
    rows or more (but the last), as a whole cluster's task hands them to its writers: fewer, larger batches for the
    third stage to read (before: a batch per chunk of ``CHUNK_BATCHES`` log batches)."""
    import pyarrow as pa

    small_chunks(monkeypatch)
    monkeypatch.setattr(spark_tables, "ROWS_PER_GROUP", 5, raising=False)  # (the assertion, not this, fails without)
    log = logs(tmp_path)["zk"]
    first, last = log_bounds(log)
    bounds = split_ranges(first, last, 2)
    scratch = tmp_path / "scratch"
    for number, ((lo, hi), origin) in enumerate(zip(bounds, plan(bounds, first, (), 10**9), strict=True)):
        replay_task(RangeTask(str(log), "zk", 0, number, len(bounds), lo, hi, origin, RangeDelta(),
                              Output(str(tmp_path / "unused"), str(scratch), 60_000, False)))
        streams = sorted(spark_tables.range_dir(str(scratch), 0, number).glob("*.arrow"))
        assert streams, number
        for stream in streams:
            sizes = [batch.num_rows for batch in pa.ipc.open_stream(pa.memory_map(str(stream)))]
            assert all(size >= 5 for size in sizes[:-1]) and all(sizes), (stream.name, sizes)
