"""Spark failures a person can act on: one line each (``metalog: error: ...``, exit 1; Ctrl-C: exit 130), and no
scratch directory left behind. Each runs ``metalog analyze`` in a process of its own (its own JVM, a temp dir of
its own to look for leftovers in), some against a standalone master and worker on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from metalog.analysis.tables import MARKER, read_table
from metalog.cli.main import main
from tests.analysis.standalone import free_port, spark_class, standalone
from tests.analysis.test_tables import extreme_times

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "small"
    assert main(["generate", str(path), "--scenario", "mixed", "--seed", "3", "--records", "500"]) == 0
    return path


def analyze(tmp: Path, *args: str, interrupt_after: float | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``metalog analyze ARGS`` with TMPDIR=tmp/tmp (where Spark's scratch directories go); with
    ``interrupt_after``, Ctrl-C (SIGINT to its process group, as a terminal sends it) that many seconds after
    its JVM started."""
    scratch = tmp / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch)}
    cmd = [sys.executable, "-m", "metalog.cli.main", "analyze", *args]
    if interrupt_after is None:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    end = time.monotonic() + timeout
    while not list(scratch.glob("metalog-spark-*/jvm-stderr.log")) and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(interrupt_after)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def one_line(done: subprocess.CompletedProcess[str], tmp: Path) -> str:
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("metalog: error: "), done.stderr
    assert not list((tmp / "tmp").glob("metalog-spark-*")), "a scratch directory was left"
    return done.stderr


def test_a_malformed_master_gives_sparks_own_reason(small: Path, tmp_path: Path) -> None:
    """The JVM exits before it reports its port: its stderr (forwarded from its start) has the reason."""
    spark_class()
    line = one_line(analyze(tmp_path, str(small), "--out", str(tmp_path / "out"), "--master", "127.0.0.1:7077"),
                    tmp_path)
    assert "Spark did not start: Master must either be yarn or start with spark" in line


def test_a_master_nobody_listens_on_is_named_before_a_jvm_starts(small: Path, tmp_path: Path) -> None:
    spark_class()
    url = f"spark://127.0.0.1:{free_port()}"
    start = time.monotonic()
    line = one_line(analyze(tmp_path, str(small), "--out", str(tmp_path / "out"), "--master", url), tmp_path)
    assert f"the Spark master {url} did not answer" in line and "refused" in line
    assert time.monotonic() - start < 20  # no JVM, no retries (Spark's own take 84 s)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (another service where the master was expected)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    for s in [*held, server]:
        s.close()


def test_a_master_that_never_accepts_the_application_is_bounded_by_master_timeout(
        small: Path, tmp_path: Path, silent_port: int) -> None:
    spark_class()
    url = f"spark://127.0.0.1:{silent_port}"
    start = time.monotonic()
    line = one_line(analyze(tmp_path, str(small), "--out", str(tmp_path / "out"), "--master", url,
                            "--master-timeout", "5"), tmp_path)
    assert f"the Spark master {url} did not accept the application within 5 s (--master-timeout)" in line
    assert time.monotonic() - start < 45  # the JVM's start, 5 s, its kill: not Spark's minute of retries


def test_an_empty_or_unreadable_log_directory_is_reported_before_the_jvm_starts(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "empty", tmp_path / "missing"):
        line = one_line(analyze(tmp_path, str(path), "--out", str(tmp_path / "out")), tmp_path)
        assert f"{path.name}: no __cluster_metadata-0 directory here" in line


def test_ctrl_c_exits_130_in_one_line_and_leaves_no_scratch(tmp_path: Path) -> None:
    spark_class()
    big = tmp_path / "big"
    assert main(["generate", str(big), "--scenario", "mixed", "--seed", "5", "--records", "100000"]) == 0
    for after in (0.0, 0.5, 6.0):  # while the JVM launches; while the session starts; while a stage runs
        done = analyze(tmp_path, str(big), "--out", str(tmp_path / "out"), "--master", "local[1]",
                       interrupt_after=after)
        assert (done.returncode, done.stderr) == (130, "metalog: interrupted\n"), after
        assert not list((tmp_path / "tmp").glob("metalog-spark-*")), after
        # no JVM left behind: none runs with this test's scratch space on its command line
        left = subprocess.run(["pgrep", "-f", str(tmp_path / "tmp")], capture_output=True, text=True).stdout
        assert not left.strip(), (after, left)


def test_the_python_engine_is_interrupted_the_same_way(tmp_path: Path) -> None:
    big = tmp_path / "big"
    assert main(["generate", str(big), "--scenario", "mixed", "--seed", "5", "--records", "100000"]) == 0
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "metalog.cli.main", "analyze", str(big), "--out",
                             str(out), "--engine", "python"], stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    # interrupted while it works: once it has claimed its output directory (its marker is written before the
    # replay starts), not after a fixed delay (the engine got fast enough to finish 100,000 records in 3 s)
    deadline = time.monotonic() + 120
    while not (out / MARKER).exists():
        assert proc.poll() is None, "the analysis ended before it claimed its output directory"
        assert time.monotonic() < deadline, "the analysis did not claim its output directory within 120 s"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)
    assert (proc.wait(60), proc.stderr.read() if proc.stderr else "") == (130, "metalog: interrupted\n")


def test_a_standalone_cluster_gives_the_python_engines_tables(small: Path, tmp_path: Path) -> None:
    """A real master and worker on 127.0.0.1: metalog reaches the executors as a zip of the package."""
    with standalone(tmp_path / "cluster") as url:
        # the master's acceptance waits for the worker's resources: minutes on a loaded machine, not 30 s
        done = analyze(tmp_path, str(small), "--out", str(tmp_path / "spark"), "--master", url,
                       "--master-timeout", "240", timeout=600)
    assert done.returncode == 0, done.stderr
    assert not list((tmp_path / "tmp").glob("metalog-spark-*"))
    assert main(["analyze", str(small), "--out", str(tmp_path / "py"), "--engine", "python"]) == 0
    for table in ("timeline_batches", "events", "broker_timeline"):  # the Parquet tables
        assert read_table(tmp_path / "spark" / table) == read_table(tmp_path / "py" / table)


def test_any_int64_batch_time_gives_the_python_engines_tables(tmp_path: Path) -> None:
    """Before: one line refusing a batch time beyond Spark's TIMESTAMP (microseconds in an int64); the executors
    now write the tables themselves, as the python engine does, which takes any int64 (``test_tables``)."""
    log = extreme_times(tmp_path / "log")
    done = analyze(tmp_path, str(log), "--out", str(tmp_path / "spark"), "--master", "local[1]")
    assert done.returncode == 0, done.stderr
    assert main(["analyze", str(log), "--out", str(tmp_path / "py"), "--engine", "python"]) == 0
    for table in ("timeline_batches", "timeline_buckets", "events"):
        spark, python = sorted((tmp_path / "spark" / table).rglob("*.parquet")), sorted(
            (tmp_path / "py" / table).rglob("*.parquet"))
        assert [p.read_bytes() for p in spark] == [p.read_bytes() for p in python] != [], table
