"""A growth count's columns as they travel (``GrowthPart``), and the parts of one log joined (``joined``): what the
Spark engine's range tasks count of their ranges, each through its replay's own scan (``growth_count.GrowthCount``
fed by a tee), and the driver joins into its cluster's count, as one scan of the whole log would have counted it.

A range holds the batches whose base offsets it holds (``engines.parallel``): the ranges of a log, in order, are its
batches once each, in order, so their counts' rows, one after the other, are the whole log's, but where a minute
straddles two ranges (its batches at the end of one and the start of the next: one count's minute, two parts'),
and but for each part's mark of its first batch (a count marks its log's first batch, control or not: only the
first part's is the log's). ``joined`` sums such a minute's rows, in the count's order of a minute's types, where
the minutes come in order (each once, as ``growth.counted_growth`` then takes them, as they are); where they do not
(the log's time steps back) it keeps the parts' rows one after the other, which ``counted_growth`` sums by minute
and type as it sums a minute the log came back to.

A part is written to a file and read back as its columns (``write_part``, ``read_part``: int64s in this machine's
byte order, each column whole), so that a Spark task hands it to another through the run's scratch directory, not
through the JVM.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from itertools import pairwise
from pathlib import Path

from metalog.analysis.outputs.growth_count import GrowthCount, TypeOrder
from metalog.replay.quorum import BatchMark

__all__ = ["GrowthPart", "joined", "read_part", "write_part"]


def _ints() -> array[int]:
    return array("q")


@dataclass
class GrowthPart:
    """A closed count's columns (``GrowthCount``'s, by its names): a row per minute, a row per minute and type,
    and the marks of the batches ``replay.quorum.quorum_history`` reads (the first batch's and the control
    batches', as (base offset, max timestamp, is control))."""

    minutes: array[int] = field(default_factory=_ints)
    minute_batches: array[int] = field(default_factory=_ints)
    minute_bytes: array[int] = field(default_factory=_ints)
    type_minutes: array[int] = field(default_factory=_ints)
    type_keys: array[int] = field(default_factory=_ints)
    type_records: array[int] = field(default_factory=_ints)
    type_bytes: array[int] = field(default_factory=_ints)
    marks: list[BatchMark] = field(default_factory=list)

    @classmethod
    def of(cls, count: GrowthCount) -> GrowthPart:
        """``count``'s columns, once it is closed (``close`` here: its last minute into them)."""
        count.close()
        return cls(*(getattr(count, f.name) for f in fields(cls)))


def write_part(path: Path, part: GrowthPart) -> None:
    """``part`` into the file ``path``: its columns' lengths, then each column (the marks as three: base offsets,
    max timestamps, is control)."""
    marks = [array("q", [mark[i] for mark in part.marks]) for i in range(3)]
    columns = [getattr(part, f.name) for f in fields(GrowthPart) if f.name != "marks"]
    with open(path, "wb") as f:
        array("q", [len(c) for c in (*columns, *marks)]).tofile(f)
        for column in (*columns, *marks):
            column.tofile(f)


def read_part(path: Path) -> GrowthPart:
    """The part ``write_part`` wrote in ``path``; a file that is not one (its lengths not its size: cut, grown, or
    another file) is a ValueError naming it, before anything its lengths say is made."""
    names = [f.name for f in fields(GrowthPart) if f.name != "marks"]
    data = memoryview(path.read_bytes())
    head = array("q")
    head.frombytes(data[:min(len(data) // 8, len(names) + 3) * 8])
    lengths = list(head)
    if len(lengths) != len(names) + 3 or min(lengths) < 0 or len(set(lengths[len(names):])) != 1 \
            or 8 * (len(lengths) + sum(lengths)) != len(data):
        raise ValueError(f"{path}: not a growth part (its column lengths {lengths} are not its {len(data)} bytes)")
    columns, at = [], 8 * len(lengths)
    for n in lengths:
        column = array("q")
        column.frombytes(data[at:at + 8 * n])
        columns.append(column)
        at += 8 * n
    bases, timestamps, controls = columns[len(names):]
    part = GrowthPart(marks=list(zip(bases, timestamps, map(bool, controls), strict=True)))
    for name, column in zip(names, columns, strict=False):
        setattr(part, name, column)
    return part


def joined(parts: Sequence[GrowthPart], order: TypeOrder | None) -> GrowthPart:
    """The count of a log from its ranges' counts, in log order (see the module); ``order``: the counts' order of a
    minute's types (``GrowthCount``'s ``type_order``)."""
    counted = [part for part in parts if len(part.minutes)]  # (a range may hold no batch)
    out = GrowthPart()
    in_order = all(_in_order(part) for part in counted) and \
        all(a.minutes[-1] <= b.minutes[0] for a, b in pairwise(counted))
    for part in counted:
        _add_marks(out, part)
        if in_order and len(out.minutes) and out.minutes[-1] == part.minutes[0]:
            _append(out, _straddled(out, part, order))
        else:
            _append(out, part)
    return out


def _in_order(part: GrowthPart) -> bool:
    """Each minute once, in order."""
    return all(a < b for a, b in pairwise(part.minutes))


def _add_marks(out: GrowthPart, part: GrowthPart) -> None:
    """``part``'s marks after ``out``'s: its control batches', and its first batch's only where it is the log's."""
    for mark in part.marks:
        if mark[2] or not out.marks:
            out.marks.append(mark)


def _append(out: GrowthPart, part: GrowthPart) -> None:
    for f in fields(GrowthPart):
        if f.name != "marks":
            getattr(out, f.name).extend(getattr(part, f.name))


def _straddled(out: GrowthPart, part: GrowthPart, order: TypeOrder | None) -> GrowthPart:
    """``part`` but its first minute, which is ``out``'s last: that minute's rows taken off ``out``'s ends, and
    ``part``'s added to them (in ``order`` of their types, as a count orders a minute's), in the part's place. The
    minutes come in order: ``out``'s last minute's rows of types are its last rows of that minute."""
    minute = part.minutes[0]
    tail = _run(reversed(out.type_minutes), minute)
    head = _run(part.type_minutes, minute)
    sums: dict[int, list[int]] = {}
    for keys, records, sizes, rows in ((out.type_keys, out.type_records, out.type_bytes,
                                        range(len(out.type_keys) - tail, len(out.type_keys))),
                                       (part.type_keys, part.type_records, part.type_bytes, range(head))):
        for i in rows:
            found = sums.setdefault(keys[i], [0, 0])
            found[0] += records[i]
            found[1] += sizes[i]
    batches, size = out.minute_batches.pop(), out.minute_bytes.pop()
    del out.minutes[-1:]
    for column in (out.type_minutes, out.type_keys, out.type_records, out.type_bytes):
        del column[len(column) - tail:]
    ranked = sorted(sums, key=order)
    return GrowthPart(
        array("q", [minute]) + part.minutes[1:],
        array("q", [batches + part.minute_batches[0]]) + part.minute_batches[1:],
        array("q", [size + part.minute_bytes[0]]) + part.minute_bytes[1:],
        array("q", [minute] * len(ranked)) + part.type_minutes[head:],
        array("q", ranked) + part.type_keys[head:],
        array("q", [sums[key][0] for key in ranked]) + part.type_records[head:],
        array("q", [sums[key][1] for key in ranked]) + part.type_bytes[head:])


def _run(column: Iterable[int], value: int) -> int:
    """How many of ``column``'s first items are ``value``."""
    n = 0
    for item in column:
        if item != value:
            break
        n += 1
    return n
