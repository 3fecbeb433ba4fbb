"""The daemon Spark forks its Python workers from on ``local[*]`` masters (``spark.python.daemon.module``):
pyspark's own, after importing the modules the engine's tasks run (the replay, the writers, the growth count, the
report's reading, every record type's generated reader, and pyspark's worker loop itself), so that each worker has
them from the fork rather than importing them again. pyarrow is not imported here: it starts threads as it loads,
and a process should fork with one thread (pyspark's daemon imports its worker after the fork for that reason:
``pyspark.worker`` starts none, and a test keeps the daemon at one thread); the tasks import it themselves.

What the daemon imported is then frozen out of the cyclic garbage collector (``gc.freeze``, made for a process
that forks without exec): a reused worker runs ``gc.collect()`` after every task, which walked every object of
those modules each time (about 15 ms a task on a small job: 0.36 s of each worker's CPU over 21 tasks, against
0.05 s frozen; load 3.5, 2026-11-28), and the pages the collector no longer writes stay shared with the daemon.

Spark puts its ``pyspark.zip`` and py4j's zip first on the workers' path. Python compiles every module it imports
from a zip anew in each process (zipimport keeps no bytecode cache): 190 modules, about 0.4 s of CPU in the daemon
and more in each worker, every run. Where a zip is the copy a pip-installed pyspark (or py4j) carries of itself,
of the same version, the installed package is imported instead: the same code, from its cached bytecode.

A daemon made ready ahead: the JVM starts this module only when the first task asks for a worker (on the 5M-record
log the replay stage's start to its first task took 0.5-0.6 s, most of it this module's interpreter and imports,
on the critical path). The driver therefore starts it earlier as a ready process (``--ahead``, by
``spark_ahead.DaemonAhead``), which makes its imports and waits; the daemon the JVM starts then hands its part to
it (``hand_over``) over a Unix socket the executors' environment names (``AHEAD``): its standard streams (its pipes
to the JVM), arguments and environment, with which the ready process runs pyspark's daemon loop (``take_over``) as
this process would have. The JVM's process stays as its stand-in (``stand_in``, the JVM's handle on its daemon):
the SIGTERM with which the JVM stops the daemon is passed on, and it exits when the daemon does. The ready process
takes over only where it is the interpreter the JVM's would be, in the same state (``Interpreter``: the same
executable, flags, warning options, hash seed, working directory and module path, and pyarrow preloaded alike);
else it refuses, and the JVM's process is the daemon, as wherever the ready process is missing or failed first."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

# (only what the JVM's daemon needs to hand its part over is imported here: the rest where it is used, by the daemon
# that prepares, or by the ready process, which imports it as it prepares)

TASK_MODULES = ("metalog.analysis.engines.spark_tables", "metalog.analysis.engines.spark",
                "metalog.analysis.outputs.growth_tables", "metalog.analysis.outputs.report",
                "pyspark.worker")  # (each worker imports pyspark's worker loop after the fork otherwise)
ARROW_MODULES = ("pyarrow", "pyarrow.parquet", "pyarrow.compute", "pyarrow.ipc")  # what the tasks import of it
# the environment under which pyarrow loads without starting a thread: its jemalloc's settings (Arrow builds it with
# the ``je_arrow_`` prefix, so it reads JE_ARROW_MALLOC_CONF) and numpy's OpenBLAS threads
THREAD_FREE = {"JE_ARROW_MALLOC_CONF": "background_thread:false", "OPENBLAS_NUM_THREADS": "1"}
_VERSION = r"""__version__[^=]*=\s*['"]([^'"]+)['"]"""
AHEAD = "METALOG_SPARK_DAEMON_AHEAD"  # the executors' environment variable naming the ready process's socket
READY = "--ahead"  # the argument that makes this module the ready process (then the listening socket and the pipe)
_LENGTH = struct.Struct(">I")
_PID = struct.Struct(">i")
_STREAMS = (0, 1, 2)
_HASHED = "metalog spark daemon"  # a text whose hash tells two interpreters' hash seeds apart


def preload() -> None:
    """The modules every task runs, imported: ``TASK_MODULES``, and each record type's generated reader (a replay
    imports those of the records it meets, as it meets them)."""
    import importlib

    from metalog.codec.core import load_all

    for module in TASK_MODULES:
        importlib.import_module(module)
    load_all()


def preload_arrow(environ: os._Environ[str] | dict[str, str]) -> bool:
    """pyarrow's modules the tasks use imported (``ARROW_MODULES``), where ``environ`` lets them load without a
    thread (``THREAD_FREE``, set where the user set neither variable); whether they were (not where the user chose
    otherwise, or without pyarrow)."""
    import importlib

    for name, value in THREAD_FREE.items():
        if environ.setdefault(name, value) != value:
            return False
    try:
        for module in ARROW_MODULES:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


def prepare(path: list[str]) -> None:
    """The daemon made ready to fork workers: the installed pyspark and py4j imported rather than Spark's zips of
    them (``installed_copies``, dropped from ``path``), the tasks' modules and pyarrow imported (``preload``,
    ``preload_arrow``), and all of it frozen out of the cyclic garbage collector's reach (``gc.freeze``)."""
    import gc

    for copy in installed_copies(path):
        path.remove(copy)
        # (and the zip's importer Python cached on the way here: a worker's first task invalidates the import
        # caches, which reads every cached zip's directory again, 0.02 s a worker for these two)
        sys.path_importer_cache.pop(copy, None)
    preload_arrow(os.environ)  # (first: its environment is set before anything could load pyarrow or numpy)
    preload()
    gc.freeze()


