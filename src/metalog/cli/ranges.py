"""The offset ranges and times several verbs take (``--offsets A..B``, ``--since``/``--until TIME``)."""

from __future__ import annotations

import re

from metalog.errors import MetalogError

OFFSETS_FORM = "A..B, A.. or ..B (offsets, both ends included)"


def parse_offsets(text: str) -> tuple[int | None, int | None]:
    """``A..B``, ``A..``, ``..B`` or ``A`` (one offset): (first, last), None for an open end."""
    m = re.fullmatch(r"\s*(\d*)\s*(\.\.)?\s*(\d*)\s*", text)
    if m is None or (not m[1] and not m[3]) or (m[2] is None and m[3]):
        raise MetalogError(f"--offsets {text!r}: give {OFFSETS_FORM}")
    first = int(m[1]) if m[1] else None
    last = (int(m[3]) if m[3] else None) if m[2] else first
    if first is not None and last is not None and first > last:
        raise MetalogError(f"--offsets {text!r}: {first} is after {last}")
    return first, last


def parse_time_option(option: str, text: str | None) -> int | None:
    """A TIME option's epoch milliseconds (the shared time parser), its error naming the option."""
    from metalog.errors import PointError
    from metalog.replay.points import parse_time

    if text is None:
        return None
    try:
        return parse_time(text)
    except PointError as e:
        raise PointError(f"{option}: {e}") from None
