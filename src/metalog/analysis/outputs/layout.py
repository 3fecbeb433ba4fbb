"""The analysis' Parquet tables on disk, one layout for both engines: ``OUT/<table>/cluster=<name>/part-*.parquet``
(Hive-style partitions, as Spark's ``partitionBy("cluster")`` writes them; the cluster is in the directory name,
not in the files), each cluster's rows in log order in one file. Integers are int64, times Parquet's
timestamp(MILLIS, UTC) (``timestamp[ms, tz=UTC]`` in Arrow, ``TIMESTAMP`` in Spark), strings UTF-8, every column
required (no null: ``domain.schema``; Arrow's ``not null``). Every file is written with ``parquet_writer``'s
encodings.

Both engines write it with pyarrow (the Spark engine on its executors); what reads it back (the report,
``--csv``, the tests) reads one cluster at a time."""

from __future__ import annotations

import shutil
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from metalog.analysis.domain import schema
from metalog.analysis.domain.columns import Chunk, Coded, ColumnData, int64s
from metalog.analysis.domain.schema import CLUSTER, Kind, Table
from metalog.analysis.outputs.kernels import cast, decoded, kernel, take

# epoch ms in the rows, timestamp(MILLIS, UTC) on disk
TIME_COLUMNS = frozenset(c.name for t in schema.TABLES.values() for c in t.columns if c.kind is Kind.TIME)
_INTS = frozenset(c.name for t in schema.TABLES.values() for c in t.columns if c.kind is Kind.INT)

# table -> its columns in the files' order (the cluster first: the partition column)
TABLES: dict[str, tuple[str, ...]] = {name: table.names for name, table in schema.TABLES.items()}
PARTITION = CLUSTER

# characters Spark's ExternalCatalogUtils.escapePathName writes as %XX in a partition directory's name
_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(1, 32))


def kind(column: str) -> str:
    """``time``, ``int`` or ``string``: a column's type on disk."""
    if column in TIME_COLUMNS:
        return "time"
    return "int" if column in _INTS else "string"


def arrow_schema(table: str, *, with_cluster: bool = False, unit: str = "ms") -> Any:
    """The table's Arrow schema (``unit``: of the times; Spark's Arrow batches carry microseconds): every field
    ``not null`` (``domain.schema``: no column is ever null; in Parquet, a required column has no definition levels
    to write, which took a quarter of the writer's instructions)."""
    import pyarrow as pa

    types = {"time": pa.timestamp(unit, tz="UTC"), "int": pa.int64(), "string": pa.string()}
    return pa.schema([pa.field(c, types[kind(c)], nullable=False) for c in TABLES[table]
                      if with_cluster or c != PARTITION])


# How every Parquet file of the analysis is encoded (``parquet_writer``): integers and times DELTA_BINARY_PACKED,
# since a column of counts that change now and then, or of offsets and times that only grow, is a run of small
# differences (the 1M-record benchmark log's timeline_batches: 0.65 MB, where pyarrow's default, a dictionary
# per column, made 10.2 MB; both written and read about 30% faster); text by dictionary (phases, versions and
# directory ids repeat); Snappy, pyarrow's default. Min/max statistics on the columns a reader selects a range of
# rows by (times, offsets, broker ids, epochs, text), which Spark and DuckDB skip row groups with; none on the
# counts, whose row groups each span about every value (they cost a sixth of the write). The writers hand text
# over as Arrow dictionary arrays (``coded_batch``, ``first_seen``: the codes the analysis already has, no string
# made and hashed again per row), so the files hold no Arrow schema of their own (pyarrow's ``ARROW:schema``,
# which would name the dictionary type): every reader reads Parquet's own types, text as strings and times as
# UTC timestamps, the values as they were written.
STATISTICS_INTS = frozenset(("last_offset", "offset", "end_offset", "broker", "epoch"))


