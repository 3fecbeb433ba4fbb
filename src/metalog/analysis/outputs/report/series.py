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

import json
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from contextlib import suppress
from dataclasses import dataclass
from itertools import chain, compress
from operator import ne, sub
from typing import Any

from metalog.codec import core

FINE = 8192  # buckets over a cluster's time span within which m4 keeps at most four points


@dataclass
class Steps:
    """``values[i]`` holds from ``times[i]`` (epoch ms) until ``times[i + 1]``; the last until the series ends.
    Times never decrease (batches can share a millisecond: each keeps its point)."""

    times: Sequence[int]  # a list, or (a decimated line's) an array('q')
    values: Sequence[Any]

    def __len__(self) -> int:
        return len(self.times)

    def __eq__(self, other: object) -> bool:  # (a list and an array of the same ints are the same series)
        return isinstance(other, Steps) and list(self.times) == list(other.times) and \
            list(self.values) == list(other.values)

    __hash__ = None  # type: ignore[assignment]


def steps(times: Sequence[int], values: Sequence[Any]) -> Steps:
    """The change points of ``values`` over ``times`` (the first point always)."""
    if not values:
        return Steps([], [])
    keep = [0, *compress(range(1, len(values)), map(ne, values[1:], values[:-1]))]  # compared in C
    return Steps([times[i] for i in keep], [values[i] for i in keep])


def m4(series: Steps, t0: int, t1: int, buckets: int = FINE) -> Steps:
    """At most four points per bucket of [t0, t1]: the first, the lowest, the highest and the last (in time
    order); ``series`` as it is when it has no more than that."""
    return series if len(series) <= 4 * buckets else decimated(series, t0, t1, buckets)


def decimated(series: Steps, t0: int, t1: int, buckets: int = FINE) -> Steps:
    """``m4``'s points whatever the series' length. Each run of points in one bucket keeps its first, lowest
    (first of them), highest (first of them) and last point, so decimating a series' head and then the whole
    again keeps what decimating the whole once keeps (``StepsBuilder`` relies on it)."""
    times, values = series.times, series.values
    keep: Sequence[int] | None = None
    compiled = M4_KEPT.compiled
    if compiled is not None and _int64s(times) and _int64s(values):
        with suppress(OverflowError):  # (a time beyond int64, or too many buckets: the pure twin)
            keep = compiled(times, values, t0, t1, buckets)
    if keep is None:
        keep = m4_kept(times, values, t0, t1, buckets)
    return Steps([times[k] for k in keep], [values[k] for k in keep])


def m4_kept(times: Sequence[int], values: Sequence[Any], t0: int, t1: int, buckets: int) -> list[int]:
    """The indices of the points ``decimated`` keeps, in order. The pure twin of
    ``metalog.analysis.outputs.compiled.report_series.m4_kept`` (which takes int64 arrays)."""
    n = len(times)
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
    return keep


def _int64s(values: Sequence[Any]) -> bool:
    return isinstance(values, array) and values.typecode == "q"


