"""A SparkContext for metalog's Spark engine (and a SparkSession over it for Spark SQL), and the JVM under it:
quiet (errors only, no UI, the JVM's startup notices filtered out), its scratch space in a temp dir removed
afterwards, a context the process already runs used as it is. Only pyspark's public API is called, and no
attribute of pyspark's written; two of its private slots are read (whether the process already runs a context, or
a JVM). The engine's algorithm is ``engines.spark``."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from metalog import errors
from metalog.analysis.engines.spark_ahead import DaemonAhead
from metalog.analysis.engines.spark_classes import SILENT, ClassArchive, class_archive, finish
from metalog.analysis.engines.spark_quiet import AccumulatorErrors, quiet_py4j
from metalog.errors import MetalogError

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# a failed task is reported once, in metalog's one line, not by each of these on the way
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.scheduler.name = org.apache.spark.scheduler.TaskSchedulerImpl
logger.scheduler.level = off
"""
# the driver's JVM schedules Python tasks and moves no rows: C2's compilations and the parallel collector's threads
# cost it CPU it never earns back (a session with one small job: 9.6 s of CPU, 6.0 s with these, under load 12)
DRIVER_JIT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DAEMON_MODULE = "metalog.analysis.engines.spark_daemon"  # spark.python.daemon.module on local masters
MASTER_TIMEOUT = 30.0  # seconds a spark:// master has to accept the application (--master-timeout)
# startup notices log4j cannot silence: the JVM's for the vector module Spark enables, and the two lines Spark
# prints itself (not through log4j) when a Python driver starts it
_JVM_NOTICES = ("WARNING: Using incubator modules", "Setting default log level to",
                "To adjust logging level use sc.setLogLevel")
# and the JVM's for an --add-opens of Spark's own options naming a package the JDK no longer has (JDK 24 and later:
# "WARNING: package sun.security.action not in java.base")
_GONE_PACKAGE = re.compile(r"WARNING: package [\w.$]+ not in [\w.]+\s*")
# what pyspark's py4j converters import at the first call into the JVM that passes an argument (its numpy converters
# ask ``pyspark.testing.utils`` whether numpy is there, and that module imports pandas and pyarrow where they are
# installed: 0.23-0.25 s of the driver's CPU with pandas, 6 ms without), imported on a thread while the JVM launches
# (``quiet_gateway``), when the driver only waits, rather than inside the SparkContext's start
CONVERTER_IMPORTS = ("pyspark.testing.utils",)


class Meanwhile(Protocol):
    """Work on a thread of its own while the driver's JVM launches (``spark_context``'s ``meanwhile``): ``start``
    as the launch begins, ``stop`` as it ends: no new piece of it begins after (the SparkContext's start makes many
    calls into the JVM, each of which waits for Python's lock while a thread holds it: a context started in
    0.59-0.66 s alone, 0.84-1.69 s beside a busy thread; load 4-5). A piece under way may end later."""

    def start(self) -> object: ...

    def stop(self) -> object: ...


def jvm_notice(line: str) -> bool:
    """Whether a line of the driver JVM's stderr is one of its startup notices, which metalog does not pass on."""
    return line.startswith(_JVM_NOTICES) or _GONE_PACKAGE.fullmatch(line) is not None


def local_cores(master: str | None) -> int | None:
    """How many tasks a local master (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``; None: ``local[*]``)
    runs at once, as its SparkContext's default parallelism will say; None for any other master."""
    found = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master or "local[*]")
    if found is None:
        return None
    if found[1] is None:
        return 1
    return (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) \
        if found[1] == "*" else int(found[1])


