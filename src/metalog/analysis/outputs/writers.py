"""The python engine's tables written while the replay goes, so its memory does not grow with the log.

Each cluster's rows of a table are buffered as tuples in the table's column order and written to its partition's
one Parquet file a row group at a time (``ROWS_PER_GROUP``), and to ``TABLE.csv`` as they come (the clusters in
the order given). What a table needs of the whole cluster is small: ``timeline_buckets`` keeps the last row of
each bucket (written when the cluster ends; its CSV, sorted by cluster name, when the fleet ends), and
``controller_metrics.om`` keeps, per family, the cluster's block of samples in a scratch file that
``openmetrics.concatenate`` joins in family, cluster order, as the Spark engine's executors do. The samples are
``sampling.Sampler``'s, fed the rows as they come while a cluster's times do not step back; a cluster whose times
step back has its samples taken from its written timeline afterwards, sorted (``openmetrics.cluster_samples``).

The bytes equal those of the tests' oracle, which writes each table whole from every row (tests compare them).
"""

from __future__ import annotations

import csv
import shutil
import tempfile
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import accumulate
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from metalog.analysis.domain.columns import Chunk, Ints, from_rows
from metalog.analysis.domain.schema import BUCKETS, EVENTS, TIMELINE, Table
from metalog.analysis.outputs import openmetrics as om
from metalog.analysis.outputs.kernels import take
from metalog.analysis.outputs.layout import (
    TABLES,
    arrow_array,
    arrow_batch,
    arrow_schema,
    chunk_of,
    coded,
    coded_batch,
    coded_schema,
    first_seen,
    fresh_directories,
    iter_cluster,
    kind,
    parquet_writer,
    partition_dir,
)
from metalog.analysis.outputs.sampling import Sampler, Samples, int64_array, steps_back
from metalog.analysis.outputs.tables import bucket_start, bucket_starts, csv_cell

ROWS_PER_GROUP = 65_536  # rows buffered per table and cluster before they are written, as one Parquet row group

Row = dict[str, Any]
TimelineRows = Callable[[], Iterable[Sequence[Row]]]  # a cluster's timeline read again, in batches of rows

SERIES = "controller_metrics"  # a cluster's blocks of controller_metrics.om (``SeriesBlocks``)
# what ``ClusterTables`` writes of a cluster, each output apart from the others: a Parquet file per table, the series
OUTPUTS: tuple[str, ...] = (*TABLES, SERIES)


def source(output: str) -> str:
    """The table whose rows an output of ``OUTPUTS`` is made of: the timeline's for its buckets and the series."""
    return TIMELINE.name if output in (BUCKETS.name, SERIES) else output


class ParquetPart:
    """One cluster's rows of one table: its partition's file, ``part-00000.parquet``, a row group at a time
    (none when the cluster has no rows in the table, as before). Rows come as chunks (``domain.columns.Chunk``),
    kept as Arrow record batches, their text as dictionary arrays (``layout.coded_batch``), until a row group is
    full; each row group is written with its dictionaries made its own (``layout.first_seen``)."""

    def __init__(self, out: Path, table: str, cluster: str) -> None:
        self.path = out / table / partition_dir(cluster) / "part-00000.parquet"
        self.table = table
        self.schema = coded_schema(table)
        self._batches: list[Any] = []
        self._rows = 0
        self._writer: Any = None

    def add(self, chunk: Chunk) -> None:
        if len(chunk):
            self._hold(coded_batch(chunk))

    def add_batch(self, batch: Any) -> None:
        """Rows as an Arrow record batch of the table's schema (``layout.arrow_batch``'s)."""
        if batch.num_rows:
            self._hold(coded(batch, self.table))

    def _hold(self, batch: Any) -> None:
        self._batches.append(batch)
        self._rows += batch.num_rows
        size = ROWS_PER_GROUP
        if self._rows >= size:
            import pyarrow as pa

            held = pa.Table.from_batches(self._batches, self.schema)
            whole = self._rows // size * size
            for at in range(0, whole, size):
                self._write(held.slice(at, size))
            self._batches = held.slice(whole).to_batches()
            self._rows -= whole

    def close(self) -> None:
        if self._rows:
            import pyarrow as pa

            self._write(pa.Table.from_batches(self._batches, self.schema))
            self._batches, self._rows = [], 0
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _write(self, rows: Any) -> None:
        """``rows`` (an Arrow table) as one row group, its columns in one piece each (as one array per column
        writes them: the pages, and so the bytes, do not depend on how the rows came)."""
        group = first_seen(rows, self.table)
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = parquet_writer(self.path, group.schema)
        self._writer.write_table(group, row_group_size=len(rows))


