"""What the Spark engine's driver does while its JVM starts (``spark_meanwhile.MeanwhileStarts``), in this process:
on a local master it plans the start states of a cut cluster's later ranges and starts the process writing them as
soon as the plan is made (before: only once its growth passes were done, or at ``stop``); stopped before, it takes
nothing and starts nothing; on another master it plans nothing; its files go on exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalog.analysis.engines.parallel import caught_up
from metalog.analysis.engines.request import AnalysisRequest
from metalog.analysis.engines.spark_meanwhile import MeanwhileStarts
from metalog.analysis.engines.spark_starts import StartsProcess
from metalog.analysis.engines.start_files import read_start
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "mixed"
    write_history(path, 61, HistorySettings(brokers=3, topics=3, partitions=2, records=3000, scenario="mixed"),
                  snapshot_every=10**9)
    return path


def test_the_process_starts_as_soon_as_the_plan_is_made(tmp_path: Path, mixed: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its locks taken first (the engine may take the plan at once), then the process started, before ``stop``;
    the state it writes is the one the range would catch up to, and the directory goes on exit."""
    spawned: list[int] = []
    spawn = StartsProcess.spawn

    def told(self: StartsProcess) -> None:
        spawned.append(len(self._locks))  # (the locks it hands over)
        spawn(self)

    monkeypatch.setattr(StartsProcess, "spawn", told)
    with MeanwhileStarts(AnalysisRequest.of([mixed], tmp_path / "out"), 2) as starts:
        starts.start()
        starts.join()
        assert spawned == [1]  # (not stopped yet)
        (planned,) = starts.stop()
        (lo, _), origin = planned.bounds[1], planned.origins[1]
        assert origin.image is not None and read_start(Path(origin.image)) == caught_up(mixed, None, lo)
    assert not Path(origin.image).parent.exists()


def test_stopped_before_it_planned_it_takes_nothing_and_starts_nothing(tmp_path: Path, mixed: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    spawned: list[bool] = []
    monkeypatch.setattr(StartsProcess, "spawn", lambda self: spawned.append(True))
    with MeanwhileStarts(AnalysisRequest.of([mixed], tmp_path / "out"), 2) as starts:
        assert starts.stop() == ()
        starts.start()
        starts.join()
        assert starts.stop() == ()
    assert spawned == []


def test_on_a_master_of_unknown_cores_it_plans_nothing(tmp_path: Path, mixed: Path) -> None:
    """A cluster's master (``local_cores``: None): its executors do not share this machine's files."""
    with MeanwhileStarts(AnalysisRequest.of([mixed], tmp_path / "out")) as starts:
        starts.start()
        starts.join()
        assert starts.stop() == ()
    assert not (tmp_path / "out").exists()