def find_java() -> str:
    """The java binary from JAVA_HOME, else PATH; a one-line error naming what to install otherwise."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found:
        return found
    raise MetalogError("the Spark engine needs a Java runtime: install a JDK 17 or 21 (e.g. apt-get install "
                       "openjdk-17-jre-headless) or set JAVA_HOME; or use --engine python")


def import_pyspark() -> Any:
    try:
        import pyspark
    except ImportError:
        raise MetalogError("the Spark engine needs pyspark: pip install 'metalog[spark]'; or use --engine "
                           "python") from None
    return pyspark


@contextmanager
def spark_context(master: str | None = None, *, app: str = "metalog analyze", driver_memory: str | None = None,
                  master_timeout: float = MASTER_TIMEOUT, archives: str | None = None,
                  executor_python: str | None = None, meanwhile: Meanwhile | None = None) \
        -> Iterator[Any]:
    """A quiet SparkContext (no UI, errors only), with its scratch space in a temp dir removed afterwards, on
    success, failure or Ctrl-C alike: what the Spark engine runs on. No Spark SQL session is made (its catalog and
    session state cost the JVM about 2.3 s of CPU and the engine uses none of it: ``spark_session`` for SQL).
    ``driver_memory`` (Spark's size form, e.g. ``4g``; default ``default_driver_memory()``): on ``local[*]`` the
    driver's JVM runs the tasks too. ``master_timeout``: seconds a ``spark://`` master has to answer (accept the
    application) before a one-line error names it.

    How metalog reaches the executors: on ``local[*]`` they run this Python, forked from a daemon that imported
    the engine's task modules once (``spark_daemon``); elsewhere they get a zip of the package's Python modules
    (the compiled codec readers stay behind, so they run the pure codec: its import falls back by itself), unless
    ``archives`` ships a packed virtual environment with metalog installed (``venv-pack -o env.tar.gz``, then
    ``archives="env.tar.gz#environment"``: Spark's ``spark.archives``), whose Python the executors run
    (``executor_python``, default ``./NAME/bin/python`` for ``...#NAME``).

    A SparkContext this process already runs (a notebook's, a caller's) is used as it is, with its own master and
    settings, and left running: only a context this call started is stopped. Executors of such a context must be
    able to import metalog themselves.

    Failures are one line (``MetalogError``): a master that does not answer (checked before the JVM starts, then
    bounded by ``master_timeout``), the JVM's own reason when it exits before it starts (a malformed
    ``--master``, say). A context this call started is stopped; after Ctrl-C, or when it cannot be stopped, the
    JVM is killed before the scratch directory goes (and a later session in this process is refused in one line:
    pyspark keeps one JVM per process and has no public way to forget one that died).

    The driver's JVM maps a class-data-sharing archive of Spark's classes from the user's cache directory, and the
    first run writes it as this process exits (``spark_classes``; ``METALOG_SPARK_CLASS_ARCHIVE=off`` opts out).

    ``meanwhile``: work of the caller's on a thread of its own while the JVM launches, when the driver has nothing to
    do but wait (``spark_meanwhile``): started as the launch begins, told to stop as it ends (``Meanwhile``); not
    where a context or a JVM is running already."""
    _can_start()
    running = _running_context()
    if running is not None:
        yield running
        return
    with _started(master, app, driver_memory, master_timeout, archives, executor_python, meanwhile) as started:
        yield started.context


@contextmanager
def spark_session(master: str | None = None, *, app: str = "metalog analyze", driver_memory: str | None = None,
                  master_timeout: float = MASTER_TIMEOUT, archives: str | None = None,
                  executor_python: str | None = None) -> Iterator[Any]:
    """A quiet SparkSession, for Spark SQL over the tables: ``spark_context``'s context (the same settings,
    scratch space, failures and Ctrl-C) with a session over it; a session this process already runs is used as
    it is (or a session over its running SparkContext), and left running. ``SparkEngine`` takes either."""
    _can_start()
    running = _running_session()
    if running is not None:
        yield running
        return
    from pyspark.sql import SparkSession

    with _started(master, app, driver_memory, master_timeout, archives, executor_python) as started:
        started.session = SparkSession.builder.getOrCreate()  # over the context just started, with its settings
        yield started.session


def _can_start() -> None:
    """What any session needs first, each missing one said in one line: a Java runtime, pyspark, and no JVM of an
    earlier session in this process that has exited."""
    find_java()
    import_pyspark()
    _refuse_a_dead_jvm()


@contextmanager
def _started(master: str | None, app: str, driver_memory: str | None, master_timeout: float, archives: str | None,
             executor_python: str | None, meanwhile: Meanwhile | None = None) -> Iterator[_Started]:
    """A SparkContext started by this call (``spark_context``), stopped (or its JVM killed) on the way out."""
    master = master or "local[*]"
    executor_python = _executor_python(archives, executor_python)
    _probe_master(master, master_timeout)
    os.environ["PYSPARK_PYTHON"] = executor_python or sys.executable  # pyspark reads the workers' Python here
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    scratch = Path(tempfile.mkdtemp(prefix="metalog-spark-"))
    started = _Started()
    ahead = DaemonAhead(DAEMON_MODULE)
    with quiet_py4j():
        handler = signal.getsignal(signal.SIGINT)
        try:
            conf = _settings(scratch, master, app, driver_memory or default_driver_memory(), archives,
                             executor_python)
            if conf.get("spark.python.daemon.module") == DAEMON_MODULE:
                ahead.start(spark_home())  # (the workers' daemon's imports made while the JVM and the context start)
                conf.update(ahead.executor_env())
            gateway = quiet_gateway(conf, scratch, meanwhile)
            started.context = _start(conf, gateway, master, master_timeout)
            started.accumulators = _ready(started.context, master, archives, scratch)
            with spark_errors():  # said while the JVM is there to render it
                yield started
            started.clean = True
        except KeyboardInterrupt:
            started.interrupted = True
            raise
        finally:
            try:
                _end(started, scratch, handler)
            finally:
                ahead.close()


@dataclass
class _Started:
    """What ``_started`` started (the SparkContext, and a SparkSession over it for ``spark_session``), and how
    it ended."""

    context: Any = None
    session: Any = None
    accumulators: AccumulatorErrors | None = None
    clean: bool = False
    interrupted: bool = False


def _executor_python(archives: str | None, executor_python: str | None) -> str | None:
    """The executors' Python: as given; with ``archives`` (``env.tar.gz#NAME``), ``./NAME/bin/python``."""
    if archives is None or executor_python is not None:
        return executor_python
    name = archives.rpartition("#")[2] if "#" in archives else ""
    if not name:
        raise MetalogError(f"--archives {archives}: name where it unpacks, e.g. env.tar.gz#environment")
    return f"./{name}/bin/python"


