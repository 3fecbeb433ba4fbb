"""report.png: small multiples through matplotlib (the ``analysis`` extra), a row per cluster: replicas by
directory state over the migration phases, and brokers and offline replicas. Every cluster is drawn: a fleet
of more than ``CLUSTERS_PER_PNG`` clusters gets report-2.png, report-3.png and so on, and each image's title
says which clusters it holds. Lines are drawn as envelopes (lowest to highest per pixel), like the page's."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from metalog.analysis.domain.schema import PHASES
from metalog.analysis.outputs.report.data import (
    PHASE_COLORS,
    PICTURE_BUCKETS,
    Cluster,
    SeriesSpec,
    cluster_charts,
    fleet_span,
)

CLUSTERS_PER_PNG = 12


def png_names(count: int) -> list[str]:
    return [f"report{'' if i == 0 else f'-{i + 1}'}.png" for i in range((count + CLUSTERS_PER_PNG - 1) //
                                                                        CLUSTERS_PER_PNG)]


def write_png(out: Path, clusters: Sequence[Cluster]) -> list[Path]:
    """report.png (and report-2.png, ...), or nothing without matplotlib: the HTML report is complete alone.
    Each cluster's row of panels is its own figure, drawn and pasted into the image in turn: the memory of
    matplotlib's figures is one row's, however many clusters an image holds."""
    try:
        import matplotlib
    except ImportError:
        return []
    import numpy as np
    from PIL import Image

    matplotlib.use("Agg")
    span = fleet_span([(c.start, c.end) for c in clusters])
    written = []
    for n, name in enumerate(png_names(len(clusters))):
        chunk = clusters[n * CLUSTERS_PER_PNG:(n + 1) * CLUSTERS_PER_PNG]
        first = n * CLUSTERS_PER_PNG + 1
        which = (f"clusters {first} to {first + len(chunk) - 1} of {len(clusters)}, a row each"
                 if len(clusters) > len(chunk) else f"all {len(clusters)} clusters, a row each"
                 if len(clusters) > 1 else f"cluster {chunk[0].name}")
        title = _figure(TITLE_HEIGHT)
        title.text(0.5, 0.5, f"metalog analyze: {which}; lowest to highest value per pixel; times UTC"
                   f"{'; one time axis for the fleet' if span else ''}", fontsize=11, ha="center", va="center")
        image = np.full((_pixels(TITLE_HEIGHT + ROW_HEIGHT * len(chunk)), _pixels(WIDTH), 3), 255, np.uint8)
        top = _paste(image, 0, title)
        for cluster in chunk:
            fig = _figure(ROW_HEIGHT)
            _panels(fig.subplots(1, 3, gridspec_kw={"width_ratios": (3, 2, 2)}), cluster, span)
            fig.tight_layout()
            top = _paste(image, top, fig)
            fig.clear()
            if cluster is not clusters[-1]:  # (after the last, the image is saved and its memory goes with it)
                gc.collect()  # a figure's artists refer to each other: freed now, not when the collector gets to them
        Image.fromarray(image).save(out / name, dpi=(DPI, DPI))
        written.append(out / name)
    return written


WIDTH, ROW_HEIGHT, TITLE_HEIGHT, DPI = 18.0, 3.0, 0.4, 90  # inches, and pixels per inch


def _pixels(inches: float) -> int:
    return round(inches * DPI)


def _figure(height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _paste(image: Any, top: int, fig: Any) -> int:
    """``fig`` drawn into ``image``'s rows from ``top`` (white behind it); the row below it."""
    import numpy as np

    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    height = rgba.shape[0]
    alpha = rgba[:, :, 3:4].astype(np.uint16)
    image[top:top + height] = ((rgba[:, :, :3] * alpha + 255 * (255 - alpha)) // 255).astype(np.uint8)
    return int(top + height)


def _times(start: int, end: int, n: int) -> list[datetime]:
    width = (end - start) / n
    return [moment(round(start + k * width)) for k in range(n + 1)]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST, _LAST = datetime(100, 1, 1, tzinfo=UTC), datetime(9900, 1, 1, tzinfo=UTC)  # what the axis can draw


def moment(ms: int) -> datetime:
    """Epoch ms as a point on the time axis: a batch time before year 100 or after 9900 (any int64 is one) is
    drawn at that end of the axis (matplotlib draws years 1 to 9999, and its ticks need a margin)."""
    try:
        return min(max(_EPOCH + timedelta(milliseconds=ms), _FIRST), _LAST)
    except OverflowError:
        return _FIRST if ms < 0 else _LAST


def _envelope(cluster: Cluster, column: str, start: int, end: int) -> tuple[list[Any], list[Any]]:
    found = cluster.envelopes.get((column, start, end))
    if found is None:
        raise KeyError(f"cluster {cluster.name}: read without the PNG's {column!r} on [{start}, {end})")
    return found


@dataclass(frozen=True)
class Axis:
    """A panel's time axis: its span (epoch ms) and the envelope buckets' edges on it (``_times``), as
    matplotlib's date numbers (converted once for every line drawn on it)."""

    start: int
    end: int
    x: Any


def time_axis(start: int, end: int) -> Axis:
    import matplotlib.dates

    mdates: Any = matplotlib.dates  # (untyped)
    return Axis(start, end, mdates.date2num(_times(start, end, PICTURE_BUCKETS)))


def _draw(ax: Any, cluster: Cluster, series: SeriesSpec, axis: Axis) -> None:
    lows, highs = _envelope(cluster, series.column, axis.start, axis.end)
    lows, highs = [*lows, lows[-1]], [*highs, highs[-1]]
    low = [float("nan") if v is None else v for v in lows]
    high = [float("nan") if v is None else v for v in highs]
    ax.fill_between(axis.x, low, high, step="post", color=series.color, alpha=0.35, lw=0)
    ax.step(axis.x, high, where="post", color=series.color, lw=1.1, label=series.label)
    ax.step(axis.x, low, where="post", color=series.color, lw=1.1)


def _panels(row: Sequence[Any], cluster: Cluster, span: tuple[int, int] | None) -> None:
    import matplotlib.dates
    from matplotlib.patches import Patch

    mdates: Any = matplotlib.dates  # (its locator and formatter are untyped)

    start, end = span or (cluster.start, cluster.end)
    axis = time_axis(start, end)
    charts = {c.name: c for c in cluster_charts("offline_partitions" in cluster.columns)}
    left, middle, right = row
    phases = cluster.steps("phase")
    for i, (t, value) in enumerate(zip(phases.times, phases.values, strict=True)):
        until = phases.times[i + 1] if i + 1 < len(phases) else cluster.end
        left.axvspan(moment(t), moment(until),
                     color=PHASE_COLORS[value], alpha=0.3, lw=0)
    for s in charts["replicas"].series:
        _draw(left, cluster, s, axis)
    left.set_title(f"{cluster.name}: replicas by directory state, migration phase behind", fontsize=10)
    left.set_ylabel("replicas")
    shown = set(phases.values)
    left.legend(handles=[*left.get_legend_handles_labels()[0],
                         *(Patch(color=PHASE_COLORS[p], alpha=0.3, label=p) for p in PHASES if p in shown)],
                fontsize=7, loc="upper left", ncol=2)
    for ax, chart in ((middle, charts["brokers"]), (right, charts["offline"])):
        for s in chart.series:
            if s.column in cluster.columns:
                _draw(ax, cluster, s, axis)
        ax.set_title(f"{cluster.name}: {chart.title[0].lower()}{chart.title[1:]}", fontsize=10)
        ax.set_ylabel(chart.unit)
        ax.legend(fontsize=7, loc="upper left")
    for ax in row:
        ax.set_xlim(moment(start), max(moment(end), moment(start) + timedelta(seconds=1)))  # (both clamped)
        ax.set_ylim(bottom=0)
        ax.grid(True, color="#dddddd", lw=0.6)
        ax.set_axisbelow(True)
        locator = mdates.AutoDateLocator(tz=UTC)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))
        ax.set_xlabel("time (UTC)", fontsize=8)
        ax.tick_params(labelsize=8)
