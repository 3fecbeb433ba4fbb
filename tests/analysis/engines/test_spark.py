"""The Spark engine writes the python engine's files, byte for byte, for a fleet in one job, however it cuts the
clusters into ranges and places them."""

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

from metalog.analysis.clusters import cluster_name
from metalog.analysis.engines.parallel import CATCH_UP, log_bounds
from metalog.analysis.engines.python import PythonEngine
from metalog.analysis.engines.request import AnalysisRequest, AnalysisSummary
from metalog.analysis.engines.spark import (
    CATCH_UP_WEIGHT,
    OUTPUT_TASKS,
    RANGE_SLACK,
    STEP_SHARE,
    WRITE_SHARE,
    ClusterRanges,
    SparkEngine,
    delta_cuts,
    makespan,
    place,
    plan_span,
    range_counts,
)
from metalog.analysis.engines.spark_session import default_driver_memory, find_java, spark_session
from metalog.analysis.engines.spark_tables import PackedGrowth
from metalog.analysis.outputs.growth import read_growth
from metalog.analysis.outputs.layout import read_tables
from metalog.cli.analyze import run_engine
from metalog.cli.progress import Progress
from metalog.errors import MetalogError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from tests.analysis.engines.test_parallel import controls_and_aborts_inside_batches, transactions_and_topic_configs
from tests.analysis.test_clusters import without_cluster_id
from tests.analysis.test_timeline import jbod_transition, zk_migration
from tests.log.damage import DAMAGES, build_log, damage


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


