"""The Spark engine's tables as DataFrames made on the executors: no row passes through the driver.

Each range's replay (``RangeOutput``, cached by Spark where it ran) keeps its rows compressed, per table, and a
``RangeSummary`` for the driver: the phase, JBOD transition and metadata.version of its last row, and what its
per-broker and per-directory rows leave each broker and directory at (``brokers.current``): a few values per
range and broker, never rows. From the summaries the driver gives each range what the ranges before it left
(``RangeContext``, broadcast), and the executors finish each range's tables exactly as ``parallel.assemble``
and ``brokers.join`` would: the row-to-row events of its first row against the last row before it, its first
per-broker rows as changes against what the ranges before left. A hidden ``_seq`` (range, then place within
it) keeps every table in log order; buckets are a window over the timeline in Spark.
"""

from __future__ import annotations

import marshal
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import _BROKER_VALUES, _DIRECTORY_VALUES, BROKER_ZERO, DIRECTORY_ZERO, _rebase, current
from metalog.analysis.events import row_events
from metalog.analysis.layout import PARTITION, TABLES, TIME_COLUMNS, arrow_schema, spark_ddl
from metalog.analysis.parallel import Part
from metalog.state.enums import ZK_MIGRATION_VALUES

SEQ = "_seq"  # hidden order column: range index << 32 | place in the range
_TRANSITIONS = ("metadata_version", "phase", "dir_transition")  # what row_events compares


@dataclass(frozen=True)
class RangeSummary:
    """What the ranges after a range need of it."""

    last: tuple[str, str, str] | None  # its last row's metadata_version, phase, dir_transition (None: no rows)
    first: tuple[int, int] | None  # BrokerTables.first: its first batch (None: it saw none)
    brokers: dict[int, tuple[Any, ...]]  # brokers.current after its rows: broker -> values
    directories: dict[tuple[int, str], tuple[int, ...]]


@dataclass(frozen=True)
class RangeContext:
    """What the ranges before a range (of the same cluster) left."""

    last: tuple[str, str, str] | None  # the last row's transitions (None: the log's start)
    brokers: dict[int, tuple[Any, ...]]
    directories: dict[tuple[int, str], tuple[int, ...]]


# a range's replay as it waits, cached, on the executor that ran it: its tables compressed (marshal of lists,
# dicts, str and int, from our own executors), and its summary (marshal too)
OUTPUT_DDL = "index BIGINT, cpu DOUBLE, summary BINARY, timeline_batches BINARY, events BINARY, brokers BINARY"


def _pack(value: Any) -> bytes:
    return zlib.compress(marshal.dumps(value), 1)


def _unpack(data: bytes) -> Any:
    return marshal.loads(zlib.decompress(data))


def range_output(index: int, part: Part, cpu: float) -> tuple[int, float, bytes, bytes, bytes, bytes]:
    """A range's row of the cached replay (OUTPUT_DDL's columns)."""
    rows, tables = part.rows, part.by_broker
    brokers, directories = current(tables, 1 << 62)
    last = tuple(rows[-1][c] for c in _TRANSITIONS) if rows else None
    columns = TABLES["timeline_batches"]
    return (index, cpu, _pack((last, tables.first, brokers, directories)),
            _pack([tuple(r[c] for c in columns) for r in rows]),
            _pack((part.events, part.split, rows[0] if rows else None)),
            _pack((tables.brokers, tables.directories, tables.failures, tables.first)))


def summary(data: bytes) -> RangeSummary:
    last, first, brokers, directories = _unpack(data)
    return RangeSummary(None if last is None else tuple(last), None if first is None else tuple(first),
                        brokers, directories)


def contexts(clusters: list[str], summaries: list[RangeSummary]) -> list[RangeContext]:
    """Each range's context from the summaries of the ranges before it (``clusters[i]``: range i's cluster;
    ranges of a cluster in offset order)."""
    out = []
    state: dict[str, RangeContext] = {}
    for cluster, summary in zip(clusters, summaries, strict=True):
        before = state.get(cluster, RangeContext(None, {}, {}))
        out.append(before)
        last = summary.last if summary.last is not None else before.last
        if summary.first is not None:
            before = RangeContext(last, summary.brokers, summary.directories)
        else:
            before = RangeContext(last, before.brokers, before.directories)
        state[cluster] = before
    return out


