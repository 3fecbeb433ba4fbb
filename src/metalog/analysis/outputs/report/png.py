"""report.png: small multiples drawn with Pillow (the ``analysis`` extra), a row per cluster: replicas by
directory state over the migration phases, and brokers and offline replicas. Every cluster is drawn: a fleet
of more than ``CLUSTERS_PER_PNG`` clusters gets report-2.png, report-3.png and so on, and each image's title
says which clusters it holds. Lines are drawn as envelopes (lowest to highest per pixel column), like the
page's: the envelopes the reading made (``PICTURE_BUCKETS`` per panel) are merged per pixel column, filled
between the lowest and the highest value, and outlined. The axes' ticks are ``axes``'."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from metalog.analysis.domain.schema import PHASES
from metalog.analysis.outputs.report.axes import clamped, time_ticks, value_label, value_ticks
from metalog.analysis.outputs.report.data import (
    PHASE_COLORS,
    ChartSpec,
    Cluster,
    SeriesSpec,
    cluster_charts,
    fleet_span,
)

CLUSTERS_PER_PNG = 12
WIDTH, ROW_HEIGHT, TITLE_HEIGHT = 1620, 270, 36  # pixels
PANELS = (3, 2, 2)  # the panels' widths in a row, relative
# a panel's plot area within its share of the row: room for the y axis' labels, the title, the time axis' labels
LEFT, RIGHT, TOP, BOTTOM = 64, 14, 30, 44
SPAN_ALPHA, FILL_ALPHA = 0.3, 0.35  # a phase's background; a line's envelope
TEXT, GRID, FRAME = (0, 0, 0), (221, 221, 221), (0, 0, 0)
TICK_SPACING = 64  # pixels a time axis' label takes at least
HEADROOM = 1.05  # a count axis reaches a little above its top tick: a line at that value is drawn below the frame


def png_names(count: int) -> list[str]:
    return [f"report{'' if i == 0 else f'-{i + 1}'}.png" for i in range((count + CLUSTERS_PER_PNG - 1) //
                                                                        CLUSTERS_PER_PNG)]


def write_png(out: Path, clusters: Sequence[Cluster]) -> list[Path]:
    """report.png (and report-2.png, ...), or nothing without Pillow: the HTML report is complete alone. An
    image holds the rows of up to CLUSTERS_PER_PNG clusters, drawn one after another."""
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        return []
    span = fleet_span([(c.start, c.end) for c in clusters])
    written = []
    for n, name in enumerate(png_names(len(clusters))):
        chunk = clusters[n * CLUSTERS_PER_PNG:(n + 1) * CLUSTERS_PER_PNG]
        image = Image.new("RGB", (WIDTH, TITLE_HEIGHT + ROW_HEIGHT * len(chunk)), "white")
        draw = ImageDraw.Draw(image, "RGBA")
        text(draw, (WIDTH // 2, TITLE_HEIGHT // 2), _title(clusters, n, span is not None), 14, "mm")
        for row, cluster in enumerate(chunk):
            _row(image, draw, TITLE_HEIGHT + row * ROW_HEIGHT, cluster, span)
        image.save(out / name, dpi=(90, 90))
        written.append(out / name)
    return written


def _title(clusters: Sequence[Cluster], image: int, shared: bool) -> str:
    chunk = clusters[image * CLUSTERS_PER_PNG:(image + 1) * CLUSTERS_PER_PNG]
    first = image * CLUSTERS_PER_PNG + 1
    which = (f"clusters {first} to {first + len(chunk) - 1} of {len(clusters)}, a row each"
             if len(clusters) > len(chunk) else f"all {len(clusters)} clusters, a row each"
             if len(clusters) > 1 else f"cluster {chunk[0].name}")
    return f"metalog analyze: {which}; lowest to highest value per pixel; times UTC" \
           f"{'; one time axis for the fleet' if shared else ''}"


@dataclass(frozen=True)
class Plot:
    """A panel's plot area on the image (pixels: left, top, right, bottom, the right and bottom edges inside)
    and what it shows: the time span [start, end] (epoch ms) and counts from 0 to ``top``."""

    left: int
    top: int
    right: int
    bottom: int
    start: int
    end: int
    ymax: float = 1.0

    def x(self, ms: int) -> float:
        start, end = clamped(self.start), max(clamped(self.end), clamped(self.start) + 1)
        at = (min(max(clamped(ms), start), end) - start) / (end - start)
        return self.left + at * (self.right - self.left)

    def y(self, value: float) -> float:
        return self.bottom - min(max(value, 0), self.ymax) / self.ymax * (self.bottom - self.top)


def _row(image: Any, draw: Any, top: int, cluster: Cluster, span: tuple[int, int] | None) -> None:
    start, end = span or (cluster.start, cluster.end)
    charts = {c.name: c for c in cluster_charts("offline_partitions" in cluster.columns)}
    left = 0
    for share, chart in zip(PANELS, ("replicas", "brokers", "offline"), strict=True):
        right = left + WIDTH * share // sum(PANELS)
        frame = Plot(left + LEFT, top + TOP, right - RIGHT, top + ROW_HEIGHT - BOTTOM, start, end)
        _panel(image, draw, frame, cluster, charts[chart])
        left = right


def _panel(image: Any, draw: Any, frame: Plot, cluster: Cluster, chart: ChartSpec) -> None:
    """One chart of a cluster: its phases behind (the replicas'), its grid, its lines, its axes and legend."""
    drawn = [s for s in chart.series if s.column in cluster.columns]
    envelopes = {s.column: _envelope(cluster, s.column, frame.start, frame.end) for s in drawn}
    highest = max((v for _, highs in envelopes.values() for v in highs if v is not None), default=0)
    ticks = value_ticks(highest)
    plot = Plot(frame.left, frame.top, frame.right, frame.bottom, frame.start, frame.end, ticks[-1] * HEADROOM)
    legend: list[tuple[str, tuple[int, int, int], bool]] = []
    if chart.name == "replicas":
        legend += _phases(draw, plot, cluster)
    times = _grid(draw, plot, ticks)
    draw.rectangle((plot.left, plot.top, plot.right, plot.bottom), outline=FRAME)  # (a line at 0 drawn on it)
    for series in drawn:
        _lines(draw, plot, series, envelopes[series.column])
    _axes(image, draw, plot, ticks, times, chart)
    title = f"{cluster.name}: {chart.title[0].lower()}{chart.title[1:]}"
    if chart.name == "replicas":
        title = f"{cluster.name}: replicas by directory state, migration phase behind"
    text(draw, ((plot.left + plot.right) // 2, plot.top - 6), title, 13, "ms")
    lines = [(s.label, rgb(s.color), False) for s in drawn]
    _legend(draw, plot, [*lines, *legend], 2 if chart.name == "replicas" else 1)


def _envelope(cluster: Cluster, column: str, start: int, end: int) -> tuple[list[Any], list[Any]]:
    found = cluster.envelopes.get((column, start, end))
    if found is None:
        raise KeyError(f"cluster {cluster.name}: read without the PNG's {column!r} on [{start}, {end})")
    return found


def _phases(draw: Any, plot: Plot, cluster: Cluster) -> list[tuple[str, tuple[int, int, int], bool]]:
    """The migration phases' runs as the panel's background; their legend entries (patches)."""
    phases = cluster.steps("phase")
    for i, (t, value) in enumerate(zip(phases.times, phases.values, strict=True)):
        until = phases.times[i + 1] if i + 1 < len(phases) else cluster.end
        x0, x1 = round(plot.x(t)), round(plot.x(until))
        if x1 > x0:
            draw.rectangle((x0, plot.top, x1 - 1, plot.bottom), fill=blend(rgb(PHASE_COLORS[value]), SPAN_ALPHA))
    shown = set(phases.values)
    return [(p, blend(rgb(PHASE_COLORS[p]), SPAN_ALPHA), True) for p in PHASES if p in shown]


def _grid(draw: Any, plot: Plot, ticks: Sequence[int]) -> Any:
    times = time_ticks(plot.start, plot.end, max(3, (plot.right - plot.left) // TICK_SPACING))
    for t in times.times:
        x = round(plot.x(t))
        draw.line((x, plot.top, x, plot.bottom), fill=GRID)
    for v in ticks[1:]:
        y = round(plot.y(v))
        draw.line((plot.left, y, plot.right, y), fill=GRID)
    return times


def _columns(plot: Plot, lows: Sequence[Any], highs: Sequence[Any]) -> Iterator[tuple[int, Any, Any]]:
    """(pixel column, lowest, highest) of the envelope's slices that fall in each pixel column of the plot
    (None, None where the series has no value)."""
    width, buckets = plot.right - plot.left, len(highs)
    for c in range(width):
        lo_k, hi_k = c * buckets // width, max((c + 1) * buckets // width, c * buckets // width + 1)
        values_lo = [v for v in lows[lo_k:hi_k] if v is not None]
        values_hi = [v for v in highs[lo_k:hi_k] if v is not None]
        yield (plot.left + c, min(values_lo) if values_lo else None, max(values_hi) if values_hi else None)


def _lines(draw: Any, plot: Plot, series: SeriesSpec, envelope: tuple[list[Any], list[Any]]) -> None:
    """A line as its envelope: filled from its lowest to its highest value in each pixel column, outlined
    above and below."""
    color = rgb(series.color)
    fill = (*color, round(255 * FILL_ALPHA))
    upper: list[tuple[float, float]] = []
    lower: list[tuple[float, float]] = []
    for x, lo, hi in _columns(plot, *envelope):
        if lo is None or hi is None:
            _outline(draw, upper, lower, color)
            upper, lower = [], []
            continue
        y_hi, y_lo = plot.y(hi), plot.y(lo)
        if y_lo - y_hi >= 1:
            draw.line((x, round(y_hi), x, round(y_lo)), fill=fill)
        upper += [(x, y_hi), (x + 1, y_hi)]
        lower += [(x, y_lo), (x + 1, y_lo)]
    _outline(draw, upper, lower, color)


def _outline(draw: Any, upper: list[tuple[float, float]], lower: list[tuple[float, float]],
             color: tuple[int, int, int]) -> None:
    for points in (upper, lower):
        if len(points) > 1:
            draw.line(points, fill=color, width=1)


def _axes(image: Any, draw: Any, plot: Plot, ticks: Sequence[int], times: Any, chart: ChartSpec) -> None:
    """The ticks and their labels, the axes' names and the time axis' offset."""
    for v in ticks:
        y = round(plot.y(v))
        draw.line((plot.left - 4, y, plot.left, y), fill=FRAME)
        text(draw, (plot.left - 6, y), value_label(v), 10, "rm")
    for t, label in zip(times.times, times.labels, strict=True):
        x = round(plot.x(t))
        draw.line((x, plot.bottom, x, plot.bottom + 4), fill=FRAME)
        text(draw, (x, plot.bottom + 6), label, 10, "mt")
    text(draw, ((plot.left + plot.right) // 2, plot.bottom + 22), "time (UTC)", 10, "mt")
    if times.offset:
        text(draw, (plot.right, plot.bottom + 22), times.offset, 12, "rt")
    vertical(image, (plot.left - 50, (plot.top + plot.bottom) // 2), chart.unit, 12)


def _legend(draw: Any, plot: Plot, entries: Sequence[tuple[str, tuple[int, int, int], bool]], ncol: int) -> None:
    """Entries (label, colour, whether a patch rather than a line) in ``ncol`` columns at the plot's upper
    left, on white."""
    if not entries:
        return
    rows = -(-len(entries) // ncol)
    width = max(font(9).getlength(label) for label, _, _ in entries) + 30
    x0, y0 = plot.left + 4, plot.top + 4
    draw.rectangle((x0, y0, x0 + ncol * width + 4, y0 + rows * 13 + 4), fill=(255, 255, 255, 204),
                   outline=(204, 204, 204))
    for i, (label, color, patch) in enumerate(entries):
        x, y = x0 + 4 + (i // rows) * width, y0 + 4 + (i % rows) * 13 + 6
        if patch:
            draw.rectangle((x, y - 4, x + 18, y + 3), fill=color)
        else:
            draw.line((x, y, x + 18, y), fill=color, width=2)
        text(draw, (x + 24, y), label, 9, "lm")


@cache
def font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def text(draw: Any, at: tuple[float, float], label: str, size: int, anchor: str) -> None:
    draw.text(at, label, fill=TEXT, font=font(size), anchor=anchor)


def vertical(image: Any, at: tuple[int, int], label: str, size: int) -> None:
    """``label`` written upwards, centred on ``at``."""
    from PIL import Image, ImageDraw

    box = font(size).getbbox(label, anchor="lt")
    mask = Image.new("L", (int(box[2]) + 2, int(box[3]) + 2), 0)
    ImageDraw.Draw(mask).text((1, 1), label, fill=255, font=font(size), anchor="lt")
    mask = mask.rotate(90, expand=True)
    image.paste(TEXT, (at[0] - mask.width // 2, at[1] - mask.height // 2), mask)


def rgb(color: str) -> tuple[int, int, int]:
    """``#rrggbb`` as a tuple."""
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def blend(color: tuple[int, int, int], alpha: float) -> tuple[int, int, int]:
    """``color`` at ``alpha`` over white."""
    r, g, b = (round(255 - alpha * (255 - c)) for c in color)
    return r, g, b
