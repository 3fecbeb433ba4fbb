"""The Spark engine's timeline and events equal the python engine's, for a fleet in one job."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.engines.parallel import log_bounds
from metalog.analysis.engines.replay import Analysis, analyze_python, write_outputs
from metalog.analysis.engines.spark import (
    RANGE_SLACK,
    analyze_spark,
    default_driver_memory,
    delta_cuts,
    find_java,
    makespan,
    place,
    range_counts,
    spark_session,
)
from metalog.analysis.layout import TABLES, arrow_schema, read_tables
from metalog.analysis.result import cluster_name
from metalog.cli.analyze import run_spark
from metalog.cli.progress import Progress
from metalog.errors import MetalogError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from tests.analysis.test_parallel import controls_and_aborts_inside_batches, transactions_and_topic_configs
from tests.analysis.test_result import without_cluster_id
from tests.analysis.test_timeline import jbod_transition, zk_migration


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("fleet")
    paths = [zk_migration(root / "zk"), jbod_transition(root / "jbod"), transactions_and_topic_configs(root / "tx"),
             controls_and_aborts_inside_batches(root / "batches")]
    for seed, scenario, every in ((11, "mixed", 100_000), (12, "zk-migration", 100_000),
                                  (13, "jbod-transition", 100_000), (14, "mixed", 700)):
        path = root / f"{scenario}-{seed}"
        write_history(path, seed, HistorySettings(brokers=4, topics=5, partitions=3, records=4000, scenario=scenario),
                      snapshot_every=every)
        paths.append(path)
    with MetadataHistory(paths[-1]) as history:  # snapshots every 700 records and state images every 900
        history.write_images(900)
    return paths


@pytest.fixture(scope="module")
def expected(fleet: list[Path]) -> Analysis:
    return analyze_python(fleet)


@pytest.mark.parametrize("ranges", [None, 1, 3, 7])
def test_spark_equals_python(spark: Any, fleet: list[Path], expected: Analysis, ranges: int | None) -> None:
    got = analyze_spark(spark, fleet, ranges=ranges).collect()
    assert got.rows == expected.rows
    assert got.events == expected.events
    assert got.by_broker == expected.by_broker  # broker_timeline, directory_timeline, directory_failures
    assert {r["cluster"] for r in got.rows} == {cluster_name(p) for p in fleet}


def test_any_number_of_partitions_and_with_or_without_points(spark: Any, fleet: list[Path],
                                                              expected: Analysis) -> None:
    """Ranges placed on 1..6 partitions (several ranges share one when there are fewer partitions than ranges),
    from snapshots and images or from deltas only: the same rows and events."""
    for partitions in range(1, 7):
        got = analyze_spark(spark, fleet, ranges=4, partitions=partitions, points=partitions % 2 == 0).collect()
        assert (got.rows, got.events, got.by_broker) == (expected.rows, expected.events, expected.by_broker), \
            f"{partitions} partitions"


def test_placement_is_stable_across_processes() -> None:
    keys = [(name, n) for name in ("zk", "jbod", "tx", "a" * 40) for n in range(5)]
    code = ("from metalog.analysis.engines.spark import place; "
            f"print(place({keys!r}, 3))")
    outs = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                           capture_output=True, text=True, check=True).stdout for seed in ("1", "2", "random")}
    assert outs == {f"{place(keys, 3)}\n"}
    slots = place([("zk", n) for n in range(6)] + [("jbod", n) for n in range(5)], 4)
    assert sorted(len(s) for s in slots) == [2, 3, 3, 3]  # spread evenly over the fleet
    assert sorted(i for s in slots for i in s) == list(range(11))


def test_ranges_split_only_as_far_as_keeping_every_core_busy() -> None:
    """Each cluster whole (no deltas) unless the tasks would end unevenly: then the widest is split."""
    assert range_counts([1000] * 5, 1) == [1] * 5
    assert range_counts([1000] * 5, 2) == [2, 1, 1, 1, 1]  # 2.5 clusters a core, not 3 rounds of one
    assert range_counts([1000] * 4, 2) == [1] * 4
    assert range_counts([5000], 2) == [2] and range_counts([5000], 4) == [4]
    assert range_counts([100, 300, 0], 4) == [1, 3, 1]
    assert range_counts([1], 4) == [1]  # nothing to split
    for sizes, cores in (([1000] * 5, 2), ([1000] * 7, 4), ([10, 3000, 700], 3), ([123] * 20, 8)):
        counts = range_counts(sizes, cores)
        ranges = [size / n for size, n in zip(sizes, counts, strict=True) for _ in range(n)]
        assert makespan(ranges, cores) <= sum(sizes) / cores * RANGE_SLACK, (sizes, cores)


def test_the_heaviest_tasks_start_first() -> None:
    slots = place([("a", 0), ("b", 0), ("c", 0), ("c", 1)], 4, [10, 10, 5, 5])
    assert sorted(slots[:2]) == [[0], [1]] and sorted(slots[2:]) == [[2], [3]]


def test_progress_reports_stages_and_records(spark: Any, fleet: list[Path]) -> None:
    calls: list[tuple[int, int]] = []
    stages: list[str] = []
    got = analyze_spark(spark, fleet, ranges=3, progress=lambda done, total: calls.append((done, total)),
                        stage=stages.append)
    assert stages == ["range deltas", "replay"]
    # each stage reports its own share: the replay starts again from 0 (it used to count the delta stage's
    # tasks again) and ends with every offset of the logs (progress counts offsets; got.records the data records)
    offsets = sum(last - first + 1 for first, last in map(log_bounds, fleet))
    assert 0 < got.records < offsets  # each log has a control batch
    starts = [i for i, call in enumerate(calls) if call[0] == 0]
    assert len(starts) >= 2 and calls[starts[-1]] == (0, offsets) and calls[-1] == (offsets, offsets)
    assert all(0 <= done <= total for done, total in calls)
    assert all(total == offsets for _, total in calls[starts[-1]:])


def test_an_empty_fleet(spark: Any) -> None:
    assert analyze_spark(spark, []).collect().rows == []


def test_no_java_is_one_line_saying_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MetalogError) as e:
        find_java()
    assert "install a JDK" in str(e.value) and "--engine python" in str(e.value) and "\n" not in str(e.value)


class _EveryUpdate(Progress):
    def update(self, done: int, total: int | None = None) -> None:
        self.last_draw = -1.0  # draw every update, however quick
        super().update(done, total)


def test_the_command_shows_stage_and_rate_on_a_terminal(spark: Any, fleet: list[Path]) -> None:
    screen = io.StringIO()
    with _EveryUpdate("analyze (spark)", stream=screen, enabled=True) as progress:
        run_spark(spark, [str(p) for p in fleet], progress)
    text = screen.getvalue()
    assert "analyze (spark: range deltas)" in text and "analyze (spark: replay)" in text
    offsets = sum(last - first + 1 for first, last in map(log_bounds, fleet))  # progress counts the offsets read
    assert f"{offsets:,}/{offsets:,} records (" in text and re.search(r"records \([\d,]+/s\)", text)


def test_the_driver_gets_a_quarter_of_memory_within_bounds() -> None:
    size = default_driver_memory()
    assert size.endswith("g") and 1 <= int(size[:-1]) <= 8


def test_delta_tasks_fill_every_round_of_the_cores() -> None:
    assert delta_cuts(3, 2) == 2  # 6 tasks on 2 cores: three full rounds, not a last one with an idle core
    assert delta_cuts(7, 4) == 4
    assert delta_cuts(4, 2) == delta_cuts(0, 2) == delta_cuts(5, 1) == 1  # already full rounds
    assert delta_cuts(63, 32) == 1  # enough tasks to balance without cuts


def test_deltas_composed_from_cuts_equal_python(spark: Any, fleet: list[Path], expected: Analysis,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("metalog.analysis.engines.spark.delta_cuts", lambda pieces, cores: 3)
    got = analyze_spark(spark, fleet, ranges=4).collect()
    assert got.rows == expected.rows and got.events == expected.events
    assert len(got.task_cpu["deltas"]) > 0


@pytest.mark.parametrize("active", [True, False], ids=["active-session", "context-only"])
def test_a_running_session_is_used_and_left_running(spark: Any, fleet: list[Path], active: bool) -> None:
    """A session the caller runs (a notebook's; here the tests' own) survives spark_session() and analyze_spark:
    spark_session uses it, or a session over the caller's SparkContext when this thread has no active session,
    with the caller's settings, and stops only a session it started itself."""
    jvm_session = spark.sparkContext._jvm.SparkSession
    if not active:
        jvm_session.clearActiveSession()
    try:
        with spark_session("local[1]", app="another app", driver_memory="1g") as session:
            assert session.sparkContext is spark.sparkContext
            got = analyze_spark(session, fleet[:3]).collect()
    finally:
        jvm_session.setActiveSession(spark._jsparkSession)
    python = analyze_python(fleet[:3])
    assert (got.rows, got.events) == (python.rows, python.events)
    assert not spark.sparkContext._jsc.sc().isStopped()
    assert spark.sparkContext.appName == "metalog tests" and spark.sparkContext.master == "local[2]"
    assert spark.range(5).count() == 5
    assert analyze_spark(spark, fleet[:3]).collect().rows == got.rows


