"""``layout.arrow_array`` builds int64, time and text arrays from buffers (``pa.array`` on a Python sequence imports
pandas where it is installed): it makes exactly ``pa.array``'s array, and anything else is ``pa.array``'s."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.layout import arrow_array

pa = pytest.importorskip("pyarrow")

TYPES = {"int": (lambda: pa.int64(), st.integers(-(2**63), 2**63 - 1)),
         "time": (lambda: pa.timestamp("ms", tz="UTC"), st.integers(-(2**63), 2**63 - 1)),
         "text": (lambda: pa.string(), st.text())}


@settings(max_examples=150, deadline=None)
@given(data=st.data(), kind=st.sampled_from(sorted(TYPES)), nulls=st.booleans())
def test_arrow_array_is_pa_array(data: st.DataObject, kind: str, nulls: bool) -> None:
    make, values = TYPES[kind]
    items: list[Any] = data.draw(st.lists(st.one_of(values, st.none()) if nulls else values, max_size=30))
    assert arrow_array(items, make()).equals(pa.array(items, make()))


@pytest.mark.parametrize(("values", "kind"), [(["\udcff"], "text"), ([2**63], "int"), (["1"], "int"), ([1], "text")])
def test_what_pa_array_refuses_is_refused_alike(values: list[Any], kind: str) -> None:
    """A lone surrogate (a non-UTF-8 name not escaped), an int beyond int64, a value of the wrong type."""
    with pytest.raises(Exception) as theirs:
        pa.array(values, TYPES[kind][0]())
    with pytest.raises(Exception) as ours:
        arrow_array(values, TYPES[kind][0]())
    assert type(ours.value) is type(theirs.value)
