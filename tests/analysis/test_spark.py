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

from metalog.analysis.pipeline import Analysis, analyze_python
from metalog.analysis.spark import (
    analyze_spark,
    default_driver_memory,
    delta_cuts,
    find_java,
    place,
    range_counts,
    spark_session,
)
from metalog.cli.analyze import run_spark
from metalog.cli.progress import Progress
from metalog.errors import MetalogError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from tests.analysis.test_parallel import controls_and_aborts_inside_batches, transactions_and_topic_configs
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
    got = analyze_spark(spark, fleet, ranges=ranges)
    assert got.rows == expected.rows
    assert got.events == expected.events
    assert got.by_broker == expected.by_broker  # broker_timeline, directory_timeline, directory_failures
    assert {r["cluster"] for r in got.rows} == {p.name for p in fleet}


def test_any_number_of_partitions_and_with_or_without_points(spark: Any, fleet: list[Path],
                                                              expected: Analysis) -> None:
    """Ranges placed on 1..6 partitions (several ranges share one when there are fewer partitions than ranges),
    from snapshots and images or from deltas only: the same rows and events."""
    for partitions in range(1, 7):
        got = analyze_spark(spark, fleet, ranges=4, partitions=partitions, points=partitions % 2 == 0)
        assert (got.rows, got.events, got.by_broker) == (expected.rows, expected.events, expected.by_broker), \
            f"{partitions} partitions"


def test_placement_is_stable_across_processes() -> None:
    keys = [(name, n) for name in ("zk", "jbod", "tx", "a" * 40) for n in range(5)]
    code = ("from metalog.analysis.spark import place; "
            f"print(place({keys!r}, 3))")
    outs = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                           capture_output=True, text=True, check=True).stdout for seed in ("1", "2", "random")}
    assert outs == {f"{place(keys, 3)}\n"}
    slots = place([("zk", n) for n in range(6)] + [("jbod", n) for n in range(5)], 4)
    assert sorted(len(s) for s in slots) == [2, 3, 3, 3]  # spread evenly over the fleet
    assert sorted(i for s in slots for i in s) == list(range(11))
    assert range_counts([100, 300, 0], 8) == [2, 6, 1]


def test_progress_reports_stages_and_records(spark: Any, fleet: list[Path]) -> None:
    calls: list[tuple[int, int]] = []
    stages: list[str] = []
    got = analyze_spark(spark, fleet, ranges=3, progress=lambda done, total: calls.append((done, total)),
                        stage=stages.append)
    assert stages == ["range deltas", "replay"]
    assert calls[0] == (0, got.records) and calls[-1] == (got.records, got.records)
    assert all(0 <= done <= total == got.records for done, total in calls)


def test_an_empty_fleet(spark: Any) -> None:
    assert analyze_spark(spark, []).rows == []


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
        result = run_spark(spark, [str(p) for p in fleet], progress)
    text = screen.getvalue()
    assert "analyze (spark: range deltas)" in text and "analyze (spark: replay)" in text
    assert f"{result.records:,}/{result.records:,} records (" in text and re.search(r"records \([\d,]+/s\)", text)


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
    monkeypatch.setattr("metalog.analysis.spark.delta_cuts", lambda pieces, cores: 3)
    got = analyze_spark(spark, fleet, ranges=4)
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
            got = analyze_spark(session, fleet[:3])
    finally:
        jvm_session.setActiveSession(spark._jsparkSession)
    python = analyze_python(fleet[:3])
    assert (got.rows, got.events) == (python.rows, python.events)
    assert not spark.sparkContext._jsc.sc().isStopped()
    assert spark.sparkContext.appName == "metalog tests" and spark.sparkContext.master == "local[2]"
    assert spark.range(5).count() == 5
    assert analyze_spark(spark, fleet[:3]).rows == got.rows