# ---- on the executors: a range's finished rows ------------------------------------------------------------
def _timeline(index: int, data: bytes, ctx: RangeContext) -> list[tuple[Any, ...]]:
    return [(*row, index << 32 | i) for i, row in enumerate(_unpack(data))]


def _events(index: int, data: bytes, ctx: RangeContext) -> list[tuple[Any, ...]]:
    events, split, first = _unpack(data)
    if first is None:
        return []
    prev = None if ctx.last is None else dict(zip(_TRANSITIONS, ctx.last, strict=True))
    done = [*events[:split], *row_events(prev, first), *events[split:]]
    columns = TABLES["events"]
    return [(*(e[c] for c in columns), index << 32 | i) for i, e in enumerate(done)]


def _per_broker(which: str) -> Any:
    def rows(index: int, data: bytes, ctx: RangeContext) -> list[tuple[Any, ...]]:
        brokers, directories, failures, first = _unpack(data)
        if first is None:
            return []
        head = {"cluster": (brokers or directories or failures or [{"cluster": ""}])[0]["cluster"],
                "last_offset": first[0], "timestamp": first[1]}
        if which == "broker_timeline":
            done = _rebase(brokers, head, dict(ctx.brokers), ("broker",), _BROKER_VALUES, BROKER_ZERO)
        elif which == "directory_timeline":
            done = _rebase(directories, head, dict(ctx.directories), ("broker", "directory"), _DIRECTORY_VALUES,
                           DIRECTORY_ZERO)
        else:
            done = failures
        columns = TABLES[which]
        return [(*(r[c] for c in columns), index << 32 | i) for i, r in enumerate(done)]
    return rows


FINISH = {"timeline_batches": _timeline, "events": _events, "broker_timeline": _per_broker("broker_timeline"),
          "directory_timeline": _per_broker("directory_timeline"),
          "directory_failures": _per_broker("directory_failures")}


