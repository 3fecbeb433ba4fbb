"""The report's series: step functions in change form, kept small without losing a minimum or a maximum.

A timeline column over a cluster's batches is a step function of time: a value holds from its batch's time
until the next batch. ``steps`` keeps only the points where the value changes. A log of millions of batches
can still change millions of times; ``m4`` then keeps, per one of ``FINE`` equal time buckets, the first,
lowest, highest and last change point (the M4 aggregation of line charts): each bucket's extremes survive, and
so does the value carried into the next bucket, so a spike is drawn at every zoom, and a pixel that covers
whole buckets draws its exact range (zoomed in further, a bucket shows those four points only).
``envelope`` is that drawing's data: per pixel, the lowest and highest value in force during it (the page's
script computes the same for the visible range).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from operator import ne
from typing import Any

FINE = 8192  # buckets over a cluster's time span within which m4 keeps at most four points


@dataclass
class Steps:
    """``values[i]`` holds from ``times[i]`` (epoch ms) until ``times[i + 1]``; the last until the series ends.
    Times never decrease (batches can share a millisecond: each keeps its point)."""

    times: list[int]
    values: list[Any]

    def __len__(self) -> int:
        return len(self.times)


def steps(times: Sequence[int], values: Sequence[Any]) -> Steps:
    """The change points of ``values`` over ``times`` (the first point always)."""
    if not values:
        return Steps([], [])
    keep = [0, *compress(range(1, len(values)), map(ne, values[1:], values[:-1]))]  # compared in C
    return Steps([times[i] for i in keep], [values[i] for i in keep])


def m4(series: Steps, t0: int, t1: int, buckets: int = FINE) -> Steps:
    """At most four points per bucket of [t0, t1]: the first, the lowest, the highest and the last (in time
    order); ``series`` as it is when it has no more than that."""
    n = len(series)
    if n <= 4 * buckets:
        return series
    times, values = series.times, series.values
    span = max(t1 - t0, 1)
    keep: list[int] = []
    i = 0
    while i < n:
        bucket = min((times[i] - t0) * buckets // span, buckets - 1)
        j = i
        lo = hi = i
        while j + 1 < n and min((times[j + 1] - t0) * buckets // span, buckets - 1) == bucket:
            j += 1
            if values[j] < values[lo]:
                lo = j
            elif values[j] > values[hi]:
                hi = j
        keep += sorted({i, lo, hi, j})
        i = j + 1
    return Steps([times[k] for k in keep], [values[k] for k in keep])


def envelope(series: Steps, start: int, end: int, buckets: int, until: int | None = None,
             ) -> tuple[list[Any], list[Any]]:
    """(lowest, highest) value in force during each of ``buckets`` equal slices of [start, end): the value
    carried in from before the slice and every change inside it. None where the series has not begun, or has
    ended (``until``: the time of its last batch; after it nothing was published)."""
    times, values = series.times, series.values
    width = (end - start) / buckets
    lows: list[Any] = [None] * buckets
    highs: list[Any] = [None] * buckets
    i = bisect.bisect_left(times, start)
    current = values[i - 1] if i > 0 else None  # in force just before ``start``
    for k in range(buckets):
        slice_start = start + k * width
        if until is not None and slice_start > until:
            break
        slice_end = start + (k + 1) * width
        # the value carried in holds at the slice's start unless a change happens right there
        low = high = current if i == len(times) or times[i] > slice_start else None
        while i < len(times) and times[i] < slice_end:
            v = values[i]
            low = v if low is None or v < low else low
            high = v if high is None or v > high else high
            current = v
            i += 1
        lows[k], highs[k] = low, high
    return lows, highs


def runs(series: Steps) -> list[tuple[int, Any]]:
    """(start time, value) of each run of one value: what a lane draws."""
    return list(zip(series.times, series.values, strict=True))


def packed(series: Steps, t0: int) -> dict[str, list[Any]]:
    """For the page: times as differences (the first from ``t0``), so the JSON stays small."""
    deltas, prev = [], t0
    for t in series.times:
        deltas.append(t - prev)
        prev = t
    return {"t": deltas, "v": series.values}