def installed_copies(path: list[str]) -> list[str]:
    """The entries of ``path`` that are zips of a package installed elsewhere on ``path`` at the same version
    (pyspark's ``pyspark.zip``, py4j's ``py4j-*-src.zip``): the zips the workers need not import from."""
    import importlib.machinery
    import re
    from pathlib import Path

    unzipped = [entry for entry in path if not entry.endswith(".zip")]
    out = []
    for entry in path:
        name = Path(entry).name
        package = "pyspark" if name == "pyspark.zip" else "py4j" if re.fullmatch(r"py4j-.*-src\.zip", name) else None
        if package is None:
            continue
        spec = importlib.machinery.PathFinder.find_spec(package, unzipped)
        if spec is None or not spec.submodule_search_locations:
            continue
        installed = Path(next(iter(spec.submodule_search_locations))) / "version.py"
        zipped = _version_in_zip(entry, f"{package}/version.py")
        if zipped is not None and installed.is_file() and _version_of(installed.read_text(errors="replace")) == zipped:
            out.append(entry)
    return out


def _version_of(text: str) -> str | None:
    import re

    match = re.search(_VERSION, text)
    return match[1] if match else None


def _version_in_zip(zip_path: str, member: str) -> str | None:
    import zipfile

    try:
        with zipfile.ZipFile(zip_path) as z:
            return _version_of(z.read(member).decode(errors="replace"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def interpreter() -> dict[str, Any]:
    """What this Python process's modules depend on that is fixed as the interpreter starts: its executable, flags,
    warning options, hash seed (told by a hash), working directory and module path."""
    return {"executable": sys.executable, "flags": [int(flag) for flag in sys.flags], "warnings": sys.warnoptions,
            "hashed": hash(_HASHED), "cwd": os.getcwd(), "path": sys.path}


def daemon_state(facts: dict[str, Any], environ: dict[str, str]) -> dict[str, Any]:
    """What a daemon's modules depend on, of a process's ``interpreter`` facts and its environment: those facts with
    its module path as the daemon keeps it (less ``installed_copies``), and whether pyarrow is preloaded
    (``preload_arrow``, under ``environ``). One process may take another's part as the daemon only where these
    are equal."""
    path = [str(entry) for entry in facts.get("path", [])]
    copies = set(installed_copies(path))
    return {**facts, "path": [entry for entry in path if entry not in copies],
            "arrow": all(environ.get(name, value) == value for name, value in THREAD_FREE.items())}


def hand_over(path: str) -> int | None:
    """The daemon's part handed to the ready process at ``path``: this process's streams, arguments and
    environment sent; the process id of the daemon it became, or None where it refused or is not there (this
    process is then the daemon)."""
    message = {"interpreter": interpreter(), "argv": sys.argv[1:], "environ": dict(os.environ)}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as ready:
            ready.connect(path)
            send_message(ready, message, _STREAMS)
            answer = _read(ready, _PID.size)
    except OSError:
        return None
    pid: int = _PID.unpack(answer)[0] if answer is not None else -1
    return pid if pid > 0 else None


def stand_in(pid: int) -> int:
    """This process as the stand-in of the daemon ``pid``: a SIGTERM (the JVM's stop) passed on to it, and its
    exit awaited. SIGTERM is blocked from before the hand-over (``main``) until its handler is in place here: the
    ready process writes the daemon's port to the JVM as soon as it has answered, so the JVM may stop its daemon
    before this process has read the answer, and a stop that came then would end this process alone."""
    try:
        watched = os.pidfd_open(pid)
    except OSError:
        return 0  # (gone already)
    signal.signal(signal.SIGTERM, lambda signum, frame: _signal(watched, signum))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # (one that came meanwhile is passed on now)
    try:  # noqa: SIM105 - (contextlib is not imported here: this process's imports are on the critical path)
        select.select([watched], [], [])
    except OSError:
        pass
    return 0


def take_over(listener_fd: int, watch_fd: int) -> bool:
    """The ready process: the daemon's imports made (``prepare``), then a daemon's hand-over awaited on the
    listening socket ``listener_fd``, or the driver's end on the pipe ``watch_fd`` (it closes when the driver
    closes it or exits: the socket and its directory are then removed, if the driver has not); whether this process
    took the daemon's part (its streams, arguments and environment are then the daemon's, and the caller runs
    pyspark's daemon loop)."""
    listener = socket.socket(fileno=listener_fd)
    started = daemon_state(interpreter(), dict(os.environ))
    prepare(sys.path)
    ready, _, _ = select.select([listener.fileno(), watch_fd], [], [])
    if listener.fileno() not in ready:  # (the driver ended: its socket and directory go with this process)
        where = listener.getsockname()
        for remove, path in ((os.unlink, where), (os.rmdir, os.path.dirname(where))):
            try:
                remove(path)
            except OSError:
                break
        return False
    connection, _ = listener.accept()
    listener.close()
    os.close(watch_fd)
    with connection:
        message, fds = receive_message(connection)
        if message is None or len(fds) != len(_STREAMS) or not _same(message, started):
            for fd in fds:
                os.close(fd)
            _answer(connection, -1)
            return False
        if not _answer(connection, os.getpid()):
            return False  # (the daemon went on alone)
    for target, fd in zip(_STREAMS, fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(message["environ"])
    sys.argv[1:] = message["argv"]
    return True


def _same(message: dict[str, Any], started: dict[str, Any]) -> bool:
    """Whether the daemon that sent ``message`` would be, prepared, the process whose state is ``started``."""
    facts, environ, argv = message.get("interpreter"), message.get("environ"), message.get("argv")
    if not isinstance(facts, dict) or not isinstance(environ, dict) or not isinstance(argv, list) \
            or not all(isinstance(text, str) for text in [*environ, *environ.values(), *argv]):
        return False
    return daemon_state(facts, environ) == started


def _signal(watched: int, signum: int) -> None:
    try:  # noqa: SIM105 - (as in ``stand_in``)
        signal.pidfd_send_signal(watched, signum)
    except OSError:
        pass


def _answer(connection: socket.socket, pid: int) -> bool:
    try:
        connection.sendall(_PID.pack(pid))
    except OSError:
        return False
    return True


def send_message(connection: socket.socket, message: dict[str, Any], fds: Sequence[int]) -> None:
    """``message`` as JSON after its length, with copies of the descriptors ``fds`` (at most three)."""
    payload = json.dumps(message).encode()
    socket.send_fds(connection, [_LENGTH.pack(len(payload)) + payload], list(fds))


def receive_message(connection: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """What ``send_message`` sent (None where it came incomplete or is not a JSON object) and the descriptors
    that came with it (the receiver's to close)."""
    fds: list[int] = []
    try:
        data, fds, _, _ = socket.recv_fds(connection, 1 << 16, len(_STREAMS))
        while len(data) < _LENGTH.size or len(data) < _LENGTH.size + _LENGTH.unpack_from(data)[0]:
            more = connection.recv(1 << 16)
            if not more:
                return None, fds
            data += more
        message = json.loads(data[_LENGTH.size:])
    except (OSError, ValueError):
        return None, fds
    return (message if isinstance(message, dict) else None), fds


def _read(connection: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        more = connection.recv(size - len(data))
        if not more:
            return None
        data += more
    return data


def main(argv: list[str]) -> int:
    """The daemon: the ready process's part where it took it (``hand_over``), else this process's: the modules
    prepared, then pyspark's daemon loop. As the ready process (``READY``): the daemon where a hand-over came, else
    nothing."""
    if argv[1:2] == [READY]:
        if not take_over(int(argv[2]), int(argv[3])):
            return 0
    else:
        ready = os.environ.get(AHEAD)
        if ready:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # (until ``stand_in``'s handler: see there)
            daemon = hand_over(ready)
            if daemon is not None:
                return stand_in(daemon)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # (this process is the daemon)
        prepare(sys.path)
    from pyspark import daemon as pyspark_daemon

    pyspark_daemon.manager()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
