"""The compiled twin of the per-batch step against the pure one: the same rows of every table, batch after batch,
for random histories of every record type in random batch shapes, from the log's start or a range's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain import step as pure
from metalog.analysis.domain.twins import STEP
from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.state.image import EMPTY
from tests.analysis.domain.histories import FAR_BROKERS, cluster_histories
from tests.analysis.domain.test_step import HISTORIES, Run, batches

compiled = STEP.loaded
pytestmark = pytest.mark.skipif(compiled is None, reason=f"the compiled step is not built or not asked for "
                                                         f"({STEP.why_not or 'METALOG_PURE'})")


@pytest.mark.slow  # about 10 s of CPU: the full suite runs it, --quick does not
@settings(max_examples=300, deadline=None)
@given(values=HISTORIES, cuts=st.lists(st.integers(0, 5), min_size=1, max_size=6),
       takes=st.lists(st.booleans(), min_size=1, max_size=4), start=st.integers(0, 30))
def test_the_compiled_step_makes_the_pure_steps_rows(values: list[bytes], cuts: list[int], takes: list[bool],
                                                     start: int) -> None:
    _same_rows(values, cuts, takes, start)


@settings(max_examples=25, deadline=None)
@given(values=cluster_histories(brokers=FAR_BROKERS), cuts=st.lists(st.integers(0, 5), min_size=1, max_size=6),
       takes=st.lists(st.booleans(), min_size=1, max_size=4), start=st.integers(0, 30))
def test_broker_ids_beyond_the_compiled_steps_array_make_the_pure_steps_rows(
        values: list[bytes], cuts: list[int], takes: list[bool], start: int) -> None:
    """The compiled step numbers brokers through an array by id for ids 0 to 65,535, through its dict otherwise
    (negative, or beyond): the same rows either way."""
    _same_rows(values, cuts, takes, start)


def _same_rows(values: list[bytes], cuts: list[int], takes: list[bool], start: int) -> None:
    cut = batches(values, cuts)
    head = Run(EMPTY)
    for batch in cut[:start]:
        head.feed(batch)
    at, log_start = (head.reference.image, False) if start and not head.loader.in_transaction else (EMPTY, True)
    rest = cut[start:] if not log_start else cut
    runs = [Run(at, log_start=log_start, make=make) for make in (pure.ClusterStep, compiled.ClusterStep)]
    for n, batch in enumerate(rest):
        for run in runs:
            run.feed(batch, take=takes[n % len(takes)])
        assert runs[0].step.pending == runs[1].step.pending
    chunks = [run.tables() for run in runs]
    for name in chunks[0]:
        assert list(chunks[1][name].tuples()) == list(chunks[0][name].tuples()), name
        assert [type(c) for c in chunks[1][name].columns] == [type(c) for c in chunks[0][name].columns], name


@settings(max_examples=40, deadline=None)
@given(ids=st.lists(st.integers(0, 1000), min_size=1, max_size=60, unique=True),
       dirs=st.lists(st.lists(st.integers(0, 9), max_size=3, unique=True), min_size=1, max_size=7),
       fenced=st.lists(st.booleans(), min_size=1, max_size=5), cut=st.integers(1, 60))
def test_many_brokers_and_directories_changed_in_one_batch_come_in_the_pure_steps_order(
        ids: list[int], dirs: list[list[int]], fenced: list[bool], cut: int) -> None:
    """More brokers and (broker, directory) pairs changed in a batch than the few a batch usually changes (the
    compiled step sorts a batch's rows by insertion up to 16, by merging beyond): the pure step's rows, in order."""
    register = message_class("RegisterBrokerRecord")
    values = [encode_metadata_record(register(
        broker_id=bid, broker_epoch=1, incarnation_id=Uuid.of(9, bid), fenced=fenced[n % len(fenced)],
        log_dirs=[Uuid.of(8, d) for d in dirs[n % len(dirs)]]), max(register.VERSIONS)) for n, bid in enumerate(ids)]
    runs = [Run(EMPTY, make=make) for make in (pure.ClusterStep, compiled.ClusterStep)]
    for batch in ((0, cut - 1, values[:cut]), (cut, len(values) - 1, values[cut:])):
        if batch[2]:
            for run in runs:
                run.feed(batch)
    tables = [run.tables() for run in runs]
    for name in tables[0]:
        assert list(tables[1][name].tuples()) == list(tables[0][name].tuples()), name


def _colliding_directories(count: int) -> list[Uuid]:
    """Directory ids that all fall on one slot of the compiled step's table of directory numbers (up to 64 slots:
    its hash of the id's two 8-byte halves, as step.pyx's ``slot_at``), so that most are past its probes."""
    mask, out, lo = 63, [], 0
    while len(out) < count:
        lo += 1
        uuid = Uuid.of(8, lo)
        hi_, lo_ = int.from_bytes(uuid[:8], "little"), int.from_bytes(uuid[8:], "little")
        h = ((hi_ ^ (lo_ * 0x9E3779B97F4A7C15 % 2**64)) * 0xBF58476D1CE4E5B9) % 2**64
        if (h ^ (h >> 31)) & mask == 0:
            out.append(uuid)
    return out


COLLIDING = _colliding_directories(24)


@settings(max_examples=30, deadline=None)
@given(listed=st.lists(st.lists(st.integers(0, 23), max_size=6, unique=True), min_size=1, max_size=4),
       placed=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 23)), min_size=1, max_size=12))
def test_directory_ids_that_collide_in_the_compiled_steps_table_make_the_pure_steps_rows(
        listed: list[list[int]], placed: list[tuple[int, int]]) -> None:
    """The compiled step numbers directories through a table of their ids, each id within a few probes of its
    hash's slot, and through its dict past them: directory ids made to collide make the same rows."""
    register, topic, partition = (message_class(m) for m in ("RegisterBrokerRecord", "TopicRecord",
                                                             "PartitionRecord"))
    brokers = list(range(1, len(listed) + 1))
    records = [register(broker_id=b, broker_epoch=1, incarnation_id=Uuid.of(9, b), fenced=False,
                        log_dirs=[COLLIDING[d] for d in dirs]) for b, dirs in zip(brokers, listed, strict=True)]
    records.append(topic(name="t", topic_id=Uuid.of(7, 1)))
    records += [partition(topic_id=Uuid.of(7, 1), partition_id=n, replicas=[brokers[b % len(brokers)]],
                          isr=[brokers[b % len(brokers)]], leader=brokers[b % len(brokers)],
                          directories=[COLLIDING[d]]) for n, (b, d) in enumerate(placed)]
    values = [encode_metadata_record(r, max(type(r).VERSIONS)) for r in records]
    _same_rows(values, [len(listed), 1, 3], [False, True], 0)


def test_the_compiled_steps_published_is_told_in_c_and_refuses_what_is_not_a_delta() -> None:
    """``published`` is the loader's ``on_publish``: it carries the C entry the compiled publish calls
    (``c_on_publish``), and from Python as in C it takes a MetadataDelta or (None, an image), nothing else."""
    import ctypes

    from metalog.state import MetadataDelta

    assert compiled is not None
    step = compiled.ClusterStep("c", EMPTY, lambda: EMPTY)
    capsule = step.published.c_on_publish
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.argtypes, is_valid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
    assert is_valid(capsule, b"metalog.on_publish.v1") == 1
    step.published(MetadataDelta(EMPTY), None)
    step.published(None, EMPTY)
    with pytest.raises(TypeError, match="not a MetadataDelta"):
        step.published(object(), None)


def test_the_analysis_runs_the_compiled_step_where_built_and_the_pure_one_when_asked() -> None:
    from metalog.analysis.domain import twins
    from metalog.codec import core

    assert compiled is not None
    assert twins.cluster_step() is compiled.ClusterStep and twins.status().startswith("compiled (Cython 3.")
    with core.pure_twins("analysis"):
        assert twins.cluster_step() is pure.ClusterStep
    assert twins.cluster_step() is compiled.ClusterStep
