"""The analysis' tables on disk (timeline_batches, timeline_buckets, events, broker_timeline, directory_timeline,
directory_failures): Parquet in ``metalog.analysis.outputs.layout``'s layout when pyarrow is there, CSV on request (or
without pyarrow); and the buckets of the timeline."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from metalog.analysis.domain.schema import BUCKETS, TABLES, Kind
from metalog.errors import MetalogError

BUCKET_COLUMNS = BUCKETS.names


INT64_MIN = -(1 << 63)


def bucket_start(timestamp: int, width_ms: int) -> int:
    """The start of the bucket of ``width_ms`` holding ``timestamp`` (epoch ms): a multiple of the width, but
    never before the first int64 (the first bucket of a log stamped near -2^63 ms starts there)."""
    return max(timestamp // width_ms * width_ms, INT64_MIN)


def bucket_starts(timestamps: Iterable[int], width_ms: int) -> list[int]:
    """``bucket_start`` of each of ``timestamps`` (in one comprehension: a call per batch costs more)."""
    starts = [t - t % width_ms for t in timestamps]  # (t // w * w: % floors as // does)
    return [max(s, INT64_MIN) for s in starts] if starts and min(starts) < INT64_MIN else starts


def parse_bucket(text: str) -> int:
    """Milliseconds from ``500ms``, ``30s``, ``1m``, ``2h``, ``1d``."""
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)].isdigit() and 0 < int(text[: -len(unit)]) * units[unit] < 1 << 63:
            return int(text[: -len(unit)]) * units[unit]  # (an int64 of milliseconds, as the times are)
    raise ValueError(f"not a bucket width: {text!r} (e.g. 30s, 1m, 1h)")


_INTS = frozenset(c.name for t in TABLES.values() for c in t.columns if c.kind is not Kind.TEXT)

# The first characters that make a spreadsheet read a cell as a formula (OWASP's "CSV injection"), and the quote
# that neutralises them. A text cell starting with one of them, or with the quote itself (so that reading back is
# exact), gets a quote in front; integer columns hold numbers only (a -1 is a number, not a formula) and are
# written as they are. Parquet keeps every value raw.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CSV_QUOTE = "'"


def csv_cell(text: str) -> str:
    """A text value as a CSV cell no spreadsheet runs as a formula."""
    return CSV_QUOTE + text if text.startswith((*FORMULA_STARTS, CSV_QUOTE)) else text


def csv_value(cell: str) -> str:
    """The value of a text cell ``csv_cell`` wrote."""
    return cell[1:] if cell.startswith(CSV_QUOTE) else cell


def write_table(out: Path, name: str, columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> list[Path]:
    """``name``.csv (times as epoch milliseconds; text neutralised, ``csv_cell``)."""
    written = [out / f"{name}.csv"]
    texts = [c for c in columns if c not in _INTS]
    with open(written[0], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, **{c: csv_cell(row[c]) for c in texts}})
    return written


def read_table(path: Path) -> list[dict[str, Any]]:
    """A table this module wrote: ``name``.csv (its integer columns as ints, its text as written before
    ``csv_cell``), or a table directory of Parquet (times as epoch ms; clusters in name order)."""
    if path.is_dir():
        from metalog.analysis.outputs.layout import read_tables

        return read_tables(path)
    with open(path, newline="") as f:
        return [{k: int(v) if k in _INTS else csv_value(v) for k, v in row.items()} for row in csv.DictReader(f)]


MARKER = ".metalog-analysis"  # in an output directory metalog analyze made its own


def claim_output(out: Path) -> None:
    """Make ``out`` the analysis' output directory: created, or taken when empty, with ``MARKER`` in it; one
    that already has the marker is the analysis' own (its tables are replaced, nothing else is touched). A
    directory that holds anything else is refused: its files are not metalog's to replace."""
    if out.exists() and not out.is_dir():
        raise MetalogError(f"--out {out}: not a directory")
    if out.is_dir() and not (out / MARKER).is_file() and any(out.iterdir()):
        raise MetalogError(f"--out {out}: the directory holds files metalog analyze did not write (no {MARKER} "
                           "in it); choose a new or empty directory")
    out.mkdir(parents=True, exist_ok=True)
    if not (out / MARKER).is_file():
        (out / MARKER).write_text("written by metalog analyze: the tables, controller_metrics.om and the report "
                                  "in this directory are replaced by the next analysis written here\n")


def has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def write_csv_from_tables(out: Path, clusters: Sequence[str]) -> list[Path]:
    """``OUT/<table>.csv`` from the Parquet tables in ``out``, ``clusters`` in that order (timeline_buckets: by
    name, as ``writers.TableWriters`` writes it), read a batch at a time (times as epoch ms, as the python engine
    writes them)."""
    from metalog.analysis.outputs.layout import TABLES, iter_cluster

    def rows(name: str) -> Iterable[dict[str, Any]]:
        for cluster in sorted(clusters) if name == BUCKETS.name else clusters:
            if (out / name).is_dir():
                for batch in iter_cluster(out / name, cluster, TABLES[name]):
                    yield from batch

    return [path for name in TABLES for path in write_table(out, name, TABLES[name], rows(name))]
