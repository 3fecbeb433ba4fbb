"""The per-batch step: its counts, kept from the loader's deltas, equal a full recount of the published image after
every batch, for random histories in random batch shapes (the analysis' records, ``histories.cluster_histories``,
and every record type, ``tests.state.histories``); a step started on a range's start state goes on exactly where
the one before left off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.columns import Chunk, concat
from metalog.analysis.domain.schema import BROKERS, DIRECTORIES, EVENTS, FAILURES, TIMELINE
from metalog.analysis.domain.step import ClusterStep
from metalog.analysis.domain.twins import STEP
from metalog.state import MetadataLoader
from metalog.state.image import EMPTY, MetadataImage
from tests.analysis.domain import recount
from tests.analysis.domain.histories import cluster_histories
from tests.state.histories import histories

HISTORIES = cluster_histories() | cluster_histories() | histories()  # mostly the analysis' records
# the step's twins: the pure one, and the compiled one where it loaded (told each delta in C by the compiled publish)
STEPS = [pytest.param(ClusterStep, id="pure")] + ([] if STEP.loaded is None else [
    pytest.param(STEP.loaded.ClusterStep, id="compiled")])
Batch = tuple[int, int, list[bytes]]  # (base offset, last offset, values: none for a control batch)


def batches(values: list[bytes], cuts: list[int], first: int = 0) -> list[Batch]:
    """``values`` (from offset ``first``) cut into batches of the sizes ``cuts`` gives in turn; a size 0 is a
    control batch of one offset."""
    out, offset, i, n = [], first, 0, 0
    sizes = [*cuts, 3]
    while i < len(values):
        size = sizes[n % len(sizes)]
        n += 1
        if size == 0:
            out.append((offset, offset, []))
            offset += 1
            continue
        out.append((offset, offset + len(values[i:i + size]) - 1, values[i:i + size]))
        offset += len(values[i:i + size])
        i += size
    return out


class Run:
    """A step fed by a loader that keeps no images, beside a loader that builds them (for the recount)."""

    def __init__(self, image: MetadataImage, *, log_start: bool = True, make: Callable[..., Any] = ClusterStep):
        self.reference = MetadataLoader(image)
        holder: list[MetadataLoader] = []
        self.step = make("c", image, lambda: holder[0].image, log_start=log_start)
        self.loader = MetadataLoader(image, images=False, on_publish=self.step.published, on_abort=self.step.aborted)
        holder.append(self.loader)
        self.published: list[tuple[int, int, MetadataImage, bool]] = []
        self.chunks: list[dict[str, Chunk]] = []

    def feed(self, batch: Batch, take: bool = False) -> None:
        base, last, values = batch
        for loader in (self.loader, self.reference):
            for offset, value in enumerate(values, base):
                loader.replay_value(value, offset)
            loader.end_batch(last)
        timestamp = last * 1000 - 7 * (last % 3)  # (times may step back)
        if not values:
            self.step.leader_change(last, 3000 + last, 5)
        self.step.batch(last, timestamp, self.loader.in_transaction)
        self.published.append((last, timestamp, self.reference.image, self.reference.in_transaction))
        if take:
            self.chunks.append(self.step.take())

    def tables(self) -> dict[str, Chunk]:
        self.chunks.append(self.step.take())
        return {name: concat([c[name] for c in self.chunks]) for name in self.chunks[0]}


def change_form(chunk: Chunk, keys: int) -> list[tuple[int, tuple[Any, ...], tuple[Any, ...]]]:
    """(last offset, key, values) of each row of a broker_timeline or directory_timeline chunk."""
    return [(row[1], row[3:3 + keys], row[3 + keys:]) for row in chunk.tuples()]


def read_back(rows: list[tuple[int, tuple[Any, ...], tuple[Any, ...]]], through: int,
              zero: tuple[Any, ...]) -> dict[Any, tuple[Any, ...]]:
    """What the rows up to ``through`` leave each key at (the zero values left out)."""
    found: dict[Any, tuple[Any, ...]] = {}
    for offset, key, values in rows:
        if offset <= through:
            found[key if len(key) > 1 else key[0]] = values
    return {k: v for k, v in found.items() if v != zero}


def check_against_recount(run: Run, tables: dict[str, Chunk]) -> None:
    timeline = list(tables[TIMELINE.name].tuples())
    assert len(timeline) == len(run.published)
    names = TIMELINE.names
    brokers = change_form(tables[BROKERS.name], 1)
    directories = change_form(tables[DIRECTORIES.name], 2)
    for row, (last, timestamp, image, open_transaction) in zip(timeline, run.published, strict=True):
        expected = {"cluster": "c", "last_offset": last, "timestamp": timestamp, **recount.timeline(image),
                    "open_transaction": int(open_transaction)}
        assert dict(zip(names, row, strict=True)) == expected, f"after offset {last}"
        want_brokers, want_dirs = recount.brokers_and_directories(image)
        assert read_back(brokers, last, recount.BROKER_ZERO) == want_brokers, f"after offset {last}"
        assert read_back(directories, last, recount.DIRECTORY_ZERO) == want_dirs, f"after offset {last}"
    for rows in (brokers, directories):  # a row only where something changed
        seen: dict[Any, Any] = {}
        for _, key, values in rows:
            assert seen.get(key) != values
            seen[key] = values


@pytest.mark.slow  # about 10 s of CPU a twin: the full suite runs it, --quick does not
@pytest.mark.parametrize("make", STEPS)
@settings(max_examples=200, deadline=None)
@given(values=HISTORIES, cuts=st.lists(st.integers(0, 5), min_size=1, max_size=6),
       takes=st.lists(st.booleans(), min_size=1, max_size=4))
def test_counts_from_deltas_equal_a_full_recount_after_every_batch(make: Callable[..., Any], values: list[bytes],
                                                                   cuts: list[int], takes: list[bool]) -> None:
    run = Run(EMPTY, make=make)
    for n, batch in enumerate(batches(values, cuts)):
        run.feed(batch, take=takes[n % len(takes)])
    check_against_recount(run, run.tables())


@pytest.mark.slow  # about 10 s of CPU: the full suite runs it, --quick does not
@settings(max_examples=150, deadline=None)
@given(values=HISTORIES, cuts=st.lists(st.integers(0, 5), min_size=1, max_size=6), at=st.integers(0, 40))
def test_a_step_started_on_a_ranges_state_goes_on_where_the_one_before_left_off(values: list[bytes],
                                                                                 cuts: list[int], at: int) -> None:
    """The rows of a step over the whole history equal the rows of a step up to a batch end with no transaction
    open, followed by those of a step started there from the published image (``log_start=False``), as they are:
    no row repeated, none missing, and the row-to-row events at the cut."""
    cut = batches(values, cuts)
    whole = Run(EMPTY)
    for batch in cut:
        whole.feed(batch)
    expected = whole.tables()
    first = Run(EMPTY)
    k = 0
    for k, batch in enumerate(cut[:at]):
        first.feed(batch)
        if k + 1 >= at // 2 and not first.loader.in_transaction:
            break
    else:
        k = len(cut[:at]) - 1
    if first.loader.in_transaction:
        return
    second = Run(first.reference.image, log_start=False)
    for batch in cut[k + 1:]:
        second.feed(batch)
    a, b = first.tables(), second.tables()
    for name in (TIMELINE.name, EVENTS.name, BROKERS.name, DIRECTORIES.name, FAILURES.name):
        joined = list(a[name].tuples()) + list(b[name].tuples())
        assert joined == list(expected[name].tuples()), name
