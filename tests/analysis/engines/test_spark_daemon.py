"""The workers' daemon imports the installed pyspark and py4j rather than Spark's zips of them, only where those
zips are copies of the same version (``spark_daemon.installed_copies``); a daemon made ready by the driver ahead
takes the part of the one the JVM starts, only where it is the same interpreter in the same state."""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.engines.spark_ahead import DaemonAhead, daemon_path, ready_environ
from metalog.analysis.engines.spark_daemon import (
    AHEAD,
    THREAD_FREE,
    installed_copies,
    preload_arrow,
    receive_message,
    send_message,
)
from metalog.analysis.engines.spark_session import DAEMON_MODULE


def package(root: Path, name: str, version: str) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "version.py").write_text(f"__version__: str = '{version}'\n")
    return root


def zipped(path: Path, name: str, version: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", "")
        z.writestr(f"{name}/version.py", f'__version__ = "{version}"\n')
    return str(path)


def test_only_zips_of_an_installed_package_of_the_same_version_are_dropped(tmp_path: Path) -> None:
    site = package(package(tmp_path / "site", "pyspark", "4.3.0"), "py4j", "0.10.9.9")
    spark_zip = zipped(tmp_path / "site" / "pyspark" / "python" / "lib" / "pyspark.zip", "pyspark", "4.3.0")
    py4j_zip = zipped(tmp_path / "site" / "pyspark" / "python" / "lib" / "py4j-0.10.9.9-src.zip", "py4j", "0.10.9.9")
    assert installed_copies([spark_zip, py4j_zip, str(site)]) == [spark_zip, py4j_zip]
    other = zipped(tmp_path / "other" / "pyspark.zip", "pyspark", "4.2.0")  # another Spark's: kept
    old_py4j = zipped(tmp_path / "other" / "py4j-0.10.9.7-src.zip", "py4j", "0.10.9.7")
    assert installed_copies([other, old_py4j, str(site)]) == []
    assert installed_copies([spark_zip, py4j_zip]) == []  # nothing installed besides: the zips are needed
    unrelated = zipped(tmp_path / "site" / "deps.zip", "pyspark", "4.3.0")
    assert installed_copies([unrelated, str(site)]) == []
    broken = tmp_path / "broken" / "pyspark.zip"
    broken.parent.mkdir()
    broken.write_bytes(b"not a zip")
    assert installed_copies([str(broken), str(site)]) == []


def test_pyarrow_is_preloaded_only_where_it_loads_without_a_thread() -> None:
    """The daemon imports pyarrow before it forks only under ``THREAD_FREE`` (no jemalloc background thread, one
    OpenBLAS thread), set where the user set neither variable; a user's own setting is kept, and pyarrow is then
    left to each worker."""
    environ: dict[str, str] = {}
    assert preload_arrow(environ) is True
    assert environ == THREAD_FREE
    for name in THREAD_FREE:
        chosen = {name: "4" if name == "OPENBLAS_NUM_THREADS" else "background_thread:true"}
        assert preload_arrow(dict(chosen)) is False
        mine = dict(chosen)
        preload_arrow(mine)
        assert mine[name] == chosen[name]


# ---- the daemon made ready ahead (spark_ahead, spark_daemon.hand_over / take_over) ----------------------------
WAIT = 120.0  # seconds a process has to end (a bound on a hang, not a timing: each ends as soon as it can)


def _ended(pid: int, timeout: float = WAIT) -> bool:
    """Whether the process ``pid`` (any process, not only a child) has ended within ``timeout``."""
    try:
        watched = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([watched], [], [], timeout)[0])
    finally:
        os.close(watched)


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _jvms_daemon(ahead: DaemonAhead, home: Path, **extra: str) -> subprocess.Popen[bytes]:
    """The daemon module as Spark's JVM starts it: ``-m`` with the worker module, its pipes, and the environment the
    JVM gives it (Spark's module path, the executors' hash seed, the secret, the ready process's socket)."""
    env = {**os.environ, "PYTHONPATH": daemon_path(home, ""), "PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "YES",
           "PYTHON_WORKER_FACTORY_SECRET": "secret", AHEAD: str(ahead.socket_path), **extra}
    return subprocess.Popen([sys.executable, "-m", DAEMON_MODULE, "pyspark.worker"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _worker_of(daemon: subprocess.Popen[bytes]) -> int:
    """The daemon's port read as the JVM reads it, and a worker asked of it: the worker's process id."""
    assert daemon.stdout is not None
    port = struct.unpack(">i", daemon.stdout.read(4))[0]
    with socket.create_connection(("127.0.0.1", port)) as asked:
        got = b""
        while len(got) < 4:
            got += asked.recv(4 - len(got))
        pid: int = struct.unpack(">i", got)[0]
        parent = _parent(pid)
    return parent


@pytest.fixture
def home() -> Path:
    pytest.importorskip("pyspark")
    from metalog.analysis.engines.spark_session import spark_home

    found = spark_home()
    if found is None or not DaemonAhead.possible():
        pytest.skip("no Spark home with jars, or no descriptor passing and pidfd on this platform")
    return found


def test_the_ready_process_takes_the_daemons_part_and_ends_with_the_jvms_pipe(home: Path) -> None:
    """The daemon the JVM starts hands its part to the driver's ready process: the workers are forked from that
    process, and the JVM's pipe closing (its stop as it exits) ends it and its stand-in. (A SIGTERM is not the stop
    here: one that comes while pyspark's daemon forks is lost, its handler's SystemExit raised in logging's at-fork
    hook and ignored, pyspark's own daemon alike; the next test sends it where nothing forks.)"""
    ahead = DaemonAhead(DAEMON_MODULE)
    ahead.start(home)
    assert ahead.process is not None and ahead.executor_env() == {f"spark.executorEnv.{AHEAD}": str(ahead.socket_path)}
    daemon = _jvms_daemon(ahead, home)
    try:
        assert _worker_of(daemon) == ahead.process.pid
        assert daemon.stdin is not None
        daemon.stdin.close()
        assert _ended(ahead.process.pid) and daemon.wait(WAIT) == 0
    finally:
        daemon.kill()
        ahead.close()
    assert ahead.socket_path is None


def test_the_stand_in_passes_the_jvms_stop_on_to_the_ready_process(home: Path) -> None:
    """The JVM's SIGTERM to its daemon (Spark's stop) reaches the ready process that took its part through the
    stand-in, once the daemon's loop has started (its port read), and both end."""
    ahead = DaemonAhead(DAEMON_MODULE)
    ahead.start(home)
    assert ahead.process is not None
    daemon = _jvms_daemon(ahead, home)
    try:
        assert daemon.stdout is not None and len(daemon.stdout.read(4)) == 4
        daemon.terminate()
        assert _ended(ahead.process.pid) and daemon.wait(WAIT) == 0
    finally:
        daemon.kill()
        ahead.close()
    assert ahead.socket_path is None


def test_a_ready_process_of_another_interpreter_state_refuses_and_the_jvms_daemon_works_alone(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ready process that would not be the interpreter the JVM's daemon is (here another hash seed) refuses the
    daemon's part, and ends; the JVM's process is then the daemon itself, as without one."""
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    ahead = DaemonAhead(DAEMON_MODULE)
    ahead.start(home)
    assert ahead.process is not None
    daemon = _jvms_daemon(ahead, home, PYTHONHASHSEED="0")
    try:
        assert _worker_of(daemon) == daemon.pid
        assert ahead.process.wait(WAIT) == 0
        assert daemon.stdin is not None
        daemon.stdin.close()  # (Spark's other way to stop its daemon)
        daemon.wait(WAIT)
    finally:
        daemon.kill()
        ahead.close()


def test_an_unused_ready_process_ends_with_its_driver(home: Path) -> None:
    """A driver that exits without a daemon coming (killed, even) leaves no ready process behind, nor its socket: it
    waits on a pipe from the driver too."""
    driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from metalog.analysis.engines.spark_ahead import DaemonAhead
        ahead = DaemonAhead({DAEMON_MODULE!r})
        ahead.start(Path({str(home)!r}))
        print(ahead.process.pid, ahead.socket_path, flush=True)
        sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    ready, where = driver.stdout.readline().split()
    driver.kill()
    driver.wait()
    assert _ended(int(ready))
    assert not Path(where).parent.exists()  # (its socket's directory removed by the ready process)


def test_a_platform_without_what_the_hand_over_needs_starts_no_ready_process(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    ahead = DaemonAhead(DAEMON_MODULE)
    ahead.start(tmp_path)
    assert ahead.process is None and ahead.executor_env() == {}
    ahead.close()


def test_the_module_path_is_sparks_for_the_daemon(tmp_path: Path) -> None:
    """Spark's PythonUtils.sparkPythonPath: its pyspark and py4j zips, its core jar; then the driver's path."""
    (tmp_path / "python" / "lib").mkdir(parents=True)
    (tmp_path / "jars").mkdir()
    for name in ("python/lib/py4j-0.10.9.9-src.zip", "jars/spark-core_2.13-4.3.0.jar", "jars/other.jar"):
        (tmp_path / name).write_bytes(b"")
    lib, jars = tmp_path / "python" / "lib", tmp_path / "jars"
    assert daemon_path(tmp_path, "/mine:/more").split(os.pathsep) == [
        str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), str(jars / "spark-core_2.13-4.3.0.jar"),
        "/mine", "/more"]
    assert ready_environ({"PYTHONHASHSEED": "7"}, tmp_path)["PYTHONHASHSEED"] == "7"
    assert ready_environ({}, tmp_path)["PYTHONHASHSEED"] == "0"


@settings(max_examples=40, deadline=None)
@given(environ=st.dictionaries(st.text(min_size=1), st.text(), max_size=20), argv=st.lists(st.text(), max_size=3),
       padding=st.sampled_from([0, 1, 70_000, 200_000]))
def test_a_message_and_its_descriptors_arrive_whole(environ: dict[str, str], argv: list[str], padding: int) -> None:
    """What the daemon sends the ready process arrives as it was sent, however long (an environment may be larger
    than one read), with working copies of its three descriptors."""
    message = {"environ": environ, "argv": argv, "padding": "x" * padding}
    pipes = [os.pipe() for _ in range(3)]
    sender, receiver = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sending = threading.Thread(target=send_message, args=(sender, message, [w for _, w in pipes]))
        sending.start()
        got, fds = receive_message(receiver)
        sending.join()
        assert got == message and len(fds) == 3
        for n, ((read, _), fd) in enumerate(zip(pipes, fds, strict=True)):
            os.write(fd, bytes([n]))
            assert os.read(read, 1) == bytes([n])
            os.close(fd)
    finally:
        sender.close()
        receiver.close()
        for read, write in pipes:
            os.close(read)
            os.close(write)


def test_an_incomplete_message_is_none() -> None:
    sender, receiver = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with sender, receiver:
        sender.sendall(struct.pack(">I", 100) + b'{"a"')
        sender.shutdown(socket.SHUT_WR)
        assert receive_message(receiver) == (None, [])


@pytest.mark.parametrize("message", [{}, {"interpreter": [], "environ": {}, "argv": []},
                                     {"interpreter": {}, "environ": {"A": 1}, "argv": []}])
def test_a_message_that_is_not_a_daemons_is_refused(home: Path, message: dict[str, object]) -> None:
    """The ready process takes the part only of a daemon that says what it is; anything else gets -1, and the
    process ends without having touched the descriptors it was sent."""
    ahead = DaemonAhead(DAEMON_MODULE)
    ahead.start(home)
    assert ahead.process is not None
    read, write = os.pipe()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as ready:
            ready.connect(str(ahead.socket_path))
            send_message(ready, message, [write, write, write])
            got = b""
            while len(got) < 4:
                got += ready.recv(4 - len(got))
        assert struct.unpack(">i", got)[0] == -1
        assert ahead.process.wait(WAIT) == 0
        os.close(write)
        write = -1
        assert os.read(read, 1) == b""  # (nothing written, and no copy left open)
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
        ahead.close()