def _settings(scratch: Path, master: str, app: str, memory: str, archives: str | None,
              executor_python: str | None) -> dict[str, str]:
    """The session's settings, quiet and with its scratch space in ``scratch`` (the driver's JVM options go
    through the launcher: ``quiet_gateway``)."""
    (scratch / "log4j2.properties").write_text(_LOG4J)
    java_opts = f"-Dlog4j2.configurationFile={scratch / 'log4j2.properties'} -Djava.io.tmpdir={scratch}"
    conf = {"spark.master": master, "spark.app.name": app, "spark.ui.enabled": "false",
            "spark.driver.memory": memory,
            "spark.ui.showConsoleProgress": "false", "spark.local.dir": str(scratch),
            "spark.driver.extraJavaOptions": java_opts, "spark.executor.extraJavaOptions": java_opts,
            "spark.python.worker.reuse": "true",
            # for a SparkSession over the context (spark_session): its warehouse in the scratch space, its times
            # in UTC and written as Parquet's timestamp(MILLIS, UTC), as the executors' pyarrow writes them
            "spark.sql.warehouse.dir": str(scratch / "warehouse"),
            "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS", "spark.sql.session.timeZone": "UTC"}
    if master.startswith("local") and executor_python is None:
        # the workers are forked from a daemon that imported the engine's task modules first (spark_daemon): each
        # worker then imports them no more (elsewhere the executors may not have metalog where the daemon starts)
        conf["spark.python.daemon.module"] = DAEMON_MODULE
    if archives is not None:
        conf["spark.archives"] = archives
    if executor_python is not None:
        conf["spark.pyspark.python"] = executor_python
    return conf


def _ready(context: Any, master: str, archives: str | None, scratch: Path) -> AccumulatorErrors | None:
    """A session just started made ready: Ctrl-C a KeyboardInterrupt (then ``_stop`` kills the JVM; pyspark's
    handler would first call into the JVM to cancel the jobs, with tracebacks), errors only, metalog shipped to
    executors that are not this machine's; the accumulator server's errors held (``AccumulatorErrors``)."""
    server = getattr(context, "_accumulatorServer", None)  # (pyspark's, read: its errors are held, not printed)
    accumulators = AccumulatorErrors(server) if server is not None else None
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    context.setLogLevel("ERROR")
    if not master.startswith("local") and archives is None:
        context.addPyFile(str(package_zip(scratch)))  # metalog reaches the executors
    return accumulators


