"""The analysis' Parquet files as ``layout.parquet_writer`` encodes them: integers and times in
DELTA_BINARY_PACKED, text by dictionary, statistics where a reader selects a range; any int64 read back as it was."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.columns import Chunk, Coded
from metalog.analysis.domain.schema import BROKERS, Kind
from metalog.analysis.outputs import writers
from metalog.analysis.outputs.layout import STATISTICS_INTS, arrow_batch, arrow_schema, iter_cluster_batches
from metalog.analysis.outputs.writers import ParquetPart
from metalog.cli.main import main
from tests.analysis.test_timeline import jbod_transition

pq = pytest.importorskip("pyarrow.parquet")

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


def test_every_file_encodes_numbers_by_delta_and_text_by_dictionary(tmp_path: Path) -> None:
    """Before: pyarrow's defaults, every column dictionary-encoded with statistics (the 1M-record benchmark log's
    timeline_batches 10.2 MB, now 0.7 MB)."""
    out = tmp_path / "out"
    assert main(["analyze", str(jbod_transition(tmp_path / "jbod")), "--out", str(out), "--engine", "python"]) == 0
    paths = sorted(out.glob("*/cluster=*/*.parquet"))
    assert {p.parts[-3] for p in paths} >= {"timeline_batches", "broker_timeline", "directory_failures", "growth"}
    for path in paths:
        metadata = pq.ParquetFile(path).metadata
        for group in range(metadata.num_row_groups):
            for i in range(metadata.num_columns):
                column = metadata.row_group(group).column(i)
                name, text = column.path_in_schema, column.physical_type == "BYTE_ARRAY"
                where = f"{path.parts[-3]}.{name}"
                assert ("RLE_DICTIONARY" if text else "DELTA_BINARY_PACKED") in column.encodings, where
                timed = metadata.schema.column(i).logical_type.type == "TIMESTAMP"
                assert column.is_stats_set == (text or timed or name in STATISTICS_INTS), where


def test_every_column_of_every_table_is_required(tmp_path: Path) -> None:
    """No column of the analysis' tables is ever null (``domain.schema``): each file declares every column
    REQUIRED (no definition levels written), and reads back as Arrow's ``not null`` fields. Before: every column
    OPTIONAL, a definition level written per value."""
    from metalog.analysis.domain.schema import TABLES

    out = tmp_path / "out"
    assert main(["analyze", str(jbod_transition(tmp_path / "jbod")), "--out", str(out), "--engine", "python"]) == 0
    for table in TABLES:
        paths = sorted((out / table).glob("cluster=*/*.parquet"))
        assert paths, table
        for path in paths:
            parquet = pq.ParquetFile(path)
            assert [parquet.schema.column(i).max_definition_level for i in range(len(parquet.schema))] == \
                [0] * len(parquet.schema), table
            assert parquet.schema_arrow == arrow_schema(table), table
            assert not any(field.nullable for field in parquet.schema_arrow), table


@pytest.mark.parametrize("column", [c.name for c in BROKERS.values])
def test_a_null_handed_to_a_writer_fails(tmp_path: Path, column: str) -> None:
    """A required column refuses a null (Arrow's writer says which column) rather than writing one no reader
    expects. Before: written, a null read back."""
    import pyarrow as pa

    good = arrow_batch(Chunk(BROKERS, "c", tuple(Coded(array("q", [0, 0]), ["fenced"]) if c.kind is Kind.TEXT
                                                 else array("q", [1, 2]) for c in BROKERS.values)))
    arrays = [pa.array([a[0].as_py(), None], a.type) if name == column else a
              for name, a in zip(good.schema.names, good.columns, strict=True)]
    part = ParquetPart(tmp_path, BROKERS.name, "c")
    with pytest.raises(pa.ArrowInvalid, match=column):
        part.add_batch(pa.RecordBatch.from_arrays(arrays, schema=good.schema))
        part.close()


@settings(max_examples=60, deadline=None)
@given(columns=st.lists(st.lists(INT64 | st.sampled_from([-(1 << 63), (1 << 63) - 1, 0]), min_size=1, max_size=300),
                        min_size=len(BROKERS.values), max_size=len(BROKERS.values)),
       group=st.integers(1, 100))
def test_any_int64_is_read_back_as_it_was_written(tmp_path_factory: pytest.TempPathFactory,
                                                  columns: list[list[int]], group: int) -> None:
    """Differences between int64s overflow (-2^63 after 2^63-1): the delta encoding wraps them, and reads back
    what was written, in any row groups."""
    n = min(map(len, columns))
    data = [Coded(array("q", [v % 3 for v in values[:n]]), ["fenced", "unfenced", "=x"]) if c.kind is Kind.TEXT
            else array("q", values[:n]) for c, values in zip(BROKERS.values, columns, strict=True)]
    out = tmp_path_factory.mktemp("parquet")
    part = ParquetPart(out, BROKERS.name, "c")
    size, writers.ROWS_PER_GROUP = writers.ROWS_PER_GROUP, group
    try:
        part.add(Chunk(BROKERS, "c", tuple(data)))
        part.close()
    finally:
        writers.ROWS_PER_GROUP = size
    got = list(iter_cluster_batches(out / BROKERS.name, "c"))
    for column, written in zip(BROKERS.values, data, strict=True):
        values = [v for b in got for v in b.column(column.name).to_pylist()]
        expected = [written.names[i] for i in written.codes] if isinstance(written, Coded) else list(written)
        assert values == expected, column.name


@settings(max_examples=60, deadline=None)
@given(codes=st.lists(st.integers(0, 2), min_size=1, max_size=40), data=st.data())
def test_a_batch_of_some_rows_holds_those_rows_in_their_order(codes: list[int], data: st.DataObject) -> None:
    """``arrow_batch(chunk, rows)``: the rows at ``rows`` (any, repeated, in any order) as the chunk gives them,
    coded text and free text decoded (what timeline_buckets takes of each chunk)."""
    from metalog.analysis.domain.schema import FAILURES
    from metalog.analysis.outputs.layout import arrow_batch

    n = len(codes)
    rows = data.draw(st.lists(st.integers(0, n - 1), max_size=30))
    columns = [Coded(array("q", codes), ["a", "=b", "c"]) if c.name == "directory"
               else [f"t{v}" for v in codes] if c.kind is Kind.TEXT
               else array("q", data.draw(st.lists(INT64, min_size=n, max_size=n))) for c in FAILURES.values]
    chunk = Chunk(FAILURES, "c", tuple(columns))
    batch = arrow_batch(chunk, rows)
    assert batch.schema == arrow_batch(chunk).schema
    got = list(zip(*(batch.column(c.name).cast("int64").to_pylist() if c.kind is Kind.TIME
                     else batch.column(c.name).to_pylist() for c in FAILURES.values), strict=True))
    assert got == [chunk.row(i) for i in rows]


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.sampled_from(["fenced", "unfenced", "=x", ""]), min_size=1, max_size=60),
       data=st.data(), group=st.integers(1, 25))
def test_a_files_bytes_depend_on_its_values_not_on_how_its_text_was_coded(
        tmp_path_factory: pytest.TempPathFactory, values: list[str], data: st.DataObject, group: int) -> None:
    """Text reaches the Parquet writer as dictionary arrays in whatever vocabulary it was coded in (the step's,
    with names no row uses, a name twice; a range's on a Spark executor; strings encoded): each row group's
    dictionary is made its rows' values as they first appear (``layout.first_seen``), so the same rows give the
    same bytes, in any row groups, and read back as they were."""
    import pyarrow as pa

    n = len(values)
    cut = data.draw(st.integers(0, n))
    ints = [array("q", range(i, i + n)) for i in range(len(BROKERS.values))]

    def chunks(vocabulary: list[str]) -> list[Chunk]:
        names = [*vocabulary, *(v for v in dict.fromkeys(values) if v not in vocabulary)]
        places = {v: [i for i, name in enumerate(names) if name == v] for v in values}  # (a name twice: both)
        codes = array("q", [places[v][k % len(places[v])] for k, v in enumerate(values)])
        columns = [Coded(codes, names) if c.kind is Kind.TEXT else ints[i] for i, c in enumerate(BROKERS.values)]
        whole = Chunk(BROKERS, "c", tuple(columns))
        return [Chunk(BROKERS, "c", tuple(_part(c, 0, cut) for c in whole.columns)),
                Chunk(BROKERS, "c", tuple(_part(c, cut, n) for c in whole.columns))]

    vocabularies = [data.draw(st.lists(st.sampled_from(["unfenced", "=x", "fenced", "", "unused", "=x"]),
                                       max_size=6)) for _ in range(2)]
    files = []
    size, writers.ROWS_PER_GROUP = writers.ROWS_PER_GROUP, group
    try:
        for k, vocabulary in enumerate(vocabularies):
            out = tmp_path_factory.mktemp(f"coded{k}")
            part = ParquetPart(out, BROKERS.name, "c")
            for chunk in chunks(vocabulary):
                part.add(chunk)
            part.close()
            files.append(part.path)
        out = tmp_path_factory.mktemp("strings")  # (as a cut cluster's rows come: Arrow batches of strings)
        part = ParquetPart(out, BROKERS.name, "c")
        for chunk in chunks([]):
            part.add_batch(arrow_batch(chunk))
        part.close()
        files.append(part.path)
    finally:
        writers.ROWS_PER_GROUP = size
    assert files[0].read_bytes() == files[1].read_bytes() == files[2].read_bytes()
    table = pq.read_table(files[0])
    assert table.schema == arrow_schema(BROKERS.name) and b"ARROW:schema" not in (table.schema.metadata or {})
    assert table.column("state").to_pylist() == values
    assert table.column("broker").to_pylist() == list(ints[BROKERS.names.index("broker") - 1])
    assert pa.types.is_string(table.column("state").type)


def _part(column: array[int] | Coded, lo: int, hi: int) -> array[int] | Coded:
    return Coded(column.codes[lo:hi], column.names) if isinstance(column, Coded) else column[lo:hi]
