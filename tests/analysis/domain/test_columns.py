"""Chunks joined (``columns.concat``) and gathered (``columns.Gathered``): whatever the cuts, each table's rows
come out whole and in order, in chunks of at least the rows asked for (the last ones at ``flush``), text columns
coded where their vocabularies allow it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.columns import Chunk, Coded, Gathered, concat, ints
from metalog.analysis.domain.schema import EVENTS, TIMELINE
from metalog.analysis.domain.step import version_names

LEVELS = st.integers(0, 30)  # metadata.version levels: a chunk's vocabulary runs up to its highest


def timeline_chunk(levels: list[int], at: int) -> Chunk:
    """A timeline chunk of ``len(levels)`` rows: offsets from ``at``, its metadata_version coded by the levels
    (the step's vocabulary: its own per chunk, up to the chunk's highest level)."""
    n = len(levels)
    columns: list[object] = []
    for i, column in enumerate(TIMELINE.values):
        if column.name == "metadata_version":
            columns.append(Coded(ints(levels), version_names(ints(levels))))
        elif column.kind.value == "text":
            columns.append(Coded(ints([0] * n), ("a", "b")))
        else:
            columns.append(ints(range(at + i, at + i + n)))
    return Chunk(TIMELINE, "c", tuple(columns))  # type: ignore[arg-type]


def event_chunk(n: int, at: int) -> Chunk:
    columns: list[object] = []
    for column in EVENTS.values:
        if column.name == "event":
            columns.append(Coded(ints([(at + k) % 3 for k in range(n)]), ("x", "y", "z")))
        elif column.kind.value == "text":
            columns.append([f"{column.name} {at + k}" for k in range(n)])
        else:
            columns.append(ints(range(at, at + n)))
    return Chunk(EVENTS, "c", tuple(columns))  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(cuts=st.lists(st.lists(LEVELS, max_size=9), max_size=12), events=st.lists(st.integers(0, 5), max_size=12),
       rows=st.integers(1, 20))
def test_gathered_chunks_hold_each_tables_rows_in_order(cuts: list[list[int]], events: list[int],
                                                        rows: int) -> None:
    """Timeline and events chunks, interleaved as the loop hands them over, come out per table as the same rows
    in the same order; every chunk but a table's last (at ``flush``) holds ``rows`` rows or more, and each is one
    chunk or several joined."""
    handed: list[Chunk] = []
    gathered = Gathered(handed.append, rows)
    sent: dict[str, list[tuple[object, ...]]] = {TIMELINE.name: [], EVENTS.name: []}
    at = 0
    for k in range(max(len(cuts), len(events))):
        for chunk in ([timeline_chunk(cuts[k], at)] if k < len(cuts) else []) + \
                ([event_chunk(events[k], at)] if k < len(events) else []):
            sent[chunk.table.name] += list(chunk.tuples())
            gathered(chunk)
        at += 100
    before = len(handed)
    gathered.flush()
    for name, rows_sent in sent.items():
        mine = [(i, c) for i, c in enumerate(handed) if c.table.name == name]
        assert [row for _, c in mine for row in c.tuples()] == rows_sent
        assert all(len(c) >= rows for i, c in mine if i < before)
        assert sum(1 for i, _ in mine if i >= before) <= 1  # a table's rest, at most one chunk


@given(first=st.lists(LEVELS, min_size=1, max_size=9), second=st.lists(LEVELS, min_size=1, max_size=9))
def test_a_vocabulary_that_grows_stays_coded(first: list[int], second: list[int]) -> None:
    """Two chunks' metadata_version vocabularies, each a start of the longer one: the join keeps the codes over
    the longer one; other vocabularies are decoded. Either way, the texts are each chunk's."""
    a, b = timeline_chunk(first, 0), timeline_chunk(second, 10)
    joined = concat([a, b])
    assert joined.texts("metadata_version") == a.texts("metadata_version") + b.texts("metadata_version")
    column = joined.column("metadata_version")
    assert isinstance(column, Coded)
    assert list(column.names) == version_names(ints(first + second))
    assert joined.ints("last_offset") == a.ints("last_offset") + b.ints("last_offset")

    other = Chunk(TIMELINE, "c", tuple(Coded(c.codes, ("q", "r")) if c is b.column("phase") else c
                                       for c in b.columns))
    mixed = concat([a, other])
    assert mixed.texts("phase") == a.texts("phase") + other.texts("phase")
    assert not isinstance(mixed.column("phase"), Coded)
