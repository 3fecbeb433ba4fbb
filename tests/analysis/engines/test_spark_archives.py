"""How metalog reaches executors on a real cluster (a standalone master and worker on 127.0.0.1): the zip of its
Python modules (the codec falls back to its pure readers there), or a packed virtual environment shipped with
--archives to workers whose Python lacks metalog."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from metalog.analysis.engines.spark_session import package_zip
from metalog.analysis.outputs.layout import read_tables
from metalog.cli.main import main
from tests.analysis.engines.test_spark_failures import analyze
from tests.analysis.standalone import spark_class, standalone

ROOT = Path(__file__).resolve().parents[3]


def test_the_zip_carries_the_pure_modules_and_the_codec_falls_back_to_them(tmp_path: Path) -> None:
    """Python imports no compiled module from a zip: the executors' codec runs its pure readers, and says so."""
    zipped = package_zip(tmp_path)
    names = zipfile.ZipFile(zipped).namelist()
    assert "metalog/codec/core.py" in names and not [n for n in names if not n.endswith(".py")]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from metalog.codec import core; import metalog; "
            "assert metalog.__file__.startswith(sys.argv[1]), metalog.__file__; print(core.status()); "
            "print(core.compiled_active())")
    done = subprocess.run([sys.executable, "-c", code, str(zipped)], capture_output=True, text=True, check=True,
                          env={k: v for k, v in os.environ.items() if k != "METALOG_PURE"})
    assert done.stdout.splitlines()[-1] == "False", done.stdout


def _packed_env(root: Path) -> Path:
    """A virtual environment with metalog (pure build) and what its executors import, packed with venv-pack
    (pyspark's jars left out: a Python worker does not need them)."""
    env = root / "venv"
    venv.create(env, with_pip=True)
    pip = subprocess.run([str(env / "bin" / "pip"), "install", "-q", str(ROOT), "pyarrow",
                          "pyspark", "venv-pack"], capture_output=True, text=True,
                         env={**os.environ, "METALOG_PURE_BUILD": "1"}, timeout=900)
    if pip.returncode != 0:
        pytest.skip(f"could not install the packed environment's packages: {pip.stderr[-500:]}")
    for jars in env.glob("lib/python*/site-packages/pyspark/jars"):
        subprocess.run(["rm", "-rf", str(jars)], check=True)
    out = root / "env.tar.gz"
    subprocess.run([str(env / "bin" / "venv-pack"), "-p", str(env), "-o", str(out), "-q"], check=True, timeout=900)
    return out


@pytest.mark.spark
@pytest.mark.slow
def test_a_packed_venv_reaches_workers_whose_python_lacks_metalog(tmp_path: Path) -> None:
    spark_class()
    logs = tmp_path / "mixed"
    assert main(["generate", str(logs), "--scenario", "mixed", "--seed", "3", "--records", "500"]) == 0
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # the workers' Python: no metalog, none of its dependencies
    python = str(bare / "bin" / "python")
    assert subprocess.run([python, "-c", "import metalog"], capture_output=True).returncode == 1
    packed = _packed_env(tmp_path / "pack")
    with standalone(tmp_path / "cluster", worker_env={"PYSPARK_PYTHON": python}) as url:
        # the master's acceptance waits for the worker's resources: minutes on a loaded machine, not 30 s (it
        # missed 30 s at load 18, as test_spark_failures' standalone test had at load 11)
        wait = ("--master-timeout", "240")
        failed = analyze(tmp_path, str(logs), "--out", str(tmp_path / "zip"), "--master", url,
                         "--executor-python", python, *wait, timeout=600)
        done = analyze(tmp_path, str(logs), "--out", str(tmp_path / "spark"), "--master", url,
                       "--archives", f"{packed}#environment", *wait, timeout=600)
    assert failed.returncode == 1 and failed.stderr.startswith("metalog: error: Spark failed: "), failed.stderr
    assert "No module named" in failed.stderr and failed.stderr.count("\n") == 1
    assert done.returncode == 0, done.stderr
    assert main(["analyze", str(logs), "--out", str(tmp_path / "py"), "--engine", "python"]) == 0
    for table in ("timeline_batches", "events", "broker_timeline", "directory_timeline"):
        assert read_tables(tmp_path / "spark" / table) == read_tables(tmp_path / "py" / table), table
    assert not list((tmp_path / "tmp").glob("metalog-spark-*"))
