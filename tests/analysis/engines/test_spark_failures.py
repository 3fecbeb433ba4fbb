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
from dataclasses import dataclass
from pathlib import Path

import pytest

from metalog.analysis.outputs.tables import MARKER, read_table
from metalog.cli.main import main
from tests.analysis.outputs.test_tables import extreme_times
from tests.analysis.standalone import free_port, spark_class, standalone
from tests.interrupting import interruptible

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "small"
    assert main(["generate", str(path), "--scenario", "mixed", "--seed", "3", "--records", "500"]) == 0
    return path


def analyze(tmp: Path, *args: str, interrupt_when: str | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``metalog analyze ARGS`` with TMPDIR=tmp/tmp (where Spark's scratch directories go); with
    ``interrupt_when`` (a key of ``MOMENTS``), Ctrl-C (SIGINT to its process group, as a terminal sends it) as
    soon as that moment is seen. ``timeout`` only fails a run that hangs."""
    scratch = tmp / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, **(env or {}), "TMPDIR": str(scratch)}
    cmd = [sys.executable, "-m", "metalog.cli.main", "analyze", *args]
    if interrupt_when is None:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=interruptible)
    seen = MOMENTS[interrupt_when]
    end = time.monotonic() + timeout
    while not seen(scratch):
        assert proc.poll() is None, f"the analysis ended before {interrupt_when}: {proc.communicate()}"
        assert time.monotonic() < end, f"no {interrupt_when} within {timeout} s"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _python_workers(scratch: Path) -> bool:
    """A Python worker of Spark's runs with this scratch space as its TMPDIR (inherited from the driver through
    its JVM): a task is running."""
    wanted = f"TMPDIR={scratch}".encode()
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if (b"pyspark.daemon" in cmdline or b"pyspark.worker" in cmdline) \
                    and wanted in (proc / "environ").read_bytes().split(b"\0"):
                return True
        except OSError:  # (a process that ended, or not a process)
            continue
    return False


# the moments of a Spark analysis a Ctrl-C is tried at, each as the test sees it happen
MOMENTS = {
    # metalog started the JVM: its stderr goes to the scratch directory
    "the JVM launches": lambda scratch: any(scratch.glob("metalog-spark-*/jvm-stderr.log")),
    # the SparkContext is starting: its block manager made its directory in spark.local.dir
    "the session starts": lambda scratch: any(scratch.glob("metalog-spark-*/blockmgr-*")),
    # a stage runs: a task's Python worker is there
    "a stage runs": _python_workers,
}


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
    # no JVM: with no Spark to launch one from, a JVM's start would fail with another line
    line = one_line(analyze(tmp_path, str(small), "--out", str(tmp_path / "out"), "--master", url,
                            env={"SPARK_HOME": str(tmp_path / "no-spark-here")}), tmp_path)
    assert f"the Spark master {url} did not answer" in line and "refused" in line  # one try: no retries


@dataclass
class SilentPort:
    port: int
    held: list[socket.socket]


@pytest.fixture
def silent_port() -> Iterator[SilentPort]:
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
    yield SilentPort(int(server.getsockname()[1]), held)
    stop.set()
    thread.join()
    for s in [*held, server]:
        s.close()


def test_a_master_that_never_accepts_the_application_is_bounded_by_master_timeout(
        small: Path, tmp_path: Path, silent_port: SilentPort) -> None:
    spark_class()
    url = f"spark://127.0.0.1:{silent_port.port}"
    line = one_line(analyze(tmp_path, str(small), "--out", str(tmp_path / "out"), "--master", url,
                            "--master-timeout", "5"), tmp_path)
    # metalog's own bound, not Spark's failure after its minute of retries (which names something else)
    assert f"the Spark master {url} did not accept the application within 5 s (--master-timeout)" in line
    assert silent_port.held, "the application never reached the port"
    assert not jvms_of(tmp_path), "the JVM was left running"


def test_an_empty_or_unreadable_log_directory_is_reported_before_the_jvm_starts(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "empty", tmp_path / "missing"):
        line = one_line(analyze(tmp_path, str(path), "--out", str(tmp_path / "out")), tmp_path)
        assert f"{path.name}: no __cluster_metadata-0 directory here" in line


def test_ctrl_c_exits_130_in_one_line_and_leaves_no_scratch(tmp_path: Path) -> None:
    spark_class()
    big = tmp_path / "big"
    assert main(["generate", str(big), "--scenario", "mixed", "--seed", "5", "--records", "100000"]) == 0
    for moment in MOMENTS:
        done = analyze(tmp_path, str(big), "--out", str(tmp_path / "out"), "--master", "local[1]",
                       interrupt_when=moment)
        assert (done.returncode, done.stderr) == (130, "metalog: interrupted\n"), moment
        assert not list((tmp_path / "tmp").glob("metalog-spark-*")), moment
        assert not jvms_of(tmp_path), moment


def jvms_of(tmp: Path) -> str:
    """The processes (a JVM left behind) with this test's scratch space on their command line."""
    return subprocess.run(["pgrep", "-f", str(tmp / "tmp")], capture_output=True, text=True).stdout.strip()


def test_the_python_engine_is_interrupted_the_same_way(tmp_path: Path) -> None:
    big = tmp_path / "big"
    assert main(["generate", str(big), "--scenario", "mixed", "--seed", "5", "--records", "100000"]) == 0
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    # Ctrl-C while it works, deterministically: the command line's own entry point runs in a process whose
    # progress bar (on, as on a terminal; told about every MiB of log, before the end) sends SIGINT to the process
    # group, as a terminal would, the first time the replay has made progress. A signal sent from outside once the
    # output directory is claimed could land after the run (well under a second now) and test nothing.
    child = (
        "import os, signal, sys\n"
        "from metalog.cli import progress\n"
        "def update(self, done, total=None):\n"
        "    if done and (total is None or done < total):\n"
        "        progress.Progress.update = lambda *a, **k: None\n"
        "        os.killpg(os.getpgrp(), signal.SIGINT)\n"
        "start = progress.Progress.__init__\n"
        "def init(self, label, **options):\n"
        "    start(self, label, **options, enabled=True, stream=open(os.devnull, 'w'))\n"
        "progress.Progress.__init__, progress.Progress.update = init, update\n"
        "from metalog.cli.main import run\n"
        "run(sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-c", child, "analyze", str(big), "--out", str(out), "--engine",
                           "python"], capture_output=True, text=True, start_new_session=True, preexec_fn=interruptible,
                          timeout=600)
    assert (proc.returncode, proc.stderr) == (130, "metalog: interrupted\n")
    assert (out / MARKER).exists(), "interrupted before it claimed its output directory: nothing was at work"


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


def test_a_session_after_a_killed_jvm_is_refused_in_one_line(tmp_path: Path) -> None:
    """Ctrl-C kills the JVM; pyspark keeps one JVM per process and has no public way to forget a dead one, and
    metalog writes none of its private slots: a later session in that process is a one-line error (before: the
    slots were reset, and a second JVM started)."""
    spark_class()
    code = """
import sys
from metalog.analysis.engines.spark_session import spark_context
from metalog.errors import MetalogError
try:
    with spark_context("local[1]") as sc:
        assert sc.parallelize([1, 2], 2).sum() == 3
        raise KeyboardInterrupt
except KeyboardInterrupt:
    pass
try:
    with spark_context("local[1]"):
        print("started")
except MetalogError as e:
    print(e)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("the Spark JVM of an earlier session in this process has exited"), done.stdout
    assert done.stdout.count("\n") == 1
    jvm = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.strip()
    assert not jvm, "the JVM was left running"