def parquet_writer(path: Path, schema: Any) -> Any:
    """A ``pyarrow.parquet.ParquetWriter`` of ``schema`` at ``path``, with the analysis' encodings (above); text
    columns as strings or as dictionary arrays (``first_seen``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)]
    numbers = [f.name for f in schema if f.name not in texts]
    statistics = [f.name for f in schema
                  if f.name in texts or pa.types.is_timestamp(f.type) or f.name in STATISTICS_INTS]
    return pq.ParquetWriter(path, schema, use_dictionary=texts, write_statistics=statistics, store_schema=False,
                            column_encoding=dict.fromkeys(numbers, "DELTA_BINARY_PACKED"))


def coded_schema(table: str, index: Any = None) -> Any:
    """``arrow_schema`` with its text columns as dictionary arrays of strings, their codes ``index`` (an Arrow
    integer type; default int64, the analysis' codes): what a writer holds (``coded_batch``) and, with int32, what
    it writes (``first_seen``)."""
    import pyarrow as pa

    text = pa.dictionary(index or pa.int64(), pa.string())
    return pa.schema([f.with_type(text) if pa.types.is_string(f.type) else f for f in arrow_schema(table)])


def coded_batch(chunk: Chunk) -> Any:
    """``arrow_batch`` with its text as dictionary arrays (``coded_schema``): a coded column is its codes into its
    vocabulary, without a copy; free text is encoded."""
    import pyarrow as pa

    schema = coded_schema(chunk.table.name)
    arrays = []
    for data, field in zip(chunk.columns, schema, strict=True):
        if isinstance(data, Coded):
            codes = pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data.codes)])
            arrays.append(pa.DictionaryArray.from_arrays(codes, arrow_array(data.names, pa.string())))
        elif isinstance(data, array):
            arrays.append(pa.Array.from_buffers(field.type, len(data), [None, pa.py_buffer(data)]))
        else:
            arrays.append(_encoded(arrow_array(data, pa.string())))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def coded(batch: Any, table: str) -> Any:
    """A record batch of ``arrow_schema(table)`` (text as strings) as ``coded_batch`` gives it."""
    import pyarrow as pa

    arrays = [_encoded(a) if pa.types.is_string(a.type) else a for a in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, schema=coded_schema(table))


def _encoded(strings: Any) -> Any:
    import pyarrow as pa

    found = kernel("dictionary_encode", strings)
    return pa.DictionaryArray.from_arrays(cast(found.indices, pa.int64()), found.dictionary)


def first_seen(rows: Any, table: str) -> Any:
    """A table of ``coded_schema(table)``'s rows, in one chunk per column (``combine_chunks``), with each text
    column's dictionary made the values its rows hold in the order they first appear (int32 codes): what the
    Parquet writer puts in the column's dictionary page, so that a row group's bytes depend on its values alone,
    not on the vocabularies they were coded in (a chunk's, a range's on a Spark executor). A dictionary with a
    value twice (two codes, one text) is encoded again from its text."""
    import pyarrow as pa

    schema = coded_schema(table, pa.int32())
    arrays = []
    for column in rows.columns:
        data = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        if pa.types.is_dictionary(data.type):
            used = kernel("dictionary_encode", data.indices)  # (its dictionary: the codes used, as they first appear)
            values = take(data.dictionary, used.dictionary)
            if kernel("count_distinct", values).as_py() < len(values):
                used = kernel("dictionary_encode", decoded(data))
                values = used.dictionary
            data = pa.DictionaryArray.from_arrays(used.indices, values)
        arrays.append(data)
    return pa.Table.from_arrays(arrays, schema=schema)


def write_file(path: Path, table: Any) -> None:
    """An Arrow table as one Parquet file (``parquet_writer``'s encodings; row groups as ``pq.write_table``'s)."""
    with parquet_writer(path, table.schema) as writer:
        writer.write_table(table)


def arrow_batch(chunk: Chunk, rows: Sequence[int] | None = None) -> Any:
    """A chunk's rows as an Arrow record batch of the table's file schema (``arrow_schema``, without the cluster):
    int and time columns take the chunk's int64 arrays without a copy, coded text is its vocabulary taken by the
    codes. ``rows``: only the rows at these indices, in this order (taken in Arrow, before any text is made)."""
    import pyarrow as pa

    schema = arrow_schema(chunk.table.name)
    taken = None if rows is None else arrow_array(rows, pa.int64())
    arrays = []
    for data, field in zip(chunk.columns, schema, strict=True):
        if isinstance(data, array):
            column = pa.Array.from_buffers(field.type, len(data), [None, pa.py_buffer(data)])
            arrays.append(column if taken is None else take(column, taken))
        elif isinstance(data, Coded):
            codes = pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data.codes)])
            arrays.append(take(arrow_array(data.names, pa.string()), codes if taken is None else take(codes, taken)))
        else:
            arrays.append(arrow_array(data if rows is None else [data[i] for i in rows], pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def chunk_of(table: Table, cluster: str, batch: Any) -> Chunk:
    """An Arrow record batch of ``arrow_batch`` back as the chunk it was: int and time columns as ``array('q')`` of
    their buffers, text as codes into its values (``Coded``)."""
    import pyarrow as pa

    columns: list[ColumnData] = []
    for column, data in zip(table.values, batch.columns, strict=True):
        if data.null_count:
            raise ValueError(f"{table.name}.{column.name}: a row without a value")
        if column.kind is Kind.TEXT:
            coded = _encoded(data)
            columns.append(Coded(int64s(coded.indices), coded.dictionary.to_pylist()))
        else:
            columns.append(int64s(cast(data, pa.int64())))
    return Chunk(table, cluster, tuple(columns))


def arrow_array(values: Sequence[Any], type_: Any) -> Any:
    """``pa.array(values, type_)``, built from buffers where ``values`` are int64s, times (epoch ms) or UTF-8
    text without a null: ``pa.array`` on a Python sequence imports pandas where it is installed, to ask whether
    the sequence is one of pandas' (about half a second of CPU, a twentieth of a 1M-record analysis)."""
    import pyarrow as pa

    try:
        if None in values:
            pass
        elif pa.types.is_timestamp(type_) or type_ == pa.int64():
            ints = array("q", values)
            return pa.Array.from_buffers(type_, len(ints), [None, pa.py_buffer(ints)])
        elif type_ == pa.string():
            encoded = [value.encode() for value in values]
            offsets = array("i", accumulate(map(len, encoded), initial=0))
            return pa.Array.from_buffers(type_, len(encoded), [None, pa.py_buffer(offsets),
                                                               pa.py_buffer(b"".join(encoded))])
    except (TypeError, OverflowError, UnicodeEncodeError, AttributeError):
        pass  # pa.array's own answer (its error, for what it refuses)
    return pa.array(values, type_)


def partition_dir(name: str) -> str:
    """``cluster=<name>`` escaped as Spark escapes partition values, so both engines name it alike."""
    return PARTITION + "=" + "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in name)


def unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "%" and i + 2 < len(text) and all(c in "0123456789ABCDEFabcdef" for c in text[i + 1:i + 3]):
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def fresh_directories(out: Path, tables: Iterable[str]) -> None:
    """Each table's directory in ``out`` empty (an earlier run's files go: the directory is the analysis' own,
    ``tables.claim_output``), before any cluster's file is written into it."""
    for table in tables:
        root = out / table
        if root.is_dir():
            shutil.rmtree(root)
        root.mkdir()


def clusters(root: Path) -> list[str]:
    """The clusters with a partition under a table's directory (in name order)."""
    return sorted(unescape(p.name[len(PARTITION) + 1:]) for p in root.glob(f"{PARTITION}=*") if p.is_dir())


def iter_cluster(root: Path, cluster: str, columns: Sequence[str] | None = None,
                 batch_rows: int = 65_536) -> Iterator[list[dict[str, Any]]]:
    """One cluster's rows of a table directory, in file order, as lists of dicts of up to ``batch_rows``
    (times as epoch ms, the cluster column added): what a reader holds at once."""
    for batch in iter_cluster_batches(root, cluster, columns, batch_rows):
        yield batch_rows_of(batch, cluster, columns)


def iter_cluster_batches(root: Path, cluster: str, columns: Sequence[str] | None = None,
                         batch_rows: int = 65_536, *, dictionaries: bool = False) -> Iterator[Any]:
    """One cluster's rows of a table directory, in file order, as Arrow record batches of up to ``batch_rows``
    (times as epoch ms; without the cluster column, which ``batch_rows_of`` adds). ``dictionaries``: text
    columns as Arrow dictionary arrays, as the files hold them (no string made per row: a value may have two
    codes in one array, one code is always one value)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in cluster_files(root, cluster):
        reader = pq.ParquetFile(path)
        if dictionaries:
            texts = [f.name for f in reader.schema_arrow if pa.types.is_string(f.type)]
            reader = pq.ParquetFile(path, read_dictionary=texts)
        wanted = [c for c in (columns or reader.schema_arrow.names) if c != PARTITION]
        for batch in reader.iter_batches(batch_size=batch_rows, columns=wanted, use_threads=False):
            yield epoch_ms(batch)


def cluster_files(root: Path, cluster: str) -> list[Path]:
    """One cluster's Parquet files of a table directory, in file order (none hidden: ``.``/``_`` names)."""
    return sorted(p for p in (root / partition_dir(cluster)).glob("*.parquet") if not p.name.startswith((".", "_")))


def cluster_columns(root: Path, cluster: str) -> list[str]:
    """One cluster's columns of a table directory, from its first file's footer, without the cluster column
    (none: no file)."""
    import pyarrow.parquet as pq

    files = cluster_files(root, cluster)
    return [] if not files else [c for c in pq.read_schema(files[0]).names if c != PARTITION]


def epoch_ms(batch: Any) -> Any:
    """An Arrow record batch with its time columns as int64 epoch ms (as the rows hold them)."""
    import pyarrow as pa

    arrays = [cast(a, pa.int64()) if pa.types.is_timestamp(a.type) else a for a in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def batch_rows_of(batch: Any, cluster: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """An Arrow record batch of ``iter_cluster_batches`` as the dicts ``iter_cluster`` yields."""
    cols = {name: array.to_pylist() for name, array in zip(batch.schema.names, batch.columns, strict=True)}
    cols[PARTITION] = [cluster] * batch.num_rows
    order = [c for c in (columns or (PARTITION, *batch.schema.names)) if c in cols]
    return [dict(zip(order, values, strict=True)) for values in zip(*(cols[c] for c in order), strict=True)]


def read_tables(root: Path, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every row of a table directory, cluster by cluster in name order (small outputs and tests only)."""
    return [row for cluster in clusters(root) for batch in iter_cluster(root, cluster, columns) for row in batch]


def count_rows(root: Path) -> int:
    """Rows of a table directory, from the files' footers."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(path).metadata.num_rows for path in root.glob(f"{PARTITION}=*/*.parquet"))


def table_bytes(root: Path, cluster: str) -> int:
    """The size on disk of one cluster's files of a table."""
    return sum(p.stat().st_size for p in (root / partition_dir(cluster)).glob("*.parquet"))