def files(out: Path) -> dict[str, bytes]:
    """Every file an analysis wrote in ``out`` (its marker aside), by its path there."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != ".metalog-analysis"}


def same_files(got: Path, expected: Path) -> None:
    """The same files, byte for byte: tables, CSV, controller_metrics.om, growth tables; no scratch left."""
    mine, theirs = files(got), files(expected)
    assert mine.keys() == theirs.keys()
    for name, data in theirs.items():
        assert mine[name] == data, name
    assert any(name.startswith("timeline_batches/") for name in theirs)  # (not two empty outputs)


def analyze(engine: Any, logs: list[Path] | list[str], out: Path, **options: Any) -> AnalysisSummary:
    summary: AnalysisSummary = engine.analyze(AnalysisRequest.of(logs, out, **options))
    return summary


@pytest.fixture(scope="module")
def expected(fleet: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, AnalysisSummary]:
    out = tmp_path_factory.mktemp("python") / "out"
    return out, analyze(PythonEngine(), fleet, out, csv=True)


@pytest.mark.parametrize("ranges", [None, 1, 3, 7])
def test_spark_writes_the_python_engines_files(spark: Any, fleet: list[Path], expected: tuple[Path, AnalysisSummary],
                                               ranges: int | None, tmp_path: Path) -> None:
    """Before: Spark's Parquet writer wrote other bytes (its own files, read back equal) from rows the JVM got
    from packed blobs; now the executors write what the python engine writes."""
    got = analyze(SparkEngine(spark, ranges=ranges), fleet, tmp_path / "spark", csv=True)
    same_files(tmp_path / "spark", expected[0])
    assert (got.records, got.batches, got.events) == (expected[1].records, expected[1].batches, expected[1].events)
    assert [p.relative_to(tmp_path / "spark") for p in got.paths] == [p.relative_to(expected[0])
                                                                      for p in expected[1].paths]
    assert got.clusters == tuple(cluster_name(p) for p in fleet)


def test_any_number_of_partitions_and_with_or_without_points(spark: Any, fleet: list[Path],
                                                              expected: tuple[Path, AnalysisSummary],
                                                              tmp_path: Path) -> None:
    """Ranges placed on 1..6 partitions (several ranges share one when there are fewer partitions than ranges),
    from snapshots and images or from deltas only: the same files."""
    for partitions in range(1, 7):
        out = tmp_path / str(partitions)
        analyze(SparkEngine(spark, ranges=4, partitions=partitions, points=partitions % 2 == 0), fleet, out,
                csv=True)
        same_files(out, expected[0])


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


def test_a_cluster_is_cut_only_where_that_ends_the_work_sooner() -> None:
    """Each cluster whole (no streams, no third stage) unless cutting ends the modelled work ``RANGE_SLACK`` times
    sooner: each range catches up from the log's start, and a cut cluster's outputs are written after its ranges,
    a task per group of them (``OUTPUT_TASKS``), so a cut pays only for a cluster much larger than its share of
    the cores."""
    assert range_counts([1000] * 5, 1) == [1] * 5
    assert range_counts([1000] * 4, 2) == [1] * 4
    assert range_counts([5000], 2) == [2]  # halves of the replay at once, then its outputs on both cores
    # quarters end 1.06x sooner than thirds: not worth their streams and tasks (thirds: 1.11x sooner than halves,
    # now that the outputs are written on several cores; before, one task wrote them all and halves were kept)
    assert range_counts([5000], 8) == [3]
    assert range_counts([5000], 8, slack=1.01) == [CATCH_UP + 1]  # as far as every range catches up
    assert range_counts([100, 3000, 0], 4) == [1, 3, 1]
    assert range_counts([1], 4) == [1]  # nothing to cut
    assert range_counts([], 4) == []
    for sizes, cores in (([1000] * 5, 2), ([1000] * 7, 4), ([10, 3000, 700], 3), ([123] * 20, 8), ([5000], 2)):
        counts = range_counts(sizes, cores)
        assert plan_span(sizes, counts, cores) * (RANGE_SLACK if counts != [1] * len(sizes) else 1) \
            <= plan_span(sizes, [1] * len(sizes), cores), (sizes, cores)
        assert max(counts) <= CATCH_UP + 1


def test_equal_clusters_are_cut_only_where_a_core_would_idle_for_a_whole_cluster() -> None:
    """Each range counts its growth as it replays (no growth pass fills the cores beside whole clusters): an even
    number of equal clusters on 2 cores stays whole; of 5, one is cut, as the last whole one would leave a core
    idle for its whole replay (a cut ends the modelled work 1.15x sooner); of 20, none (1.0x)."""
    assert range_counts([1000] * 4, 2) == [1] * 4
    assert range_counts([1000] * 5, 2) == [2, 1, 1, 1, 1]
    assert range_counts([1000] * 5, 2, slack=1.2) == [1] * 5
    assert range_counts([1000] * 20, 2) == [1] * 20
    assert range_counts([5000], 2) == [2]


def test_a_cut_is_modelled_as_ranges_that_catch_up_then_a_task_per_group_of_outputs() -> None:
    """5M records on 2 cores: whole, 5M of work; in halves, the second catches up over the first's 2.5M beside
    it, then the outputs' tasks share the cores: LPT over (0.2, 0.133, 0.027, 0.012) x 5M."""
    assert plan_span([5_000_000], [1], 2) == 5_000_000
    ranges = 2_500_000 * (STEP_SHARE + CATCH_UP_WEIGHT)
    outputs = makespan([5_000_000 * share for _, share in OUTPUT_TASKS], 2)
    assert outputs == pytest.approx(5_000_000 * 0.2)  # the series and buckets; the others beside them
    assert plan_span([5_000_000], [2], 2) == pytest.approx(ranges + outputs)
    # before, one task wrote every output: 5M x WRITE_SHARE after the ranges
    assert outputs < 0.65 * 5_000_000 * WRITE_SHARE


def test_equal_clusters_on_two_cores_are_replayed_whole_with_their_growth(spark: Any, tmp_path: Path) -> None:
    """4 equal clusters on local[2]: one job of whole clusters, each counting its growth, no range deltas and no
    third stage, and the python engine's files."""
    paths = []
    for n in range(4):
        paths.append(tmp_path / f"mixed-{n}")
        write_history(paths[-1], 40, HistorySettings(brokers=3, topics=3, partitions=2, records=1500,
                                                     scenario="mixed"), snapshot_every=10**9)
    named = [f"{p.name}={p}" for p in paths]  # (equal logs, one cluster.id: named)
    got = analyze(SparkEngine(spark), named, tmp_path / "spark")
    assert spark.sparkContext.defaultParallelism == 2
    assert not got.task_cpu.get("deltas") and not got.task_cpu.get("tables") and len(got.task_cpu["replay"]) == 4
    analyze(PythonEngine(), named, tmp_path / "python")
    same_files(tmp_path / "spark", tmp_path / "python")


