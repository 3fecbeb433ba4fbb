"""``analysis.outputs.kernels``: Arrow's kernels called by name give what the Arrow methods they stand for give,
and a python-engine analysis (tables, CSV, controller_metrics.om, growth tables, report) never imports
``pyarrow.compute`` (whose import makes a wrapper with a parsed docstring for each of ~290 kernels: 21-30 ms)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.analysis.outputs import kernels
from tests.analysis.test_timeline import jbod_transition, zk_migration
from tests.waiting import DEADLINE

pa = pytest.importorskip("pyarrow")

ints = st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=40)
words = st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "é", ""])), max_size=40)


@given(ints, st.data())
def test_take_and_kept_are_the_methods(values: list[int | None], data: st.DataObject) -> None:
    array = pa.array(values, pa.int64())
    indices = pa.array(data.draw(st.lists(st.integers(0, max(len(values) - 1, 0)), max_size=20 if values else 0)),
                       pa.int64())
    mask = pa.array(data.draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=len(values),
                                       max_size=len(values))), pa.bool_())
    assert kernels.take(array, indices).equals(array.take(indices))
    assert kernels.kept(array, mask).equals(array.filter(mask))
    batch = pa.RecordBatch.from_arrays([array], names=["x"])
    assert kernels.kept(batch, mask).equals(batch.filter(mask))


@given(ints, st.sampled_from(["int32", "bool_", "int64"]))
def test_cast_is_the_method_safe_cast(values: list[int | None], target: str) -> None:
    array, to = pa.array(values, pa.int64()), getattr(pa, target)()
    try:
        expected = array.cast(to)
    except pa.ArrowInvalid as refused:  # an overflow: refused by both, with the same words
        with pytest.raises(pa.ArrowInvalid) as got:
            kernels.cast(array, to)
        assert str(got.value) == str(refused)
    else:
        assert kernels.cast(array, to).equals(expected)


@given(words)
def test_decoded_is_dictionary_decode(values: list[str | None]) -> None:
    encoded = pa.array(values, pa.string()).dictionary_encode()
    assert kernels.decoded(encoded).equals(encoded.dictionary_decode())
    assert kernels.decoded(encoded.dictionary_decode()) is not None
    plain = pa.array(values, pa.string())
    assert kernels.decoded(plain) is plain


RUN = """
import json, sys
from metalog.cli.main import main
code = main(["analyze", *sys.argv[1:3], "--out", sys.argv[3], "--engine", "python", "--csv"])
print(json.dumps([code, "pyarrow.compute" in sys.modules]))
"""


def test_a_python_engine_analysis_never_imports_pyarrow_compute(tmp_path: Path) -> None:
    """Its writers (``layout.arrow_batch``'s take), the sampler and the report's reading called Arrow's kernels
    through Arrow's methods and ``pyarrow.compute``, whose import cost a 1M-record analysis 21-30 ms of CPU."""
    zk, jbod, out = zk_migration(tmp_path / "zk"), jbod_transition(tmp_path / "jbod"), tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", RUN, str(zk), str(jbod), str(out)], capture_output=True, text=True,
                          timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [0, False]
    assert (out / "report.html").stat().st_size and (out / "report.png").stat().st_size
    assert (out / "directory_timeline.csv").stat().st_size and (out / "broker_timeline.csv").stat().st_size
