"""A failed analysis marks its output directory: ``INCOMPLETE`` from the claim until the run ends well, naming why
a run failed; a run that ends well removes it; a directory metalog did not claim is never written."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from metalog.analysis.outputs.claim import INCOMPLETE, claimed_output
from metalog.analysis.outputs.tables import MARKER
from metalog.cli.main import main
from metalog.errors import MetalogError
from tests.analysis.test_timeline import zk_migration

SEGMENT = "__cluster_metadata-0/00000000000000000000.log"


def damaged(log: Path) -> Path:
    """``log`` with the last byte of its first batch's records flipped: its CRC no longer holds, and valid batches
    follow (damage, not a torn tail)."""
    data = bytearray((log / SEGMENT).read_bytes())
    data[12 + int.from_bytes(data[8:12], "big") - 1] ^= 0xFF
    (log / SEGMENT).write_bytes(bytes(data))
    return log


def test_the_marker_is_there_while_the_run_works_and_gone_when_it_ends_well(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with claimed_output(out):
        text = (out / INCOMPLETE).read_text()
        assert (out / MARKER).is_file() and text.startswith("metalog analyze started here at ")
        assert "has not finished" in text  # what a run killed here leaves
    assert sorted(p.name for p in out.iterdir()) == [MARKER]


@pytest.mark.parametrize(("error", "said"), [
    (MetalogError("log/x.log, byte 92: batch: CRC-32C mismatch"), "log/x.log, byte 92: batch: CRC-32C mismatch"),
    (KeyboardInterrupt(), "interrupted"),
    (OSError(28, "No space left on device", "out/events"), "No space left on device: out/events"),
    (MetalogError("topic \x1b[31mred"), "topic \\x1b[31mred"),  # a name from a log, escaped as on a terminal
])
def test_a_failure_is_named_in_the_marker_and_goes_on(tmp_path: Path, error: BaseException, said: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(type(error)), claimed_output(out):
        (out / "events").mkdir()  # a table written before the failure stays, marked partial
        raise error
    text = (out / INCOMPLETE).read_text()
    assert re.match(r"metalog analyze started here at \S+Z failed at \S+Z: (.*)\n", text)[1] == said  # type: ignore[index]
    assert "partial" in text and (out / "events").is_dir()


def test_a_directory_holding_other_files_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(MetalogError, match="did not write"), claimed_output(out):
        pass
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_failed_analyze_leaves_incomplete_naming_its_error_and_a_rerun_removes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line, on the python engine: damage in the log fails the run after it claimed --out; the
    marker holds the line it printed; the same command over the mended log ends well and removes it."""
    pytest.importorskip("pyarrow")
    log = zk_migration(tmp_path / "zk")
    pristine = tmp_path / "pristine"
    shutil.copytree(log, pristine)
    damaged(log)
    out = tmp_path / "out"
    assert main(["analyze", str(log), "--out", str(out), "--engine", "python"]) == 1
    line = capsys.readouterr().err.strip().removeprefix("metalog: error: ")
    assert "CRC-32C mismatch" in line and f": {line}\n" in (out / INCOMPLETE).read_text()
    shutil.rmtree(log)
    shutil.copytree(pristine, log)
    assert main(["analyze", str(log), "--out", str(out), "--engine", "python"]) == 0
    assert not (out / INCOMPLETE).exists() and (out / "report.html").is_file()


@pytest.mark.spark
@pytest.mark.slow
def test_a_failed_spark_analysis_is_marked_the_same_way(tmp_path: Path) -> None:
    """A run that fails on Spark, after its executors wrote tables (damage in a log is found before a JVM starts):
    a file where the events table goes, in a directory an earlier analysis claimed."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from metalog.analysis.engines.spark_session import find_java

    try:
        find_java()
    except MetalogError as e:
        pytest.skip(str(e))
    log = zk_migration(tmp_path / "zk")
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text("")
    (out / "events").write_text("")
    done = subprocess.run([sys.executable, "-m", "metalog.cli.main", "analyze", str(log), "--out", str(out),
                           "--master", "local[1]"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip().splitlines()[-1].removeprefix("metalog: error: ")
    assert "events" in line and f": {line}\n" in (out / INCOMPLETE).read_text()
    assert (out / "timeline_batches").is_dir()  # written before the failure: partial, and marked so
