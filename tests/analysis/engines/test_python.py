"""The python engine (``engines.python.PythonEngine``): what it opens and tells around the per-batch loop."""

from __future__ import annotations

from pathlib import Path

import pytest

import metalog.analysis.engines.python as python_engine
from metalog.analysis.engines.python import PythonEngine
from metalog.analysis.engines.request import AnalysisRequest
from tests.analysis import crafted as c


def _fleet(root: Path) -> list[str]:
    """Two small clusters: 4 and 2 data records."""
    a = c.write(root / "a", [[c.feature(17), c.broker(1, 10), c.unfence(1, 10)], [c.rec("NoOpRecord")]])
    b = c.write(root / "b", [[c.feature(17)], [c.rec("NoOpRecord")]])
    return [f"a={a}", f"b={b}"]


@pytest.fixture
def sized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The log directories ``log_records`` is asked to size (each one a log opened once more)."""
    asked: list[str] = []
    size = python_engine.log_records

    def counted(path: str) -> int:
        asked.append(str(path))
        return size(path)

    monkeypatch.setattr(python_engine, "log_records", counted)
    return asked


def test_without_progress_no_log_is_opened_to_size_the_work(tmp_path: Path, sized: list[str]) -> None:
    summary = PythonEngine().analyze(AnalysisRequest.of(_fleet(tmp_path), tmp_path / "out"))
    assert summary.records == 6
    assert sized == []


def test_progress_is_told_the_records_out_of_every_cluster_s(tmp_path: Path, sized: list[str]) -> None:
    told: list[tuple[int, int]] = []
    summary = PythonEngine().analyze(AnalysisRequest.of(_fleet(tmp_path), tmp_path / "out"),
                                     lambda done, total: told.append((done, total)))
    assert len(sized) == 2
    assert told and told[-1] == (6, 6) and {total for _, total in told} == {6}
    assert summary.records == 6
