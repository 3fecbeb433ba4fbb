"""What the Spark engine's executors run: a range's replay written as the python engine writes it, with no row
passing through the driver or the JVM.

A cluster replayed in one range is written by that range's task as the python engine writes a cluster
(``writers.ClusterTables``: its Parquet files, its buckets, its blocks of controller_metrics.om). A cluster cut
into several ranges has each range's chunks written by its task as Arrow IPC streams in a scratch directory
(``RangeFiles``); then a task per output of such a cluster, or per few small ones (``write_outputs``: its
timeline_batches, its series of controller_metrics.om, ...), feeds them, range after range, to a ``ClusterTables``
writing only those, so that the cores share a cut cluster's writing. Either way the files are those the python
engine writes, byte for byte. Executors write into the output directory at the driver's path: on a cluster, a
filesystem they share, as for the log directories.

Every range counts its growth tables from its replay's own scan (``outputs.growth``, through a tee): a cluster's
only range writes them (``growth_written``), the ranges of a cut cluster write their counts (``growth_parts``) beside
their streams, and a task per such cluster joins them into the cluster's (``write_joined_growth``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalog.analysis.domain.columns import Chunk, Gathered
from metalog.analysis.domain.schema import TABLES, TIMELINE, Table
from metalog.analysis.engines.parallel import Origin, RangeReplay, joined_growth, replay_from
from metalog.analysis.outputs.growth import ROW_TYPES, ClusterGrowth, part_growth
from metalog.analysis.outputs.growth_parts import GrowthPart, read_part, write_part
from metalog.analysis.outputs.growth_tables import GROWTH_TABLES, rows_of, write_cluster_parquet
from metalog.analysis.outputs.layout import arrow_batch, arrow_schema, batch_rows_of, epoch_ms
from metalog.analysis.outputs.writers import ROWS_PER_GROUP, SERIES, ClusterTables, SeriesBlocks, source
from metalog.log import MetadataLog
from metalog.state.overlay import RangeDelta

__all__ = ["GATHER_ROWS", "GROWTH_PART", "GrowthTask", "Output", "PackedGrowth", "RangeFiles", "RangeTask",
           "TableTask", "Written", "gathered", "growth_written", "range_batches", "range_dir", "replay_task",
           "series_dir", "write_joined_growth", "write_outputs"]


@dataclass(frozen=True)
class Output:
    """Where and how the executors write: the output directory and the run's scratch directory in it (absolute
    paths), ``timeline_buckets``' width, controller_metrics.om's form; ``growth_rows``: the growth tables' rows
    travel to the driver (which writes their CSV tables)."""

    out: str
    scratch: str
    bucket_ms: int
    metrics_every_batch: bool
    growth_rows: bool = False

    def cluster_tables(self, cluster: int, name: str) -> ClusterTables:
        series = SeriesBlocks(series_dir(self.scratch), cluster, name, every_batch=self.metrics_every_batch)
        return ClusterTables(Path(self.out), name, self.bucket_ms, series)


def series_dir(scratch: str) -> Path:
    """Where the clusters' blocks of controller_metrics.om are written (``SeriesBlocks``: ``<cluster>-<family>``)."""
    path = Path(scratch) / "series"
    path.mkdir(parents=True, exist_ok=True)
    return path


def range_dir(scratch: str, cluster: int, number: int) -> Path:
    """Where range ``number`` of cluster ``cluster`` (in fleet order) writes its chunks, and its growth count
    (``GROWTH_PART``)."""
    return Path(scratch) / "ranges" / str(cluster) / f"{number:06d}"


GROWTH_PART = "growth.part"  # a range's growth count in its directory (``growth_parts.write_part``)


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
class PackedGrowth:
    """A cluster's growth tables as they travel from an executor to the driver: each table's rows as tuples
    (``growth_tables.rows_of``). Pickled as they are, its rows' dataclasses cost pickle a Python call per row each
    way (``dataclasses``' ``__setstate__`` for slotted ones): 0.14 s a 1M-record cluster, where these tuples cost
    0.06 s, rebuilt."""

    name: str
    rows: dict[str, list[tuple[Any, ...]]]

    @classmethod
    def of(cls, growth: ClusterGrowth) -> PackedGrowth:
        return cls(growth.name, {table: rows_of(growth, table) for table in ROW_TYPES})

    def unpacked(self) -> ClusterGrowth:
        """The ClusterGrowth again (each table's row type takes its columns in order)."""
        return ClusterGrowth.of_rows(self.name, self.rows)