class CsvTable:
    """``OUT/TABLE.csv``, rows written as they come (text neutralised: ``tables.csv_cell``)."""

    def __init__(self, out: Path, table: str) -> None:
        self.path = out / f"{table}.csv"
        self.columns = TABLES[table]
        self._texts = [i for i, c in enumerate(self.columns) if kind(c) == "string"]
        self._file: TextIO = open(self.path, "w", newline="")  # noqa: SIM115 (closed by close)
        self._writer = csv.writer(self._file, lineterminator="\n")
        self._writer.writerow(self.columns)

    def add(self, rows: Iterable[Sequence[Any]]) -> None:
        """Rows as sequences in the table's column order (the cluster's among them: ``Chunk.tuples``)."""
        texts = self._texts
        for row in rows:
            cells = list(row)
            for i in texts:
                cells[i] = csv_cell(cells[i])
            self._writer.writerow(cells)

    def close(self) -> None:
        self._file.close()


class SeriesBlocks:
    """One cluster's samples of controller_metrics.om (``sampling.Sampler``'s, in ``openmetrics``' text), a
    scratch file per family: ``add`` its timeline rows in log order; ``close`` writes the last samples. Returns
    False from ``add`` once a time stepped back (the caller then takes the samples from the written timeline,
    ``from_rows``, which sorts it)."""

    def __init__(self, scratch: Path, index: int, cluster: str, *, every_batch: bool = False) -> None:
        self.cluster, self.every_batch = cluster, every_batch
        self.paths = [scratch / f"{index}-{i}.om" for i in range(len(om.FAMILIES))]
        self._files = [open(p, "w", encoding="utf-8", newline="\n") for p in self.paths]  # noqa: SIM115
        self._sampler = Sampler(len(om.FAMILIES), every_batch=every_batch)
        self._last: int | None = None  # the last batch time added
        self.in_order = True

    def add(self, timeline: Chunk) -> bool:
        """A chunk of the cluster's timeline_batches."""
        n = len(timeline)
        if not self.in_order or not n:
            return self.in_order
        times = int64_array(timeline.ints("timestamp"))
        first, last = times[0].as_py(), times[n - 1].as_py()
        if steps_back(times) or (self._last is not None and self._last > first):
            self.in_order = False
            return False
        self._last = last
        self._write(self._sampler.add(times, [om.family_column(f, timeline.column(f.column)) for f in om.FAMILIES]))
        return True

    def from_rows(self, rows: Sequence[Row]) -> None:
        """The samples of a cluster whose times step back, from all its rows in log order
        (``openmetrics.cluster_samples``)."""
        for f in self._files:
            f.seek(0)
            f.truncate()
        for samples in om.cluster_samples(rows, every_batch=self.every_batch):
            self._write(samples)
        self._sampler = Sampler(len(om.FAMILIES), every_batch=self.every_batch)  # (closed with nothing pending)

    def close(self) -> None:
        self._write(self._sampler.close())
        for f in self._files:
            f.close()

    def _write(self, samples: Sequence[Samples]) -> None:
        ends = om.LineEnds()  # this call's only: the memory stays flat
        for f, family, series in zip(self._files, om.FAMILIES, samples, strict=True):
            om.write_samples(f, family, self.cluster, series, ends)


def fresh_tables(out: Path) -> None:
    """Each table's directory in ``out`` made empty (``layout.fresh_directories``)."""
    fresh_directories(out, TABLES)


