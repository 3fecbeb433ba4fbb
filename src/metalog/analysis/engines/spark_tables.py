"""What the Spark engine's executors run: a range's replay written as the python engine writes it, with no row
passing through the driver or the JVM.

A cluster replayed in one range is written by that range's task as the python engine writes a cluster
(``writers.ClusterTables``: its Parquet files, its buckets, its blocks of controller_metrics.om). A cluster cut
into several ranges has each range's chunks written by its task as Arrow IPC streams in a scratch directory
(``RangeFiles``); a task per such cluster then feeds them, range after range, to its ``ClusterTables``
(``write_cluster``). Either way the files are those the python engine writes, byte for byte. Executors write into
the output directory at the driver's path: on a cluster, a filesystem they share, as for the log directories.
"""

from __future__ import annotations

import os
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalog.analysis.domain.columns import Chunk, Coded, ColumnData
from metalog.analysis.domain.schema import TABLES, Kind, Table
from metalog.analysis.engines.parallel import Origin, RangeReplay, range_start, replay_range
from metalog.analysis.outputs.layout import arrow_batch, arrow_schema
from metalog.analysis.outputs.writers import ClusterTables, SeriesBlocks
from metalog.state.overlay import RangeDelta

__all__ = ["ClusterTask", "Output", "RangeFiles", "RangeTask", "Written", "chunk_of", "range_dir", "replay_task",
           "series_dir", "write_cluster"]


@dataclass(frozen=True)
class Output:
    """Where and how the executors write: the output directory and the run's scratch directory in it (absolute
    paths), ``timeline_buckets``' width, controller_metrics.om's form."""

    out: str
    scratch: str
    bucket_ms: int
    metrics_every_batch: bool

    def cluster_tables(self, cluster: int, name: str) -> ClusterTables:
        series = SeriesBlocks(series_dir(self.scratch), cluster, name, every_batch=self.metrics_every_batch)
        return ClusterTables(Path(self.out), name, self.bucket_ms, series)


def series_dir(scratch: str) -> Path:
    """Where the clusters' blocks of controller_metrics.om are written (``SeriesBlocks``: ``<cluster>-<family>``)."""
    path = Path(scratch) / "series"
    path.mkdir(parents=True, exist_ok=True)
    return path


def range_dir(scratch: str, cluster: int, number: int) -> Path:
    """Where range ``number`` of cluster ``cluster`` (in fleet order) writes its chunks."""
    return Path(scratch) / "ranges" / str(cluster) / f"{number:06d}"


@dataclass(frozen=True)
class RangeTask:
    """A range to replay: ``number`` of the ``ranges`` of cluster ``cluster`` (its place in the fleet), [lo, hi]
    from the state of its ``origin`` (``parallel.plan``: a snapshot's, a state image's or the state before the
    log), caught up by the task itself or with ``prefix``, the composition of the deltas after it."""

    path: str
    name: str
    cluster: int
    number: int
    ranges: int
    lo: int
    hi: int
    origin: Origin
    prefix: RangeDelta
    output: Output


@dataclass(frozen=True)
class Written:
    """What a task wrote: data records replayed, timeline rows, events (0 where a range only wrote its chunks),
    and the task's CPU seconds."""

    records: int
    batches: int
    events: int
    cpu: float


class RangeFiles:
    """A range's chunks as an Arrow IPC stream per table (``<table>.arrow``), in log order."""

    def __init__(self, where: Path) -> None:
        self.where = where
        where.mkdir(parents=True, exist_ok=True)
        self._writers: dict[str, Any] = {}

    def add(self, chunk: Chunk) -> None:
        if not len(chunk):
            return
        import pyarrow as pa

        table = chunk.table.name
        writer = self._writers.get(table)
        if writer is None:
            writer = self._writers[table] = pa.ipc.new_stream(str(self.where / f"{table}.arrow"),
                                                              arrow_schema(table))
        writer.write_batch(arrow_batch(chunk))

    def close(self) -> list[Any]:
        for writer in self._writers.values():
            writer.close()
        return []


def replay_task(task: RangeTask) -> Written:
    """A range replayed on an executor: a cluster's only range writes the cluster's tables, any other its
    chunks (``RangeFiles``)."""
    started = time.process_time()
    start = range_start(task.path, task.lo, task.origin, task.prefix)
    whole = task.ranges == 1
    sink = (task.output.cluster_tables(task.cluster, task.name) if whole
            else RangeFiles(range_dir(task.output.scratch, task.cluster, task.number)))
    records = replay_range(RangeReplay(task.path, task.name, task.lo, task.hi, log_start=task.number == 0), start,
                           sink.add)
    sink.close()
    batches, events = (sink.batches, sink.events) if isinstance(sink, ClusterTables) else (0, 0)
    return Written(records, batches, events, time.process_time() - started)


@dataclass(frozen=True)
class ClusterTask:
    """A cluster replayed in ``ranges`` ranges, to write from their chunks."""

    name: str
    cluster: int
    ranges: int
    output: Output


def write_cluster(task: ClusterTask) -> Written:
    """A cluster's tables from its ranges' chunks, range after range (``RangeFiles``), on an executor; the
    ranges' files are removed once read."""
    import pyarrow as pa

    started = time.process_time()
    tables = task.output.cluster_tables(task.cluster, task.name)
    for number in range(task.ranges):
        where = range_dir(task.output.scratch, task.cluster, number)
        for table in TABLES.values():
            path = where / f"{table.name}.arrow"
            if path.exists():
                with pa.memory_map(str(path)) as source:
                    for batch in pa.ipc.open_stream(source):
                        tables.add(chunk_of(table, task.name, batch))
                os.unlink(path)
    tables.close()
    return Written(0, tables.batches, tables.events, time.process_time() - started)


def chunk_of(table: Table, cluster: str, batch: Any) -> Chunk:
    """An Arrow record batch of ``layout.arrow_batch`` back as the chunk it was: int and time columns as
    ``array('q')`` of their buffers, text as codes into its values (``Coded``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns: list[ColumnData] = []
    for column, data in zip(table.values, batch.columns, strict=True):
        if data.null_count:
            raise ValueError(f"{table.name}.{column.name}: a row without a value")
        if column.kind is Kind.TEXT:
            coded = pc.dictionary_encode(data)
            columns.append(Coded(_ints(coded.indices.cast(pa.int64())), coded.dictionary.to_pylist()))
        else:
            columns.append(_ints(data.cast(pa.int64())))
    return Chunk(table, cluster, tuple(columns))


def _ints(data: Any) -> array[int]:
    out = array("q")
    out.frombytes(memoryview(data.buffers()[1])[data.offset * 8:(data.offset + len(data)) * 8])
    return out