def test_one_cluster_on_two_cores_is_cut_in_two_ranges_that_end_together(spark: Any, tmp_path: Path) -> None:
    """A lone cluster on local[2]: the replay in two ranges at once, the second catching up over the first (no
    range deltas: before, a stage of them), the first the longer (they end together), then a task per group of
    its outputs and its growth pass (before: one task wrote every output, and the growth pass ran beside the
    ranges); the python engine's files."""
    generated = tmp_path / "mixed"
    write_history(generated, 41, HistorySettings(brokers=3, topics=3, partitions=2, records=3000, scenario="mixed"),
                  snapshot_every=10**9)
    for log in (generated, transactions_and_topic_configs(tmp_path / "tx")):
        got = analyze(SparkEngine(spark), [log], tmp_path / "spark" / log.name)
        assert not got.task_cpu.get("deltas") and len(got.task_cpu["tables"]) == len(OUTPUT_TASKS) + 1
        assert len(got.task_cpu["replay"]) == 2  # the two ranges
        analyze(PythonEngine(), [log], tmp_path / "python" / log.name)
        same_files(tmp_path / "spark" / log.name, tmp_path / "python" / log.name)
    first, last = log_bounds(generated)
    (lo1, hi1), (lo2, hi2) = SparkEngine(spark).range_bounds(ClusterRanges(str(generated), "g", first, last, []), 2)
    assert hi1 - lo1 > hi2 - lo2 and (lo1, hi2) == (first, last)


def test_the_workers_are_forked_from_a_daemon_that_imported_the_tasks_modules(spark: Any) -> None:
    """spark.python.daemon.module: each worker has the engine's modules from its fork (before: pyspark's daemon,
    and each worker imported them again)."""
    def daemon(_: object) -> list[Any]:
        main = sys.modules["__main__"]
        return [getattr(getattr(main, "__spec__", None), "name", None),
                "metalog.analysis.engines.spark_tables" in sys.modules]

    assert spark.sparkContext.parallelize([0, 1], 2).map(daemon).collect() == [
        ["metalog.analysis.engines.spark_daemon", True]] * 2


