"""The growth passes the Spark engine's driver runs while its JVM starts (``spark_meanwhile.DriverGrowth``), in this
process: the files they write are the python engine's, the passes begun before ``stop`` are the driver's and no
other, a pass's error reaches the caller, and a directory of the user's is refused before anything in it is
emptied."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.engines.python import PythonEngine
from metalog.analysis.engines.request import AnalysisRequest
from metalog.analysis.engines.spark_meanwhile import DriverGrowth, DriverShare
from metalog.analysis.outputs import growth_tables
from metalog.analysis.outputs.growth_tables import GROWTH_TABLES
from metalog.errors import MetalogError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("logs")
    named = []
    for n, records in enumerate((1500, 3000, 800)):  # (the heaviest, the second, is the driver's first pass)
        path = root / f"mixed-{n}"
        write_history(path, 50 + n, HistorySettings(brokers=3, topics=3, partitions=2, records=records,
                                                    scenario="mixed"), snapshot_every=10**9)
        named.append(f"c{n}={path}")
    return named


def growth_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for table in GROWTH_TABLES for p in sorted((out / table).rglob("*"))
            if p.is_file()}


def test_the_drivers_passes_write_the_python_engines_growth_files(logs: list[str], tmp_path: Path) -> None:
    PythonEngine().analyze(AnalysisRequest.of(logs, tmp_path / "python"))
    growth = DriverGrowth(AnalysisRequest.of(logs, tmp_path / "driver"))
    with growth:
        growth.start()
        found = growth.result()  # (every pass: not stopped)
        assert growth.stop() == DriverShare(True, frozenset({"c0", "c1", "c2"}))
    assert sorted(found) == ["c0", "c1", "c2"]
    expected = growth_files(tmp_path / "python")
    assert growth_files(tmp_path / "driver") == expected and expected


def test_stopped_before_it_started_it_takes_nothing_and_writes_nothing(logs: list[str], tmp_path: Path) -> None:
    with DriverGrowth(AnalysisRequest.of(logs, tmp_path / "out")) as growth:
        assert growth.stop() == DriverShare(False, frozenset())
        growth.start()
        assert growth.result() == {}
    assert not (tmp_path / "out").exists()


def test_the_passes_begun_before_stop_are_the_drivers_and_finish(logs: list[str], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # the driver's second pass (c0) is under way when the engine plans: it is the driver's to finish, the third
    # (c2) is the executors'
    under_way, go_on = threading.Event(), threading.Event()
    run = growth_tables.growth_task

    def held(task: Any) -> Any:
        if task.name == "c0":
            under_way.set()
            assert go_on.wait(60)
        return run(task)

    monkeypatch.setattr(growth_tables, "growth_task", held)
    with DriverGrowth(AnalysisRequest.of(logs, tmp_path / "out")) as growth:
        growth.start()
        assert under_way.wait(60)
        assert growth.stop() == DriverShare(True, frozenset({"c1", "c0"}))
        go_on.set()
        assert sorted(growth.result()) == ["c0", "c1"]
    assert sorted(p.name for p in (tmp_path / "out" / "growth").iterdir()) == ["cluster=c0", "cluster=c1"]


def test_a_passs_error_is_raised_in_the_callers_thread(logs: list[str], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def damaged(task: Any) -> Any:
        raise MetalogError(f"{task.path}: damaged")

    monkeypatch.setattr(growth_tables, "growth_task", damaged)
    with DriverGrowth(AnalysisRequest.of(logs, tmp_path / "out")) as growth:
        growth.start()
        with pytest.raises(MetalogError, match="damaged"):
            growth.result()


def test_a_directory_of_the_users_is_refused_before_anything_in_it_is_emptied(logs: list[str],
                                                                               tmp_path: Path) -> None:
    mine = tmp_path / "out" / "growth" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("the user's")
    with DriverGrowth(AnalysisRequest.of(logs, tmp_path / "out")) as growth:
        growth.start()
        with pytest.raises(MetalogError, match="did not write"):
            growth.result()
        assert growth.stop() == DriverShare(False, frozenset())
    assert mine.read_text() == "the user's"
