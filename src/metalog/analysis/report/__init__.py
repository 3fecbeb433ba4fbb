"""The report of ``metalog analyze``: report.html, one offline page (linked interactive charts drawn with
uPlot, the fleet overview, the per-broker and per-directory views, directory failures, the events grouped and
filterable), and report.png, small multiples of every cluster through matplotlib when it is installed.

- ``series``: step functions in change form, decimated without losing a minimum or a maximum;
- ``data``: what each cluster shows; ``summary``: a line per cluster and the fleet overview's row;
- ``page``: the HTML (tables in HTML, charts from a JSON block by ``assets/report.js`` and the vendored uPlot);
- ``png``: the matplotlib small multiples.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metalog.analysis.report.data import Cluster, clusters_of, read_cluster
from metalog.analysis.report.page import render_html
from metalog.analysis.report.png import write_png
from metalog.analysis.report.summary import fmt_time, summary

__all__ = ["fmt_time", "render_html", "summary", "write_report", "write_report_from_tables"]


def write_report(out: Path, rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]],
                 by_broker: Any = None) -> list[Path]:
    """report.html, and report.png (more PNGs for a large fleet) when matplotlib is there. ``by_broker``: the
    analysis' BrokerTables (broker_timeline, directory_timeline, directory_failures), for the per-broker and
    per-directory views."""
    clusters = clusters_of(rows, events, by_broker)
    page = out / "report.html"
    page.write_text(render_html(clusters, events), encoding="utf-8")
    return [page, *(write_png(out, clusters) if clusters else [])]


def write_report_from_tables(out: Path, names: Sequence[str]) -> list[Path]:
    """report.html and report.png from the Parquet tables in ``out`` (either engine's), the clusters ``names``
    in that order: read a cluster at a time, the timeline in change form (``data.read_cluster``), and each
    compacted to what the page and the PNG draw before the next is read (``Cluster.compact``)."""
    clusters: list[Cluster] = []
    for name in names:
        cluster = read_cluster(out, name)
        if cluster is not None:
            cluster.compact(len(clusters))  # its page data made, its rows let go before the next is read
            clusters.append(cluster)
    events = [e for c in clusters for e in c.events]
    page = out / "report.html"
    page.write_text(render_html(clusters, events), encoding="utf-8")
    return [page, *(write_png(out, clusters) if clusters else [])]