def test_the_workers_daemon_is_the_drivers_ready_process(spark: Any) -> None:
    """The daemon the JVM started handed its part to the process the driver started as the JVM launched
    (``spark_ahead``): the workers' parent is the driver's child, whose imports were made by the first task."""
    def daemon(_: object) -> int:
        with open(f"/proc/{os.getppid()}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])

    assert spark.sparkContext.parallelize([0, 1], 2).map(daemon).collect() == [os.getpid()] * 2


def test_what_the_daemon_imported_is_frozen_out_of_the_workers_collector(spark: Any) -> None:
    """A reused worker runs gc.collect() after every task: the modules the daemon imported for the tasks (pyspark's
    worker loop, each record type's reader and pyarrow's modules among them) are frozen before the fork
    (gc.freeze), so no collection walks them (before: about 15 ms a task). The daemon forks with a single thread all
    the same (pyarrow loaded without jemalloc's background thread or OpenBLAS's)."""
    def frozen(_: object) -> list[Any]:
        import gc
        import os

        tracked = {id(o) for o in gc.get_objects()}
        preloaded = ["pyspark.worker", "metalog.analysis.engines.spark_tables", "metalog.codec.messages.topic_record",
                     "pyarrow.parquet", "pyarrow.compute"]
        return [gc.get_freeze_count() > 0,
                [name for name in preloaded if name not in sys.modules or id(sys.modules[name]) in tracked],
                len(os.listdir(f"/proc/{os.getppid()}/task"))]

    assert spark.sparkContext.parallelize([0, 1], 2).map(frozen).collect() == [[True, [], 1]] * 2


def test_the_workers_import_the_installed_pyspark_not_sparks_zip_of_it(spark: Any) -> None:
    """Spark puts pyspark.zip and py4j's zip first on the workers' path; a module imported from a zip is compiled
    anew in every process (before: 0.4 s of the daemon's CPU). The installed packages, of the same version, are
    imported instead, with their cached bytecode."""
    import pyspark

    def where(_: object) -> list[str]:
        import py4j
        import pyspark

        # (nor an importer of the zips kept: a worker's first task would read their directories again)
        kept = [path for path in sys.path_importer_cache
                if Path(path).name == "pyspark.zip" or Path(path).name.startswith("py4j-")]
        return [pyspark.__file__ or "", py4j.__file__ or "", *kept]

    found = spark.sparkContext.parallelize([0, 1], 2).map(where).collect()
    assert all(".zip" not in path for paths in found for path in paths), found
    assert found[0][0] == pyspark.__file__


def test_a_bare_context_is_enough_for_the_engine(spark: Any, fleet: list[Path], tmp_path: Path) -> None:
    """The CLI runs the engine on a SparkContext (spark_context: no SQL session, about 2.3 s of the JVM's CPU
    less); the engine takes a context or a session alike."""
    engine = SparkEngine(spark.sparkContext)
    assert engine.context is spark.sparkContext is SparkEngine(spark).context
    analyze(engine, fleet[:3], tmp_path / "context")
    analyze(PythonEngine(), fleet[:3], tmp_path / "python")
    same_files(tmp_path / "context", tmp_path / "python")


def test_growth_tables_travel_as_tuples_and_come_back_equal(fleet: list[Path]) -> None:
    """Every table of every cluster's growth, snapshots and leadership included, rebuilt as it was."""
    grown = [read_growth(path, path.name) for path in fleet]
    assert any(g.snapshots for g in grown) and all(g.leadership and g.growth and g.log_size for g in grown)
    for growth in grown:
        packed = PackedGrowth.of(growth)
        assert all(type(row) is tuple for rows in packed.rows.values() for row in rows)
        assert packed.unpacked() == growth


def test_the_heaviest_tasks_start_first() -> None:
    slots = place([("a", 0), ("b", 0), ("c", 0), ("c", 1)], 4, [10, 10, 5, 5])
    assert sorted(slots[:2]) == [[0], [1]] and sorted(slots[2:]) == [[2], [3]]


@pytest.mark.parametrize("catch_up", [0, CATCH_UP])
def test_progress_reports_stages_and_records(spark: Any, fleet: list[Path], catch_up: float, tmp_path: Path) -> None:
    said: list[Any] = []  # stage names, and (done, total) reports, in order
    got = SparkEngine(spark, ranges=3, catch_up=catch_up).analyze(
        AnalysisRequest.of(fleet, tmp_path / "out"), lambda done, total: said.append((done, total)), said.append)
    stages = [i for i, s in enumerate(said) if isinstance(s, str)]
    # ranges that catch up need no deltas: no stage for them
    assert [said[i] for i in stages] == ["range deltas", "replay", "tables"][0 if catch_up == 0 else 1:]
    # each stage reports its own share, from 0 (the replay used to count the delta stage's tasks again) to all
    # of it: the replay every offset of the logs (progress counts offsets; got.records the data records), the
    # tables' stage those of the clusters cut in several ranges (here every cluster)
    offsets = sum(last - first + 1 for first, last in map(log_bounds, fleet))
    assert 0 < got.records < offsets  # each log has a control batch
    for at, end in zip(stages[1:], [*stages[2:], len(said)], strict=True):
        calls = said[at + 1:end]
        assert calls[0] == (0, offsets) and calls[-1] == (offsets, offsets), said[at]
        assert all(0 <= done <= total == offsets for done, total in calls), said[at]


def test_an_empty_fleet(spark: Any, tmp_path: Path) -> None:
    got = analyze(SparkEngine(spark), [], tmp_path / "out")
    assert (got.records, got.batches, got.events) == (0, 0, 0)
    assert not list((tmp_path / "out").rglob("*.parquet"))


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


def test_the_command_shows_stage_and_rate_on_a_terminal(spark: Any, fleet: list[Path], tmp_path: Path) -> None:
    screen = io.StringIO()
    with _EveryUpdate("analyze (spark)", stream=screen, enabled=True) as progress:
        run_engine(SparkEngine(spark, ranges=2, catch_up=0), AnalysisRequest.of(fleet, tmp_path / "out"), progress)
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


def test_deltas_composed_from_cuts_equal_python(spark: Any, fleet: list[Path], expected: tuple[Path, AnalysisSummary],
                                                monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("metalog.analysis.engines.spark.delta_cuts", lambda pieces, cores: 3)
    got = analyze(SparkEngine(spark, ranges=4, catch_up=0), fleet, tmp_path / "out", csv=True)
    same_files(tmp_path / "out", expected[0])
    assert len(got.task_cpu["deltas"]) > 0


@pytest.mark.parametrize("active", [True, False], ids=["active-session", "context-only"])
def test_a_running_session_is_used_and_left_running(spark: Any, fleet: list[Path], active: bool,
                                                     tmp_path: Path) -> None:
    """A session the caller runs (a notebook's; here the tests' own) survives spark_session() and SparkEngine.analyze:
    spark_session uses it, or a session over the caller's SparkContext when this thread has no active session,
    with the caller's settings, and stops only a session it started itself."""
    jvm_session = spark.sparkContext._jvm.SparkSession
    if not active:
        jvm_session.clearActiveSession()
    try:
        with spark_session("local[1]", app="another app", driver_memory="1g") as session:
            assert session.sparkContext is spark.sparkContext
            analyze(SparkEngine(session), fleet[:3], tmp_path / "spark")
    finally:
        jvm_session.setActiveSession(spark._jsparkSession)
    analyze(PythonEngine(), fleet[:3], tmp_path / "python")
    same_files(tmp_path / "spark", tmp_path / "python")
    assert not spark.sparkContext._jsc.sc().isStopped()
    assert spark.sparkContext.appName == "metalog tests" and spark.sparkContext.master == "local[2]"
    assert spark.range(5).count() == 5
    analyze(SparkEngine(spark), fleet[:3], tmp_path / "again")
    same_files(tmp_path / "again", tmp_path / "python")


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


def test_both_engines_write_the_same_tables_and_metrics(spark: Any, fleet: list[Path], tmp_path: Path) -> None:
    """Another bucket width, and controller_metrics.om with a sample at every batch time: the same files."""
    for engine in (SparkEngine(spark, ranges=3), PythonEngine()):
        analyze(engine, fleet, tmp_path / engine.name, bucket_ms=30_000, metrics_every_batch=True)
    same_files(tmp_path / "spark", tmp_path / "python")
    assert not [p for p in (tmp_path / "spark").iterdir() if p.name.startswith(".spark-")]  # its scratch is gone


@settings(max_examples=4)  # each example runs a dozen Spark jobs: seconds each
@given(logs=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["mixed", "zk-migration", "jbod-transition"]),
                               st.integers(20, 1500), st.sampled_from([50, 400, 100_000])), min_size=1, max_size=3),
       ranges=st.integers(1, 6), partitions=st.none() | st.integers(1, 4), catch_up=st.sampled_from([0, 1, CATCH_UP]))
