"""``metalog analyze``: migration-phase timelines, events and a report for a fleet of metadata logs."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from metalog.analysis.domain.schema import BROKERS, BUCKETS, DIRECTORIES, EVENTS, FAILURES
from metalog.analysis.outputs.growth_tables import GROWTH_TABLES, ROWS
from metalog.cli.progress import Progress
from metalog.errors import MetalogError


def _columns_help() -> str:
    lines = ["timeline_batches (one row per batch) and timeline_buckets (the last row per --bucket):"]
    lines += [f"  {c.name:<28} {'timeline_buckets only: ' if c.name == 'bucket_start' else ''}{c.help}"
              for c in BUCKETS.columns]
    for table in (EVENTS, BROKERS, DIRECTORIES, FAILURES):
        lines += [f"{table.name}:" if table is EVENTS else f"{table.name} ({table.row}):"]
        lines += [f"  {c.name:<28} {c.help}" for c in table.columns]
    for name, growth in GROWTH_TABLES.items():  # read from each log directory apart from the replay
        lines += [f"{name} ({ROWS[name]}):"]
        lines += [f"  {name:<28} {text}" for name, _, text in growth]
    return "\n".join(lines)


EXAMPLES = """\
examples:
  metalog analyze /var/lib/kafka/metadata --out analysis                 # Spark on local[*]
  metalog analyze LOGDIR --out analysis --engine python                  # no JVM
  metalog analyze cluster-a cluster-b cluster-c --out fleet --bucket 5m
  metalog analyze eu=/data/eu/metadata us=/data/us/metadata --out fleet     # clusters named eu and us
  metalog analyze LOGDIR --out analysis --metrics-every-batch            # .om: every batch time a sample
"""


def register(sub: Any) -> None:
    p = sub.add_parser("analyze", help="ZooKeeper-migration and JBOD-transition timelines, events and a report",
                       description="Replay every batch of each log and write the tables OUT/timeline_batches, "
                                   "OUT/timeline_buckets, OUT/events, OUT/broker_timeline, OUT/directory_timeline "
                                   "and OUT/directory_failures, and from each log directory apart from the replay "
                                   "how its metadata grows and who led it: OUT/growth (records per minute by "
                                   "record type), OUT/log_size, OUT/snapshots and OUT/controller_leadership, "
                                   "as Parquet partitioned by cluster "
                                   "(TABLE/cluster=NAME/part-*.parquet; Spark writes them from its executors), "
                                   "as CSV with --csv, plus OUT/controller_metrics.om (Kafka's controller metrics "
                                   "over the log's time as OpenMetrics, for promtool and Prometheus: a sample where "
                                   "a value changes and at least one a minute), OUT/report.html and OUT/report.png "
                                   "(Parquet needs pyarrow, the png Pillow: the analysis extra; without pyarrow "
                                   "the python engine writes CSV).",
                       epilog=EXAMPLES + "\ncolumns:\n" + _columns_help(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logdirs", nargs="+", metavar="[NAME=]LOGDIR",
                   help="log directories, one per cluster; a cluster is named by NAME, else by the cluster.id in "
                        "LOGDIR/meta.properties, else by the directory's name (two clusters with one name are an "
                        "error)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the output directory: a new or empty one, or one an earlier analysis wrote (it holds "
                        ".metalog-analysis; its tables are replaced, nothing else in it is touched); it holds a file "
                        "INCOMPLETE, naming why, until a run ends well")
    p.add_argument("--engine", choices=["spark", "python"], default="spark",
                   help="spark (the default; pyspark and a JDK): offset ranges replayed in parallel; python: one "
                        "process, no JVM")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[*]); the log directories must "
                                                   "be readable at the same paths on the executors")
    p.add_argument("--master-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="how long a spark:// master has to accept the application before metalog gives up (30)")
    p.add_argument("--archives", metavar="FILE#NAME",
                   help="a packed virtual environment with metalog installed (venv-pack -o env.tar.gz), shipped to "
                        "the executors, e.g. env.tar.gz#environment; they run its Python (Spark's spark.archives)")
    p.add_argument("--executor-python", metavar="PATH",
                   help="the executors' Python (default: with --archives, ./NAME/bin/python; else this one)")
    p.add_argument("--driver-memory", metavar="SIZE",
                   help="the Spark driver's JVM memory, e.g. 8g (default: a quarter of this machine's, 1g to 8g): "
                        "on local[*] it runs the tasks")
    p.add_argument("--csv", action="store_true",
                   help="also write each table as one OUT/TABLE.csv (times in epoch ms), clusters in the order given")
    p.add_argument("--bucket", default="1m", metavar="WIDTH", help="timeline_buckets width: 30s, 1m, 1h... (1m)")
    p.add_argument("--metrics-every-batch", action="store_true",
                   help="OUT/controller_metrics.om with a sample of every metric at every batch time (about 1 KB "
                        "per record) rather than where its value changes and at least one a minute of log time")
    p.set_defaults(func=_analyze)


def _analyze(args: argparse.Namespace) -> int:
    from metalog.analysis.engines.request import AnalysisRequest
    from metalog.analysis.outputs.claim import claimed_output
    from metalog.analysis.outputs.report import write_report_from_tables
    from metalog.analysis.outputs.tables import parse_bucket

    try:
        width = parse_bucket(args.bucket)
    except ValueError as e:
        raise MetalogError(str(e)) from None
    # a name given twice is refused before any work
    request = AnalysisRequest.of(args.logdirs, args.out, bucket_ms=width, csv=args.csv,
                                 metrics_every_batch=args.metrics_every_batch)
    one_blas_thread()
    needs_pyarrow()
    # before any work: a directory holding the user's files is refused, not emptied; INCOMPLETE until it ends well
    with claimed_output(request.out), engine(args, request) as chosen, \
            Progress(f"analyze ({chosen.name})") as progress:
        summary = run_engine(chosen, request, progress)
        progress.label = f"analyze ({chosen.name}: report)"
        written = [*summary.paths, *write_report_from_tables(request.out, request.names, chosen.run,
                                                             cores=chosen.cores)]
    print(f"{summary.records:,} data records, {summary.batches:,} batches, {len(summary.clusters)} cluster(s), "
          f"{summary.events:,} events", file=sys.stderr)
    for path in written:
        print(path)
    return 0


def one_blas_thread() -> None:
    """numpy's OpenBLAS, which pyarrow imports where numpy is installed, starts a thread per core that spins a
    while before it sleeps: CPU for nothing, as an analysis runs no BLAS (its Spark workers neither: they inherit
    this). One thread, unless the user chose (``OPENBLAS_NUM_THREADS``); before pyarrow is first imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def needs_pyarrow() -> None:
    """The tables are written as Arrow record batches: pyarrow (the analysis and spark extras), said in one line."""
    from metalog.analysis.outputs.tables import has_pyarrow

    if not has_pyarrow():
        raise MetalogError("metalog analyze writes its tables with pyarrow: pip install 'metalog[analysis]'")


