"""The workers' daemon made ready ahead of the first task, on local masters: the driver's side.

Spark starts the workers' daemon (``spark_daemon``) when the first task asks for a worker; its interpreter and
imports (0.3 s of CPU) then lie on the critical path, between the replay stage's start and its first task. The
driver starts the daemon module as a ready process as the JVM launches (``DaemonAhead``), which makes the imports
while the JVM and the SparkContext start and waits; the daemon the JVM later starts hands its part to it
(``spark_daemon.hand_over``), through a socket the executors' environment names (``executor_env``).

The ready process is the driver's child, in a process group of its own (Ctrl-C at the terminal is the driver's to
handle), started with the environment the JVM passes the daemon (the driver's, with what pyspark adds that an
interpreter reads as it starts: ``ready_environ``). It never outlives the driver unused: it also waits on a pipe
from the driver, which closes when the driver closes it or exits. ``close`` ends it (having become the daemon, the
context's stop has stopped it by then) and removes its socket's directory.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from metalog.analysis.engines.spark_daemon import AHEAD, READY

__all__ = ["DaemonAhead", "ready_environ"]

STOP_WAIT = 5.0  # seconds the ready process has to end after SIGTERM before it is killed


def ready_environ(environ: dict[str, str], spark_home: Path) -> dict[str, str]:
    """The ready process's environment: the driver's (``environ``), which the JVM passes on to the daemon, with
    what an interpreter reads as it starts that the daemon is given besides: the executors' hash seed (pyspark's:
    the driver's, else 0), unbuffered streams and the module path (Spark's: ``daemon_path``)."""
    return {**environ, "PYTHONHASHSEED": environ.get("PYTHONHASHSEED", "0"), "PYTHONUNBUFFERED": "YES",
            "PYTHONPATH": daemon_path(spark_home, environ.get("PYTHONPATH", ""))}


def daemon_path(spark_home: Path, path: str) -> str:
    """The module path Spark gives the daemon (its ``PythonUtils.sparkPythonPath``, then the driver's ``path``):
    the zips of pyspark and py4j in ``spark_home``, then Spark's core jar. Where this is not the daemon's path,
    the ready process finds so at the hand-over, and refuses it."""
    lib = spark_home / "python" / "lib"
    parts = [lib / "pyspark.zip", *sorted(lib.glob("py4j-*-src.zip")),
             *sorted((spark_home / "jars").glob("spark-core_*.jar"))]
    return os.pathsep.join([*map(str, parts), *([path] if path else [])])


class DaemonAhead:
    """The daemon module ``module`` as a ready process (``spark_daemon``'s ``READY``): ``start`` starts it with its
    listening socket and the end of a pipe from the driver; ``executor_env`` names the socket for the daemon the
    JVM starts (Spark's ``spark.executorEnv``); ``close`` ends it and removes the socket's directory."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.root: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._watched: int | None = None

    @staticmethod
    def possible() -> bool:
        """Whether this platform has what the hand-over needs: descriptors passed over Unix sockets, and a
        process's exit awaited through a descriptor (Linux 5.3 and later)."""
        return hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds") and hasattr(os, "pidfd_open")

    @property
    def socket_path(self) -> Path | None:
        return None if self.root is None else self.root / "daemon"

    def executor_env(self) -> dict[str, str]:
        """The Spark settings that name the ready process's socket to the JVM's daemon (none without one)."""
        if self.process is None or self.socket_path is None:
            return {}
        return {f"spark.executorEnv.{AHEAD}": str(self.socket_path)}

    def start(self, spark_home: Path | None) -> None:
        """The ready process started for the Spark in ``spark_home``, its socket listening first (a daemon that comes
        before the process is ready waits for it); where that fails, none (the JVM's daemon then works alone)."""
        if spark_home is None or not self.possible():
            return
        self.root = Path(tempfile.mkdtemp(prefix="metalog-daemon-"))
        watch, self._watched = os.pipe()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                listener.bind(str(self.socket_path))
                listener.listen(1)
                fds = (listener.fileno(), watch)
                self.process = subprocess.Popen(
                    [sys.executable, "-m", self.module, READY, *map(str, fds)], pass_fds=fds, process_group=0,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    env=ready_environ(dict(os.environ), spark_home))
        except OSError:
            self.close()
        finally:
            os.close(watch)

    def close(self) -> None:
        """The ready process ended (unused, it ends by itself as the pipe closes; become the daemon, by the
        context's stop, else by SIGTERM now) and its socket's directory removed."""
        if self._watched is not None:
            os.close(self._watched)
            self._watched = None
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
            try:
                self.process.wait(STOP_WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
