"""A message dissected byte by byte, as a protocol analyser shows it.

``explain`` parses with the construct reference and records every span it reads: fixed-width fields,
length and count prefixes, array elements, tagged-section counts, tags and sizes, unknown tagged
data. Struct rows (an array element, an inline struct) own no bytes; every other row owns the bytes
in its ``hex``, so the rows' hex in order is the input. On bad input the rows decoded so far are
followed by one error row holding the bytes left.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from metalog.codec import reference
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.errors import DecodeError

__all__ = ["ExplainRow", "explain", "render_table"]

HEX_WIDTH = 32  # hex digits shown before eliding the middle
VALUE_WIDTH = 60
_ROLE_LABELS = {"length": "length", "count": "count", "tag": "tag", "size": "size", "presence": "presence"}


@dataclass(frozen=True)
class ExplainRow:
    offset: int  # byte offset of the span
    length: int  # bytes in the span (a struct row: the struct's whole span)
    path: str  # field path, e.g. "VotersRecord.Voters[0].Endpoints[1].Host"
    type: str  # Kafka type of the bytes: int32, uuid, string, uvarint (a prefix), a struct name, error
    hex: str  # the bytes this row owns ("" for a struct row: its children own them)
    value: str  # decoded value, readable
    role: str = "value"  # value | length | count | tag | size | presence | struct | error
    depth: int = 0  # nesting below the message, for indentation


def _depth(path: str) -> int:
    return max(path.count(".") - 1, 0) + path.count("[")


_RESERVED = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}  # the reserved directory ids


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Uuid):
        reserved = _RESERVED.get(value)
        return f"{value} ({reserved})" if reserved else str(value)
    if isinstance(value, bytes):
        return f"{len(value)} bytes"
    if isinstance(value, str):
        return repr(value)
    return str(value)


class _Recorder:
    """What the reference codec calls back while it parses."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.rows: list[ExplainRow] = []

    def row(self, start: int, end: int, path: str, kind: str, value: Any, role: str) -> int:
        raw, shown = ("", "") if role == "struct" else (self.data[start:end].hex(), _show(value))
        self.rows.append(ExplainRow(start, end - start, path, kind, raw, shown, role, _depth(path)))
        return len(self.rows) - 1

    def close(self, index: int, end: int) -> None:
        row = self.rows[index]
        self.rows[index] = replace(row, length=end - row.offset)


def explain(name: str, version: int, data: bytes | bytearray | memoryview) -> list[ExplainRow]:
    """Every span of ``data`` decoded as message ``name`` at ``version``, in byte order."""
    raw = bytes(data)
    recorder = _Recorder(raw)
    try:
        reference.decode(name, raw, version, recorder=recorder)
    except DecodeError as e:
        done = max((r.offset + r.length for r in recorder.rows if r.role != "struct"), default=0)
        where = e.field or name
        at = "" if e.offset is None else f" (at byte {e.offset})"
        recorder.rows.append(ExplainRow(done, len(raw) - done, where, "error", raw[done:].hex(),
                                        f"{e.reason}{at}", "error", _depth(where)))
    return recorder.rows


def _elide(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = (width - 3) // 2
    return f"{text[:keep]}...{text[len(text) - keep:]}"


def _label(row: ExplainRow) -> str:
    name = row.path.rsplit(".", 1)[-1]
    if row.role in _ROLE_LABELS:
        name += f" ({_ROLE_LABELS[row.role]})"
    elif row.role == "error":
        name = f"!! {name}"
    return "  " * row.depth + name


def render_table(rows: list[ExplainRow]) -> str:
    """The rows as an aligned text table; long hex and values are elided in the middle."""
    header = ("offset", "len", "field", "type", "hex", "value")
    cells = [header] + [(str(r.offset), str(r.length), _label(r), r.type, _elide(r.hex, HEX_WIDTH),
                         _elide(r.value, VALUE_WIDTH)) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [row[0].rjust(widths[0]), row[1].rjust(widths[1])]
        parts += [cell.ljust(w) for cell, w in zip(row[2:], widths[2:], strict=True)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)