def _end(started: _Started, scratch: Path, handler: Any) -> None:
    """The context stopped (its JVM killed after Ctrl-C, or when it cannot be stopped), the accumulator server's
    errors settled, the scratch space removed and the caller's Ctrl-C handler back. A session that did not end
    cleanly keeps its JVM from installing the class archive it writes at exit."""
    JVM.clean = JVM.clean and started.clean
    try:
        _stop(started)
    finally:
        if started.accumulators is not None:
            started.accumulators.settle(interrupted=started.interrupted)
        shutil.rmtree(scratch, ignore_errors=True)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, handler)


@contextmanager
def spark_errors() -> Iterator[None]:
    """Spark's and py4j's errors as ``spark_error`` says them (one line, or the interrupt); any other error is
    not Spark's to explain and passes as it is."""
    try:
        yield
    except Exception as e:
        if not type(e).__module__.startswith(("py4j", "pyspark")):
            raise
        raise spark_error(e) from e


def spark_error(e: BaseException) -> BaseException:
    """What to raise for Spark's or py4j's error ``e``: KeyboardInterrupt when Ctrl-C caused it (Ctrl-C reaches
    the JVM too, in the terminal's process group, and pyspark's cleanup of the interrupted call, such as
    resetting the call site, then fails on the JVM that went away: its error hides the interrupt), else
    ``spark_failure(e)``."""
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return KeyboardInterrupt()
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return spark_failure(e)


def spark_failure(e: BaseException) -> MetalogError:
    """Spark's or py4j's error (a JVM that refused the settings or went away, a failed job) as one line: the
    Java exception's message, or for a task that failed in Python, the last error of its traceback; the hint
    about --driver-memory only when the JVM reported an OutOfMemoryError."""
    try:
        text = str(e)
    except Exception:  # noqa: BLE001 - a message the JVM can no longer render
        text = type(e).__name__
    raised = python_error(text)
    if raised is not None and raised.startswith(_METALOG_ERRORS):  # metalog's own, on an executor: its own line
        return MetalogError(raised.partition(": ")[2])
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    python = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b.*:", line)
              and not line.startswith(("org.apache", "py4j", "pyspark", "java."))]
    if raised is not None:
        why = raised
    elif "Traceback (most recent call last)" in text and python:
        why = python[-1]
    else:
        why = next((line for line in lines if "Exception:" in line or "Error:" in line), lines[0] if lines else "")
    hint = (" (the driver's JVM ran out of memory: try a larger --driver-memory, or --engine python)"
            if jvm_ran_out_of_memory() else "")
    return MetalogError(f"Spark failed: {why[:300] or type(e).__name__}{hint}")


_METALOG_ERRORS = tuple(f"metalog.errors.{name}: " for name in dir(errors)
                        if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), MetalogError))


def python_error(text: str) -> str | None:
    """The error a Python traceback in ``text`` ends with (``module.Type: message``, the first line after the
    last traceback's frames, which are indented), or None without one. Spark puts a task's traceback inside its
    own exception's message, under a line that explains nothing ("An exception was thrown from the Python
    worker")."""
    at = text.rfind("Traceback (most recent call last):")
    if at < 0:
        return None
    for line in text[at:].splitlines()[1:]:
        if line.strip() and not line[0].isspace():
            return line.strip()
    return None


def _probe_master(master: str, timeout: float) -> None:
    """A ``spark://host:port[,host:port]`` master that nothing listens on, named in one line before a JVM starts
    (Spark itself retries for about a minute, then blames something else)."""
    if not master.startswith("spark://"):
        return
    reasons = []
    for where in master[len("spark://"):].split(","):
        host, _, port = where.rpartition(":")
        if not host or not port.isdigit():
            raise MetalogError(f"--master {master}: give spark://HOST:PORT (e.g. spark://127.0.0.1:7077)")
        try:
            socket.create_connection((host, int(port)), timeout=min(timeout, 10.0)).close()
            return
        except OSError as e:
            reasons.append(f"{where}: {e.strerror or e}")
    raise MetalogError(f"the Spark master {master} did not answer ({'; '.join(reasons)}): is it running, and is "
                       "that its address (the master's log and web UI show its spark:// URL)?")


