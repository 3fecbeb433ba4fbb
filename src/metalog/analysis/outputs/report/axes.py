"""report.png's axes: the ticks of a count axis and of a time axis (UTC), and their labels. Pure arithmetic on
epoch milliseconds and ints, no drawing (``png`` draws them).

A count axis runs from 0 to a "nice" top: a multiple of 1, 2, 2.5 or 5 times a power of ten, with at most
``MAX_TICKS`` steps. A time axis gets ticks at round UTC times (seconds, minutes, hours, days, months or years),
the finest step that gives at most ``MAX_TIME_TICKS`` ticks; each tick is labelled with what changes at that
step (a time of day, or the day at midnight; a day; a month; a year), and the axis carries the rest once, as
its ``offset`` (the date of the axis' end, as matplotlib's concise date formatter does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MAX_TICKS = 6
MAX_TIME_TICKS = 7
SECOND, MINUTE, HOUR, DAY = 1000, 60_000, 3_600_000, 86_400_000
# fixed steps (ms), finest first; months and years follow them (calendar steps)
FIXED_STEPS = (SECOND, 2 * SECOND, 5 * SECOND, 10 * SECOND, 15 * SECOND, 30 * SECOND, MINUTE, 2 * MINUTE,
               5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
               DAY, 2 * DAY, 7 * DAY, 14 * DAY)
MONTH_STEPS = (1, 2, 3, 6)
YEAR_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST_MS = int((datetime(100, 1, 1, tzinfo=UTC) - _EPOCH).total_seconds() * 1000)  # what the axis can draw
LAST_MS = int((datetime(9900, 1, 1, tzinfo=UTC) - _EPOCH).total_seconds() * 1000)


def clamped(ms: int) -> int:
    """A batch time on the axis: before year 100 or after 9900 (any int64 is a batch time) it is drawn at that
    end (a calendar's dates end there)."""
    return min(max(ms, FIRST_MS), LAST_MS)


def moment(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=clamped(ms))


def value_ticks(top: float) -> list[int]:
    """The ticks of a count axis from 0 showing values up to ``top``: 0, s, 2s, ... to the first at or above it,
    the step a whole 1, 2, 2.5 or 5 times a power of ten (at least 1: the values are counts)."""
    if top <= 0:
        return [0, 1]
    magnitude = max(10 ** math.floor(math.log10(top / MAX_TICKS)), 1)
    step = next(int(f * magnitude) for f in (1, 2, 2.5, 5, 10)
                if float(f * magnitude).is_integer() and top / (f * magnitude) <= MAX_TICKS)
    last = -(-top // step)  # (the quotient rounded up; exact for an int top, where top / step drops the ones past 2^53)
    return [i * step for i in range(int(last) + 1)]


def value_label(value: int) -> str:
    return str(value) if abs(value) < 10**7 else f"{value:.2e}"


@dataclass(frozen=True)
class TimeTicks:
    """A time axis' ticks (epoch ms) and labels, and the ``offset`` written once at its end."""

    times: list[int]
    labels: list[str]
    offset: str


def time_ticks(start: int, end: int, most: int = MAX_TIME_TICKS) -> TimeTicks:
    """Ticks at round UTC times within [start, end], the finest step giving at most ``most`` of them."""
    start, end = clamped(start), max(clamped(end), clamped(start) + SECOND)
    for step in FIXED_STEPS:
        first = -(-start // step) * step
        if (end - first) // step + 1 <= most:
            times = list(range(first, end + 1, step))
            return TimeTicks(times, [_fixed_label(t, step) for t in times], _offset(end, step))
    for months in (*MONTH_STEPS, *(12 * y for y in YEAR_STEPS)):
        times = _calendar(start, end, months, most)
        if len(times) <= most:
            years = months >= 12
            labels = [moment(t).strftime("%Y" if years else "%Y-%b") for t in times]
            return TimeTicks(times, labels, "")
    return TimeTicks([start, end], [moment(start).strftime("%Y"), moment(end).strftime("%Y")], "")


def _fixed_label(t: int, step: int) -> str:
    at = moment(t)
    if step >= DAY or t % DAY == 0:
        return at.strftime("%b-%d")
    return at.strftime("%H:%M:%S" if step < MINUTE else "%H:%M")


def _offset(end: int, step: int) -> str:
    at = moment(end)
    return at.strftime("%Y-%b" if step >= DAY else "%Y-%b-%d")


def _calendar(start: int, end: int, months: int, most: int) -> list[int]:
    """First-of-month UTC times within [start, end] whose month index is a multiple of ``months``."""
    at = moment(start)
    index = at.year * 12 + at.month - 1
    if (at.day, at.hour, at.minute, at.second, at.microsecond) != (1, 0, 0, 0, 0):
        index += 1
    index = -(-index // months) * months
    times: list[int] = []
    while True:
        year, month = divmod(index, 12)
        if year > 9899:
            return times
        t = int((datetime(year, month + 1, 1, tzinfo=UTC) - _EPOCH).total_seconds() * 1000)
        if t > end:
            return times
        times.append(t)
        if len(times) > most:
            return times
        index += months
