"""report.html: one offline file. The tables and summaries are HTML; the charts are drawn by the page's own
script (assets/report.js) with uPlot, both inlined, from the series in a JSON block: nothing is fetched."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from metalog.analysis.report.data import ANNOTATED, Cluster, chart_json, shared_axis
from metalog.analysis.report.growth import growth_summary
from metalog.analysis.report.summary import FLEET_COLUMNS, fleet_row, fmt_time, summary_line

MAX_EVENT_ROWS = 5000  # rows listed in the events table; events.csv has them all
FOLDED = "aborted-transaction"  # events folded into one expandable row per cluster


def _asset(*parts: str) -> str:
    return resources.files("metalog.analysis.report").joinpath(*parts).read_text(encoding="utf-8")


def _script(source: str) -> str:
    """A script element's text can hold anything but its own end tag."""
    return source.replace("</script", "<\\/script")


def page_json(clusters: Sequence[Cluster], shared: bool) -> Iterator[str]:
    """The page script's data, {"shared", "annotated", "clusters": [``data.chart_data`` of each]}, as pieces of
    JSON text with no "<" at all (names come from the user): nothing in it can end or open a script element.
    Each cluster's part is made once (``data.chart_json``: a compacted cluster keeps it, or its file) and
    handed out alone, so a page can be written without its whole data in memory."""
    head = json.dumps({"shared": shared, "annotated": ANNOTATED}, separators=(",", ":"))
    yield head[:-1].replace("<", "\\u003c") + ',"clusters":['
    for i, c in enumerate(clusters):
        yield ("," if i else "") + chart_json(i, c)
    yield "]}"


def render_html(clusters: Sequence[Cluster], events: Sequence[dict[str, Any]]) -> str:
    return "".join(html_parts(clusters, events))


def write_html(path: Path, clusters: Sequence[Cluster], events: Sequence[dict[str, Any]]) -> Path:
    """report.html, written piece by piece (``render_html``'s text)."""
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(html_parts(clusters, events))
    return path


def html_parts(clusters: Sequence[Cluster], events: Sequence[dict[str, Any]]) -> Iterator[str]:
    shared = shared_axis(clusters)
    span = (min(c.start for c in clusters), max(c.end for c in clusters)) if clusters else None
    yield from [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>metalog analysis</title>",
        f"<style>{_asset('vendor', 'uplot', 'uPlot.min.css')}\n{_asset('assets', 'report.css')}</style>",
        "</head><body>",
        "<header><h1>Metadata log analysis: ZooKeeper migration and JBOD transition</h1>",
        _intro(clusters, shared, span), "</header>",
        '<div class="toolbar" data-group="fleet" hidden></div>' if shared else "",
        _fleet_table(clusters),
    ]
    yield from (_cluster_section(i, c, shared) for i, c in enumerate(clusters))
    yield _events_section(clusters)
    yield '<script type="application/json" id="metalog-data">'
    yield from page_json(clusters, shared)
    yield from [
        "</script>",
        f"<script>{_script(_asset('vendor', 'uplot', 'uPlot.iife.min.js'))}</script>",
        f"<script>{_script(_asset('assets', 'report.js'))}</script>",
        "</body></html>"]


def _intro(clusters: Sequence[Cluster], shared: bool, span: tuple[int, int] | None) -> str:
    if span is None:
        return "<p>No batches were analysed.</p>"
    batches = sum(c.batches for c in clusters)
    linked = ("all charts share one time axis, cursor and range" if shared else
              "the charts share one time axis, cursor and range" if len(clusters) == 1 else
              "the charts of a cluster share one time axis, cursor and range (the clusters' times do not overlap)")
    count = "1 cluster" if len(clusters) == 1 else f"{len(clusters)} clusters"
    return (f'<p class="intro">{count}, {batches:,} batches from {fmt_time(span[0])} to '
            f"{fmt_time(span[1])}. All times are UTC. Hover a chart for its values; drag across it to zoom, "
            f"ctrl+wheel to zoom, shift+wheel to pan, double-click or Reset for the whole range; {linked}. "
            "Every line is drawn with the lowest and the highest value within each pixel (a band where they "
            "differ), so a state that lasted a single batch is never hidden. Dashed lines mark events; hover one "
            "for its detail.</p>")


