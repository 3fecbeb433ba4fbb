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
