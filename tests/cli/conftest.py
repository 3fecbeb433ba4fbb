"""``metalog demo`` runs end to end once per engine for the whole suite; the tests that check its output read
these runs (a demo run costs seconds, on Spark a JVM of its own)."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from metalog.cli.main import main


@dataclass(frozen=True)
class DemoRun:
    out: Path  # the demo's --out directory
    stdout: str
    stderr: str
    scratch: Path | None = None  # TMPDIR of a run in a process of its own


def spark_missing() -> str | None:
    """Why the demo's default engine cannot be Spark here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install -e '.[test]' installs it)"
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "no Java runtime (JAVA_HOME or java on PATH)"
    return None


@pytest.fixture(scope="session")
def spark_demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """What scripts/demo.sh runs: the default engine (Spark), in a process of its own (its own JVM and Spark
    session), with TMPDIR in a directory of its own so a test can check that Spark's scratch space is removed.
    A test that uses this fixture is marked spark and slow (tests/conftest.py)."""
    missing = spark_missing()
    if missing is not None:
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("spark-demo")
    demo, scratch = root / "demo", root / "tmp"
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-m", "metalog.cli.main", "demo", "--out", str(demo), "--records", "1500"],
                          capture_output=True, text=True, timeout=600, cwd=root,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr
    return DemoRun(demo, done.stdout, done.stderr, scratch)


@pytest.fixture(scope="session")
def python_demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """``metalog demo --engine python`` in this process. Tests read it and must not change it (copy it first)."""
    demo = tmp_path_factory.mktemp("python-demo") / "demo"
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["demo", "--out", str(demo), "--records", "2000", "--engine", "python"])
    assert code == 0, err.getvalue()
    return DemoRun(demo, out.getvalue(), err.getvalue())