def _sortable(headers: Sequence[str], rows: Sequence[Sequence[tuple[Any, Any]]], cls: str,
              raw: frozenset[int] = frozenset()) -> str:
    """A table whose headers sort it (the page's script): each cell (shown, sort value); ``raw``: columns whose
    shown text is HTML already."""
    head = "".join(f'<th scope="col"><button type="button">{html.escape(h)}</button></th>' for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, (shown, key) in enumerate(row):
            text = shown if i in raw else html.escape(str(shown))
            cells.append(f'<td data-sort="{html.escape(str(key))}">{text}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table class="sortable {cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _fleet_table(clusters: Sequence[Cluster]) -> str:
    rows = []
    for i, c in enumerate(clusters):
        row = fleet_row(c.name, c.latest, c.events)
        name, key = row["cluster"]
        row["cluster"] = (f'<a href="#c{i}">{html.escape(name)}</a>', key)
        rows.append([row[k] for k in FLEET_COLUMNS])
    headers = list(FLEET_COLUMNS)
    return (f'<section id="fleet"><h2>Fleet overview</h2><p>One row per cluster, at its last batch; the headers '
            f'sort, the names lead to each cluster.</p>{_sortable(headers, rows, "fleet", frozenset({0}))}</section>')


def _cluster_section(i: int, c: Cluster, shared: bool) -> str:
    toolbar = "" if shared else f'<div class="toolbar" data-group="c{i}" hidden></div>'
    return "".join([
        f'<section class="cluster" id="c{i}"><h2>{html.escape(c.name)}</h2>{toolbar}',
        f'<p class="summary">{html.escape(summary_line(c.name, c.latest, c.events, c.batches))}</p>',
        f'<div class="charts" data-cluster="{i}" data-view="cluster"></div>',
        _broker_view(i, c), _directory_view(i, c), _growth_view(i, c), "</section>",
    ])


def _growth_view(i: int, c: Cluster) -> str:
    if c.growth is None:
        return ""
    return (f'<h3>Growth and controller leadership</h3><p class="growth">{html.escape(growth_summary(c.growth))} '
            "Records per minute are counted by record type (the most frequent types, the rest as other) from the "
            "batches' times; the log's bytes are its batches' from its start offset; a snapshot's time is the log "
            "time of the last batch it holds (its SnapshotHeaderRecord). The growth, log_size, snapshots and "
            f'controller_leadership tables have every row.</p><div class="charts" data-cluster="{i}" '
            'data-view="growth"></div>')


def _broker_view(i: int, c: Cluster) -> str:
    if not c.brokers:
        return "<h3>Brokers</h3><p>No broker registered and no replica was placed.</p>"
    now = c.brokers
    homeless = [(r.broker, r.replicas_migrating, r.replicas_unassigned) for r in now
                if r.replicas_migrating + r.replicas_unassigned]
    if homeless:
        which = ", ".join(f"broker {b} ({m:,} MIGRATING, {u:,} UNASSIGNED)" for b, m, u in homeless)
        note = f"Still holding replicas without a real directory: {which}."
    else:
        note = "Every replica is in a real directory (or on no broker)."
    rows = [[(r.broker, r.broker), (r.state, r.state), (r.zk, r.zk), (r.log_dirs, r.log_dirs),
             (f"{r.replicas_assigned:,}", r.replicas_assigned), (f"{r.replicas_migrating:,}", r.replicas_migrating),
             (f"{r.replicas_unassigned:,}", r.replicas_unassigned), (f"{r.replicas_lost:,}", r.replicas_lost),
             (f"{r.offline_replicas:,}", r.offline_replicas), (f"{r.leaders:,}", r.leaders),
             (fmt_time(r.timestamp), r.timestamp)] for r in now]
    headers = ["broker", "state", "on ZooKeeper", "log dirs", "replicas in a directory", "MIGRATING", "UNASSIGNED",
               "LOST", "offline replicas", "leaders", "last change (UTC)"]
    return (f'<h3>Brokers</h3><p>{html.escape(note)} The table is the state after the last batch '
            f'(broker_timeline.csv has every change).</p><div class="charts" data-cluster="{i}" data-view="brokers">'
            f'</div>{_sortable(headers, rows, "brokers")}')


def _directory_view(i: int, c: Cluster) -> str:
    out = ["<h3>Log directories</h3>"]
    now = [r for r in c.directories if r.state != "gone"]
    if not c.directories:
        out.append("<p>No broker registered a log directory (before metadata.version 3.7-IV2, or before the "
                   "brokers restarted with one) and no replica names one.</p>")
    else:
        rows = [[(r.broker, r.broker), (r.directory, r.directory), (r.state, r.state),
                 (f"{r.replicas:,}", r.replicas), (f"{r.leaders:,}", r.leaders),
                 (f"{r.offline_replicas:,}", r.offline_replicas),
                 (f"{r.offline_partitions:,}", r.offline_partitions), (fmt_time(r.timestamp), r.timestamp)]
                for r in now]
        headers = ["broker", "directory", "state", "replicas", "leaders", "offline replicas", "offline partitions",
                   "last change (UTC)"]
        out.append(f'<div class="charts" data-cluster="{i}" data-view="directories"></div>'
                   f'{_sortable(headers, rows, "directories")}')
    found = c.failures
    out.append(f"<h4>Directory failures ({len(found)})</h4>")
    for f in found:
        topics: dict[str, list[tuple[int, int]]] = {}
        for topic, partition, leader in f.partitions:
            topics.setdefault(topic, []).append((partition, leader))
        offline = f.taken_offline
        head = (f"{fmt_time(f.timestamp)} (offset {f.offset:,}): broker {f.broker} lost directory {f.directory}; "
                f"it held {len(f.partitions):,} replicas of {len(topics):,} topics, {len(offline):,} partitions "
                "left without a leader")
        lines = "".join(
            f"<tr><td>{html.escape(t)}</td><td>{', '.join(str(p) for p, _ in ps)}</td>"
            f"<td>{', '.join(str(p) for p, leader in ps if leader == -1) or '-'}</td></tr>" for t, ps in topics.items())
        out.append(f'<details class="failure"><summary>{html.escape(head)}</summary><table><thead><tr><th>topic</th>'
                   f"<th>partitions on the directory</th><th>left without a leader (offline)</th></tr></thead>"
                   f"<tbody>{lines}</tbody></table></details>")
    return "".join(out)


def _event_row(e: dict[str, Any], hidden: bool = False) -> str:
    return (f'<tr data-kind="{html.escape(e["event"])}" data-cluster="{html.escape(e["cluster"])}"'
            f'{" hidden" if hidden else ""}><td>{html.escape(e["cluster"])}</td><td>{e["offset"]:,}</td>'
            f"<td>{fmt_time(e['timestamp'])}</td><td>{html.escape(e['event'])}</td>"
            f"<td>{html.escape(e['detail'])}</td></tr>")


def _events_section(clusters: Sequence[Cluster]) -> str:
    events = [e for c in clusters for e in c.events]
    kinds: dict[str, int] = {}
    for e in events:
        kinds[e["event"]] = kinds.get(e["event"], 0) + 1
    chips = "".join(f'<button type="button" class="kind" data-kind="{html.escape(k)}" aria-pressed="true">'
                    f'<i style="background:{ANNOTATED.get(k, "#bbbbbb")}"></i>{html.escape(k)} '
                    f'<span class="count">{n:,}</span></button>' for k, n in sorted(kinds.items()))
    options = "".join(f'<option value="{html.escape(c.name)}">{html.escape(c.name)}</option>' for c in clusters)
    listed = 0
    main = []
    for e in events:
        if e["event"] != FOLDED and listed < MAX_EVENT_ROWS:
            main.append(_event_row(e))
            listed += 1
    folds = []
    for c in clusters:
        aborted = [e for e in c.events if e["event"] == FOLDED]
        if not aborted:
            continue
        shown = aborted[:max(MAX_EVENT_ROWS - listed, 0)]
        listed += len(shown)
        folds.append(f'<tbody class="fold" data-kind="{FOLDED}" data-cluster="{html.escape(c.name)}">'
                     f'<tr class="fold-head"><td colspan="5"><button type="button" aria-expanded="false">'
                     f"{len(aborted):,} aborted transactions in {html.escape(c.name)}, offsets "
                     f"{aborted[0]['offset']:,} to {aborted[-1]['offset']:,}</button></td></tr>"
                     f"{''.join(_event_row(e, True) for e in shown)}</tbody>")
    cut = (f"<p>The first {MAX_EVENT_ROWS:,} events are listed; events.csv has all {len(events):,}.</p>"
           if len(events) > MAX_EVENT_ROWS else "")
    return (f'<section id="events"><h2>Events ({len(events):,})</h2>{cut}'
            f'<div class="filters"><span class="kinds">{chips}</span>'
            f'<label>cluster <select class="cluster-filter"><option value="">all</option>{options}</select></label>'
            f'<label>filter <input type="search" class="text-filter" placeholder="text in any column"></label>'
            f'<span class="shown"></span></div>'
            f'<table class="events"><thead><tr><th>cluster</th><th>offset</th><th>time (UTC)</th><th>event</th>'
            f'<th>detail</th></tr></thead><tbody class="main">{"".join(main)}</tbody>{"".join(folds)}</table>'
            f"<noscript><style>.events tr[hidden]{{display:table-row}}</style></noscript></section>")
