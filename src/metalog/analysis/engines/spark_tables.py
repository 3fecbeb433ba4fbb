"""The Spark engine's tables as DataFrames made on the executors: no row passes through the driver.

Each range's replay (``range_output``, cached by Spark where it ran) keeps its rows compressed, per table. A range
starts from the state after the range before, so its rows go on from that range's as they are: the executors
hand each range's rows to Spark as Arrow batches, with a hidden ``_seq`` (range, then place within it) that keeps
every table in log order; buckets are a window over the timeline in Spark.
"""

from __future__ import annotations

import marshal
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metalog.analysis.engines.parallel import Part
from metalog.analysis.layout import PARTITION, TABLES, TIME_COLUMNS, arrow_schema, spark_ddl

if TYPE_CHECKING:
    from metalog.analysis.sampling import Samples

SEQ = "_seq"  # hidden order column: range index << 32 | place in the range

# a range's replay as it waits, cached, on the executor that ran it: its tables compressed (marshal of lists,
# dicts, str and int, from our own executors)
OUTPUT_DDL = "index BIGINT, cpu DOUBLE, timeline_batches BINARY, events BINARY, brokers BINARY, records BIGINT"


def _pack(value: Any) -> bytes:
    return zlib.compress(marshal.dumps(value), 1)


def _unpack(data: bytes) -> Any:
    return marshal.loads(zlib.decompress(data))


def range_output(index: int, part: Part, cpu: float) -> tuple[int, float, bytes, bytes, bytes, int]:
    """A range's row of the cached replay (OUTPUT_DDL's columns)."""
    tables = part.by_broker
    columns = TABLES["timeline_batches"]
    return (index, cpu, _pack([tuple(r[c] for c in columns) for r in part.rows]), _pack(part.events),
            _pack((tables.brokers, tables.directories, tables.failures)), part.records)


# ---- on the executors: a range's rows ----------------------------------------------------------------------------
def _timeline(index: int, data: bytes) -> list[tuple[Any, ...]]:
    return [(*row, index << 32 | i) for i, row in enumerate(_unpack(data))]


def _dicts(table: str, rows: list[dict[str, Any]], index: int) -> list[tuple[Any, ...]]:
    columns = TABLES[table]
    return [(*(r[c] for c in columns), index << 32 | i) for i, r in enumerate(rows)]


def _events(index: int, data: bytes) -> list[tuple[Any, ...]]:
    return _dicts("events", _unpack(data), index)


def _per_broker(which: int, table: str) -> Callable[[int, bytes], list[tuple[Any, ...]]]:
    def rows(index: int, data: bytes) -> list[tuple[Any, ...]]:
        return _dicts(table, _unpack(data)[which], index)
    return rows


FINISH = {"timeline_batches": _timeline, "events": _events, "broker_timeline": _per_broker(0, "broker_timeline"),
          "directory_timeline": _per_broker(1, "directory_timeline"),
          "directory_failures": _per_broker(2, "directory_failures")}


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
def dataframes(replayed: Any) -> dict[str, Any]:
    """A DataFrame per table (with ``_seq``) from the cached ``replayed`` DataFrame (OUTPUT_DDL), each range's rows
    handed to Spark as Arrow batches on the executors (``mapInArrow``): the driver never sees a row."""
    out = {}
    for table, finish in FINISH.items():
        def rows(batches: Iterator[Any], table: str = table, finish: Any = finish) -> Iterator[Any]:
            for batch in batches:
                for index, data in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                    done = finish(index, data)
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


__all__ = ["FINISH", "OUTPUT_DDL", "SEQ", "TIME_COLUMNS", "SeriesFiles", "buckets", "dataframes", "range_output",
           "series_path", "series_task", "write", "write_openmetrics"]


def write_openmetrics(timeline: Any, out: Path, clusters: list[str], *, every_batch: bool = False) -> Path:
    """``OUT/controller_metrics.om`` (``metalog.analysis.openmetrics``): each cluster's timeline goes to one task
    (only the columns the metrics read), sorted there by time then log order, and the executor writes the
    cluster's series, a file per family (``SeriesFiles``); the driver concatenates them in family, cluster
    order."""
    import shutil

    from metalog.analysis import openmetrics as om

    parts = out / ".controller_metrics.parts"
    try:
        narrow = timeline.select(PARTITION, "timestamp", SEQ, *om.COLUMNS)
        ordered = narrow.repartition(max(1, min(len(clusters), 256)), PARTITION) \
            .sortWithinPartitions(PARTITION, "timestamp", SEQ)
        ordered.mapInArrow(series_task(str(parts), every_batch=every_batch),
                           "cluster STRING, samples BIGINT").collect()
        return om.concatenate(out / om.FILE, lambda i, c: [p] if (p := series_path(parts, i, c)).exists() else [],
                              clusters)
    finally:
        shutil.rmtree(parts, ignore_errors=True)


