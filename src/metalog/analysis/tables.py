"""The analysis' tables on disk (timeline_batches, timeline_buckets, events, broker_timeline, directory_timeline,
directory_failures): Parquet in ``metalog.analysis.layout``'s layout when pyarrow is there, CSV on request (or
without pyarrow); and the buckets of the timeline."""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import INT_COLUMNS as BROKER_INT_COLUMNS
from metalog.analysis.openmetrics import FILE as OPENMETRICS
from metalog.analysis.openmetrics import write_openmetrics
from metalog.analysis.result import Analysis
from metalog.analysis.timeline import COLUMNS, INT_COLUMNS

BUCKET_COLUMNS: dict[str, str] = {"bucket_start": "timeline_buckets only: the bucket's start, epoch ms",
                                  **COLUMNS}


def buckets(rows: Iterable[dict[str, Any]], width_ms: int) -> list[dict[str, Any]]:
    """The last row of every cluster in every time bucket of ``width_ms``."""
    last: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        start = row["timestamp"] // width_ms * width_ms
        last[(row["cluster"], start)] = row
    return [{"bucket_start": start, **row} for (_, start), row in sorted(last.items(), key=lambda kv: kv[0])]


def parse_bucket(text: str) -> int:
    """Milliseconds from ``500ms``, ``30s``, ``1m``, ``2h``, ``1d``."""
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)].isdigit() and int(text[: -len(unit)]) > 0:
            return int(text[: -len(unit)]) * units[unit]
    raise ValueError(f"not a bucket width: {text!r} (e.g. 30s, 1m, 1h)")


_INTS = INT_COLUMNS | BROKER_INT_COLUMNS | {"bucket_start", "offset"}


def write_table(out: Path, name: str, columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> list[Path]:
    """``name``.csv (times as epoch milliseconds)."""
    written = [out / f"{name}.csv"]
    with open(written[0], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return written


def read_table(path: Path) -> list[dict[str, Any]]:
    """A table this module wrote: ``name``.csv (its integer columns as ints), or a table directory of Parquet
    (times as epoch ms; clusters in name order)."""
    if path.is_dir():
        from metalog.analysis.layout import read_tables

        return read_tables(path)
    with open(path, newline="") as f:
        return [{k: int(v) if k in _INTS else v for k, v in row.items()} for row in csv.DictReader(f)]


def has_pyarrow() -> bool:
    try:
        import pyarrow  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


def tables_of(result: Analysis, width_ms: int) -> dict[str, list[dict[str, Any]]]:
    return {"timeline_batches": result.rows, "timeline_buckets": buckets(result.rows, width_ms),
            "events": result.events, "broker_timeline": result.by_broker.brokers,
            "directory_timeline": result.by_broker.directories, "directory_failures": result.by_broker.failures}


def write_outputs(out: Path, result: Analysis, width_ms: int, *, csv: bool = True,
                  metrics_every_batch: bool = False) -> list[Path]:
    """The python engine's tables: ``OUT/<table>/cluster=<name>/part-00000.parquet`` (pyarrow), and
    ``OUT/<table>.csv`` when ``csv`` or without pyarrow; and OUT/controller_metrics.om (a sample at every batch
    time with ``metrics_every_batch``). A cluster with no rows in a table has no partition there (Spark's
    writer makes none either)."""
    from metalog.analysis.layout import TABLES, write_cluster

    out.mkdir(parents=True, exist_ok=True)
    tables = tables_of(result, width_ms)
    written: list[Path] = []
    if has_pyarrow():
        for name, rows in tables.items():
            if (out / name).is_dir():  # an earlier run's (Spark's writer overwrites a table's directory too)
                shutil.rmtree(out / name)
            by_cluster: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                by_cluster.setdefault(row["cluster"], []).append(row)
            for cluster, part in by_cluster.items():
                write_cluster(out, name, cluster, part)
            (out / name).mkdir(exist_ok=True)
            written.append(out / name)
    if csv or not written:
        written += [path for name, rows in tables.items() for path in write_table(out, name, TABLES[name], rows)]
    timelines: dict[str, list[dict[str, Any]]] = {}
    for row in result.rows:
        timelines.setdefault(row["cluster"], []).append(row)
    return [*written, write_openmetrics(out / OPENMETRICS, list(timelines.items()),
                                        every_batch=metrics_every_batch)]


def write_csv_from_tables(out: Path, clusters: Sequence[str]) -> list[Path]:
    """``OUT/<table>.csv`` from the Parquet tables in ``out``, ``clusters`` in that order, read a batch at a
    time (times as epoch ms, as the python engine writes them)."""
    from metalog.analysis.layout import TABLES, iter_cluster

    def rows(name: str) -> Iterable[dict[str, Any]]:
        for cluster in clusters:
            if (out / name).is_dir():
                for batch in iter_cluster(out / name, cluster, TABLES[name]):
                    yield from batch

    return [path for name in TABLES for path in write_table(out, name, TABLES[name], rows(name))]
