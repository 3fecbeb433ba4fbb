"""report.html: one self-contained page (inline SVG, no scripts, nothing fetched) with the timeline charts,
the events table and a summary line per cluster; report.png: the main chart, through matplotlib when present."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metalog.analysis.timeline import DIR_TRANSITIONS, PHASES

PHASE_COLORS = dict(zip(PHASES, ("#b0b0b0", "#f6c85f", "#ef8a62", "#6f9fd8", "#4daf4a"), strict=True))
DIR_COLORS = dict(zip(DIR_TRANSITIONS, ("#dddddd", "#fdb863", "#5aae61"), strict=True))
REPLICA_SERIES = (("replicas_assigned", "assigned", "#1b9e77"), ("replicas_migrating", "migrating", "#e6ab02"),
                  ("replicas_unassigned", "unassigned", "#80b1d3"), ("replicas_lost", "lost", "#d7301f"))
BROKER_SERIES = (("brokers_unfenced", "unfenced", "#66a61e"),
                 ("brokers_controlled_shutdown", "controlled shutdown", "#c51b7d"),
                 ("brokers_fenced", "fenced", "#e7298a"))
OFFLINE_SERIES = (("offline_replicas", "offline replicas", "#7570b3"),)  # every color differs from the others
MAX_POINTS = 800  # per chart: the last row per pixel column is what a chart this wide can show
MAX_EVENT_ROWS = 2000
W, LEFT, RIGHT = 960, 64, 16


def write_report(out: Path, rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]]) -> list[Path]:
    clusters = _by_cluster(rows)
    page = out / "report.html"
    page.write_text(render_html(clusters, events))
    written = [page]
    png = write_png(out / "report.png", clusters)
    if png is not None:
        written.append(png)
    return written


def _by_cluster(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    clusters: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        clusters.setdefault(row["cluster"], []).append(row)
    return clusters


# ---- summary ----------------------------------------------------------------------------------------------
def summary(cluster: str, rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]]) -> str:
    last = rows[-1]
    since = rows[-1]["timestamp"]
    for row in reversed(rows):
        if row["phase"] != last["phase"]:
            break
        since = row["timestamp"]
    mine = [e["event"] for e in events if e["cluster"] == cluster]
    brokers = last["brokers_fenced"] + last["brokers_unfenced"] + last["brokers_controlled_shutdown"]
    return (f"{cluster}: {last['phase']} since {fmt_time(since)}, JBOD {last['dir_transition']}, "
            f"metadata.version {last['metadata_version'] or 'unset'}; {brokers} brokers "
            f"({last['brokers_fenced']} fenced, {last['brokers_zk']} on ZooKeeper), {last['topics']} topics, "
            f"{last['partitions']} partitions, {last['offline_replicas']} offline replicas, "
            f"{last['replicas_migrating'] + last['replicas_unassigned']} replicas without a directory; "
            f"{mine.count('directory-failure')} directory failures, {mine.count('aborted-transaction')} aborted "
            f"transactions; {len(rows):,} batches to offset {last['last_offset']:,} at {fmt_time(last['timestamp'])}")


def fmt_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


# ---- SVG charts -------------------------------------------------------------------------------------------
def thin(rows: Sequence[dict[str, Any]], points: int = MAX_POINTS) -> list[dict[str, Any]]:
    """The last row in each of ``points`` equal time slices (every row when there are few)."""
    if len(rows) <= points:
        return list(rows)
    t0, t1 = rows[0]["timestamp"], rows[-1]["timestamp"]
    span = max(t1 - t0, 1)
    last: dict[int, dict[str, Any]] = {}
    for row in rows:
        last[min((row["timestamp"] - t0) * points // span, points - 1)] = row
    kept = [last[k] for k in sorted(last)]
    return kept if kept[0] is rows[0] else [rows[0], *kept]  # every chart starts where the log does


class _Axis:
    def __init__(self, rows: Sequence[dict[str, Any]], height: int, top: int = 8, bottom: int = 22) -> None:
        self.t0, last = rows[0]["timestamp"], rows[-1]["timestamp"]
        self.t1 = last + max((last - self.t0) // 40, 1)  # room for the last state to show
        self.height, self.top, self.bottom = height, top, bottom

    def x(self, t: int) -> float:
        return LEFT + (t - self.t0) * (W - LEFT - RIGHT) / (self.t1 - self.t0)

    def y(self, v: float, vmax: float) -> float:
        inner = self.height - self.top - self.bottom
        return self.top + inner - (v / vmax) * inner if vmax else self.top + inner

    def time_ticks(self) -> str:
        parts = []
        for i in range(5):
            t = self.t0 + (self.t1 - self.t0) * i // 4
            x = self.x(t)
            anchor = "start" if i == 0 else "end" if i == 4 else "middle"
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.height - self.bottom}" '
                         f'y2="{self.height - self.bottom + 4}" stroke="#555"/>'
                         f'<text x="{x:.1f}" y="{self.height - 6}" text-anchor="{anchor}">{fmt_time(t)}</text>')
        return "".join(parts)


def _svg(name: str, height: int, body: str, title: str) -> str:
    return (f'<svg class="chart" data-chart="{name}" xmlns="http://www.w3.org/2000/svg" width="{W}" '
            f'height="{height}" viewBox="0 0 {W} {height}" role="img" aria-label="{html.escape(title)}">'
            f'<title>{html.escape(title)}</title>{body}</svg>')


def _legend(items: Sequence[tuple[str, str]]) -> str:
    return "".join(f'<span class="key"><i style="background:{color}"></i>{html.escape(label)}</span>'
                   for label, color in items)


def _runs(rows: Sequence[dict[str, Any]], column: str, until: int) -> list[tuple[int, int, str]]:
    """(start time, end time, value) of each run of equal ``column`` values; the last lasts ``until``."""
    runs: list[tuple[int, int, str]] = []
    for i, row in enumerate(rows):
        end = rows[i + 1]["timestamp"] if i + 1 < len(rows) else until
        if runs and runs[-1][2] == row[column]:
            runs[-1] = (runs[-1][0], end, row[column])
        else:
            runs.append((row["timestamp"], end, row[column]))
    return runs


def phase_chart(rows: Sequence[dict[str, Any]]) -> str:
    """Two lanes of bands: the migration phase and the JBOD transition."""
    height = 84
    axis = _Axis(rows, height)
    body = ['<text x="4" y="26">phase</text><text x="4" y="52">JBOD</text>']
    for lane, (column, colors) in enumerate((("phase", PHASE_COLORS), ("dir_transition", DIR_COLORS))):
        y = 10 + lane * 26
        for start, end, value in _runs(rows, column, axis.t1):
            x0, x1 = axis.x(start), axis.x(end)
            body.append(f'<rect class="band" data-value="{value}" x="{x0:.1f}" y="{y}" '
                        f'width="{max(x1 - x0, 1.0):.1f}" height="22" fill="{colors[value]}">'
                        f'<title>{value}: {fmt_time(start)} to {fmt_time(end)}</title></rect>')
    body.append(axis.time_ticks())
    return _svg("phases", height, "".join(body), "migration phase and JBOD transition over time")


def stacked_chart(name: str, rows: Sequence[dict[str, Any]], series: Sequence[tuple[str, str, str]],
                  title: str) -> str:
    """Stacked step areas of ``series`` over time, with the y scale's maximum labelled."""
    height = 170
    axis = _Axis(rows, height)
    vmax = max((sum(r[c] for c, _, _ in series) for r in rows), default=0) or 1
    base = [0] * len(rows)
    body = [f'<text x="{LEFT - 6}" y="{axis.top + 10}" text-anchor="end">{vmax:,}</text>'
            f'<text x="{LEFT - 6}" y="{height - axis.bottom}" text-anchor="end">0</text>'
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{height - axis.bottom}" y2="{height - axis.bottom}" '
            f'stroke="#555"/>']
    for column, label, color in series:
        top = [b + r[column] for b, r in zip(base, rows, strict=True)]
        if any(t != b for t, b in zip(top, base, strict=True)):
            body.append(f'<path class="area" data-series="{label}" fill="{color}" stroke="none" '
                        f'd="{_area_path(axis, rows, base, top, vmax)}"><title>{label}</title></path>')
        base = top
    body.append(axis.time_ticks())
    return _svg(name, height, "".join(body), title)