class ClusterTables:
    """One cluster's outputs (``OUTPUTS``) from its chunks in log order: a ``ParquetPart`` per table of ``tables``
    (default: every table), its ``timeline_buckets`` (``BucketRows``) where that is among them, and its series of
    controller_metrics.om (``series``, where given). What the python engine writes per cluster, what a Spark
    executor writes for the cluster it replays whole, and, an output per task, what the Spark engine writes of a
    cluster cut in ranges; ``batches`` and ``events`` count the rows written to timeline_batches and events.

    ``timeline_buckets`` holds the last timeline row of each bucket, by bucket start. A bucket the log's time has
    left ``BUCKETS_KEPT`` buckets behind is written out (its part is written in bucket order, a row group at a
    time, as the whole would be); the rest are kept. Should the log's time step back into a bucket already written
    out, the buckets are made again at ``close`` from the timeline read again (``BucketRows``): the same file; so
    are the series' samples. ``timeline`` reads it again (default: the Parquet file written here, so
    ``tables`` must then hold the timeline's)."""

    def __init__(self, out: Path, name: str, width_ms: int, series: SeriesBlocks | None, *,
                 tables: Collection[str] = tuple(TABLES), timeline: TimelineRows | None = None) -> None:
        self.out, self.name, self.width_ms, self.series = out, name, width_ms, series
        self.timeline = timeline or (lambda: iter_cluster(out / TIMELINE.name, name))
        self._parts = {table: ParquetPart(out, table, name) for table in TABLES
                       if table != BUCKETS.name and table in tables}
        self._buckets = BucketRows(out, name, width_ms, timeline=self.timeline) if BUCKETS.name in tables else None
        self._from_timeline = self._buckets is not None or series is not None  # (they take the timeline's chunks)
        self.batches = self.events = 0

    def add(self, chunk: Chunk) -> None:
        """Rows of the cluster, in log order."""
        if not len(chunk):
            return
        table = chunk.table.name
        part = self._parts.get(table)
        if part is not None:
            part.add(chunk)
            self._count(table, len(chunk))
        if table == TIMELINE.name:
            self._timeline(chunk)

    def add_batch(self, table: Table, batch: Any) -> None:
        """Rows of the cluster as an Arrow record batch of ``table``'s schema (``layout.arrow_batch``'s), in log
        order: written to its Parquet file as they are; made a chunk again only for the buckets and series."""
        if not batch.num_rows:
            return
        part = self._parts.get(table.name)
        if part is not None:
            part.add_batch(batch)
            self._count(table.name, batch.num_rows)
        if table is TIMELINE and self._from_timeline:
            self._timeline(chunk_of(table, self.name, batch))

    def _count(self, table: str, rows: int) -> None:
        if table == TIMELINE.name:
            self.batches += rows
        elif table == EVENTS.name:
            self.events += rows

    def _timeline(self, chunk: Chunk) -> None:
        if self._buckets is not None:
            self._buckets.add(chunk)
        if self.series is not None:
            self.series.add(chunk)

    def close(self) -> None:
        for part in self._parts.values():
            part.close()
        if self._buckets is not None:
            self._buckets.close()
        if self.series is None:
            return
        if not self.series.in_order:  # its times step back: the samples from the timeline read again
            self.series.from_rows([row for batch in self.timeline() for row in batch])
        self.series.close()


BUCKETS_KEPT = 64  # buckets behind the latest one the log's time reached that are kept, not yet written out


class BucketRows:
    """One cluster's ``timeline_buckets``: the last timeline row of each bucket of ``width_ms``, written to its
    partition's file in bucket order (``ClusterTables``); ``timeline`` reads the cluster's timeline again (default:
    its Parquet file). A chunk's bucket rows are taken from it in Arrow (a piece: ``layout.arrow_batch`` of those
    rows), no Python value made per value; a bucket is kept as its row's place in a piece, and a piece is dropped
    once no bucket kept is in it."""

    def __init__(self, out: Path, name: str, width_ms: int, *, timeline: TimelineRows | None = None) -> None:
        self.out, self.name, self.width_ms = out, name, width_ms
        self.timeline = timeline or (lambda: iter_cluster(out / TIMELINE.name, name))
        self._kept: dict[int, tuple[int, int]] = {}  # bucket start -> its last timeline row: (piece, row in it)
        self._pieces: dict[int, Any] = {}  # piece number -> a chunk's bucket rows, an Arrow record batch
        self._next_piece = 0
        self._part: ParquetPart | None = None
        self._written: int | None = None  # the start of the last bucket written out
        self._latest: int | None = None  # the latest bucket start the log's time reached
        self._stepped_back = False  # into a bucket written out: made again at close

    def add(self, timeline: Chunk) -> None:
        """A chunk of the cluster's timeline_batches, in log order."""
        if self._stepped_back or not len(timeline):
            return
        last = self.last_rows(timeline.ints("timestamp"))  # each bucket's last row
        if self._written is not None and min(last) <= self._written:
            self._stepped_back = True
            return
        piece, self._next_piece = self._next_piece, self._next_piece + 1
        self._pieces[piece] = arrow_batch(timeline, list(last.values()))
        self._kept.update(zip(last, ((piece, row) for row in range(len(last))), strict=True))
        latest = max(last) if self._latest is None else max(self._latest, *last)
        self._latest = latest
        self._write_before(latest - BUCKETS_KEPT * self.width_ms)

    def last_rows(self, times: Ints) -> dict[int, int]:
        """Each bucket's last row among ``times``, by bucket start: where the times never step back, found by
        bisection, a few per bucket (a call per row costs more)."""
        n, width = len(times), self.width_ms
        if steps_back(int64_array(times)):
            starts = bucket_starts(times, width)
            return dict(zip(starts, range(n), strict=True))
        last: dict[int, int] = {}
        i = 0
        while i < n:
            floor = times[i] - times[i] % width  # (the bucket's end is floor + width, even where its start is not)
            i = bisect_left(times, floor + width, i)
            last[bucket_start(floor, width)] = i - 1
        return last

    def close(self) -> None:
        if self._stepped_back:
            self._again()
        else:
            self._write_before(None)
        if self._part is not None:
            self._part.close()

    def _write_before(self, start: int | None) -> None:
        """The buckets kept that start before ``start`` (None: all) into the part, in order."""
        done = sorted(b for b in self._kept if start is None or b < start)
        if not done:
            return
        rows = self._rows([self._kept.pop(b) for b in done], done)
        kept = {piece for piece, _ in self._kept.values()}
        self._pieces = {piece: batch for piece, batch in self._pieces.items() if piece in kept}
        self._add(rows)
        self._written = done[-1]

    def _rows(self, places: Sequence[tuple[int, int]], starts: Sequence[int]) -> Any:
        """The rows at ``places`` (piece, row), as a record batch of timeline_buckets with their ``starts``."""
        import pyarrow as pa

        pieces = sorted({piece for piece, _ in places})
        starts_at = accumulate((self._pieces[p].num_rows for p in pieces), initial=0)  # (its last, the total: unused)
        first = dict(zip(pieces, starts_at, strict=False))
        held = pa.Table.from_batches([self._pieces[p] for p in pieces])
        taken = take(held, arrow_array([first[piece] + row for piece, row in places], pa.int64())).combine_chunks()
        schema = arrow_schema(BUCKETS.name)
        return pa.RecordBatch.from_arrays([arrow_array(starts, schema.field(0).type),
                                           *(column.chunk(0) for column in taken.columns)], schema=schema)

    def _add(self, rows: Any) -> None:
        if self._part is None:
            self._part = ParquetPart(self.out, BUCKETS.name, self.name)
        self._part.add_batch(rows)

    def _again(self) -> None:
        """The buckets made from the timeline read again, a batch at a time: the log's time stepped back into a
        bucket already written out."""
        if self._part is not None:
            self._part.close()
            self._part.path.unlink()
            self._part = None
        self._kept.clear()
        self._pieces.clear()
        columns = [c.name for c in TIMELINE.values]
        rows: dict[int, tuple[Any, ...]] = {}  # bucket start -> its last timeline row's values
        for batch in self.timeline():
            starts = bucket_starts([row["timestamp"] for row in batch], self.width_ms)
            rows.update(zip(starts, (tuple(row[c] for c in columns) for row in batch), strict=True))
        if rows:
            self._add(arrow_batch(from_rows(BUCKETS, self.name, [(b, *rows[b]) for b in sorted(rows)])))