@dataclass(frozen=True)
class Written:
    """What a task wrote: data records replayed, timeline rows, events (0 where a range only wrote its chunks),
    and the task's CPU seconds; ``growth``: where a task wrote a cluster's growth tables and the driver writes
    their CSV tables, their rows (else None)."""

    records: int
    batches: int
    events: int
    cpu: float
    growth: PackedGrowth | None = None


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
    chunks (``RangeFiles``); either takes them joined into chunks of ``ROWS_PER_GROUP`` rows or more, as the
    python engine's writers take them (``Gathered``: the cost of writing them is partly per chunk). A 1M-record
    cluster's task took 1.08-1.14 s so, 1.18-1.48 s without (four runs each, alternating, load 2-3); a 1M-record
    cluster cut in two, its third stage 0.44-0.50 s against 0.51-0.58 s (five runs each, load 5-6).

    Its growth is counted from its replay's own scan (``parallel.replay_from``'s ``growth``): a cluster's only range
    writes the cluster's growth tables (``growth_written``), any other its count beside its chunks, which its
    cluster's ``GrowthTask`` joins."""
    started = time.process_time()
    whole = task.ranges == 1
    where = range_dir(task.output.scratch, task.cluster, task.number)
    sink = task.output.cluster_tables(task.cluster, task.name) if whole else RangeFiles(where)
    gathered = Gathered(sink.add, ROWS_PER_GROUP)
    grown: list[PackedGrowth | None] = [None]

    def counted(log: MetadataLog, part: GrowthPart) -> None:
        if whole:
            grown[0] = growth_written(part_growth(log, task.name, part), task.output)
        else:
            write_part(where / GROWTH_PART, part)

    records = replay_from(RangeReplay(task.path, task.name, task.lo, task.hi, log_start=task.number == 0),
                          task.origin, task.prefix, gathered, counted)
    gathered.flush()
    sink.close()
    batches, events = (sink.batches, sink.events) if isinstance(sink, ClusterTables) else (0, 0)
    return Written(records, batches, events, time.process_time() - started, grown[0])


def growth_written(growth: ClusterGrowth, output: Output) -> PackedGrowth | None:
    """A cluster's files of the growth tables written in ``output``'s directory (made fresh by the driver:
    ``growth_tables.fresh_growth_tables``); its rows, where they travel (``Output.growth_rows``)."""
    for table in GROWTH_TABLES:
        write_cluster_parquet(Path(output.out), table, growth)
    return PackedGrowth.of(growth) if output.growth_rows else None


@dataclass(frozen=True)
class GrowthTask:
    """The growth tables of cluster ``cluster`` (its place in the fleet), replayed in ``ranges`` ranges, to write from
    their counts: a task of the third stage, beside its outputs'."""

    path: str
    name: str
    cluster: int
    ranges: int
    output: Output


def write_joined_growth(task: GrowthTask) -> Written:
    """A cut cluster's growth tables, its ranges' counts (``GROWTH_PART``) joined (``parallel.joined_growth``: its
    control batches and snapshots read here), written on an executor (``growth_written``)."""
    started = time.process_time()
    parts = [read_part(range_dir(task.output.scratch, task.cluster, n) / GROWTH_PART) for n in range(task.ranges)]
    rows = growth_written(joined_growth(task.path, task.name, parts), task.output)
    return Written(0, 0, 0, time.process_time() - started, rows)


@dataclass(frozen=True)
class TableTask:
    """Outputs (``writers.OUTPUTS``) of a cluster replayed in ``ranges`` ranges, to write from their chunks."""

    name: str
    cluster: int
    ranges: int
    outputs: tuple[str, ...]
    output: Output


def write_outputs(task: TableTask) -> Written:
    """Outputs of a cluster from its ranges' chunks, range after range (``RangeFiles``), on an executor: its
    tables' Arrow batches written to Parquet as they are, the timeline's made chunks again for its buckets and
    series (``ClusterTables.add_batch``). The ranges' files are read, not removed: several tasks read the
    timeline's (the driver removes the run's scratch directory)."""
    started = time.process_time()
    out = task.output
    series = (SeriesBlocks(series_dir(out.scratch), task.cluster, task.name, every_batch=out.metrics_every_batch)
              if SERIES in task.outputs else None)
    with ExitStack() as files:
        def batches(table: Table) -> Iterator[Any]:
            return range_batches(files, out.scratch, task.cluster, task.ranges, table)

        def timeline() -> Iterator[list[dict[str, Any]]]:
            return (batch_rows_of(epoch_ms(batch), task.name) for batch in batches(TIMELINE))

        tables = ClusterTables(Path(out.out), task.name, out.bucket_ms, series, tables=task.outputs,
                               timeline=timeline)
        for name in dict.fromkeys(source(o) for o in task.outputs):
            for batch in gathered(batches(TABLES[name]), GATHER_ROWS):
                tables.add_batch(TABLES[name], batch)
        tables.close()
    return Written(0, tables.batches, tables.events, time.process_time() - started)


# rows of a table handed to a cut cluster's writers at once: their cost is partly per batch (the series' sampler,
# the buckets, the timeline made chunks again); each range's streams end with a batch shorter than ROWS_PER_GROUP,
# and when a range wrote a batch per 4,096 log batches, joining them took the 5M log's series and buckets from
# 2.36 s to 1.92 s (load 10). A knob apart from the writers' row group: the tests join at other sizes.
GATHER_ROWS = 65_536


def gathered(batches: Iterable[Any], rows: int) -> Iterator[Any]:
    """Arrow record batches of one schema joined, in order, into batches of at least ``rows`` rows (the last may
    hold fewer)."""
    import pyarrow as pa

    held: list[Any] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]
            held, count = [], 0
    if count:
        yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]


def range_batches(files: ExitStack, scratch: str, cluster: int, ranges: int, table: Table) -> Iterator[Any]:
    """A cut cluster's rows of ``table`` as the Arrow record batches its ranges wrote (``RangeFiles``), in log
    order; each file stays mapped until ``files`` closes (a batch may be held until then)."""
    import pyarrow as pa

    for number in range(ranges):
        path = range_dir(scratch, cluster, number) / f"{table.name}.arrow"
        if path.exists():
            yield from pa.ipc.open_stream(files.enter_context(pa.memory_map(str(path))))
