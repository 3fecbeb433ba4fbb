"""The Spark engine's progress per stage, without a JVM: the status tracker is read from a thread, and when it
fails (the JVM went away) the stage says so in the caller's thread, unless the stage's own work failed first."""

from __future__ import annotations

import threading

import pytest

from metalog.analysis.engines.spark import StageReport


class Tracker:
    """Spark's status tracker: no jobs yet, or the JVM's error on the ``fail_from``-th read."""

    def __init__(self, fail_from: int | None = None) -> None:
        self.reads, self.fail_from = 0, fail_from
        self.read = threading.Event()

    def getJobIdsForGroup(self, group: str) -> list[int]:  # noqa: N802 - pyspark's name
        self.reads += 1
        self.read.set()
        if self.fail_from is not None and self.reads >= self.fail_from:
            raise RuntimeError("An error occurred while calling o62.getJobIdsForGroup")
        return []


class Context:
    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker

    def setJobGroup(self, group: str, description: str) -> None:  # noqa: N802 - pyspark's name
        pass

    def statusTracker(self) -> Tracker:  # noqa: N802 - pyspark's name
        return self.tracker


def report(tracker: Tracker, said: list[tuple[int, int]]) -> StageReport:
    return StageReport(Context(tracker), 100, lambda done, total: said.append((done, total)), None)


def test_a_tracker_that_fails_fails_the_stage_in_the_callers_thread() -> None:
    tracker, said = Tracker(fail_from=1), []
    with pytest.raises(RuntimeError, match="getJobIdsForGroup"), report(tracker, said).stage("replay", 100):
        assert tracker.read.wait(10)
    assert said == [(0, 100)]  # no exact end: the stage did not end well


def test_the_stages_own_failure_comes_first() -> None:
    tracker: Tracker = Tracker(fail_from=1)
    with pytest.raises(KeyboardInterrupt), report(tracker, []).stage("replay", 100):
        assert tracker.read.wait(10)
        raise KeyboardInterrupt


def test_a_stage_that_ends_well_ends_with_an_exact_report() -> None:
    tracker, said = Tracker(), []
    with report(tracker, said).stage("replay", 100):
        assert tracker.read.wait(10)
    assert said == [(0, 100), (100, 100)]
