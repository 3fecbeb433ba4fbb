"""``metalog demo`` end to end at a small size: generate, replay, diff, then the analysis and where to look."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from metalog.analysis.result import cluster_name
from metalog.analysis.tables import read_table
from metalog.cli.main import main
from metalog.errors import MetalogError
from tests.cli.conftest import DemoRun

OUTPUTS = ["timeline_batches.csv", "timeline_buckets.csv", "events.csv", "report.html", "report.png"]


def _check_outputs(out: str, demo: Path) -> None:
    analysis = demo / "analysis"
    for name in OUTPUTS:
        assert (analysis / name).stat().st_size > 0, name
    assert (analysis / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 'id="metalog-data"' in (analysis / "report.html").read_text()  # the charts' data, drawn by its script
    page = re.escape((analysis / 'report.html').resolve().as_uri())
    assert re.search(rf"\n   the report \(open it in a browser\): +{page}\n", out)
    png = re.escape(str(analysis / 'report.png'))
    assert re.search(rf"\n   its main chart: +{png}\n", out)
    # the mixed scenario's story shows in the events the demo lists
    events = read_table(analysis / "events.csv")
    shown = [e for e in events if e["event"] != "aborted-transaction"]
    for e in shown:
        assert f"{e['offset']:>8,}  {e['event']}" in out
    assert {"phase-change", "metadata-version", "directory-failure"} <= {e["event"] for e in shown}
    assert "dual-write -> post-migration" in out
    assert f"events: {len(events)}, {len(events) - len(shown)} of them aborted" in out
    assert f"{cluster_name(demo / 'log')}: post-migration since " in out  # the report's summary line (its cluster.id)


def test_demo_python_engine(python_demo: DemoRun) -> None:
    out = python_demo.stdout
    assert "== 6. the migration-phase analysis (the python engine)" in out
    assert "note:" not in out  # the engine was asked for: nothing to explain
    _check_outputs(out, python_demo.out)
    assert out.index("== 5. what changed") < out.index("== 6.") < out.index("== where to look") < out.index("== next")


def test_demo_writes_a_log_and_shows_each_step(python_demo: DemoRun) -> None:
    assert "== 1. generating a cluster history" in python_demo.stdout
    assert "what changed between offsets" in python_demo.stdout
    assert (python_demo.out / "log" / "__cluster_metadata-0").is_dir()


def test_demo_replaces_a_directory_it_wrote(python_demo: DemoRun, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(python_demo.out, demo)
    (demo / "stale.txt").write_text("from the run before")
    assert main(["demo", "--out", str(demo), "--records", "500", "--engine", "python"]) == 0
    assert "== 1. generating a cluster history (500 data records" in capsys.readouterr().out
    assert not (demo / "stale.txt").exists() and (demo / "analysis" / "report.html").is_file()


def test_demo_without_java_falls_back_to_python_saying_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import metalog.analysis.engines.spark_session

    def no_java() -> str:
        raise MetalogError("no java")

    monkeypatch.setattr(metalog.analysis.engines.spark_session, "find_java", no_java)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "pyspark" else None)
    assert main(["demo", "--out", str(tmp_path / "demo"), "--records", "1000"]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if "note:" in line]
    assert notes == ["   note: no Java runtime found (JAVA_HOME or java on PATH), so the analysis runs on the python "
                     "engine (for Spark: install a JDK 17 or 21, e.g. apt-get install openjdk-17-jre-headless)"]
    assert "(the python engine)" in out


def test_demo_without_pyspark_falls_back_saying_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    assert main(["demo", "--out", str(tmp_path / "demo"), "--records", "1000"]) == 0
    out = capsys.readouterr().out
    assert "   note: pyspark is not installed, so the analysis runs on the python engine (for Spark: pip install " \
           "'metalog[spark]' and a JDK 17 or 21)\n" in out
    assert (tmp_path / "demo" / "analysis" / "report.html").is_file()


def test_demo_refuses_a_directory_it_did_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    assert main(["demo", "--out", str(tmp_path / "other"), "--engine", "python"]) == 1
    err = capsys.readouterr().err
    assert err == f"metalog: error: {tmp_path / 'other'} exists and is not a metalog demo directory; choose another " \
                  "--out\n"
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"


def test_demo_default_engine_is_spark_end_to_end(spark_demo: DemoRun) -> None:
    """What scripts/demo.sh runs: the default engine, in its own process (its own JVM and Spark session)."""
    assert "== 6. the migration-phase analysis (Spark on local[*])" in spark_demo.stdout
    assert "note:" not in spark_demo.stdout and "Traceback" not in spark_demo.stderr
    _check_outputs(spark_demo.stdout, spark_demo.out)
    assert spark_demo.scratch is not None and not list(spark_demo.scratch.iterdir())  # Spark's scratch is removed
