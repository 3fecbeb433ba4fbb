"""An analysis' tables as dict rows, for the tests to read and compare (metalog itself hands on column chunks and
writes them: no dict row crosses its modules), and the tables written whole from such rows, the way the python
engine wrote them before it wrote as it went (the streamed writers' oracle): each cluster's Parquet file from its
rows at once (``write_cluster``), the buckets from every row (``buckets``), controller_metrics.om from every
timeline row (``write_openmetrics``), and the report from the rows (``clusters_of``, ``write_report``: the report
from the tables' columns is compared with it).

``analyze_python``/``analyze_log`` replay as the python engine does, ``analyze_parallel`` as the parallel engine
does, each into a scratch directory of Parquet tables, read back cluster by cluster in fleet order."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalog.analysis.clusters import ClusterLog, cluster_name
from metalog.analysis.domain.columns import Chunk
from metalog.analysis.engines.parallel import ParallelEngine
from metalog.analysis.engines.python import replay_cluster
from metalog.analysis.engines.request import AnalysisRequest
from metalog.analysis.outputs import openmetrics as om
from metalog.analysis.outputs.growth import ClusterGrowth
from metalog.analysis.outputs.layout import TABLES, arrow_schema, iter_cluster, partition_dir, write_file
from metalog.analysis.outputs.openmetrics import FILE as OPENMETRICS
from metalog.analysis.outputs.report.data import Cluster, fleet_span, span_end
from metalog.analysis.outputs.report.page import write_html
from metalog.analysis.outputs.report.png import write_png
from metalog.analysis.outputs.report.reading import (
    BROKER_COLUMNS,
    DIRECTORY_COLUMNS,
    FAILURE_COLUMNS,
    ClusterBuilder,
    FailureRow,
)
from metalog.analysis.outputs.tables import bucket_start, claim_output, write_table
from metalog.analysis.outputs.writers import TableWriters

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


# ---- the tables written whole ---------------------------------------------------------------------------------
def buckets(rows: Iterable[Row], width_ms: int) -> list[Row]:
    """The last row of every cluster in every time bucket of ``width_ms``."""
    last: dict[tuple[str, int], Row] = {}
    for row in rows:
        last[(row["cluster"], bucket_start(row["timestamp"], width_ms))] = row
    return [{"bucket_start": start, **row} for (_, start), row in sorted(last.items(), key=lambda kv: kv[0])]


def write_cluster(out: Path, table: str, cluster: str, rows: Sequence[Row]) -> Path:
    """One cluster's rows of ``table`` (times in epoch ms) as its partition's one file, in one piece."""
    import pyarrow as pa

    schema = arrow_schema(table)
    where = out / table / partition_dir(cluster)
    where.mkdir(parents=True, exist_ok=True)
    path = where / "part-00000.parquet"
    write_file(path, pa.table({c: [r[c] for r in rows] for c in schema.names}, schema=schema))
    return path


def write_openmetrics(path: Path, clusters: Sequence[tuple[str, Sequence[Row]]], *, every_batch: bool = False) -> Path:
    """controller_metrics.om from every timeline row: ``clusters`` is (name, its rows in log order) in fleet
    order, each cluster sampled in one call (``openmetrics.cluster_samples``)."""
    sampled = [(name, om.cluster_samples(rows, every_batch=every_batch)) for name, rows in clusters]
    ends = om.LineEnds()
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for i, family in enumerate(om.FAMILIES):
            f.write(om.header(family))
            for name, calls in sampled:
                for samples in calls:
                    om.write_samples(f, family, name, samples[i], ends)
        f.write("# EOF\n")
    return path


# ---- the report from the rows -------------------------------------------------------------------------------
def write_report(out: Path, rows: Sequence[Row], events: Sequence[Row], by_broker: BrokerTables | None = None,
                 growth: Sequence[ClusterGrowth] = ()) -> list[Path]:
    """report.html and report.png from an analysis' rows (``clusters_of``), as ``write_report_from_tables``
    writes them from the tables."""
    clusters = clusters_of(rows, events, by_broker)
    by_name = {g.name: g for g in growth}
    for cluster in clusters:
        cluster.growth = by_name.get(cluster.name)
    page = write_html(out / "report.html", clusters, events)
    return [page, *(write_png(out, clusters) if clusters else [])]


def clusters_of(rows: Sequence[Mapping[str, Any]], events: Sequence[Row], by_broker: BrokerTables | None = None,
                ) -> list[Cluster]:
    """An analysis' rows split by cluster, in the order the clusters first appear, each fed whole to the
    report's builder (``reading.ClusterBuilder``) as ``read_cluster`` feeds it the Parquet tables' columns."""
    timelines: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        timelines.setdefault(row["cluster"], []).append(row)
    spans = {name: (rs[0]["timestamp"], span_end(rs[0]["timestamp"], rs[-1]["timestamp"]))
             for name, rs in timelines.items()}
    shared = fleet_span(list(spans.values()))
    builders = {name: _timeline_of_rows(name, rs, spans[name], shared) for name, rs in timelines.items()}
    if by_broker is not None:
        _keyed_of_rows(builders, by_broker)
    for event in events:
        if event["cluster"] in builders:
            builders[event["cluster"]].events.append(event)
    return [builder.finish() for builder in builders.values()]


def _timeline_of_rows(name: str, rows: Sequence[Mapping[str, Any]], span: tuple[int, int],
                      picture: tuple[int, int] | None) -> ClusterBuilder:
    builder, times = ClusterBuilder(name, list(rows[0]), span, picture), [r["timestamp"] for r in rows]
    for column in builder.timeline_columns:
        builder.timeline(column, times, [r.get(column) for r in rows])
    builder.batches_read(len(rows), rows[-1])
    return builder


def _keyed_of_rows(builders: dict[str, ClusterBuilder], by_broker: BrokerTables) -> None:
    for (name, broker), group in _groups(by_broker.brokers, ("broker",)).items():
        if name in builders:
            builders[name].broker(broker, _record_batch(group, BROKER_COLUMNS))
    for (name, broker, directory), group in _groups(by_broker.directories, ("broker", "directory")).items():
        if name in builders:
            builders[name].directory((broker, directory), _record_batch(group, DIRECTORY_COLUMNS))
    for row in by_broker.failures:
        if row["cluster"] in builders:
            builders[row["cluster"]].failure(FailureRow(*(row[c] for c in FAILURE_COLUMNS)))


def _record_batch(rows: Sequence[Row], columns: Sequence[str]) -> Any:
    """A key's rows as the Arrow record batch ``read_cluster`` hands the builder."""
    import pyarrow as pa

    return pa.RecordBatch.from_pydict({c: [r[c] for r in rows] for c in columns})


def _groups(rows: Sequence[Row], key: tuple[str, ...]) -> dict[tuple[Any, ...], list[Row]]:
    out: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        out.setdefault((row["cluster"], *(row[k] for k in key)), []).append(row)
    return out