def test_the_out_of_memory_hint_only_when_the_jvm_ran_out_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    from py4j.protocol import Py4JNetworkError

    from metalog.analysis.engines import spark_session as module
    from metalog.analysis.engines.spark_session import spark_errors

    for oom in (False, True):
        monkeypatch.setattr(module.JVM, "out_of_memory", oom)
        with pytest.raises(MetalogError) as e, spark_errors():
            raise Py4JNetworkError("Answer from Java side is empty")
        assert str(e.value).startswith("Spark failed: Answer from Java side is empty")
        assert ("ran out of memory: try a larger --driver-memory" in str(e.value)) == oom


def _files(root: Path) -> dict[str, list[Path]]:
    return {d.name: sorted(d.glob("*.parquet")) for d in sorted(root.glob("cluster=*"))}


def _same_parquet(spark_out: Path, python_out: Path) -> None:
    """Both engines' tables read back equal, cluster by cluster, row by row, with the same Arrow schema; Spark
    writes one file per cluster, like the python engine."""
    import pyarrow.parquet as pq

    for table in TABLES:
        assert read_tables(spark_out / table) == read_tables(python_out / table), table
        spark_files, python_files = _files(spark_out / table), _files(python_out / table)
        assert spark_files.keys() == python_files.keys(), table
        for cluster, files in spark_files.items():
            assert len(files) == 1, (table, cluster)
            schema = pq.read_schema(files[0]).remove_metadata()
            assert schema == pq.read_schema(python_files[cluster][0]).remove_metadata() == arrow_schema(table)