@contextmanager
def engine(args: argparse.Namespace, request: Any) -> Iterator[Any]:
    """The engine ``--engine`` names; Spark's within its session (a JVM started after the checks that need
    none: the driver's memory, each log directory readable and not empty)."""
    if args.engine == "python":
        from metalog.analysis.engines.python import PythonEngine

        yield PythonEngine()
        return
    from metalog.analysis.engines.replay import log_records
    from metalog.analysis.engines.spark import SparkEngine
    from metalog.analysis.engines.spark_meanwhile import MeanwhileStarts
    from metalog.analysis.engines.spark_session import local_cores, spark_context, spark_errors

    if args.driver_memory is not None:
        check_driver_memory(args.driver_memory)
    for cluster in request.clusters:  # an unreadable or empty log directory, before a JVM starts
        log_records(cluster.path)
    # on a local master, the start states of a cut cluster's later ranges, planned and written while the JVM
    # launches, when the driver only waits
    with spark_errors(), MeanwhileStarts(request, local_cores(args.master)) as starts, \
            spark_context(args.master, driver_memory=args.driver_memory, master_timeout=args.master_timeout,
                          archives=args.archives, executor_python=args.executor_python,
                          meanwhile=starts) as context:
        yield SparkEngine(context, meanwhile=starts)


def run_engine(chosen: Any, request: Any, progress: Progress) -> Any:
    """``chosen.analyze(request)`` with its progress on ``progress``: records and records/s, and each stage's
    name in the label (Spark's)."""
    def stage(name: str) -> None:
        progress.label = f"analyze ({chosen.name}: {name})"
        progress.restart()  # each stage's own share and rate, from its own start (not the JVM's)

    # no terminal, no progress: Spark's status tracker is then not polled (each poll is calls into the JVM)
    return chosen.analyze(request, progress.update if progress.enabled else None, stage)


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def check_driver_memory(size: str) -> None:
    """A size in Spark's form (``4g``, ``512m``) that Spark will start with (it needs 450 MiB or more)."""
    match = re.fullmatch(r"(\d+)([bkmgt]?)", size.strip().lower())
    if match is None:
        raise MetalogError(f"--driver-memory {size!r}: give a size such as 4g or 768m")
    if int(match[1]) * _UNITS[match[2]] < 512 << 20:
        raise MetalogError(f"--driver-memory {size}: Spark's driver needs at least 512m")
