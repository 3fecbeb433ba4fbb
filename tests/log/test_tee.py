"""Two readers of one scan (``metalog.log.tee``): each is told by a tee exactly what a scan of its own tells it, in
the same order, the first before the second, on either twin of the tee and of the scan (a tee of tees: the compiled
tee told by the compiled scan in C hands on in C); an error of the first is raised before the second is told, as
the scan names it for a reader alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.codec import core
from metalog.errors import CorruptBatchError, DecodeError, LogError
from metalog.log.chain import BatchChain
from metalog.log.scan import Scan
from metalog.log.tee import END_TEE, VALUE_TEE, EndTee, ScanReader, ValueTee, tee
from tests.log.test_scan import batch_lists, build, scan_all

Told = list[tuple[object, ...]]


def recorder(told: Told, name: str = "") -> ScanReader:
    """A reader that writes down what it is told, as (name, "value", offset, value) and (name, "end", ...)."""
    return ScanReader(lambda value, offset: told.append((name, "value", offset, value)),
                      lambda *end: told.append((name, "end", *end)))


def scanned(data: bytes, reader: ScanReader, first: int, last: int, chunk: int) -> str | None:
    """``reader`` told what ``scan_into`` reads of ``data`` in [first, last]; the error, if any."""
    scan = Scan(data, len(data), "x", BatchChain(0), first, last, reader.sink, reader.batch_end)
    try:
        scan_all(scan, len(data), chunk)
    except (CorruptBatchError, LogError) as e:
        return str(e)
    return None


@contextmanager
def tees(pure: bool) -> Iterator[None]:
    """The pure tees (and the pure scan), or the compiled ones where built."""
    with core.pure_twins("log") if pure else nullcontext():
        yield


def alone(data: bytes, name: str, first: int, last: int, chunk: int) -> tuple[Told, str | None]:
    told: Told = []
    return told, scanned(data, recorder(told, name), first, last, chunk)


@pytest.mark.parametrize("pure", [False, True])
@given(batches=batch_lists, first=st.integers(-1, 32), span=st.integers(0, 32),
       chunk=st.sampled_from([1, 90, 1 << 20]))
def test_each_reader_of_a_tee_is_told_what_a_scan_of_its_own_tells_it(pure: bool, batches: list,  # type: ignore[type-arg]
                                                                      first: int, span: int, chunk: int) -> None:
    data = build(batches)
    last = first + span
    told: Told = []
    with tees(pure):
        a, error = alone(data, "a", first, last, chunk)
        b, _ = alone(data, "b", first, last, chunk)
        assert scanned(data, tee(recorder(told, "a"), recorder(told, "b")), first, last, chunk) == error
    assert [t for t in told if t[0] == "a"] == a and [t for t in told if t[0] == "b"] == b
    # each value and each batch end to the first, then at once to the second
    assert told == [t for pair in zip(a, b, strict=True) for t in pair]


@pytest.mark.parametrize("pure", [False, True])
@given(batches=batch_lists, chunk=st.sampled_from([1, 1 << 20]))
def test_a_tee_of_tees_tells_its_four_readers_in_order(pure: bool, batches: list,  # type: ignore[type-arg]
                                                       chunk: int) -> None:
    """The outer tee hands on to the inner ones through their C entries where compiled."""
    data = build(batches)
    told: Told = []
    with tees(pure):
        a, error = alone(data, "a", -1, 1 << 40, chunk)
        reader = tee(tee(recorder(told, "a"), recorder(told, "b")), tee(recorder(told, "c"), recorder(told, "d")))
        assert scanned(data, reader, -1, 1 << 40, chunk) == error
    assert told == [(name, *t[1:]) for t in a for name in "abcd"]


def refusing(at: int, told: Told) -> ScanReader:
    """A reader whose sink cannot decode the value at offset ``at``."""
    def sink(value: bytes | None, offset: int) -> None:
        if offset == at:
            raise DecodeError("no such record")
        told.append(("first", offset))

    return ScanReader(sink, lambda *end: None)


@pytest.mark.parametrize("pure", [False, True])
@given(batches=batch_lists, at=st.integers(0, 20))
def test_an_error_of_the_first_is_raised_before_the_second_is_told(pure: bool, batches: list,  # type: ignore[type-arg]
                                                                   at: int) -> None:
    data = build(batches)
    mine: Told = []
    told: Told = []
    with tees(pure):
        error = scanned(data, refusing(at, mine), -1, 1 << 40, 1 << 20)
        assert scanned(data, tee(refusing(at, []), recorder(told, "second")), -1, 1 << 40, 1 << 20) == error
    values = [t[2] for t in told if t[1] == "value"]
    assert values == [offset for _, offset in mine]  # nothing at or after the offset refused


def test_an_error_of_the_second_is_named_by_its_offset() -> None:
    data = build([([(b"\x01\x03\x00", None, [], 0)] * 3, "none", False)])
    for pure in (False, True):
        with tees(pure):
            assert scanned(data, tee(recorder([]), refusing(1, [])), -1, 1 << 40, 1 << 20) == \
                "x: offset 1: no such record"


@pytest.mark.skipif(VALUE_TEE.compiled is None or END_TEE.compiled is None,
                    reason=f"the compiled tee is not built or not asked for ({VALUE_TEE.why_not or 'METALOG_PURE'})")
@pytest.mark.parametrize(("pure", "compiled", "args"), [
    (ValueTee, VALUE_TEE.compiled, (b"\x01\x02", 7)),
    (EndTee, END_TEE.compiled, (3, 5, 1_700_000_000_000, True, 120)),
])
def test_both_twins_hand_a_python_call_on_in_order(pure: type, compiled: Callable[..., Any],
                                                   args: tuple[object, ...]) -> None:
    """As the scan's pure loop calls them (a batch it reads itself)."""
    for make in (pure, compiled):
        told: Told = []
        make(*(lambda *a, name=name, told=told: told.append((name, *a)) for name in "ab"))(*args)
        assert told == [("a", *args), ("b", *args)]
