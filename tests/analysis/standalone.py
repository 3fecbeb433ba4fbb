"""A Spark standalone cluster on 127.0.0.1 for the tests that need a real one: a master and one worker, each a
JVM of its own (Spark's ``spark-class`` from the pyspark package), stopped by their process ids afterwards."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def spark_class() -> Path:
    try:
        import pyspark
    except ImportError:
        pytest.skip("pyspark is not installed")
    found = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not found.exists():
        pytest.skip("no spark-class in the pyspark package")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("no Java runtime")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.3)
    raise RuntimeError(f"{log.name}: no {text!r} within {seconds} s: {log.read_text(errors='replace')[-2000:]}")


@contextmanager
def standalone(root: Path, *, worker_env: dict[str, str] | None = None) -> Iterator[str]:
    """A master and one worker (1 core, 1 GB) under ``root``; yields the master's spark:// URL. ``worker_env``:
    extra environment of the worker (and so of its executors)."""
    spark = spark_class()
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(root),
           "SPARK_WORKER_DIR": str(root / "work"), "SPARK_LOCAL_DIRS": str(root / "local")}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        log = root / "master.log"
        with open(log, "wb") as out:
            procs.append(subprocess.Popen([str(spark), "org.apache.spark.deploy.master.Master", "--host",
                                           "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())],
                                          env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root))
        _wait_for(log, "I have been elected leader", procs[0])
        log = root / "worker.log"
        with open(log, "wb") as out:
            procs.append(subprocess.Popen([str(spark), "org.apache.spark.deploy.worker.Worker", "--host",
                                           "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port",
                                           str(free_port()), url],
                                          env={**env, **(worker_env or {})}, stdout=out, stderr=subprocess.STDOUT,
                                          cwd=root))
        _wait_for(log, "Successfully registered with master", procs[1])
        yield url
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
