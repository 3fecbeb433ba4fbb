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

import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from metalog.analysis.outputs.growth import ClusterGrowth
from metalog.analysis.outputs.layout import table_bytes
from metalog.analysis.outputs.report.data import (
    CHART_END,
    CHART_FIELDS,
    BrokerNow,
    Cluster,
    Failure,
    broker_view,
    event_marks,
    field_pieces,
    fleet_span,
    growth_data,
    read_span,
)
from metalog.analysis.outputs.report.growth import read_cluster_growth, trimmed
from metalog.analysis.outputs.report.page import render_html, write_html
from metalog.analysis.outputs.report.png import write_png
from metalog.analysis.outputs.report.reading import read_cluster, read_keys
from metalog.analysis.outputs.report.summary import fmt_time, summary

__all__ = ["KEYS", "PART_FIELDS", "TIMELINE", "WHOLE", "ClusterTask", "KeysPart", "Prepared", "Runner", "fmt_time",
           "prepare_cluster", "render_html", "split_parts", "summary", "write_report_from_tables"]


WHOLE, TIMELINE, KEYS = "whole", "timeline", "keys"  # a cluster's report task: all of it, or one of two parts


@dataclass(frozen=True)
class ClusterTask:
    """One cluster's part of a report from the tables: read it, compact it for place ``index`` on the page and
    the PNG's time axis [start, end), its page data into the directory ``scratch``. ``weight``: its timeline's
    bytes on disk (the largest start first where tasks run in parallel). ``span``: the cluster's own (start, end),
    as the driver read it (``data.read_span``), which no task reads again. ``part``: the whole cluster, or one of
    the two parts of about equal cost a cluster heavier than a core's share is read in (``split_parts``): its
    timeline and per-directory table, or its per-broker table, directory failures, events (``reading.read_keys``)
    and growth tables; each writes its fields of the page data (``PART_FIELDS``) and hands over what a compacted
    cluster keeps, and the driver joins the two."""

    out: str
    name: str
    index: int
    start: int
    end: int
    scratch: str
    weight: int
    span: tuple[int, int]
    part: str = WHOLE


@dataclass(frozen=True)
class KeysPart:
    """What the keys part of a cluster read in two parts (``split_parts``) hands the driver, its page data's
    fields written (``PART_FIELDS``): what the page's tables and the PNG still need of it (``Cluster``'s fields of
    the same names, as ``Cluster.compact`` keeps them)."""

    brokers: list[BrokerNow]
    failures: list[Failure]
    events: list[dict[str, Any]]
    growth: ClusterGrowth | None


Prepared = Cluster | KeysPart
# how the clusters' tasks run: the driver one at a time (``map``), or e.g. the Spark engine's executors
Runner = Callable[[Callable[[ClusterTask], Prepared], Sequence[ClusterTask]], Iterable[Prepared]]
# the fields of a cluster's page data (``data.CHART_FIELDS``) each of its two parts makes, of what it read: the
# timeline part its charts, lanes and the per-directory view; the keys part the brokers' view, the events marked
# and the growth view (the growth tables read there: the timeline part is the heavier without them)
PART_FIELDS = {TIMELINE: ("name", "id", "t0", "t1", "lanes", "charts", "directories"),
               KEYS: ("brokers", "growth", "events")}


def prepare_cluster(task: ClusterTask) -> Prepared:
    """A cluster read and compacted (``write_report_from_tables``), wherever its task runs; or a part of it
    (``ClusterTask.part``), read and its fields of the page data written (``PART_FIELDS``), compacted as a whole
    cluster is: the driver only joins the parts' files (``_join``)."""
    out = Path(task.out)
    if task.part == KEYS:
        keys = _keys_part(task)
        _release_arrow_memory()
        return keys
    cluster = read_cluster(out, task.name, (task.start, task.end), span=task.span, brokers=task.part == WHOLE)
    if cluster is None:
        raise ValueError(f"{task.out}: cluster {task.name} has no timeline rows, though its time span was read")
    if task.part == WHOLE:
        cluster.growth = read_cluster_growth(out, task.name)
        cluster.compact(task.index, Path(task.scratch) / f"{task.index}.json")
    else:
        _write_fields(task, {name: CHART_FIELDS[name](task.index, cluster) for name in PART_FIELDS[TIMELINE]})
        cluster.drop_series(task.index, Path(task.scratch) / f"{task.index}.json")  # (the driver joins it)
    _release_arrow_memory()
    return cluster