class TableWriters:
    """Every table of a python-engine analysis of a fleet, cluster by cluster: ``cluster(name)`` starts one,
    ``add`` takes its chunks in log order, ``end_cluster`` finishes it, ``close`` the fleet (the CSV of buckets,
    controller_metrics.om)."""

    def __init__(self, out: Path, width_ms: int, *, csv: bool, metrics_every_batch: bool = False) -> None:
        self.out, self.width_ms, self.metrics_every_batch = out, width_ms, metrics_every_batch
        fresh_tables(out)
        self.csv = {table: CsvTable(out, table) for table in TABLES if table != "timeline_buckets"} if csv else {}
        self._scratch = Path(tempfile.mkdtemp(prefix=".controller_metrics-", dir=out))
        self._blocks: list[tuple[str, SeriesBlocks]] = []
        self._cluster: ClusterTables | None = None
        self.batches = self.events_written = 0

    def __enter__(self) -> TableWriters:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)
        for writer in self.csv.values():
            writer.close()

    def cluster(self, name: str) -> None:
        series = SeriesBlocks(self._scratch, len(self._blocks), name, every_batch=self.metrics_every_batch)
        self._blocks.append((name, series))
        self._cluster = ClusterTables(self.out, name, self.width_ms, series)

    def add(self, chunk: Chunk) -> None:
        """Rows of the current cluster, in log order."""
        assert self._cluster is not None
        self._cluster.add(chunk)
        if len(chunk) and chunk.table.name in self.csv:
            self.csv[chunk.table.name].add(chunk.tuples())

    def end_cluster(self) -> None:
        cluster = self._cluster
        assert cluster is not None
        cluster.close()
        self.batches += cluster.batches
        self.events_written += cluster.events

    def close(self) -> list[Path]:
        """The fleet's last files: the CSV of buckets and controller_metrics.om; every path written."""
        written = [self.out / table for table in TABLES]
        if self.csv:  # the clusters' buckets by name, read back a batch at a time
            buckets = CsvTable(self.out, BUCKETS.name)
            for name in sorted({name for name, _ in self._blocks}):
                for batch in iter_cluster(self.out / BUCKETS.name, name):
                    buckets.add([row[c] for c in BUCKETS.names] for row in batch)
            buckets.close()
            written += [self.out / f"{table}.csv" for table in TABLES]
        order = {name: series for name, series in self._blocks}
        metrics = om.concatenate(self.out / om.FILE, lambda i, name: [order[name].paths[i]], list(order))
        return [*written, metrics]