def test_both_engines_write_the_same_parquet_tables(spark: Any, fleet: list[Path], expected: Analysis,
                                                    tmp_path: Path) -> None:
    got = analyze_spark(spark, fleet, ranges=3)
    got.write(tmp_path / "spark", 30_000)
    write_outputs(tmp_path / "python", expected, 30_000, csv=False)
    _same_parquet(tmp_path / "spark", tmp_path / "python")
    om = "controller_metrics.om"  # written by the executors, a file per series, concatenated
    assert (tmp_path / "spark" / om).read_bytes() == (tmp_path / "python" / om).read_bytes()
    assert not (tmp_path / "spark" / ".controller_metrics.parts").exists()
    got.write(tmp_path / "spark-every", 30_000, metrics_every_batch=True)  # a sample at every batch time
    write_outputs(tmp_path / "python-every", expected, 30_000, csv=False, metrics_every_batch=True)
    every = (tmp_path / "spark-every" / om).read_bytes()
    assert every == (tmp_path / "python-every" / om).read_bytes() and len(every) > 2 * len(
        (tmp_path / "spark" / om).read_bytes())
    assert read_tables(tmp_path / "spark" / "timeline_batches", ["timestamp"])[0]["timestamp"] == min(
        r["timestamp"] for r in expected.rows if r["cluster"] == sorted(map(cluster_name, fleet))[0])