def _keys_part(task: ClusterTask) -> KeysPart:
    out = Path(task.out)
    keys = read_keys(out, task.name, task.span)
    growth = read_cluster_growth(out, task.name)
    start, end = task.span  # (a cluster's own: ``Cluster.start``, ``end``)
    _write_fields(task, {"brokers": broker_view(keys.brokers, keys.broker_views, start),
                         "growth": growth_data(growth, start, end), "events": event_marks(keys.events)})
    return KeysPart(keys.brokers, keys.failures, keys.events, None if growth is None else trimmed(growth))


def _write_fields(task: ClusterTask, fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        with open(_field_file(Path(task.scratch), task.index, name), "w", encoding="utf-8") as f:
            f.writelines(field_pieces(name, value))


def _field_file(scratch: Path, index: int, name: str) -> Path:
    return scratch / f"{index}.{name}.json"


def split_parts(tasks: Sequence[ClusterTask], cores: int) -> list[ClusterTask]:
    """``tasks`` with each cluster heavier than the cores' even share of them read in two parts (its timeline and
    per-directory table; its per-broker table, failures and events), so that one large cluster keeps two cores
    busy; each part follows the other."""
    total = sum(t.weight for t in tasks)
    out: list[ClusterTask] = []
    for task in tasks:
        if cores > 1 and task.weight * cores > total:
            half = task.weight // 2
            out += [replace(task, part=TIMELINE, weight=task.weight - half), replace(task, part=KEYS, weight=half)]
        else:
            out.append(task)
    return out


def write_report_from_tables(out: Path, names: Sequence[str], run: Runner | None = None, *,
                             cores: int = 1) -> list[Path]:
    """report.html and report.png from the Parquet tables in ``out`` (either engine's), the clusters ``names``
    in that order, with the driver's memory flat in the fleet's size: the clusters' time spans first (the
    fleet's time axis, from the time column alone), then each cluster read column by column into what its
    picture shows (``reading.read_cluster``: its series decimated as they are drawn, the PNG's envelopes), and
    compacted (``Cluster.compact``) with its page data in a scratch file, which the page streams in. ``run`` runs the
    clusters' tasks (default: here, one at a time; the Spark engine runs them on its executors, which then
    read ``out`` at the same path), ``cores`` of them at once (a cluster heavier than its share of them is read
    in two parts: ``split_parts``, each compacting what it read, the driver joining their files)."""
    spans = [read_span(out, name) for name in names]
    span = fleet_span([s for s in spans if s is not None])
    with tempfile.TemporaryDirectory(prefix=".report-", dir=out) as scratch:
        tasks: list[ClusterTask] = []
        for name, own in zip(names, spans, strict=True):
            if own is not None:
                tasks.append(ClusterTask(str(out), name, len(tasks), *(span or own), scratch,
                                         table_bytes(out / "timeline_batches", name), own))
        tasks = split_parts(tasks, cores)
        clusters: list[Cluster] = []
        for task, got in zip(tasks, (run or _here)(prepare_cluster, tasks), strict=True):
            if isinstance(got, Cluster):
                clusters.append(got)
            else:  # a cluster's keys part, after its timeline part
                _join(clusters[-1], got, task, Path(scratch))
        events = [e for c in clusters for e in c.events]
        page = write_html(out / "report.html", clusters, events)
    return [page, *(write_png(out, clusters) if clusters else [])]


def _join(cluster: Cluster, keys: KeysPart, task: ClusterTask, scratch: Path) -> None:
    """A cluster read in two parts made whole (``ClusterTask.part``): what its keys part kept, and its page data,
    the parts' fields joined in the page's order into the file its timeline part named (``Cluster.chart_file``)."""
    cluster.brokers, cluster.failures, cluster.events, cluster.growth = (keys.brokers, keys.failures, keys.events,
                                                                         keys.growth)
    with open(scratch / f"{task.index}.json", "wb") as page:
        for name in CHART_FIELDS:
            field = _field_file(scratch, task.index, name)
            with open(field, "rb") as f:
                shutil.copyfileobj(f, page)
            field.unlink()
        page.write(CHART_END.encode())


def _here(fn: Callable[[ClusterTask], Prepared], tasks: Sequence[ClusterTask]) -> Iterable[Prepared]:
    return map(fn, tasks)


def _release_arrow_memory() -> None:
    """Arrow's allocator keeps what a cluster's read freed for reuse; given back, the driver's resident set
    stays flat across a fleet rather than creeping by a few MB a cluster."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