def series_path(parts: Path, family: int, cluster: str) -> Path:
    """Where an executor writes the block of a (family, cluster) series."""
    from metalog.analysis.layout import partition_dir

    return parts / f"family={family}" / partition_dir(cluster) / "samples.om"


class SeriesFiles:
    """One cluster's series as an executor writes them, a file per family, from the cluster's timeline rows in
    time order then log order (Arrow batches, cut wherever Spark cuts them): ``sampling.Sampler``'s samples in
    ``openmetrics``' text, as the python engine writes them. Written to temporary names and renamed when whole
    (a task retried writes them again)."""

    def __init__(self, parts: Path, cluster: str, *, every_batch: bool = False) -> None:
        import uuid

        from metalog.analysis.openmetrics import FAMILIES
        from metalog.analysis.sampling import Sampler

        self.cluster, self.samples = cluster, 0  # the sample lines written
        self.sampler = Sampler(len(FAMILIES), every_batch=every_batch)
        self.paths = [series_path(parts, i, cluster) for i in range(len(FAMILIES))]
        self.temporary = [p.with_name(f".{p.name}.{uuid.uuid4().hex}") for p in self.paths]
        for path in self.paths:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.files = [open(p, "w", encoding="utf-8", newline="\n") for p in self.temporary]  # noqa: SIM115 (closed by close)

    def add(self, rows: Any) -> None:
        from metalog.analysis import openmetrics as om

        if not len(rows):
            return
        values = []
        for family in om.FAMILIES:
            column = rows.column(family.column)
            if column.null_count and family.column != "zk_migration_state":
                raise ValueError(f"{family.column}: a timeline row without a value")
            values.append(om.family_values(family, column.to_pylist()))
        self._write(self.sampler.add(_millis(rows).to_pylist(), values))

    def close(self) -> int:
        import os

        self._write(self.sampler.close())
        for f in self.files:
            f.close()
        for temporary, path in zip(self.temporary, self.paths, strict=True):
            os.replace(temporary, path)
        return self.samples

    def _write(self, samples: list[Samples]) -> None:
        from metalog.analysis import openmetrics as om

        ends = om.LineEnds()  # this call's only: the executor's memory stays flat
        for f, family, series in zip(self.files, om.FAMILIES, samples, strict=True):
            om.write_samples(f, family, self.cluster, series, ends)
            self.samples += len(series.times)


def _millis(rows: Any) -> Any:
    """Epoch ms of the ``timestamp`` column of Spark's Arrow batch (microseconds, whole milliseconds)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.divide(rows.column("timestamp").cast(pa.int64()), 1000)


def series_task(parts: str, *, every_batch: bool = False) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """What a task runs over its partition's batches (sorted by cluster, time, log order): each cluster's
    ``SeriesFiles``, and a row per cluster (its name, its sample lines)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        current: SeriesFiles | None = None
        done: list[tuple[str, int]] = []
        for batch in batches:
            names = batch.column(PARTITION)
            cuts = [0, *(i + 1 for i in pc.indices_nonzero(pc.not_equal(names.slice(0, len(batch) - 1),
                                                                          names.slice(1))).to_pylist()),
                    len(batch)] if len(batch) else [0]
            for lo, hi in zip(cuts, cuts[1:], strict=False):
                name = names[lo].as_py()
                if current is None or current.cluster != name:
                    if current is not None:
                        done.append((current.cluster, current.close()))
                    current = SeriesFiles(Path(parts), name, every_batch=every_batch)
                current.add(batch.slice(lo, hi - lo))
        if current is not None:
            done.append((current.cluster, current.close()))
        yield pa.RecordBatch.from_pydict({PARTITION: [c for c, _ in done], "samples": [n for _, n in done]},
                                         schema=pa.schema([(PARTITION, pa.string()), ("samples", pa.int64())]))

    return run
