"""The report of ``metalog analyze``: report.html, one offline page (linked interactive charts drawn with
uPlot, the fleet overview, the per-broker and per-directory views, directory failures, the events grouped and
filterable), and report.png, small multiples of every cluster drawn with Pillow when it is installed.

- ``series``: step functions in change form, decimated without losing a minimum or a maximum;
- ``data``: what each cluster shows; ``reading``: that, built from the tables' columns as they are read;
- ``summary``: a line per cluster and the fleet overview's row;
- ``page``: the HTML (tables in HTML, charts from a JSON block by ``assets/report.js`` and the vendored uPlot);
- ``png``: the small multiples (``axes``: their ticks).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from metalog.analysis.outputs.layout import table_bytes
from metalog.analysis.outputs.report.data import Cluster, fleet_span, read_span
from metalog.analysis.outputs.report.growth import read_cluster_growth
from metalog.analysis.outputs.report.page import render_html, write_html
from metalog.analysis.outputs.report.png import write_png
from metalog.analysis.outputs.report.reading import read_cluster
from metalog.analysis.outputs.report.summary import fmt_time, summary

__all__ = ["ClusterTask", "Runner", "fmt_time", "prepare_cluster", "render_html", "summary",
           "write_report_from_tables"]


@dataclass(frozen=True)
class ClusterTask:
    """One cluster's part of a report from the tables: read it, compact it for place ``index`` on the page and
    the PNG's time axis [start, end), its page data into the directory ``scratch``. ``weight``: its timeline's
    bytes on disk (the largest start first where tasks run in parallel)."""

    out: str
    name: str
    index: int
    start: int
    end: int
    scratch: str
    weight: int


# how the clusters' tasks run: the driver one at a time (``map``), or e.g. the Spark engine's executors
Runner = Callable[[Callable[[ClusterTask], Cluster], Sequence[ClusterTask]], Iterable[Cluster]]


def prepare_cluster(task: ClusterTask) -> Cluster:
    """A cluster read and compacted (``write_report_from_tables``), wherever its task runs."""
    cluster = read_cluster(Path(task.out), task.name, (task.start, task.end))
    if cluster is None:
        raise ValueError(f"{task.out}: cluster {task.name} has no timeline rows, though its time span was read")
    cluster.growth = read_cluster_growth(Path(task.out), task.name)
    cluster.compact(task.index, Path(task.scratch) / f"{task.index}.json")
    _release_arrow_memory()
    return cluster


def write_report_from_tables(out: Path, names: Sequence[str], run: Runner | None = None) -> list[Path]:
    """report.html and report.png from the Parquet tables in ``out`` (either engine's), the clusters ``names``
    in that order, with the driver's memory flat in the fleet's size: the clusters' time spans first (the
    fleet's time axis, from the time column alone), then each cluster read column by column into what its
    picture shows (``reading.read_cluster``: its series decimated as they are drawn, the PNG's envelopes), and
    compacted (``Cluster.compact``) with its page data in a scratch file, which the page streams in. ``run`` runs the
    clusters' tasks (default: here, one at a time; the Spark engine runs them on its executors, which then
    read ``out`` at the same path)."""
    spans = [read_span(out, name) for name in names]
    span = fleet_span([s for s in spans if s is not None])
    with tempfile.TemporaryDirectory(prefix=".report-", dir=out) as scratch:
        tasks: list[ClusterTask] = []
        for name, own in zip(names, spans, strict=True):
            if own is not None:
                tasks.append(ClusterTask(str(out), name, len(tasks), *(span or own), scratch,
                                         table_bytes(out / "timeline_batches", name)))
        clusters = list((run or _here)(prepare_cluster, tasks))
        events = [e for c in clusters for e in c.events]
        page = write_html(out / "report.html", clusters, events)
    return [page, *(write_png(out, clusters) if clusters else [])]


def _here(fn: Callable[[ClusterTask], Cluster], tasks: Sequence[ClusterTask]) -> Iterable[Cluster]:
    return map(fn, tasks)


def _release_arrow_memory() -> None:
    """Arrow's allocator keeps what a cluster's read freed for reuse; given back, the driver's resident set
    stays flat across a fleet rather than creeping by a few MB a cluster."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
