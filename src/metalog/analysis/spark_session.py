"""A Spark session for metalog's Spark engine, and the JVM under it: quiet (errors only, no UI, the JVM's startup
notices filtered out), its scratch space in a temp dir removed afterwards, a session the process already runs
used as it is. The engine's algorithm is ``metalog.analysis.spark``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metalog.errors import MetalogError

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""
# startup notices log4j cannot silence: the JVM's for the vector module Spark enables, and the two lines Spark
# prints itself (not through log4j) when a Python driver starts it
_JVM_NOTICES = ("WARNING: Using incubator modules", "Setting default log level to",
                "To adjust logging level use sc.setLogLevel")


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
def spark_session(master: str | None = None, *, app: str = "metalog analyze",
                  driver_memory: str | None = None) -> Iterator[Any]:
    """A quiet SparkSession (no UI, errors only), with its scratch space in a temp dir removed afterwards.
    ``driver_memory`` (Spark's size form, e.g. ``4g``; default ``default_driver_memory()``): the driver
    collects every row, and on ``local[*]`` its JVM runs the tasks too.

    A session or SparkContext this process already runs (a notebook's, a caller's) is used as it is, with its
    own master and settings, and left running: only a session this call started is stopped. Executors of such
    a session must be able to import metalog themselves."""
    find_java()
    import_pyspark()
    running = _running_session()
    if running is not None:
        yield running
        return
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    scratch = Path(tempfile.mkdtemp(prefix="metalog-spark-"))
    (scratch / "log4j2.properties").write_text(_LOG4J)
    java_opts = f"-Dlog4j2.configurationFile={scratch / 'log4j2.properties'} -Djava.io.tmpdir={scratch}"
    memory = driver_memory or default_driver_memory()
    master = master or "local[*]"
    # the driver's JVM starts before the builder's settings apply: its options go through the launcher. A JVM
    # out of memory exits (Spark would otherwise wait forever on a task result it failed to read)
    os.environ["PYSPARK_SUBMIT_ARGS"] = (f'--driver-memory {memory} --driver-java-options '
                                         f'"{java_opts} -XX:+ExitOnOutOfMemoryError" pyspark-shell')
    conf = {"spark.master": master, "spark.app.name": app, "spark.ui.enabled": "false",
            "spark.driver.memory": memory,
            "spark.ui.showConsoleProgress": "false", "spark.local.dir": str(scratch),
            "spark.driver.extraJavaOptions": java_opts, "spark.executor.extraJavaOptions": java_opts,
            "spark.sql.warehouse.dir": str(scratch / "warehouse"), "spark.python.worker.reuse": "true"}
    _quiet_gateway(conf)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    try:
        session.sparkContext.setLogLevel("ERROR")
        if not master.startswith("local"):
            session.sparkContext.addPyFile(str(_package_zip(scratch)))  # metalog reaches the executors
        yield session
    finally:
        session.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _running_session() -> Any | None:
    """The SparkSession of a SparkContext this process already runs, if there is one (else None)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()  # this thread's
    if active is not None:
        return active
    if SparkContext._active_spark_context is not None:  # noqa: SLF001 - pyspark's one context per process
        return SparkSession.builder.getOrCreate()  # a session over that context, none of our settings applied
    return None


def default_driver_memory() -> str:
    """A quarter of this machine's memory, between 1 GB and 8 GB (Spark's own default is 1 GB)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "2g"
    return f"{min(max(total // 4 >> 30, 1), 8)}g"


def _quiet_gateway(settings: dict[str, str]) -> None:
    """Start the driver's JVM (once per process) with its stderr through a filter that drops the JVM's
    startup notices and passes everything else on."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # noqa: SLF001 - a JVM from an earlier session is reused
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    if gateway.proc is not None:  # None under spark-submit: its JVM was there first, its stderr is not ours
        threading.Thread(target=_forward, args=(gateway.proc.stderr,), daemon=True).start()
    SparkContext._gateway, SparkContext._jvm = gateway, gateway.jvm  # noqa: SLF001 - pyspark's own slots


def _forward(stream: Any) -> None:
    for line in iter(stream.readline, b""):
        if not line.decode(errors="replace").startswith(_JVM_NOTICES):
            sys.stderr.buffer.write(line)
            sys.stderr.flush()


def _package_zip(scratch: Path) -> Path:
    import metalog

    root = Path(metalog.__file__).parent
    out = scratch / "metalog.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in root.rglob("*.py"):
            z.write(path, Path("metalog") / path.relative_to(root))
    return out
