"""report.png drawn with Pillow: the axes' ticks (``report.axes``) for any count and any int64 time span, and the
picture itself: a one-batch spike in a long log is drawn at the default size, each migration phase is behind its
time, a line at 0 or at its axis' top tick is visible, and the image has a row per cluster."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.schema import TIMELINE
from metalog.analysis.outputs.report.axes import MAX_TICKS, clamped, time_ticks, value_ticks
from metalog.analysis.outputs.report.data import PHASE_COLORS
from metalog.analysis.outputs.report.png import (
    LEFT,
    PANELS,
    ROW_HEIGHT,
    SPAN_ALPHA,
    TITLE_HEIGHT,
    TOP,
    WIDTH,
    blend,
    rgb,
    write_png,
)
from tests.analysis import crafted as c
from tests.analysis.oracle import clusters_of
from tests.quick import examples

Image = pytest.importorskip("PIL.Image", reason="report.png needs Pillow (the analysis extra)")

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


@settings(max_examples=examples(300))
@given(top=st.integers(0, 1 << 62) | st.integers(0, 100))
def test_a_count_axis_reaches_its_top_in_round_steps(top: int) -> None:
    ticks = value_ticks(top)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and ticks[-1] >= top and len(ticks) <= MAX_TICKS + 2
    assert all(b - a == step for a, b in zip(ticks, ticks[1:], strict=False))
    assert str(step).rstrip("0") in ("1", "2", "25", "5")  # 1, 2, 2.5 or 5 times a power of ten
    assert ticks[-2] < top or top == 0  # no step beyond the one that reaches the top


@settings(max_examples=examples(300))
@given(start=INT64, length=st.integers(0, 1 << 62) | st.integers(0, 10**8), most=st.integers(3, 12))
def test_a_time_axis_has_at_most_its_ticks_inside_its_span(start: int, length: int, most: int) -> None:
    end = min(start + length, (1 << 63) - 1)
    ticks = time_ticks(start, end, most)
    lo, hi = clamped(start), max(clamped(end), clamped(start) + 1000)
    assert len(ticks.times) == len(ticks.labels) and 1 <= len(ticks.times) <= most
    assert ticks.times == sorted(set(ticks.times)) and lo <= ticks.times[0] and ticks.times[-1] <= hi


def rows(n: int, **changes: dict[int, Any]) -> list[dict[str, Any]]:
    """``n`` timeline rows a second apart, all zero but ``changes``: {column: {row: value from it on}}."""
    base = {**{k: 0 for k in TIMELINE.names}, "cluster": "c", "metadata_version": "3.7-IV2",
            "zk_migration_state": "NONE", "phase": "native", "dir_transition": "not-started"}
    out, current = [], dict(base)
    for i in range(n):
        for column, at in changes.items():
            current[column] = at.get(i, current[column])
        out.append({**current, "last_offset": i, "timestamp": c.T0 + i * 1000})
    return out


def pixels(path: Path) -> Any:
    return Image.open(path).convert("RGB").load()


def left_panel(x: int, y: int) -> tuple[int, int]:
    """A point of the first row's replicas panel, from its plot area's top left."""
    return LEFT + x, TITLE_HEIGHT + TOP + y


@pytest.mark.parametrize("at", range(3000, 3012, 2))  # a pixel column covers about 10 batches: each place in it
def test_a_one_batch_spike_in_a_long_log_is_drawn(tmp_path: Path, at: int) -> None:
    """6,000 batches, LOST replicas 5 in one of them: that pixel column goes up to the top tick in LOST's colour
    (the envelope keeps the highest value of every slice a pixel column covers)."""
    [cluster] = clusters_of(rows(6000, replicas_lost={at: 5, at + 1: 0}), [])
    write_png(tmp_path, [cluster])
    image = pixels(tmp_path / "report.png")
    lost = rgb("#d7301f")
    width = WIDTH * PANELS[0] // sum(PANELS) - LEFT - 14
    spike = round(at / 5999 * width)
    assert lost in [image[left_panel(x, y)] for x in range(spike - 2, spike + 3) for y in range(2, 60)]
    assert lost not in [image[left_panel(x, y)] for x in range(20, 40) for y in range(2, 60)]  # 0 elsewhere


def test_each_phase_is_behind_its_time_and_the_image_has_a_row_per_cluster(tmp_path: Path) -> None:
    phases = {0: "native", 10_000: "hybrid"}
    clusters = clusters_of([*rows(20_000, phase=phases), *(dict(r, cluster="d") for r in rows(20_000))], [])
    write_png(tmp_path, clusters)
    image = Image.open(tmp_path / "report.png")
    assert image.size == (WIDTH, TITLE_HEIGHT + 2 * ROW_HEIGHT)
    at = image.convert("RGB").load()
    width = WIDTH * PANELS[0] // sum(PANELS) - LEFT - 14
    native, hybrid = blend(rgb(PHASE_COLORS["native"]), SPAN_ALPHA), blend(rgb(PHASE_COLORS["hybrid"]), SPAN_ALPHA)
    def behind(x: int) -> tuple[int, int, int]:  # the colour most pixels around x have (a grid line may pass)
        return Counter(at[left_panel(x + dx, 150)] for dx in range(-20, 21)).most_common(1)[0][0]  # type: ignore

    assert behind(width // 4) == native and behind(3 * width // 4) == hybrid
    second = Counter(at[LEFT + x, TITLE_HEIGHT + ROW_HEIGHT + TOP + 150] for x in range(width))
    assert second.most_common(1)[0][0] == native and hybrid not in second  # the second cluster: native throughout