class StepsBuilder:
    """A series in change form built as its points arrive (in time order, a table's rows at a time): only the
    points where the value changes are kept. ``span`` (t0, t1): the series is drawn decimated (``m4`` on that
    span), and is decimated as it grows whenever it holds more than ``HELD`` times its drawing's points, so it
    holds a bounded number of points however long the log; ``result`` is then exactly ``m4`` of the whole
    series. Without ``span``, every change is kept (a lane's runs)."""

    HELD = 2

    def __init__(self, span: tuple[int, int] | None = None, buckets: int = FINE) -> None:
        self.span, self.buckets = span, buckets
        # a line's points as int64s (8 bytes a point, not an int object's 28 and a list's 8): lines are ints
        self.times: MutableSequence[int] = [] if span is None else array("q")
        self.values: MutableSequence[Any] = [] if span is None else array("q")
        self.decimated = False

    def __len__(self) -> int:
        return len(self.times)

    @property
    def last(self) -> Any:
        return self.values[-1] if self.values else None

    def extend(self, times: Sequence[int], values: Sequence[Any]) -> tuple[list[int], list[Any]]:
        """The points (time, value) after those already added; those equal to the point before are dropped.
        Returns the points kept: the changes (what ``EnvelopeBuilder`` takes)."""
        if not values:
            return [], []
        keep = list(compress(range(1, len(values)), map(ne, values[1:], values[:-1])))  # compared in C
        if not self.values or values[0] != self.values[-1]:
            keep.insert(0, 0)
        kept = [times[i] for i in keep], [values[i] for i in keep]
        self.times.extend(kept[0])
        self.values.extend(kept[1])
        if self.span is not None and len(self.times) > self.HELD * 4 * self.buckets:
            head = decimated(Steps(self.times, self.values), *self.span, self.buckets)
            self.times, self.values, self.decimated = array("q", head.times), array("q", head.values), True
        return kept

    def extend_changes(self, times: Sequence[int], values: Sequence[int]) -> tuple[Sequence[int], Sequence[int]]:
        """``extend`` for a line (``span`` given) of points that are each a change from the one before it but
        maybe the first (``reading.change_points``' of an int64 column, as ``array('q')``: no Python int per
        point). Returns the points kept, as ``extend`` does."""
        assert self.span is not None
        if values and self.values and values[0] == self.values[-1]:
            times, values = times[1:], values[1:]
        self.times.extend(times)
        self.values.extend(values)
        if len(self.times) > self.HELD * 4 * self.buckets:
            head = decimated(Steps(self.times, self.values), *self.span, self.buckets)
            self.times, self.values, self.decimated = array("q", head.times), array("q", head.values), True
        return times, values

    def result(self) -> Steps:
        """The series: every change, or (with ``span``) ``m4`` of every change."""
        series = Steps(self.times, self.values)
        if self.span is None:
            return series
        if not self.decimated and len(series) <= 4 * self.buckets:
            return series
        found = decimated(series, *self.span, self.buckets)
        return Steps(array("q", found.times), array("q", found.values))


def envelope(series: Steps, start: int, end: int, buckets: int, until: int | None = None,
             ) -> tuple[list[Any], list[Any]]:
    """(lowest, highest) value in force during each of ``buckets`` equal slices of [start, end): the value
    carried in from before the slice and every change inside it. None where the series has not begun, or has
    ended (``until``: the time of its last batch; after it nothing was published)."""
    builder = EnvelopeBuilder(start, end, buckets)
    builder.extend(series.times, series.values)
    return builder.result(until)


class EnvelopeBuilder:
    """``envelope`` made as the series' points arrive, in time order (a table's rows at a time): it holds the
    ``buckets`` slices' lowest and highest values, never the points. Give it a series' changes only
    (``StepsBuilder.extend``'s): a batch that repeats the value before it, at the very start of a slice, would
    count that value as in force there, as a change does not."""

    def __init__(self, start: int, end: int, buckets: int) -> None:
        self.start, self.buckets = start, buckets
        self.width = (end - start) / buckets
        self.lows: list[Any] = [None] * buckets
        self.highs: list[Any] = [None] * buckets
        self.slice = 0  # the slice the next point may fall in
        self.opened = False  # whether that slice has taken the value carried in yet
        self.current: Any = None  # the value in force (None: the series has not begun)

    def _open(self, next_time: int | None) -> None:
        """Slice ``self.slice`` starts with the value carried in, unless a point changes it right at its start."""
        if next_time is None or next_time > self.start + self.slice * self.width:
            self.lows[self.slice] = self.highs[self.slice] = self.current
        self.opened = True

    def _reach(self, t: int) -> bool:
        """The slices before the one a point at ``t`` falls in closed (each holding the value carried in unless a
        point changed it), that one opened; False when ``t`` is past the last slice."""
        start, width, buckets = self.start, self.width, self.buckets
        while self.slice < buckets and t >= start + (self.slice + 1) * width:
            if not self.opened:
                self._open(t)
            self.slice += 1
            self.opened = False
        if self.slice == buckets:
            return False
        if not self.opened:
            self._open(t)
        return True

    def extend(self, times: Sequence[int], values: Sequence[Any]) -> None:
        """The points after those before (times never decreasing). A slice's points are found by bisection and
        its lowest and highest taken in one ``min`` and ``max`` each (in C): a slice costs a few calls, whatever
        its points; values with a None among them (not comparable) are taken one by one (``extend_each``)."""
        n = len(times)
        if len(values) != n:
            raise ValueError(f"{n} times for {len(values)} values")
        if not isinstance(values, array) and None in values:
            self.extend_each(times, values)
            return
        lows, highs = self.lows, self.highs
        i = bisect_left(times, self.start)  # (points before the first slice: the value carried in)
        if i:
            self.current = values[i - 1]
        while i < n and self._reach(times[i]):
            k = self.slice
            j = bisect_left(times, self.start + (k + 1) * self.width, i)  # (a later slice's first point, or none)
            part = values[i:j]
            low, high = min(part), max(part)
            if lows[k] is None or low < lows[k]:
                lows[k] = low
            if highs[k] is None or high > highs[k]:
                highs[k] = high
            self.current = values[j - 1]
            i = j

    def extend_each(self, times: Sequence[int], values: Sequence[Any]) -> None:
        """``extend``, a point at a time."""
        lows, highs = self.lows, self.highs
        for t, v in zip(times, values, strict=True):
            if t < self.start:
                self.current = v
                continue
            if not self._reach(t):
                return
            k = self.slice
            low, high = lows[k], highs[k]
            lows[k] = v if low is None or v < low else low
            highs[k] = v if high is None or v > high else high
            self.current = v

    def result(self, until: int | None = None) -> tuple[list[Any], list[Any]]:
        """The envelope, the slices after the last point holding the value carried in, up to ``until``."""
        lows, highs = list(self.lows), list(self.highs)
        for k in range(self.slice, self.buckets):
            if k > self.slice or not self.opened:
                lows[k] = highs[k] = self.current
        for k in range(self.buckets):
            if until is not None and self.start + k * self.width > until:  # after the last batch: nothing
                lows[k] = highs[k] = None
        return lows, highs


