"""The growth tables on disk: ``growth``, ``log_size``, ``snapshots`` and ``controller_leadership``
(``metalog.analysis.outputs.growth``), in the analysis' layout (``metalog.analysis.outputs.layout``: Parquet
partitioned by cluster, times as timestamp(MILLIS, UTC)) and as ``OUT/TABLE.csv`` (text neutralised:
``tables.csv_cell``).

Every engine counts them as it replays (``growth.count_for``, through a tee of its replay's scan; the Spark engine's
and the parallel engine's ranges each a part, joined: ``growth_parts``) and writes them here
(``write_growth_tables``; the Spark engine's executors a cluster's files each: ``write_cluster_parquet``): the same
files from every engine. ``write_growth`` is the pass of its own over each log (``growth.read_growth``)."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metalog.analysis.outputs.layout import PARTITION, arrow_array, fresh_directories, partition_dir, write_file
from metalog.analysis.outputs.tables import claim_output, csv_cell, has_pyarrow

if TYPE_CHECKING:  # (the pass itself is imported where it runs: the tables' names and columns, for the CLI's
    # --help, import no log reading)
    from metalog.analysis.clusters import ClusterLog
    from metalog.analysis.outputs.growth import ClusterGrowth

TIME, INT, TEXT = "time", "int", "string"  # layout.kind's names

# table -> (column, kind, help) after the cluster, in the order of the growth module's row fields
GROWTH_TABLES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "growth": (
        ("minute", TIME, "the minute of log time (batches' maxTimestamp, floored), epoch ms"),
        ("record_type", TEXT, "Kafka's name of the record's message: the apiKey of a metadata record's value "
                              "frame (PartitionChangeRecord, ...), a control record's type (LeaderChangeMessage, "
                              "VotersRecord, ...)"),
        ("records", INT, "records of that type in batches stamped within the minute"),
        ("bytes", INT, "their values' bytes (the record frames, without the batches' headers)")),
    "log_size": (
        ("minute", TIME, "the minute of log time, epoch ms"),
        ("batches", INT, "batches stamped within the minute (control batches too)"),
        ("batch_bytes", INT, "their bytes on disk"),
        ("log_bytes", INT, "the log's bytes from its start offset, of the batches stamped before the minute ends")),
    "snapshots": (
        ("end_offset", INT, "the snapshot's end offset (its name: every offset below it is in it)"),
        ("epoch", INT, "the epoch of its last offset (its name)"),
        ("timestamp", TIME, "its SnapshotHeaderRecord's lastContainedLogTimestamp: the log time of its last batch "
                            "(not the file's mtime)"),
        ("records", INT, "its data records: the metadata state at its end offset"),
        ("bytes", INT, "the file's size"),
        ("file", TEXT, "the file's name")),
    "controller_leadership": (
        ("offset", INT, "where the epoch starts: its LeaderChangeMessage, or the first batch of an epoch whose "
                        "LeaderChangeMessage is not in the log"),
        ("timestamp", TIME, "that batch's maxTimestamp, epoch ms"),
        ("epoch", INT, "the leader epoch"),
        ("leader", INT, "the controller that leads it (-1: unknown)"),
        ("voters", TEXT, "the voter ids then, comma-separated"),
        ("granting_voters", TEXT, "the voters that voted for the leader (LeaderChangeMessage.grantingVoters)"),
        ("record", TEXT, "LEADER_CHANGE@OFFSET, or - where the log holds no LeaderChangeMessage for the epoch")),
}
ROWS = {"growth": "a row per cluster, minute and record type", "log_size": "a row per cluster and minute",
        "snapshots": "a row per snapshot file", "controller_leadership": "a row per leader epoch"}


def columns(table: str) -> tuple[str, ...]:
    return (PARTITION, *(c for c, _, _ in GROWTH_TABLES[table]))


def kind(table: str, column: str) -> str:
    return next(k for c, k, _ in GROWTH_TABLES[table] if c == column) if column != PARTITION else TEXT


def rows_of(growth: ClusterGrowth, table: str) -> list[tuple[Any, ...]]:
    """One cluster's rows of ``table``, as tuples in ``columns(table)``'s order but the cluster."""
    found = growth.columns(table)
    return list(zip(*(found[c] for c, _, _ in GROWTH_TABLES[table]), strict=True))


def write_growth(out: Path, clusters: Sequence[ClusterLog], *, csv: bool) -> list[Path]:
    """The growth tables of ``clusters`` in ``out``, the analysis' own directory (``tables.claim_output``), each
    cluster's from a pass of its own over its log (``growth.read_growth``): Parquet with pyarrow, and CSV when
    ``csv`` or without pyarrow."""
    from metalog.analysis.outputs.growth import read_growth

    return write_growth_tables(out, [read_growth(c.path, c.name) for c in clusters], csv=csv)


def write_growth_tables(out: Path, found: Sequence[ClusterGrowth], *, csv: bool) -> list[Path]:
    """The tables of ``found`` in ``out`` (``write_growth``'s)."""
    claim_output(out)
    written: list[Path] = []
    if has_pyarrow():
        written += [write_parquet(out, table, found) for table in GROWTH_TABLES]
    if csv or not written:
        written += [write_csv(out, table, found) for table in GROWTH_TABLES]
    return written


def write_parquet(out: Path, table: str, found: Sequence[ClusterGrowth]) -> Path:
    """``OUT/table/cluster=NAME/part-00000.parquet`` per cluster with rows (none for a cluster without)."""
    fresh_growth_tables(out, [table])
    for growth in found:
        write_cluster_parquet(out, table, growth)
    return out / table


def fresh_growth_tables(out: Path, tables: Iterable[str] = GROWTH_TABLES) -> None:
    """Each growth table's directory in ``out`` made empty (``layout.fresh_directories``), before any cluster's
    file is written into it (``write_cluster_parquet``)."""
    fresh_directories(out, tables)


def write_cluster_parquet(out: Path, table: str, growth: ClusterGrowth) -> None:
    """One cluster's file of ``table`` in its directory made fresh (``fresh_growth_tables``), where the cluster
    has rows: what the Spark engine's executors write, a cluster per task, beside other clusters' tasks."""
    import pyarrow as pa

    found = growth.columns(table)
    if not len(found[GROWTH_TABLES[table][0][0]]):
        return
    types = {TIME: pa.timestamp("ms", tz="UTC"), INT: pa.int64(), TEXT: pa.string()}
    schema = pa.schema([(c, types[k]) for c, k, _ in GROWTH_TABLES[table]])
    where = out / table / partition_dir(growth.name)
    where.mkdir()
    arrays = [arrow_array(found[f.name], f.type) for f in schema]
    write_file(where / "part-00000.parquet", pa.Table.from_arrays(arrays, schema=schema))


def write_csv(out: Path, table: str, found: Sequence[ClusterGrowth]) -> Path:
    """``OUT/table.csv``: the clusters in the order given, times in epoch ms."""
    path = out / f"{table}.csv"
    texts = [i for i, c in enumerate(columns(table)) if kind(table, c) == TEXT]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns(table))
        for growth in found:
            for row in rows_of(growth, table):
                cells: list[Any] = [growth.name, *row]
                for i in texts:
                    cells[i] = csv_cell(cells[i])
                writer.writerow(cells)
    return path


def read_csv(path: Path) -> list[dict[str, Any]]:
    """A table ``write_csv`` wrote, its integers and times as ints and its text as it was."""
    from metalog.analysis.outputs.tables import csv_value

    table = path.name.removesuffix(".csv")
    with open(path, newline="") as f:
        return [{c: csv_value(v) if kind(table, c) == TEXT else int(v) for c, v in row.items()}
                for row in csv.DictReader(f)]