def _arrow(table: str, rows: list[tuple[Any, ...]]) -> Any:
    import pyarrow as pa

    schema = arrow_schema(table, with_cluster=True, unit="us").append(pa.field(SEQ, pa.int64()))
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in schema.names]
    arrays = [pa.array(col, type=pa.timestamp("ms", tz="UTC")).cast(f.type) if name in TIME_COLUMNS
              else pa.array(col, type=f.type) for name, col, f in zip(schema.names, columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# where each table's rows are packed in the cached replay
SOURCE = {"timeline_batches": "timeline_batches", "events": "events", "broker_timeline": "brokers",
          "directory_timeline": "brokers", "directory_failures": "brokers"}


# ---- on the driver: DataFrames ------------------------------------------------------------------------------
def dataframes(replayed: Any, ctx: list[RangeContext]) -> dict[str, Any]:
    """A DataFrame per table (with ``_seq``) from the cached ``replayed`` DataFrame (OUTPUT_DDL), each range's rows
    finished on the executors and handed to Spark as Arrow batches (``mapInArrow``): the driver sends each
    range its context (broadcast) and never sees a row."""
    shared = replayed.sparkSession.sparkContext.broadcast(ctx)
    out = {}
    for table, finish in FINISH.items():
        def rows(batches: Iterator[Any], table: str = table, finish: Any = finish) -> Iterator[Any]:
            contexts = shared.value
            for batch in batches:
                for index, data in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                    done = finish(index, data, contexts[index])
                    if done:
                        yield _arrow(table, done)

        out[table] = replayed.select("index", SOURCE[table]).mapInArrow(rows, spark_ddl(table, f"{SEQ} BIGINT"))
    return out


def buckets(timeline: Any, width_ms: int) -> Any:
    """The last row of every cluster in every bucket of ``width_ms``, as ``tables.buckets`` gives them."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    start = F.timestamp_millis(F.floor(F.unix_millis("timestamp") / width_ms) * width_ms)
    last = Window.partitionBy(PARTITION, "bucket_start").orderBy(F.col(SEQ).desc())
    frame = timeline.withColumn("bucket_start", start).withColumn("_last", F.row_number().over(last))
    return frame.where("_last = 1").select(*TABLES["timeline_buckets"], F.unix_millis("bucket_start").alias(SEQ))


def write(frames: dict[str, Any], out: Path, clusters: int) -> list[Path]:
    """Each table with Spark's Parquet writer, partitioned by cluster: each cluster's rows go to one task (a
    shuffle by cluster, in the JVM), sorted there by ``_seq``, and that task writes its file."""
    written = []
    for table, frame in frames.items():  # (the timeline is persisted by the caller: buckets and metrics read it)
        ordered = frame.repartition(max(clusters, 1), PARTITION).sortWithinPartitions(PARTITION, SEQ).drop(SEQ)
        ordered.select(*TABLES[table]).write.mode("overwrite").partitionBy(PARTITION).parquet(str(out / table))
        written.append(out / table)
    return written


__all__ = ["FINISH", "OUTPUT_DDL", "SEQ", "TIME_COLUMNS", "RangeContext", "RangeSummary", "buckets", "contexts",
           "dataframes", "range_output", "summary", "write", "write_openmetrics"]


def write_openmetrics(timeline: Any, out: Path, clusters: list[str]) -> Path:
    """``OUT/controller_metrics.om`` (``metalog.analysis.openmetrics``): each series' lines written by the executors
    (a text file per family and cluster, in time order), then concatenated in family, cluster order."""
    import shutil

    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    from metalog.analysis import openmetrics as om
    from metalog.analysis.layout import partition_dir

    last = Window.partitionBy(PARTITION, "timestamp").orderBy(F.col(SEQ).desc())
    sampled = timeline.withColumn("_last", F.row_number().over(last)).where("_last = 1")
    ms = F.unix_millis("timestamp")
    when = F.format_string("%d.%03d", F.floor(ms / 1000), F.pmod(ms, 1000))
    zk = F.create_map(*[F.lit(x) for name, v in ZK_MIGRATION_VALUES.items() for x in (name, v)])
    lines = []
    for i, family in enumerate(om.FAMILIES):
        value = F.coalesce(zk[F.col(family.column)], F.lit(-1)) if family.column == "zk_migration_state" \
            else F.col(family.column)
        extra = "" if family.label is None else f',{family.label[0]}="{om.escape(family.label[1])}"'
        line = F.concat(F.lit(family.name + '{cluster="'), _escaped(F.col(PARTITION)), F.lit(f'"{extra}}} '),
                        value.cast("string"), F.lit(" "), when)
        lines.append(F.struct(F.lit(i).alias("_family"), line.alias("value")))
    # one pass over the sampled timeline: each row gives its line of every family
    frame = sampled.select(PARTITION, ms.alias("_t"), F.explode(F.array(*lines)).alias("_line")) \
        .select(F.col("_line._family").alias("_family"), PARTITION, "_t", F.col("_line.value").alias("value"))
    parts = out / ".controller_metrics.parts"
    n = max(1, min(len(om.FAMILIES) * len(clusters), 256))
    (frame.repartition(n, "_family", PARTITION).sortWithinPartitions("_family", PARTITION, "_t").drop("_t")
     .write.mode("overwrite").partitionBy("_family", PARTITION).text(str(parts)))
    try:
        return om.concatenate(out / om.FILE, lambda i, c: sorted((parts / f"_family={i}" / partition_dir(c))
                                                                  .glob("part-*")), clusters)
    finally:
        shutil.rmtree(parts, ignore_errors=True)


def _escaped(label: Any) -> Any:
    """An OpenMetrics label value in Spark SQL: backslash, double quote and newline escaped (Java replacement
    strings: a backslash is written twice)."""
    from pyspark.sql import functions as F  # noqa: N812

    label = F.regexp_replace(label, r"\\", r"\\\\")
    label = F.regexp_replace(label, '"', r'\\"')
    return F.regexp_replace(label, "\n", r"\\n")