def runs(series: Steps) -> list[tuple[int, Any]]:
    """(start time, value) of each run of one value: what a lane draws."""
    return list(zip(series.times, series.values, strict=True))


def packed(series: Steps, t0: int) -> dict[str, Any]:
    """For the page: times as differences (the first from ``t0``), so the JSON stays small. A line's int64
    arrays become text only as the page's JSON is written (``Ints``, ``json_pieces``)."""
    if isinstance(series.values, array):
        return {"t": Ints(series.times, t0), "v": Ints(series.values)}
    return {"t": list(map(sub, series.times, chain((t0,), series.times))), "v": list(series.values)}


class Ints:
    """Ints written into the page's JSON as an array when it is written, never held as a list of int objects;
    with ``start``, their differences (the first from ``start``)."""

    def __init__(self, values: Iterable[int], start: int | None = None) -> None:
        self.values, self.start = values, start

    def text(self) -> str:
        """``[1,2,3]`` (``int_list_text``: in C where its compiled twin runs and the ints are an int64 array)."""
        compiled = INT_LIST_TEXT.compiled
        if compiled is not None and isinstance(self.values, array) and _int64s(self.values):
            with suppress(OverflowError):  # (a start beyond int64: the pure twin)
                return str(compiled(self.values, self.start))
        return int_list_text(self.values, self.start)


def int_list_text(values: Iterable[int], start: int | None) -> str:
    """``values`` as a JSON array without spaces, or with ``start`` their differences (the first from ``start``):
    a list's repr without its spaces (ints hold none). The pure twin of
    ``metalog.analysis.outputs.compiled.report_series.int_list_text`` (which takes an int64 array)."""
    ints = list(values)
    if start is not None:
        ints = list(map(sub, ints, chain((start,), ints)))
    return repr(ints).replace(" ", "")


_NESTED = (Ints, dict, list, tuple)  # what ``json_pieces`` writes a piece at a time (a list's types are found in C)


def json_pieces(value: Any) -> Iterator[str]:
    """``json.dumps(value, separators=(",", ":"))``'s text in pieces, ``Ints`` written where they are: the page's
    data for a cluster is written without its series ever held as lists."""
    if isinstance(value, Ints):
        yield value.text()
    elif isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield f"{',' if i else ''}{json.dumps(key)}:"
            yield from json_pieces(item)
        yield "}"
    elif isinstance(value, (list, tuple)) and any(issubclass(t, _NESTED) for t in set(map(type, value))):
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ","
            yield from json_pieces(item)
        yield "]"
    else:
        yield json.dumps(value, separators=(",", ":"))


# the compiled twins (None: the pure functions run), in the "analysis" core
M4_KEPT = core.register_twin("analysis", "metalog.analysis.outputs.compiled.report_series", "m4_kept", m4_kept)
INT_LIST_TEXT = core.register_twin("analysis", "metalog.analysis.outputs.compiled.report_series", "int_list_text",
                                   int_list_text)