def test_random_fleets_and_partitionings_give_the_python_engines_tables(
        spark: Any, tmp_path_factory: pytest.TempPathFactory, logs: list[tuple[int, str, int, int]], ranges: int,
        partitions: int | None, catch_up: float) -> None:
    root = tmp_path_factory.mktemp("random")
    paths = []
    for n, (seed, scenario, records, every) in enumerate(logs):
        paths.append(root / f"{scenario}-{n}")
        write_history(paths[-1], seed, HistorySettings(brokers=3, topics=3, partitions=2, records=records,
                                                       scenario=scenario), snapshot_every=every)
    named = [f"{p.name}={p}" for p in paths]  # (two logs of one seed share a cluster.id)
    analyze(SparkEngine(spark, ranges=ranges, partitions=partitions, catch_up=catch_up), named, root / "spark")
    analyze(PythonEngine(), named, root / "python")
    same_files(root / "spark", root / "python")


def test_the_report_built_on_the_executors_is_the_report_built_here(spark: Any, fleet: list[Path],
                                                                   tmp_path: Path) -> None:
    """The Spark engine reads and compacts each cluster of the report on its executors (``SparkEngine.run``), or
    each cluster in two parts (``cores`` beyond the fleet's size: ``report.split_parts``) that the driver joins:
    the same report.html and report.png as the driver one cluster at a time, and no scratch left."""
    from metalog.analysis.outputs.report import write_report_from_tables

    names = [cluster_name(p) for p in fleet]
    for where in ("here", "executors", "parts"):
        analyze(PythonEngine(), fleet, tmp_path / where)
        write_report_from_tables(tmp_path / where, names, SparkEngine(spark).run if where != "here" else None,
                                 cores=64 if where == "parts" else 1)
        assert not list((tmp_path / where).glob(".report-*"))
    for page in ("report.html", "report.png"):
        if (tmp_path / "here" / page).exists():
            assert (tmp_path / "executors" / page).read_bytes() == (tmp_path / "here" / page).read_bytes()
            assert (tmp_path / "parts" / page).read_bytes() == (tmp_path / "here" / page).read_bytes()


