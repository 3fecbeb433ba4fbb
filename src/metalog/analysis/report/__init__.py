"""The report of ``metalog analyze``: report.html, one offline page (linked interactive charts drawn with
uPlot, the fleet overview, the per-broker and per-directory views, directory failures, the events grouped and
filterable), and report.png, small multiples of every cluster through matplotlib when it is installed.

- ``series``: step functions in change form, decimated without losing a minimum or a maximum;
- ``data``: what each cluster shows; ``summary``: a line per cluster and the fleet overview's row;
- ``page``: the HTML (tables in HTML, charts from a JSON block by ``assets/report.js`` and the vendored uPlot);
- ``png``: the matplotlib small multiples.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metalog.analysis.report.data import Cluster, clusters_of, fleet_span, read_cluster, read_span
from metalog.analysis.report.page import render_html, write_html
from metalog.analysis.report.png import envelopes, write_png
from metalog.analysis.report.summary import fmt_time, summary

__all__ = ["fmt_time", "render_html", "summary", "write_report", "write_report_from_tables"]


def write_report(out: Path, rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]],
                 by_broker: Any = None) -> list[Path]:
    """report.html, and report.png (more PNGs for a large fleet) when matplotlib is there. ``by_broker``: the
    analysis' BrokerTables (broker_timeline, directory_timeline, directory_failures), for the per-broker and
    per-directory views."""
    clusters = clusters_of(rows, events, by_broker)
    page = write_html(out / "report.html", clusters, events)
    return [page, *(write_png(out, clusters) if clusters else [])]


def write_report_from_tables(out: Path, names: Sequence[str]) -> list[Path]:
    """report.html and report.png from the Parquet tables in ``out`` (either engine's), the clusters ``names``
    in that order, with the driver's memory flat in the fleet's size: the clusters' time spans first (the
    fleet's time axis, from the time column alone), then a cluster at a time, the timeline in change form
    (``data.read_cluster``), compacted before the next is read to what its picture shows (``Cluster.compact``:
    the PNG's envelopes, a few rows) with its page data in a scratch file, which the page streams in."""
    spans = [read_span(out, name) for name in names]
    span = fleet_span([s for s in spans if s is not None])
    clusters: list[Cluster] = []
    with tempfile.TemporaryDirectory(prefix=".report-", dir=out) as scratch:
        for name, own in zip(names, spans, strict=True):
            cluster = read_cluster(out, name) if own is not None else None
            if cluster is None or own is None:
                continue
            cluster.compact(len(clusters), envelopes(cluster, span or own), Path(scratch) / f"{len(clusters)}.json")
            clusters.append(cluster)
            _release_arrow_memory()
        events = [e for c in clusters for e in c.events]
        page = write_html(out / "report.html", clusters, events)
    return [page, *(write_png(out, clusters) if clusters else [])]


def _release_arrow_memory() -> None:
    """Arrow's allocator keeps what a cluster's read freed for reuse; given back, the driver's resident set
    stays flat across a fleet rather than creeping by a few MB a cluster."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
