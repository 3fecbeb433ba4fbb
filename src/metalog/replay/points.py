"""Points of a log: how a person names one (``Point``: an offset, a time, ``start`` or ``end``), and the state
published there.

Every verb names a point the same way, one POINT grammar that ``parse_point`` reads: ``--at POINT`` for a state
(replay, shell and its ``at``, snapshot create), ``--from POINT`` / ``--to POINT`` for a range (diff, history,
log dump, log follow's start). A plain integer is an offset; a time is ISO 8601 or epoch milliseconds written
``<N>ms`` (never a plain integer, which would be an offset); ``start`` is the empty state before the log (a
range: its first offset), ``end`` its last offset. Resolving a point against a log is the replay's
(``MetadataHistory.state_at_point``, ``changes.offset_range``).

Kafka's loader publishes a state at the end of every batch after which no transaction is open, just before a
BeginTransactionRecord inside a batch, and at a snapshot's end (see ``metalog.state.loader``). The state *at*
offset N is the one published last at or before N; a time T means the last batch whose timestamp is at or
before T. ``ReplayResult`` says which offset was asked for, which published state is shown, and why they
differ, in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from metalog.codec.schema import INT_RANGES
from metalog.errors import PointError
from metalog.state.image import MetadataImage

TIME_FORMS = "ISO 8601 (2024-05-01T10:32:00Z, or +02:00; naive means UTC) or epoch milliseconds (1714559520000[ms])"
POINT_FORMS = ("an offset (a plain integer), a time (ISO 8601 such as 2024-05-01T10:32:00Z, +02:00 or naive "
               "meaning UTC, or epoch milliseconds written 1714559520000ms), start or end")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
# an offset is an int64, and so is a timestamp (epoch milliseconds); a datetime holds the years 1 to 9999 of them
INT64_MIN, INT64_MAX = INT_RANGES["int64"]
_DATETIME_MIN_MS = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // _MS
_DATETIME_MAX_MS = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // _MS


def parse_time(text: str) -> int:
    """Epoch milliseconds from ISO 8601 (``Z``, an offset, or naive meaning UTC) or epoch milliseconds, with or
    without an ``ms`` suffix. Ten digits without ``ms`` look like epoch seconds: refused, with the likely
    meaning (a time in seconds taken as milliseconds would name a day in 1970 and silently show nothing)."""
    s = text.strip()
    if (m := re.fullmatch(r"([-+]?[0-9]+)(ms)?", s)) is not None:
        value = _int64(m[1], f"{_short(s)}: no timestamp is that far from 1970 (epoch milliseconds are an int64, "
                             f"{INT64_MIN} to {INT64_MAX})")
        if m[2] is None and 10**9 <= value < 10**10:
            raise PointError(f"{s} looks like seconds: did you mean {value * 1000} (epoch milliseconds)? Write "
                             f"{s}ms if you mean milliseconds")
        return value
    moment = _iso(s)
    if moment is None:
        raise PointError(f"not a time: {_short(text)!r} (give {TIME_FORMS})")
    return moment


def _short(text: str) -> str:
    """``text`` as an error shows it: a long one cut, with its length."""
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text):,} characters)"


def _int64(digits: str, beyond: str) -> int:
    """``digits`` as an int; ``beyond`` is the error when no int64 holds it (checked by length first: int()
    refuses 4,300 digits and more)."""
    value = int(digits) if len(digits) <= 21 else None
    if value is None or not INT64_MIN <= value <= INT64_MAX:
        raise PointError(beyond)
    return value


def _iso(text: str) -> int | None:
    """Epoch milliseconds of an ISO 8601 time (naive means UTC), None for text that is not one."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MS


@dataclass(frozen=True)
class Point:
    """A point of a log as a person named it: an offset, a time (epoch milliseconds), ``start`` or ``end``."""

    kind: str  # "offset" | "time" | "start" | "end"
    value: int | None = None  # the offset, or the time in epoch milliseconds

    def __str__(self) -> str:
        if self.kind == "time":
            return format_time(self.value)
        return self.kind if self.value is None else str(self.value)


START, END = Point("start"), Point("end")


def parse_point(text: str) -> Point:
    """The POINT grammar, the one every verb reads: a plain integer is an offset, ``<N>ms`` or ISO 8601 a time,
    ``start`` or ``end``. Anything else is a PointError naming the forms."""
    s = text.strip()
    if s in ("start", "end"):
        return START if s == "start" else END
    if re.fullmatch("[-+]?[0-9]+", s):
        return Point("offset", _int64(s, f"{_short(s)}: no offset is that far (offsets are an int64, "
                                          f"{INT64_MIN} to {INT64_MAX})"))
    if s.endswith("ms") and re.fullmatch("[-+]?[0-9]+", s[:-2]):
        return Point("time", parse_time(s))
    moment = _iso(s) if re.match("[-+]?[0-9]", s) else None
    if moment is None:
        raise PointError(f"not a point: {_short(text)!r} (give {POINT_FORMS})")
    return Point("time", moment)


def format_time(ms: int | None) -> str:
    """``2023-11-14T22:13:20.000Z``; ``-`` for no time. Never raises: a timestamp no datetime can hold (before the
    year 1 or after 9999, which a batch may carry) is its epoch milliseconds, ``9223372036854775807ms``, as
    every TIME option reads it back."""
    if ms is None:
        return "-"
    at = utc_datetime(ms)
    return f"{ms}ms" if at is None else at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_datetime(ms: int) -> datetime | None:
    """The UTC datetime of epoch milliseconds; None outside the years 1 to 9999 that a datetime holds."""
    if not _DATETIME_MIN_MS <= ms <= _DATETIME_MAX_MS:
        return None
    return _EPOCH + ms * _MS


@dataclass(frozen=True)
class BatchSpan:
    """One batch of the log, as far as points in time care: its offsets, its max timestamp, its kind."""

    base_offset: int
    last_offset: int
    timestamp: int
    is_control: bool = False

    def __str__(self) -> str:
        return f"{self.base_offset}..{self.last_offset}"


@dataclass(frozen=True)
class StartPoint:
    """Where a replay starts: a snapshot or image holding the state through ``offset`` (-1: empty)."""

    kind: str  # "empty" | "checkpoint" | "image"
    offset: int
    path: Path | None = None


@dataclass(frozen=True)
class ReplayResult:
    """The state published at or before an offset asked for."""

    image: MetadataImage
    offset: int  # the published state shown: Kafka's loader published ``image`` at this offset
    requested: int  # the offset asked for
    batch: BatchSpan | None  # the batch holding ``requested`` (None: not in the log, e.g. a snapshot below it)
    timestamp: int | None  # the max timestamp of the batch holding ``offset``
    start: StartPoint
    records_replayed: int
    transaction_start: int | None = None  # a transaction open at ``requested`` began here; ``image`` lacks it

    @property
    def open_transaction(self) -> bool:
        return self.transaction_start is not None

    def note(self, shown: str = "the state shown is the one published at") -> str | None:
        """Why the state shown is not the one right after ``requested``, in one line (None when it is)."""
        if self.transaction_start is not None:
            return (f"a transaction open since offset {self.transaction_start} is not committed at "
                    f"{self.requested}; {shown} {self.offset}")
        if self.offset != self.requested and self.batch is not None:
            return f"offset {self.requested} is inside batch {self.batch}; {shown} {self.offset}"
        return None
