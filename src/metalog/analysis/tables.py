"""The analysis' tables on disk (timeline_batches, timeline_buckets, events, broker_timeline, directory_timeline,
directory_failures) as CSV and, with pyarrow, parquet; and the buckets of the timeline."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import BROKER_COLUMNS, DIRECTORY_COLUMNS, FAILURE_COLUMNS
from metalog.analysis.brokers import INT_COLUMNS as BROKER_INT_COLUMNS
from metalog.analysis.events import EVENT_COLUMNS
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


def write_table(out: Path, name: str, columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[Path]:
    """``name``.csv, and ``name``.parquet when pyarrow is importable (the ``analysis`` and ``spark`` extras)."""
    written = [out / f"{name}.csv"]
    with open(written[0], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    try:
        import pyarrow as pa  # type: ignore[import-not-found]
        import pyarrow.parquet as pq  # type: ignore[import-not-found]
    except ImportError:
        return written
    schema = pa.schema([(c, pa.int64() if c in _INTS else pa.string()) for c in columns])
    pq.write_table(pa.table({c: [r[c] for r in rows] for c in columns}, schema=schema), out / f"{name}.parquet")
    return [*written, out / f"{name}.parquet"]


def read_table(path: Path) -> list[dict[str, Any]]:
    """A table this module wrote (CSV or parquet), with its integer columns as ints."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # type: ignore[import-not-found]

        return pq.read_table(path).to_pylist()  # type: ignore[no-any-return]
    with open(path, newline="") as f:
        return [{k: int(v) if k in _INTS else v for k, v in row.items()} for row in csv.DictReader(f)]


def write_outputs(out: Path, result: Analysis, width_ms: int) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = write_table(out, "timeline_batches", list(COLUMNS), result.rows)
    written += write_table(out, "timeline_buckets", list(BUCKET_COLUMNS), buckets(result.rows, width_ms))
    written += write_table(out, "events", list(EVENT_COLUMNS), result.events)
    written += write_table(out, "broker_timeline", list(BROKER_COLUMNS), result.by_broker.brokers)
    written += write_table(out, "directory_timeline", list(DIRECTORY_COLUMNS), result.by_broker.directories)
    written += write_table(out, "directory_failures", list(FAILURE_COLUMNS), result.by_broker.failures)
    return written