def test_a_log_directory_whose_name_is_not_utf8(spark: Any, tmp_path: Path) -> None:
    """Before: UnicodeEncodeError; the cluster is named with the name's bytes escaped, as the python engine
    names it."""
    log = without_cluster_id(jbod_transition(tmp_path / "jbod"), os.fsdecode(b"caf\xe9"))
    analyze(PythonEngine(), [log], tmp_path / "python")
    assert {r["cluster"] for r in read_tables(tmp_path / "python" / "timeline_batches")} == {"caf\\xe9"}
    analyze(SparkEngine(spark), [log], tmp_path / "spark")
    same_files(tmp_path / "spark", tmp_path / "python")


@pytest.mark.parametrize("cores", [2, 3])
def test_ranges_whose_start_states_the_driver_wrote_while_the_jvm_started(spark: Any, tmp_path: Path, cores: int,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``metalog analyze`` on a local master has a process of the driver's write the start states of a cut
    cluster's later ranges while the JVM starts (``spark_starts``): the engine takes them where its plan has those
    ranges (2 cores, as local[2]'s), cut equal, and ends the process otherwise (planned for 3); the python engine's
    files either way, a transaction open at the cut included."""
    from metalog.analysis.engines.spark_meanwhile import MeanwhileStarts

    generated = tmp_path / "mixed"
    write_history(generated, 42, HistorySettings(brokers=3, topics=3, partitions=2, records=3000, scenario="mixed"),
                  snapshot_every=10**9)
    for log in (generated, transactions_and_topic_configs(tmp_path / "tx")):
        request = AnalysisRequest.of([log], tmp_path / "spark" / log.name)
        dropped: list[bool] = []
        with MeanwhileStarts(request, cores) as starts:
            monkeypatch.setattr(starts, "drop", lambda dropped=dropped: dropped.append(True))
            starts.start()
            starts.join()
            assert len(starts.stop()) == 1
            got = SparkEngine(spark, meanwhile=starts).analyze(request)
        assert dropped == ([] if cores == 2 else [True]) and len(got.task_cpu["replay"]) == 2
        analyze(PythonEngine(), [log], tmp_path / "python" / log.name)
        same_files(tmp_path / "spark" / log.name, tmp_path / "python" / log.name)


def test_sparks_parquet_reader_reads_the_tables_as_pyarrow_does(spark: Any, expected: tuple[Path, AnalysisSummary],
                                                                ) -> None:
    """The files' encodings (``layout.parquet_writer``: DELTA_BINARY_PACKED numbers) are read by Spark's own
    reader, every table, to the same values (times as epoch ms)."""
    from metalog.analysis.outputs.growth_tables import GROWTH_TABLES
    from metalog.analysis.outputs.layout import TABLES

    out = expected[0]
    read = 0
    for table in [*TABLES, *GROWTH_TABLES]:
        rows = read_tables(out / table) if (out / table).is_dir() else []
        if not rows:
            continue
        frame = spark.read.parquet(str(out / table))
        times = {f.name for f in frame.schema.fields if f.dataType.typeName() == "timestamp"}
        columns = [f"unix_millis(`{c}`) AS `{c}`" if c in times else f"`{c}`" for c in rows[0]]
        assert sorted(tuple(r) for r in frame.selectExpr(*columns).collect()) == \
            sorted(tuple(r.values()) for r in rows), table
        read += 1
    assert read >= 8


@pytest.mark.parametrize("field", sorted(DAMAGES))
def test_a_damaged_batch_in_a_later_range_is_the_python_engines_one_line_error(spark: Any, tmp_path: Path,
                                                                              field: str) -> None:
    """The growth is counted by the ranges' own scans (no pass of its own over the log, which read the damage first
    before): a damaged batch in the second of two ranges fails that range's task with the error the python
    engine's replay names (``log verify``'s: the segment, the byte), in one line."""
    from metalog.analysis.engines.spark_session import spark_errors

    path = tmp_path / "log"
    batches = build_log(path, records=700, seed=11)
    first, last = log_bounds(path)
    at = next(b for b in batches if b.base_offset > first + (last - first) * 3 // 4)
    damage(at, DAMAGES[field])
    with pytest.raises(MetalogError) as python:
        analyze(PythonEngine(), [path], tmp_path / "python")
    with pytest.raises(MetalogError) as got, spark_errors():
        analyze(SparkEngine(spark, ranges=2), [path], tmp_path / "spark")
    assert str(got.value) == str(python.value) and "\n" not in str(got.value)
    assert str(got.value).startswith(f"{at.segment}, byte ")