def _start(conf: dict[str, str], gateway: Any, master: str, timeout: float) -> Any:
    """The SparkContext on ``gateway`` (the JVM ``quiet_gateway`` launched; None: the one pyspark already runs),
    built in a thread of its own so that a standalone master that accepts connections but never registers the
    application (another service on that port, a master of another Spark version) costs ``timeout`` seconds and
    one line, not Spark's minute of retries."""
    from pyspark import SparkConf, SparkContext

    def build() -> Any:
        return SparkContext(conf=SparkConf(loadDefaults=False).setAll(list(conf.items())), gateway=gateway)

    if master.startswith("local"):
        return build()
    got: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            got.append(build())
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            failed.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if failed:
        raise failed[0]
    if not got:
        raise MetalogError(f"the Spark master {master} did not accept the application within {timeout:g} s "
                           "(--master-timeout): is that a Spark master's URL, of a Spark version like this "
                           "pyspark's?")
    return got[0]


STOP_TIMEOUT = 60.0  # seconds a failed context has to stop before its JVM is killed


def _stop(started: _Started) -> None:
    """Stop what ``_started`` started: after success, the context (pyspark keeps its JVM for a later context in
    this process); after a failure, the same, unless it does not stop within ``STOP_TIMEOUT`` (a master that went
    away); after Ctrl-C, or without a context (a master that never accepted the application), the JVM this
    process launched is killed at once.

    Only public calls: ``SparkSession.stop``, ``SparkContext.stop``. pyspark has no public way to forget a JVM
    that died (it keeps one per process in ``SparkContext._gateway``, and only a reset of that private slot would
    let a later context start another); rather than write it, a later session in this process is refused in one
    line (``_refuse_a_dead_jvm``). The CLI runs one session per process, so only a notebook or a test process is
    asked to start anew, and only after Ctrl-C or a master that went away: a failed job (a damaged log, say)
    stops the context cleanly and keeps the JVM."""
    if started.context is not None and not started.interrupted \
            and _stopped(started, STOP_TIMEOUT if not started.clean else None):
        return
    gateway = JVM.gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    if proc is not None:
        with contextlib.suppress(Exception):
            gateway.shutdown()
        proc.kill()
        proc.wait()
    # pyspark's active context cleared (on a killed JVM its stop fails, quietly); a JVM not ours (spark-submit's)
    # is stopped as well as it goes
    if started.context is not None:
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            started.context.stop()


def _stopped(started: _Started, timeout: float | None) -> bool:
    """Whether the session (if any) and the context stopped, within ``timeout`` seconds (None: however long)."""
    def stop() -> None:
        stop_context(started.context, started.session)

    if timeout is None:  # (after success; a failure's stop runs no job: its master may have gone)
        release_accumulators(started.context)
        stop()
        return True
    done = threading.Event()

    def run() -> None:
        with contextlib.suppress(Exception):
            stop()
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    return done.is_set()


def stop_context(context: Any, session: Any = None) -> None:
    """Stop a context (and the SparkSession over it, if any), with the driver JVM's logging off first: the run's
    outcome is decided by then, and executors of a standalone cluster still reporting to a scheduler that has
    stopped make the driver log errors of its own shutdown ("Could not find CoarseGrainedScheduler", with a Java
    stack) that a user would take for the run's. The next context on this JVM sets its level again
    (``_ready``)."""
    context.setLogLevel("OFF")
    if session is not None:
        session.stop()  # stops the context, and clears the session pyspark keeps
    context.stop()  # (a no-op after the session's stop)


