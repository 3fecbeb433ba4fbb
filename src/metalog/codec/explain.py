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
from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.runtime import read_uvarint
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.errors import DecodeError, Malformed

__all__ = ["ExplainRow", "explain", "explain_framed", "render_table"]
FRAME_VERSION = 1  # (metalog.codec.framing's: the one frame version of a metadata record value)

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

    def row(self, span: reference.Span) -> int:
        start, end, path, kind, value, role = span
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


def explain_framed(data: bytes | bytearray | memoryview) -> list[ExplainRow]:
    """A metadata record value as the log stores it: its frame (frame version, apiKey, version: unsigned
    varints), then the record's body at its offsets in the value; an error row where the frame is wrong."""
    raw = bytes(data)
    rows: list[ExplainRow] = []
    pos = 0
    frame: list[int] = []
    for what in ("frame version", "apiKey", "version"):
        try:
            value, end = read_uvarint(raw, pos)
        except (Malformed, IndexError):
            return [*rows, _error(raw, pos, what, "truncated or malformed unsigned varint")]
        frame.append(value)
        problem = _frame_problem(what, frame)
        shown = f"{value} ({METADATA_BY_API_KEY[value].name})" if what == "apiKey" and problem is None else str(value)
        rows.append(ExplainRow(pos, end - pos, what, "uvarint", raw[pos:end].hex(), shown))
        if problem is not None:
            return [*rows, _error(raw, end, what, problem)]
        pos = end
    name = METADATA_BY_API_KEY[frame[1]].name
    body = explain(name, frame[2], raw[pos:])
    return rows + [replace(r, offset=r.offset + pos) for r in body]


def _frame_problem(what: str, frame: list[int]) -> str | None:
    """What is wrong with the frame read so far, or None."""
    if what == "frame version" and frame[0] != FRAME_VERSION:
        return f"unknown frame version {frame[0]} (only frame version {FRAME_VERSION} is supported)"
    if what == "apiKey" and frame[1] not in METADATA_BY_API_KEY:
        return f"unknown metadata record type (apiKey) {frame[1]}"
    if what == "version":
        spec = METADATA_BY_API_KEY[frame[1]]
        if frame[2] not in spec.valid_versions:
            return f"unsupported version {frame[2]} of {spec.name} (valid versions: {spec.valid_versions})"
    return None


def _error(raw: bytes, at: int, where: str, reason: str) -> ExplainRow:
    return ExplainRow(at, len(raw) - at, where, "error", raw[at:].hex(), reason, "error")


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
