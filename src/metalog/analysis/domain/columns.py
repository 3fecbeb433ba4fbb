"""Rows of the analysis' tables as typed columns: what crosses between the per-batch step, the engines and the
writers, never a dict per row.

A ``Chunk`` is some rows of one table of one cluster, a column per column of the table's schema but the cluster
(the same for every row). An int or time column is an ``array('q')`` (int64; times in epoch ms); a text column
is a ``Coded`` one (codes into a small vocabulary: phases, versions, directory ids) or a list of ``str`` (free text:
an event's detail, a topic's name). Arrow takes the arrays without a copy (``outputs.layout.arrow_batch``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import eq
from typing import Any, TypeAlias

from metalog.analysis.domain.schema import Kind, Table

Ints: TypeAlias = "array[int]"  # array('q'): int64


@dataclass(frozen=True)
class Coded:
    """A text column as ``codes`` into ``names`` (each code is an index of ``names``)."""

    codes: Ints
    names: Sequence[str]

    def texts(self) -> list[str]:
        names = self.names
        return [names[c] for c in self.codes]

    def __len__(self) -> int:
        return len(self.codes)


ColumnData: TypeAlias = "array[int] | Coded | list[str]"


def ints(values: Iterable[int] = ()) -> Ints:
    return array("q", values)


def int64s(data: Any) -> Ints:
    """An Arrow int64 array without nulls (this module imports no pyarrow) as an ``array('q')``: one copy of its
    buffer, no Python int per value."""
    out = array("q")
    if len(data):
        buffer = memoryview(data.buffers()[1]).cast("B")
        out.frombytes(buffer[data.offset * 8:(data.offset + len(data)) * 8])
    return out


@dataclass(frozen=True)
class Chunk:
    """Rows of ``table`` for ``cluster``: ``columns`` in the order of ``table.values``, the table's columns but the
    cluster (all of one length)."""

    table: Table
    cluster: str
    columns: tuple[ColumnData, ...]

    def __post_init__(self) -> None:
        if len(self.columns) != len(self.table.values):
            raise ValueError(f"{self.table.name}: {len(self.table.values)} columns expected, got {len(self.columns)}")
        if len({len(c) for c in self.columns}) > 1:
            raise ValueError(f"{self.table.name}: columns of different lengths")

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def column(self, name: str) -> ColumnData:
        for column, data in zip(self.table.values, self.columns, strict=True):
            if column.name == name:
                return data
        raise KeyError(f"{self.table.name} has no column {name!r} (the cluster is Chunk.cluster)")

    def ints(self, name: str) -> Ints:
        data = self.column(name)
        if not isinstance(data, array):
            raise TypeError(f"{self.table.name}.{name} is a text column")
        return data

    def texts(self, name: str) -> list[str]:
        data = self.column(name)
        if isinstance(data, array):
            raise TypeError(f"{self.table.name}.{name} is an int column")
        return data.texts() if isinstance(data, Coded) else data

    def row(self, i: int) -> tuple[int | str, ...]:
        """Row ``i``'s values in the order of ``table.values`` (the cluster left out)."""
        return tuple(data[i] if not isinstance(data, Coded) else data.names[data.codes[i]] for data in self.columns)

    def values(self) -> list[list[int] | list[str]]:
        """Every column as a list of Python values, in the order of ``table.values``."""
        return [list(data) if isinstance(data, array) else self.texts(c.name)
                for c, data in zip(self.table.values, self.columns, strict=True)]

    def tuples(self) -> Iterator[tuple[int | str, ...]]:
        """The rows as tuples in the order of the table's columns, the cluster's among them."""
        cluster, at = self.cluster, self.table.cluster_at
        return ((*row[:at], cluster, *row[at:]) for row in zip(*self.values(), strict=True))


def from_rows(table: Table, cluster: str, rows: Sequence[Sequence[int | str]]) -> Chunk:
    """A chunk of ``rows``, each in the order of ``table.values`` (few rows: a Python loop)."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in table.values]
    return Chunk(table, cluster, tuple(list(map(str, values)) if column.kind is Kind.TEXT else ints(map(int, values))
                                       for column, values in zip(table.values, columns, strict=True)))


def empty(table: Table, cluster: str) -> Chunk:
    return Chunk(table, cluster, tuple(ints() if c.kind is not Kind.TEXT else [] for c in table.values))


def concat(chunks: Sequence[Chunk]) -> Chunk:
    """One chunk of several of one table and one cluster, in order: int columns joined as arrays (a copy of their
    bytes), a text column kept coded where each chunk's vocabulary is a start of the longest one's (the step's
    metadata versions grow), else decoded."""
    if not chunks:
        raise ValueError("no chunks to join")
    first = chunks[0]
    if any(c.table is not first.table or c.cluster != first.cluster for c in chunks):
        raise ValueError("chunks of one table and one cluster only")
    columns: list[ColumnData] = []
    for i, column in enumerate(first.table.values):
        parts = [c.columns[i] for c in chunks]
        if column.kind is not Kind.TEXT:
            columns.append(_joined(c.ints(column.name) for c in chunks))
            continue
        coded = [p for p in parts if isinstance(p, Coded)]
        names = max((p.names for p in coded), key=len, default=())
        if len(coded) == len(parts) and all(_starts(p.names, names) for p in coded):
            columns.append(Coded(_joined(p.codes for p in coded), names))
        else:
            columns.append([t for c in chunks for t in c.texts(column.name)])
    return Chunk(first.table, first.cluster, tuple(columns))


def _joined(parts: Iterable[Ints]) -> Ints:
    out = ints()
    for part in parts:
        out.extend(part)  # (an array's bytes, copied at once)
    return out


def _starts(names: Sequence[str], longer: Sequence[str]) -> bool:
    """Whether ``names`` is ``longer``'s start (the same object: at once)."""
    return names is longer or (len(names) <= len(longer) and all(map(eq, names, longer)))


class Gathered:
    """A sink of chunks that hands ``sink`` each table's chunks joined (``concat``), once they hold ``rows`` rows
    or more, and at ``flush``: fewer, larger chunks for the writers, whose cost is partly per chunk, while the
    per-batch loop hands over small ones (what it holds while it runs stays small). Each table's rows keep their
    order; one cluster's chunks only."""

    def __init__(self, sink: Callable[[Chunk], object], rows: int) -> None:
        self.sink, self.rows = sink, rows
        self._held: dict[str, list[Chunk]] = {}
        self._counts: dict[str, int] = {}

    def __call__(self, chunk: Chunk) -> None:
        name = chunk.table.name
        held = self._held.setdefault(name, [])
        held.append(chunk)
        self._counts[name] = self._counts.get(name, 0) + len(chunk)
        if self._counts[name] >= self.rows:
            self._hand(name)

    def flush(self) -> None:
        """The chunks held, each table's joined (in the order their tables first came)."""
        for name in list(self._held):
            self._hand(name)

    def _hand(self, name: str) -> None:
        held = self._held.pop(name)
        self._counts.pop(name)
        self.sink(held[0] if len(held) == 1 else concat(held))
