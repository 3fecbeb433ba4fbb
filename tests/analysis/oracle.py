"""An analysis' tables as dict rows, for the tests to read and compare (metalog itself hands on column chunks and
writes them: no dict row crosses its modules), and the tables written whole from such rows, the way the python
engine wrote them before it wrote as it went (the streamed writers' oracle).

``analyze_python``/``analyze_log`` replay as the python engine does, ``analyze_parallel`` as the parallel engine
does, each into a scratch directory of Parquet tables, read back cluster by cluster in fleet order."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalog.analysis.domain.columns import Chunk
from metalog.analysis.engines.parallel import ParallelEngine
from metalog.analysis.engines.python import replay_cluster
from metalog.analysis.engines.request import AnalysisRequest
from metalog.analysis.layout import TABLES, iter_cluster, write_cluster
from metalog.analysis.openmetrics import FILE as OPENMETRICS
from metalog.analysis.openmetrics import write_openmetrics
from metalog.analysis.result import ClusterLog, cluster_name
from metalog.analysis.tables import buckets, claim_output, write_table
from metalog.analysis.writers import TableWriters

Row = dict[str, Any]


@dataclass
class BrokerTables:
    """Rows of broker_timeline, directory_timeline and directory_failures."""

    brokers: list[Row] = field(default_factory=list)
    directories: list[Row] = field(default_factory=list)
    failures: list[Row] = field(default_factory=list)


@dataclass
class Analysis:
    """timeline_batches (``rows``), events and the per-broker tables of a fleet, clusters in fleet order, and
    the data records replayed."""

    rows: list[Row] = field(default_factory=list)
    events: list[Row] = field(default_factory=list)
    records: int = 0
    by_broker: BrokerTables = field(default_factory=BrokerTables)


Replay = Callable[[ClusterLog, Callable[[Chunk], object]], int]


def _python(cluster: ClusterLog, sink: Callable[[Chunk], object]) -> int:
    return replay_cluster(cluster.path, cluster.name, sink)


def read_back(out: Path, names: Sequence[str], records: int = 0) -> Analysis:
    """The tables in ``out`` as dict rows, the clusters ``names`` in that order."""
    def rows(table: str) -> list[Row]:
        return [row for name in names if (out / table).is_dir()
                for batch in iter_cluster(out / table, name, TABLES[table]) for row in batch]

    return Analysis(rows("timeline_batches"), rows("events"), records,
                    BrokerTables(rows("broker_timeline"), rows("directory_timeline"), rows("directory_failures")))


def analysis_of(logdirs: Sequence[str | os.PathLike[str]], replay: Replay = _python) -> Analysis:
    request = AnalysisRequest.of(logdirs, "unused")
    with tempfile.TemporaryDirectory(prefix="metalog-oracle-") as scratch:
        out = Path(scratch)
        records = 0
        with TableWriters(out, 60_000, csv=False) as writers:
            for cluster in request.clusters:
                writers.cluster(cluster.name)
                records += replay(cluster, writers.add)
                writers.end_cluster()
            writers.close()
        return read_back(out, request.names, records)


def analyze_python(logdirs: Sequence[str | os.PathLike[str]]) -> Analysis:
    """The python engine's tables of a fleet (log directories or ``NAME=LOGDIR``)."""
    return analysis_of(logdirs)


def analyze_log(path: str | os.PathLike[str], cluster: str | None = None) -> Analysis:
    """One cluster's tables, named ``cluster`` (default: as ``metalog analyze`` names it)."""
    return analysis_of([f"{cluster or cluster_name(path)}={os.fspath(path)}"])


def analyze_parallel(path: str | os.PathLike[str], ranges: int | Sequence[tuple[int, int]], cluster: str | None = None,
                     *, points: bool = True) -> Analysis:
    """One cluster's tables from the parallel engine's ranges: ``ranges`` equal ones, or the [lo, hi] ranges."""
    engine = ParallelEngine(ranges if isinstance(ranges, int) else 1, points)
    bounds = None if isinstance(ranges, int) else list(ranges)

    def replay(c: ClusterLog, sink: Callable[[Chunk], object]) -> int:
        return engine.replay_cluster(c.path, c.name, sink, bounds)

    return analysis_of([f"{cluster or cluster_name(path)}={os.fspath(path)}"], replay)


def tables_of(result: Analysis, width_ms: int) -> dict[str, list[Row]]:
    return {"timeline_batches": result.rows, "timeline_buckets": buckets(result.rows, width_ms),
            "events": result.events, "broker_timeline": result.by_broker.brokers,
            "directory_timeline": result.by_broker.directories, "directory_failures": result.by_broker.failures}


def write_outputs(out: Path, result: Analysis, width_ms: int, *, csv: bool = True,
                  metrics_every_batch: bool = False) -> list[Path]:
    """The tables of ``result`` written whole: a file per cluster and table from its rows at once
    (``layout.write_cluster``), CSV with ``csv``, controller_metrics.om from every timeline row
    (``openmetrics.write_openmetrics``)."""
    claim_output(out)
    tables = tables_of(result, width_ms)
    written: list[Path] = []
    for name, rows in tables.items():
        if (out / name).is_dir():
            shutil.rmtree(out / name)
        by_cluster: dict[str, list[Row]] = {}
        for row in rows:
            by_cluster.setdefault(row["cluster"], []).append(row)
        for cluster, part in by_cluster.items():
            write_cluster(out, name, cluster, part)
        (out / name).mkdir(exist_ok=True)
        written.append(out / name)
    if csv:
        written += [path for name, rows in tables.items() for path in write_table(out, name, TABLES[name], rows)]
    timelines: dict[str, list[Row]] = {}
    for row in result.rows:
        timelines.setdefault(row["cluster"], []).append(row)
    return [*written, write_openmetrics(out / OPENMETRICS, list(timelines.items()), every_batch=metrics_every_batch)]