@settings(max_examples=4)  # each example runs a dozen Spark jobs: seconds each
@given(logs=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["mixed", "zk-migration", "jbod-transition"]),
                               st.integers(20, 1500), st.sampled_from([50, 400, 100_000])), min_size=1, max_size=3),
       ranges=st.integers(1, 6), partitions=st.none() | st.integers(1, 4))
def test_random_fleets_and_partitionings_give_the_python_engines_tables(
        spark: Any, tmp_path_factory: pytest.TempPathFactory, logs: list[tuple[int, str, int, int]], ranges: int,
        partitions: int | None) -> None:
    root = tmp_path_factory.mktemp("random")
    paths = []
    for n, (seed, scenario, records, every) in enumerate(logs):
        paths.append(root / f"{scenario}-{n}")
        write_history(paths[-1], seed, HistorySettings(brokers=3, topics=3, partitions=2, records=records,
                                                       scenario=scenario), snapshot_every=every)
    named = [f"{p.name}={p}" for p in paths]  # (two logs of one seed share a cluster.id)
    analyze_spark(spark, named, ranges=ranges, partitions=partitions).write(root / "spark", 60_000)
    write_outputs(root / "python", analyze_python(named), 60_000, csv=False)
    _same_parquet(root / "spark", root / "python")


def test_the_report_built_on_the_executors_is_the_report_built_here(spark: Any, fleet: list[Path],
                                                                   expected: Analysis, tmp_path: Path) -> None:
    """The Spark engine reads and compacts each cluster of the report on its executors (``executor_runner``):
    the same report.html and report.png as the driver one cluster at a time, and no scratch left."""
    from metalog.analysis.engines.spark import executor_runner
    from metalog.analysis.report import write_report_from_tables

    names = [cluster_name(p) for p in fleet]
    for where in ("here", "executors"):
        write_outputs(tmp_path / where, expected, 60_000, csv=False)
        write_report_from_tables(tmp_path / where, names, executor_runner(spark) if where == "executors" else None)
        assert not list((tmp_path / where).glob(".report-*"))
    for page in ("report.html", "report.png"):
        if (tmp_path / "here" / page).exists():
            assert (tmp_path / "executors" / page).read_bytes() == (tmp_path / "here" / page).read_bytes()


def test_a_log_directory_whose_name_is_not_utf8(spark: Any, tmp_path: Path) -> None:
    """Before: UnicodeEncodeError; the cluster is named with the name's bytes escaped, as the python engine
    names it."""
    log = without_cluster_id(jbod_transition(tmp_path / "jbod"), os.fsdecode(b"caf\xe9"))
    expected = analyze_python([log])
    assert {r["cluster"] for r in expected.rows} == {"caf\\xe9"}
    got = analyze_spark(spark, [log])
    assert got.collect().rows == expected.rows
    got.write(tmp_path / "out", 60_000)
    got.unpersist()
    assert read_tables(tmp_path / "out" / "timeline_batches") == expected.rows


def test_the_growth_tables_computed_on_the_executors_are_the_ones_computed_here(spark: Any, fleet: list[Path],
                                                                                 tmp_path: Path) -> None:
    """The growth pass runs a cluster per task on the executors (``executor_runner``, as ``metalog analyze
    --engine spark`` runs it) and the driver writes the tables: the same files as the python engine's."""
    from metalog.analysis.engines.spark import executor_runner
    from metalog.analysis.growth_tables import GROWTH_TABLES, write_growth
    from metalog.analysis.layout import read_tables
    from metalog.analysis.result import cluster_logs

    clusters = cluster_logs([f"{p.name}={p}" for p in fleet])
    for where in ("here", "executors"):
        write_growth(tmp_path / where, clusters, csv=True, run=executor_runner(spark) if where == "executors" else None)
    for table in GROWTH_TABLES:
        here, there = tmp_path / "here" / table, tmp_path / "executors" / table
        assert (there.parent / f"{table}.csv").read_bytes() == (here.parent / f"{table}.csv").read_bytes()
        assert read_tables(there) == read_tables(here)
    assert read_tables(tmp_path / "here" / "growth")  # (not two empty tables)
