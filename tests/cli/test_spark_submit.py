"""The spark-submit command of docs/analysis.md (On a Spark cluster): metalog's entry point as the application, on
a tiny generated log."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import metalog.cli.main
from metalog.analysis.tables import read_table
from metalog.cli.main import main

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(not SPARK_SUBMIT.exists(), reason="no spark-submit next to this python (pyspark not installed)")
@pytest.mark.skipif(not (os.environ.get("JAVA_HOME") or shutil.which("java")), reason="no Java runtime")
def test_spark_submit_runs_metalog_analyze(tmp_path: Path) -> None:
    assert main(["generate", str(tmp_path / "mixed"), "--scenario", "mixed", "--seed", "3", "--records", "500"]) == 0
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    done = subprocess.run([str(SPARK_SUBMIT), "--master", "local[1]", metalog.cli.main.__file__, "analyze",
                           "mixed", "--out", "out", "--master", "local[1]"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(["analyze", str(tmp_path / "mixed"), "--out", str(tmp_path / "py"), "--engine", "python"]) == 0
    for table in ("timeline_batches", "events"):  # the Parquet tables, written by the executors
        assert read_table(tmp_path / "out" / table) == read_table(tmp_path / "py" / table)
