"""``metalog demo`` end to end at a small size: generate, replay, diff, then the analysis and where to look."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from metalog.analysis.pipeline import read_table
from metalog.cli.main import main
from metalog.errors import MetalogError

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
    assert "log: post-migration since " in out  # the summary line of the report


def test_demo_python_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demo = tmp_path / "demo"
    assert main(["demo", "--out", str(demo), "--records", "2000", "--engine", "python"]) == 0
    out = capsys.readouterr().out
    assert "== 6. the migration-phase analysis (the python engine)" in out
    assert "note:" not in out  # the engine was asked for: nothing to explain
    _check_outputs(out, demo)
    assert out.index("== 5. what changed") < out.index("== 6.") < out.index("== where to look") < out.index("== next")


def test_demo_without_java_falls_back_to_python_saying_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import metalog.analysis.spark

    def no_java() -> str:
        raise MetalogError("no java")

    monkeypatch.setattr(metalog.analysis.spark, "find_java", no_java)
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


def _has_spark() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install -e '.[test]' installs it)"
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "no Java runtime (JAVA_HOME or java on PATH)"
    return None


@pytest.mark.skipif(_has_spark() is not None, reason=str(_has_spark()))
def test_demo_default_engine_is_spark_end_to_end(tmp_path: Path) -> None:
    """What scripts/demo.sh runs: the default engine, in its own process (its own JVM and Spark session)."""
    demo, scratch = tmp_path / "demo", tmp_path / "tmp"
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-m", "metalog.cli.main", "demo", "--out", str(demo), "--records", "1500"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr
    assert "== 6. the migration-phase analysis (Spark on local[*])" in done.stdout
    assert "note:" not in done.stdout and "Traceback" not in done.stderr
    _check_outputs(done.stdout, demo)
    assert not list(scratch.iterdir())  # Spark's scratch space is removed