def release_accumulators(context: Any) -> None:
    """pyspark's accumulator server shut down before its context stops, without its wait: ``SparkContext.stop``
    shuts it down after the JVM's context, and the server's one connection (from the JVM, which reports every task's
    end there) is served by a loop that looks whether the server is shutting down once a second, or when the JVM
    sends something: the stop waited up to a second with nothing to do (0.24-0.93 s in the runs measured, on every
    run of the command). Here the shutdown is requested (the server's own ``shutdown``, on a thread: it returns once
    the loop has ended) between two jobs of one empty task: the first makes sure the JVM is connected (it connects
    at the first task's end), the second's end wakes the loop, which then sees the shutdown and ends; the context's
    stop finds the server shut down. Anything that fails here leaves the stop to pyspark as it was."""
    server = getattr(context, "_accumulatorServer", None)  # (pyspark's, read: its public ``shutdown`` is called)
    if server is None or getattr(server, "server_shutdown", True):
        return
    with contextlib.suppress(Exception):
        _empty_job(context)
        shutting = threading.Thread(target=server.shutdown, daemon=True)
        shutting.start()
        while not server.server_shutdown and shutting.is_alive():  # (set as the thread's first step)
            time.sleep(0.001)
        _empty_job(context)
        shutting.join()


def _empty_job(context: Any) -> None:
    context.parallelize([0], 1).count()


def _refuse_a_dead_jvm() -> None:
    """A JVM pyspark keeps for this process that has exited (killed after Ctrl-C, or out of memory) cannot run
    another context, and pyspark has no public way to start a new one: said in one line (before its context,
    which a stop on the dead JVM may leave registered as the active one, is taken for a running one)."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)  # noqa: SLF001 - read only: pyspark's one JVM
    if proc is not None and proc.poll() is not None:
        raise MetalogError("the Spark JVM of an earlier session in this process has exited (after Ctrl-C, a "
                           "failure or running out of memory), and pyspark starts one JVM per process: run "
                           "again in a new process")


def _running_context() -> Any | None:
    """A SparkContext this process already runs (a notebook's, a caller's, a session's), else None."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context  # noqa: SLF001 - read only: pyspark's one context per process


def _running_session() -> Any | None:
    """The SparkSession of a SparkContext this process already runs, if there is one (else None)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()  # this thread's
    if active is not None:
        return active
    if _running_context() is not None:
        return SparkSession.builder.getOrCreate()  # a session over that context, none of our settings applied
    return None


def default_driver_memory() -> str:
    """A quarter of this machine's memory, between 1 GB and 8 GB (Spark's own default is 1 GB)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "2g"
    return f"{min(max(total // 4 >> 30, 1), 8)}g"


class _JvmState:
    """The driver's JVM this process launched (``gateway``: py4j's, with its ``proc``), what it said on stderr
    that metalog acts on, and whether every session on it ended cleanly (``clean``: the class archive it writes
    as it exits is kept only then)."""

    gateway: Any = None
    out_of_memory = False
    clean = True


JVM = _JvmState()


def jvm_ran_out_of_memory() -> bool:
    """Whether the driver's JVM this process started reported an OutOfMemoryError (the hint about
    ``--driver-memory`` is given only then)."""
    return JVM.out_of_memory


def jvm_pid() -> int | None:
    """The process id of the driver's JVM this process launched and still runs (None: none, or spark-submit's)."""
    proc = getattr(JVM.gateway, "proc", None)
    return proc.pid if proc is not None and proc.poll() is None else None


