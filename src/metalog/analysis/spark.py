"""The Spark engine: the parallel replay's two passes as Spark stages over offset ranges of every cluster.

Stage 1 computes each range's delta on an executor, the driver composes prefixes into start states (small:
deltas hold only what a range changed), stage 2 replays each range from its start state into timeline rows.
Executors open the log directories themselves: the paths must be visible to them (local disks for
``local[*]``; a shared filesystem on a cluster). Only offsets, deltas, start states and rows travel.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metalog.analysis.parallel import (
    assemble,
    base_image,
    log_bounds,
    range_delta,
    replay_range,
    split_ranges,
    start_states,
)
from metalog.analysis.pipeline import Analysis, _cluster_names
from metalog.analysis.timeline import COLUMNS
from metalog.errors import MetalogError

RANGES_PER_CORE = 2  # a little slack for ranges that replay slower than others
_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


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
def spark_session(master: str | None = None, *, app: str = "metalog analyze") -> Iterator[Any]:
    """A quiet SparkSession (no UI, errors only), with its scratch space in a temp dir removed afterwards."""
    find_java()
    import_pyspark()
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    scratch = Path(tempfile.mkdtemp(prefix="metalog-spark-"))
    (scratch / "log4j2.properties").write_text(_LOG4J)
    java_opts = f"-Dlog4j2.configurationFile={scratch / 'log4j2.properties'} -Djava.io.tmpdir={scratch}"
    master = master or "local[*]"
    # the driver's JVM starts before the builder's settings apply: its options go through the launcher
    os.environ["PYSPARK_SUBMIT_ARGS"] = f'--driver-java-options "{java_opts}" pyspark-shell'
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.local.dir", str(scratch))
               .config("spark.driver.extraJavaOptions", java_opts)
               .config("spark.executor.extraJavaOptions", java_opts)
               .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
               .config("spark.python.worker.reuse", "true"))
    session = builder.getOrCreate()
    try:
        session.sparkContext.setLogLevel("ERROR")
        if not master.startswith("local"):
            session.sparkContext.addPyFile(str(_package_zip(scratch)))  # metalog reaches the executors
        yield session
    finally:
        session.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _package_zip(scratch: Path) -> Path:
    import metalog

    root = Path(metalog.__file__).parent
    out = scratch / "metalog.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in root.rglob("*.py"):
            z.write(path, Path("metalog") / path.relative_to(root))
    return out


Task = tuple[int, str, str, int, int]  # (cluster index, path, cluster name, lo, hi)


def _delta(task: Task) -> tuple[int, Any]:
    return task[0], range_delta(task[1], task[3], task[4])


def _replay(item: tuple[Task, Any]) -> list[Any]:
    """Rows as tuples in COLUMNS order: a third of the bytes of dicts to serialize and collect."""
    (_, path, cluster, lo, hi), start = item
    return [(tuple(row.values()), events) for row, events in replay_range(path, cluster, lo, hi, start)]


def _rows(part: list[Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    return [(dict(zip(COLUMNS, values, strict=True)), events) for values, events in part]


def analyze_spark(session: Any, logdirs: Sequence[str | os.PathLike[str]], *, ranges_per_core: int = RANGES_PER_CORE,
                  progress: Callable[[int, int], None] | None = None) -> Analysis:
    """Every cluster's timeline and events, computed on Spark; equal to ``analyze_python``'s."""
    sc = session.sparkContext
    paths = [str(Path(p).resolve()) for p in logdirs]
    names = _cluster_names(logdirs)
    n = max(1, sc.defaultParallelism * ranges_per_core)
    tasks: list[Task] = []
    total = 0
    for i, (path, name) in enumerate(zip(paths, names, strict=True)):
        first, last = log_bounds(path)
        total += max(last - first + 1, 0)
        tasks += [(i, path, name, lo, hi) for lo, hi in split_ranges(first, last, n)]
    if not tasks:
        return Analysis()
    with _StageProgress(sc, total, progress):
        deltas = sc.parallelize(tasks, len(tasks)).map(_delta).collect()
        starts: list[Any] = []
        for i, path in enumerate(paths):
            starts += start_states(base_image(path), [d for c, d in deltas if c == i])
        parts = sc.parallelize(list(zip(tasks, starts, strict=True)), len(tasks)).map(_replay).collect()
    result = Analysis()
    for i in range(len(paths)):
        one = assemble([_rows(part) for task, part in zip(tasks, parts, strict=True) if task[0] == i])
        result.rows += one.rows
        result.events += one.events
    result.records = total
    return result


class _StageProgress:
    """Reports (records done, total) from Spark's status tracker: two stages, each over every record."""

    def __init__(self, sc: Any, total: int, progress: Callable[[int, int], None] | None) -> None:
        self.sc, self.total, self.progress = sc, total, progress
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> _StageProgress:
        if self.progress is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _poll(self) -> None:
        tracker = self.sc.statusTracker()
        while not self.stop.wait(0.2):
            done = tasks = 0
            for job in tracker.getJobIdsForGroup():
                info = tracker.getJobInfo(job)
                for stage in info.stageIds if info else ():
                    s = tracker.getStageInfo(stage)
                    if s is not None:
                        done, tasks = done + s.numCompletedTasks, tasks + s.numTasks
            if tasks and self.progress is not None:
                self.progress(self.total * done // max(tasks, 1), self.total)
