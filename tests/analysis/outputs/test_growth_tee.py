"""The growth pass fed by the python engine's replay (a tee of its scan: ``engines.python.replay_cluster``) counts what
its own scan counts (``growth.read_growth``, the other engines' pass): the same four tables for random logs, on
either twin of the scan, the tee and the count; the same files from ``metalog analyze --engine python``; and a
damaged log is the one-line error the replay alone names, the error ``log verify`` names."""

from __future__ import annotations

import filecmp
import re
import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.analysis.clusters import cluster_logs
from metalog.analysis.engines.python import PythonEngine, replay_cluster
from metalog.analysis.engines.request import AnalysisRequest
from metalog.analysis.outputs.growth import ClusterGrowth, read_growth
from metalog.analysis.outputs.growth_tables import GROWTH_TABLES, write_growth
from metalog.codec import core
from metalog.errors import MetalogError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from tests.analysis.outputs.test_growth import INT64_MIN, histories, write_history
from tests.log.damage import DAMAGES, PARTITION_DIR, BatchAt, build_log, damage

CORES = [(), ("log",), ("analysis",), ("log", "analysis")]  # the cores made pure: the scan and tee, the count
ONE_LINE = re.compile(r"^\S+/\d{20}\.log, byte \d+: [^\n]+$")


def teed(path: Path) -> ClusterGrowth:
    """The growth the python engine's replay counts as it scans."""
    grown: list[ClusterGrowth] = []
    replay_cluster(path, "g", lambda chunk: None, growth=grown.append)
    (growth,) = grown
    return growth


def pure(cores: tuple[str, ...]) -> ExitStack:
    stack = ExitStack()
    for name in cores:
        stack.enter_context(core.pure_twins(name))
    return stack


@pytest.mark.slow  # about 4 s of CPU
@pytest.mark.parametrize("cores", CORES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), small_segments=st.booleans(), early=st.booleans(), cut=st.integers(0, 40))
def test_the_tee_counts_what_the_growth_pass_own_scan_counts(tmp_path_factory: pytest.TempPathFactory,
                                                            cores: tuple[str, ...],
                                                            history: list[tuple[str, int, list[int]]],
                                                            small_segments: bool, early: bool, cut: int) -> None:
    """A log that starts inside a batch (retention: ``cut``) too: the replay and the count both start at its start
    offset. A log cut after no snapshot is refused by the replay (no state to start from), with or without the
    count, as before."""
    path = write_history(tmp_path_factory.mktemp("tee") / "g", history, 600 if small_segments else 1 << 30,
                         INT64_MIN + 30_000 if early else 1_700_000_000_000)
    with MetadataLog.open(path, Mode.WRITE, config=LogConfig(durability=Durability.NONE)) as log:
        log.delete_segments_before(cut)
    with pure(cores):
        alone = outcome(lambda: replay_cluster(path, "g", lambda chunk: None))
        if isinstance(alone, tuple):
            assert outcome(lambda: teed(path)) == alone
        else:
            assert teed(path) == read_growth(path, "g")


def test_the_python_engine_writes_the_growth_files_the_separate_pass_writes(tmp_path: Path) -> None:
    """Snapshots, elections and a log started after a snapshot (retention) included; Parquet and CSV."""
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history as generate

    log = generate(tmp_path / "gen", 5, HistorySettings(records=3000), snapshot_every=700).path
    with MetadataLog.open(log, Mode.WRITE, config=LogConfig(durability=Durability.NONE)) as opened:
        opened.delete_segments_before(opened.snapshot_ids()[0].end_offset)
    assert PythonEngine().analyze(AnalysisRequest.of([str(log)], tmp_path / "engine", csv=True))
    write_growth(tmp_path / "pass", cluster_logs([str(log)]), csv=True)
    for table in GROWTH_TABLES:
        assert filecmp.cmp(tmp_path / "engine" / f"{table}.csv", tmp_path / "pass" / f"{table}.csv", shallow=False)
        engine, separate = sorted((tmp_path / "engine" / table).rglob("*.parquet")), sorted(
            (tmp_path / "pass" / table).rglob("*.parquet"))
        assert [p.relative_to(tmp_path / "engine") for p in engine] == [p.relative_to(tmp_path / "pass")
                                                                        for p in separate]
        assert all(filecmp.cmp(a, b, shallow=False) for a, b in zip(engine, separate, strict=True))
    assert (tmp_path / "engine" / "snapshots.csv").read_text().count("\n") > 1


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BatchAt]]:
    path = tmp_path_factory.mktemp("pristine")
    return path, build_log(path, records=140, seed=11, segment_bytes=3500, index_interval_bytes=700,
                           batches_per_epoch=25)


def outcome(read: Any) -> Any:
    try:
        return read()
    except MetalogError as e:
        return "error", str(e)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), field=st.sampled_from(sorted(DAMAGES)), pure_cores=st.booleans())
def test_a_damaged_log_is_the_error_the_replay_alone_names(pristine: tuple[Path, list[BatchAt]],
                                                           tmp_path_factory: pytest.TempPathFactory,
                                                           data: st.DataObject, field: str, pure_cores: bool) -> None:
    """Every batch but the last (whose damage the log's recovery cuts as a torn write)."""
    path, batches = pristine
    at = data.draw(st.sampled_from(batches[:-1]))
    work = tmp_path_factory.mktemp("damaged") / "log"
    shutil.copytree(path, work)
    damage(BatchAt(work / PARTITION_DIR / at.segment.name, at.position, at.base_offset, at.last_offset,
                   at.is_control), DAMAGES[field])
    with pure(("log", "analysis") if pure_cores else ()):
        alone = outcome(lambda: replay_cluster(work, "g", lambda chunk: None))
        grown: list[ClusterGrowth] = []
        with_growth = outcome(lambda: replay_cluster(work, "g", lambda chunk: None, growth=grown.append))
        separate = outcome(lambda: read_growth(work, "g"))
    assert alone[0] == "error" and ONE_LINE.match(alone[1]) and f"/{at.segment.name}, byte " in alone[1], alone
    assert with_growth == alone == separate and not grown