def quiet_gateway(settings: dict[str, str], scratch: Path, meanwhile: Meanwhile | None = None) -> Any:
    """Launch the driver's JVM (once per process: None when pyspark already runs one, which the context then
    uses) with its stderr in a file that a thread forwards from the start, less the JVM's startup notices: a JVM
    that exits before it reports its port (a malformed master) leaves its reason there, which the one-line error
    then gives. The gateway is handed to ``SparkContext(gateway=...)``."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # noqa: SLF001 - read only: a JVM of an earlier context is reused
        return None
    JVM.out_of_memory, JVM.clean = False, True
    archive, options, written = _class_archive()
    # the driver's JVM options go through the launcher, since that JVM starts before the settings apply; a JVM out
    # of memory exits (Spark would otherwise wait forever on a task result it failed to read)
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        f'--driver-memory {settings["spark.driver.memory"]} --driver-java-options "'
        f'{settings["spark.driver.extraJavaOptions"]} -XX:+ExitOnOutOfMemoryError {DRIVER_JIT}{options}" '
        'pyspark-shell')
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    log = scratch / "jvm-stderr.log"
    warming = threading.Thread(target=_imported, args=(CONVERTER_IMPORTS,), daemon=True)
    with open(log, "wb") as sink, _ctrl_c_deferred():
        try:
            warming.start()
            if meanwhile is not None:
                meanwhile.start()
            launch: Any = launch_gateway  # (pyspark's, untyped)
            gateway = launch(conf, popen_kwargs={"stderr": sink})
        except Exception as e:
            if written is not None:  # a JVM that exited at its start may have written its archive there
                written.unlink(missing_ok=True)
            if "JAVA_GATEWAY_EXITED" not in str(e):
                raise
            raise MetalogError(f"Spark did not start: {_reason(log)}") from None
        finally:
            warming.join()
            if meanwhile is not None:
                meanwhile.stop()
        JVM.gateway = gateway  # ours before a deferred Ctrl-C is raised, so that the caller's cleanup kills it
    if gateway.proc is not None:  # None under spark-submit: its JVM was there first, its stderr is not ours
        threading.Thread(target=_forward, args=(log, gateway.proc), daemon=True).start()
        if archive is not None and written is not None:
            atexit.register(_archive_at_exit, archive, written, gateway)
    return gateway


def _imported(modules: tuple[str, ...]) -> None:
    """``modules`` imported; one that fails to import is left to whoever imports it next (which then says why)."""
    for module in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(module)


def _class_archive() -> tuple[ClassArchive | None, str, Path | None]:
    """The class archive for the driver's JVM (``spark_classes``): the archive, the JVM's options for it, and the
    temporary file the JVM is to write it to as it exits (None: the archive is used, or there is none)."""
    home = spark_home()
    archive = class_archive(find_java(), home)
    if archive is None:
        return None, "", None
    if archive.usable():
        return archive, f" {SILENT} -XX:SharedArchiveFile={archive.path}", None
    written = archive.temporary()
    return archive, f" {SILENT} -XX:ArchiveClassesAtExit={written}", written


def _archive_at_exit(archive: ClassArchive, written: Path, gateway: Any) -> None:
    """At this process's exit, the JVM let go to write the class archive, which is kept if its sessions ended
    cleanly."""
    finish(archive, written, gateway.proc, gateway, JVM.clean)


def spark_home() -> Path | None:
    """Where pyspark's launcher finds Spark: ``SPARK_HOME``, else a pip-installed pyspark's own directory (None:
    neither has Spark's jars)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    pyspark = Path(import_pyspark().__file__).parent
    return pyspark if (pyspark / "jars").is_dir() else None


@contextmanager
def _ctrl_c_deferred() -> Iterator[None]:
    """Ctrl-C while pyspark launches the JVM would leave a JVM nobody can reach to stop: it takes effect right
    after the launch instead, once the JVM is ours to kill."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    if pressed:
        raise KeyboardInterrupt


def _reason(log: Path) -> str:
    """The JVM's own reason from its stderr: the exception or error it died of."""
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    for line in lines:
        if "Exception" in line or line.startswith("Error"):
            _, sep, why = line.partition("Exception: ")
            return (why if sep else line)[:300]
    useful = [line for line in lines if not jvm_notice(line)]
    return useful[-1][:300] if useful else "its JVM exited without saying why"


def _forward(log: Path, proc: Any) -> None:
    """Copy the JVM's stderr file to ours as it grows, until the JVM exits."""
    with open(log, "rb") as stream:
        while True:
            at = stream.tell()
            line = stream.readline()
            if not line.endswith(b"\n"):
                if proc.poll() is not None:
                    if line:
                        sys.stderr.buffer.write(line + b"\n")
                    return
                stream.seek(at)  # a line the JVM is still writing: read it whole
                time.sleep(0.1)
                continue
            text = line.decode(errors="replace")
            if "OutOfMemoryError" in text:
                JVM.out_of_memory = True
            if not jvm_notice(text):
                sys.stderr.buffer.write(line)
                sys.stderr.flush()


def package_zip(scratch: Path) -> Path:
    """metalog's Python modules as a zip for ``addPyFile``: Python imports no compiled module from a zip, so
    none is packed; on the executors the codec falls back to its pure readers (``codec.core``)."""
    import metalog

    root = Path(metalog.__file__).parent
    out = scratch / "metalog.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in root.rglob("*.py"):
            z.write(path, Path("metalog") / path.relative_to(root))
    return out