def _area_path(axis: _Axis, rows: Sequence[dict[str, Any]], lower: list[int], upper: list[int], vmax: int) -> str:
    """A step area: each value holds until the next row's time."""
    xs = [axis.x(r["timestamp"]) for r in rows]
    xs.append(axis.x(axis.t1))
    up, down = [], []
    for i in range(len(rows)):
        yu, yl = axis.y(upper[i], vmax), axis.y(lower[i], vmax)
        up.append(f"{xs[i]:.1f},{yu:.1f} {xs[i + 1]:.1f},{yu:.1f}")
        down.append(f"{xs[i + 1]:.1f},{yl:.1f} {xs[i]:.1f},{yl:.1f}")
    return "M" + " L".join(up) + " L" + " L".join(reversed(down)) + " Z"


# ---- the page ---------------------------------------------------------------------------------------------
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px;margin:16px 0 4px}
svg.chart{display:block;background:#fafafa;border:1px solid #e4e4e4}
svg text{font:11px system-ui,sans-serif;fill:#333}
.key{display:inline-block;margin-right:14px;font-size:12px}.key i{display:inline-block;width:11px;height:11px;
margin-right:4px;vertical-align:-1px}
table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #e4e4e4;padding:3px 8px;text-align:left}
.summary li{margin:4px 0}
"""


def render_html(clusters: dict[str, list[dict[str, Any]]], events: Sequence[dict[str, Any]]) -> str:
    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<title>metalog analysis</title>", f"<style>{CSS}</style></head><body>",
             "<h1>Metadata log analysis: ZooKeeper migration and JBOD transition</h1>",
             "<ul class=\"summary\">"]
    parts += [f"<li>{html.escape(summary(name, rows, events))}</li>" for name, rows in clusters.items()]
    parts.append("</ul>")
    for name, rows in clusters.items():
        parts.append(_cluster_section(name, rows))
    parts.append(_events_table(events))
    parts.append("</body></html>")
    return "".join(parts)


def _cluster_section(name: str, rows: Sequence[dict[str, Any]]) -> str:
    shown = thin(rows)
    return "".join([
        f"<h2>{html.escape(name)}</h2>",
        "<h3>Phase and JBOD transition</h3>", phase_chart(rows),
        _legend([(p, c) for p, c in PHASE_COLORS.items()] + [(f"JBOD {d}", c) for d, c in DIR_COLORS.items()]),
        "<h3>Replicas by directory state</h3>",
        stacked_chart("replicas", shown, REPLICA_SERIES, "replicas by directory state"),
        _legend([(label, color) for _, label, color in REPLICA_SERIES]),
        "<h3>Brokers by state</h3>", stacked_chart("brokers", shown, BROKER_SERIES, "brokers by state"),
        _legend([(label, color) for _, label, color in BROKER_SERIES]),
        "<h3>Offline replicas</h3>", stacked_chart("offline", shown, OFFLINE_SERIES, "offline replicas"),
    ])


def _events_table(events: Sequence[dict[str, Any]]) -> str:
    parts = [f"<h2>Events ({len(events):,})</h2>"]
    if len(events) > MAX_EVENT_ROWS:
        parts.append(f"<p>The first {MAX_EVENT_ROWS:,} are listed; events.csv holds them all.</p>")
    parts.append("<table class=\"events\"><tr><th>cluster</th><th>offset</th><th>time (UTC)</th><th>event</th>"
                 "<th>detail</th></tr>")
    for e in events[:MAX_EVENT_ROWS]:
        parts.append(f"<tr><td>{html.escape(e['cluster'])}</td><td>{e['offset']}</td>"
                     f"<td>{fmt_time(e['timestamp'])}</td><td>{html.escape(e['event'])}</td>"
                     f"<td>{html.escape(e['detail'])}</td></tr>")
    parts.append("</table>")
    return "".join(parts)


# ---- the PNG ----------------------------------------------------------------------------------------------
def write_png(path: Path, clusters: dict[str, list[dict[str, Any]]]) -> Path | None:
    """The main chart (phase bands behind replicas by directory state), one panel per cluster; needs matplotlib
    (the ``analysis`` extra): without it there is no PNG, and the HTML report is complete on its own."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    names = list(clusters)[:8]
    fig, axes = plt.subplots(len(names), 1, figsize=(12, 3.2 * len(names)), squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        rows = thin(clusters[name])
        times = [datetime.fromtimestamp(r["timestamp"] / 1000, tz=UTC) for r in rows]
        rows_all = clusters[name]
        for start, end, value in _runs(rows_all, "phase", rows_all[-1]["timestamp"]):
            ax.axvspan(datetime.fromtimestamp(start / 1000, tz=UTC), datetime.fromtimestamp(end / 1000, tz=UTC),
                       color=PHASE_COLORS[value], alpha=0.35, lw=0)
        ax.stackplot(times, *([r[c] for r in rows] for c, _, _ in REPLICA_SERIES), step="post",
                     colors=[c for _, _, c in REPLICA_SERIES], labels=[lbl for _, lbl, _ in REPLICA_SERIES])
        ax.set_title(f"{name}: replicas by directory state, migration phase behind", fontsize=10)
        ax.set_ylabel("replicas")
        phases = [Patch(color=PHASE_COLORS[p], alpha=0.35, label=p) for p in PHASES]
        ax.legend(handles=ax.get_legend_handles_labels()[0] + phases, fontsize=8, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
