"""The Spark engine's timeline and events equal the python engine's, for a fleet in one job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.pipeline import analyze_python
from metalog.analysis.spark import analyze_spark, find_java
from metalog.errors import MetalogError
from metalog.generate.history import HistorySettings
from metalog.generate.writer import write_history
from tests.analysis.test_parallel import transactions_and_topic_configs
from tests.analysis.test_timeline import jbod_transition, zk_migration


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("fleet")
    paths = [zk_migration(root / "zk"), jbod_transition(root / "jbod"), transactions_and_topic_configs(root / "tx")]
    for seed, scenario in ((11, "mixed"), (12, "zk-migration"), (13, "jbod-transition")):
        path = root / f"{scenario}-{seed}"
        write_history(path, seed, HistorySettings(brokers=4, topics=5, partitions=3, records=4000, scenario=scenario),
                      snapshot_every=100_000)
        paths.append(path)
    return paths


@pytest.mark.parametrize("ranges_per_core", [1, 3, 7])
def test_spark_equals_python(spark: Any, fleet: list[Path], ranges_per_core: int) -> None:
    expected = analyze_python(fleet)
    got = analyze_spark(spark, fleet, ranges_per_core=ranges_per_core)
    assert got.rows == expected.rows
    assert got.events == expected.events
    assert {r["cluster"] for r in got.rows} == {p.name for p in fleet}


def test_an_empty_fleet(spark: Any) -> None:
    assert analyze_spark(spark, []).rows == []


def test_no_java_is_one_line_saying_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MetalogError) as e:
        find_java()
    assert "install a JDK" in str(e.value) and "--engine python" in str(e.value) and "\n" not in str(e.value)
